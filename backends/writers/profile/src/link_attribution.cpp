#include "link_attribution.hpp"

#include <algorithm>
#include <cmath>

namespace ferret::profile {

std::optional<link_counter> link_counter_of(std::string_view metric_name) noexcept {
  // CUPTI's names with or without the rollup: "nvltx__bytes" is "nvltx__bytes.sum".
  if (metric_name.size() > 4 && metric_name.substr(metric_name.size() - 4) == ".sum")
    metric_name.remove_suffix(4);
  if (metric_name == "nvltx__bytes") return link_counter::nvlink_sent;
  if (metric_name == "nvlrx__bytes") return link_counter::nvlink_received;
  if (metric_name == "pcie__read_bytes") return link_counter::pcie_read;
  if (metric_name == "pcie__write_bytes") return link_counter::pcie_write;
  return std::nullopt;
}

std::string_view describe(link_counter counter) noexcept {
  switch (counter) {
    case link_counter::nvlink_sent: return "NVLink sent";
    case link_counter::nvlink_received: return "NVLink received";
    case link_counter::pcie_read: return "PCIe read";
    case link_counter::pcie_write: return "PCIe write";
  }
  return "link";
}

double kernel_link_bytes::total() const noexcept {
  double sum = 0;
  for (std::size_t i = 0; i < link_counters; ++i) sum += exact[i] + shared[i];
  return sum;
}

link_attribution::device_window& link_attribution::window(std::uint32_t device) {
  return windows_[device];
}

void link_attribution::add_metric_set(const runtime::gpu_metric_set& set) {
  device_window& window = this->window(set.device);
  window.index = {};
  window.sampled = false;
  for (std::size_t i = 0; i < set.metrics.size(); ++i) {
    const char* name = set.metrics[i].name;
    if (name == nullptr) continue;
    if (const std::optional<link_counter> counter = link_counter_of(name)) {
      window.index[static_cast<std::size_t>(*counter)] = i;
      window.sampled = true;
    }
  }
}

void link_attribution::add_kernel(std::uint32_t device, std::int64_t begin_ns,
                                  std::int64_t end_ns, std::uint64_t key) {
  device_window& window = this->window(device);
  end_ns = std::max(end_ns, begin_ns);
  if (window.attributed_to_ns != no_time && begin_ns < window.attributed_to_ns) {
    ++late_kernels_;
    if (end_ns <= window.attributed_to_ns) {  // no interval left to reach it
      const kernel_link_bytes none;
      handler_.kernel_done(key, window.sampled ? &none : nullptr);
      return;
    }
  }
  // Kernels come mostly in begin order: insert from the back.
  auto at = window.kernels.end();
  while (at != window.kernels.begin() && std::prev(at)->begin_ns > begin_ns) --at;
  window.kernels.insert(at, held_kernel{begin_ns, end_ns, key, {}});
  window.kernels_reached_ns = std::max(window.kernels_reached_ns, end_ns);
  const std::size_t limit = window.sampled ? window_limit : unsampled_limit;
  while (window.kernels.size() > limit) {
    const held_kernel oldest = window.kernels.front();
    window.kernels.pop_front();
    if (window.sampled) ++settled_at_limit_;
    handler_.kernel_done(oldest.key, window.sampled ? &oldest.bytes : nullptr);
  }
  if (window.sampled) settle(device, window, false);
}

void link_attribution::add_intervals(const runtime::gpu_metric_interval* intervals,
                                     std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    const runtime::gpu_metric_interval& interval = intervals[i];
    device_window& window = this->window(interval.device);
    if (!window.sampled || interval.values == nullptr) continue;
    held_interval held{interval.begin_ns, std::max(interval.end_ns, interval.begin_ns), {}, drain_};
    for (std::size_t counter = 0; counter < link_counters; ++counter) {
      if (!window.index[counter]) continue;
      const double value = interval.values[*window.index[counter]];
      held.bytes[counter] = std::isfinite(value) && value > 0 ? value : 0;
    }
    window.intervals.push_back(held);
    if (window.intervals.size() > window_limit) {
      ++settled_at_limit_;
      attribute_front(interval.device, window);
    }
  }
  for (auto& [device, window] : windows_)
    if (window.sampled) settle(device, window, false);
}

