// kernel_timing.cpp — see kernel_timing.hpp.
#include "kernel_timing.hpp"

#include <algorithm>

namespace ferret::compute_sanitizer {

void global_timer_clock::bound(std::int64_t submitted_ns, std::uint64_t entered) noexcept {
  offset_ = std::min(offset_, static_cast<std::int64_t>(entered) - submitted_ns);
}

runtime::gpu_kernel_remote_traffic kernel_remote_traffic(const runtime::gpu_remote_access_batch* batches,
                                                         std::size_t count) {
  using traffic = runtime::gpu_kernel_remote_traffic;
  std::vector<traffic::target> targets;
  for (std::size_t b = 0; b < count; ++b)
    for (const runtime::gpu_remote_access_batch::access& access : batches[b].accesses) {
      auto it = std::find_if(targets.begin(), targets.end(),
                             [&](const traffic::target& t) { return t.device == access.target_device; });
      if (it == targets.end()) it = targets.insert(targets.end(), traffic::target{access.target_device, 0, 0});
      (access.kind == runtime::memory_access::load ? it->loaded_bytes : it->stored_bytes) += access.bytes;
    }
  std::stable_sort(targets.begin(), targets.end(), [](const traffic::target& a, const traffic::target& b) {
    return a.loaded_bytes + a.stored_bytes > b.loaded_bytes + b.stored_bytes;
  });
  traffic totals{};
  totals.target_count = static_cast<std::uint32_t>(std::min(targets.size(), traffic::max_targets));
  std::copy_n(targets.begin(), totals.target_count, totals.targets);
  return totals;
}

}  // namespace ferret::compute_sanitizer