void link_attribution::end_drain() {
  for (auto& [device, window] : windows_) {
    if (!window.sampled) {
      retire_all(window);
      continue;
    }
    // Intervals of an earlier drain: their kernels had this whole drain to come.
    while (!window.intervals.empty() && window.intervals.front().drain < drain_)
      attribute_front(device, window);
    retire_passed(window);
  }
  ++drain_;
}

void link_attribution::finish() {
  for (auto& [device, window] : windows_) {
    if (window.sampled) settle(device, window, true);
    retire_all(window);
  }
}

void link_attribution::settle(std::uint32_t device, device_window& window, bool everything) {
  while (!window.intervals.empty() &&
         (everything || window.intervals.front().end_ns <= window.kernels_reached_ns))
    attribute_front(device, window);
  retire_passed(window);
}

void link_attribution::attribute_front(std::uint32_t device, device_window& window) {
  const held_interval interval = window.intervals.front();
  window.intervals.pop_front();
  overlaps_.clear();
  std::int64_t overlapped_ns = 0;
  for (held_kernel& kernel : window.kernels) {
    if (kernel.begin_ns >= interval.end_ns) break;
    const std::int64_t ns = std::min(kernel.end_ns, interval.end_ns) -
                            std::max(kernel.begin_ns, interval.begin_ns);
    if (ns <= 0) continue;
    overlaps_.push_back({&kernel, ns});
    overlapped_ns += ns;
  }
  window.attributed_to_ns = std::max(window.attributed_to_ns, interval.end_ns);
  if (overlaps_.empty()) {
    handler_.interval_done(device, link_share::no_kernel, interval.bytes);
  } else if (overlaps_.size() == 1) {
    kernel_link_bytes& bytes = overlaps_.front().kernel->bytes;
    for (std::size_t i = 0; i < link_counters; ++i) bytes.exact[i] += interval.bytes[i];
    ++bytes.intervals;
    handler_.interval_done(device, link_share::exact, interval.bytes);
  } else {
    for (const overlap& part : overlaps_) {
      const double fraction =
          static_cast<double>(part.ns) / static_cast<double>(overlapped_ns);
      kernel_link_bytes& bytes = part.kernel->bytes;
      for (std::size_t i = 0; i < link_counters; ++i) bytes.shared[i] += interval.bytes[i] * fraction;
      ++bytes.intervals;
    }
    handler_.interval_done(device, link_share::shared, interval.bytes);
  }
  // The earliest kernels are usually the ones the intervals have passed.
  while (!window.kernels.empty() && window.kernels.front().end_ns <= window.attributed_to_ns) {
    const held_kernel done = window.kernels.front();
    window.kernels.pop_front();
    handler_.kernel_done(done.key, &done.bytes);
  }
}

void link_attribution::retire_passed(device_window& window) {
  const auto passed = [&window](const held_kernel& kernel) {
    return kernel.end_ns <= window.attributed_to_ns;
  };
  // Held by begin time, and a kernel ends after it begins: only those begun
  // by the attributed time can have passed. Scanning the rest at every kernel
  // made a launch storm quadratic while a long interval held its kernels.
  auto begun = window.kernels.begin();
  bool any = false;
  for (; begun != window.kernels.end() && begun->begin_ns <= window.attributed_to_ns; ++begun)
    any = any || passed(*begun);
  if (!any) return;
  for (auto kernel = window.kernels.begin(); kernel != begun; ++kernel)
    if (passed(*kernel)) handler_.kernel_done(kernel->key, &kernel->bytes);
  window.kernels.erase(std::remove_if(window.kernels.begin(), begun, passed), begun);
}

void link_attribution::retire_all(device_window& window) {
  for (const held_kernel& kernel : window.kernels)
    handler_.kernel_done(kernel.key, window.sampled ? &kernel.bytes : nullptr);
  window.kernels.clear();
}

}  // namespace ferret::profile
