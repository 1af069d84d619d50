#include "sampled_metrics.hpp"

namespace ferret::cupti {

const std::vector<runtime::gpu_metric>& wanted_metrics() {
  static const std::vector<runtime::gpu_metric> metrics{
      {"nvltx__bytes.sum", "NVLink bytes sent", "bytes", true},
      {"nvlrx__bytes.sum", "NVLink bytes received", "bytes", true},
      {"pcie__read_bytes.sum", "PCIe bytes read", "bytes", true},
      {"pcie__write_bytes.sum", "PCIe bytes written", "bytes", true},
      {"dram__bytes_read.sum", "DRAM bytes read", "bytes", true},
      {"dram__bytes_write.sum", "DRAM bytes written", "bytes", true},
      {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "SMs active", "percent", false},
      // The payload alone, without NVLink's protocol overhead (16-byte granularity).
      {"nvltx__bytes_data_user.sum", "NVLink user bytes sent", "bytes", true},
      {"nvlrx__bytes_data_user.sum", "NVLink user bytes received", "bytes", true},
  };
  return metrics;
}

metric_selection select_metrics(const std::vector<runtime::gpu_metric>& wanted,
                                const std::function<bool(const std::string&)>& has,
                                const std::function<metric_fit(const std::vector<runtime::gpu_metric>&)>& fits) {
  metric_selection selection;
  for (const runtime::gpu_metric& metric : wanted) {
    if (!has(metric.name)) {
      selection.not_available.push_back(metric);
      continue;
    }
    std::vector<runtime::gpu_metric> with = selection.sampled;
    with.push_back(metric);
    switch (fits(with)) {
      case metric_fit::one_pass: selection.sampled = std::move(with); break;
      case metric_fit::more_passes: selection.left_out.push_back(metric); break;
      case metric_fit::refused: selection.not_available.push_back(metric); break;
    }
  }
  return selection;
}

std::string metric_names(const std::vector<runtime::gpu_metric>& metrics) {
  std::string names;
  for (const runtime::gpu_metric& metric : metrics) names += (names.empty() ? "" : ", ") + std::string{metric.name};
  return names;
}

sample_clock sample_clock_of(std::uint64_t newest_end, std::int64_t monotonic_raw_now,
                             std::uint64_t cupti_now) {
  const auto since = [&](std::int64_t now) { return now - static_cast<std::int64_t>(newest_end); };
  const std::int64_t raw = since(monotonic_raw_now);
  const std::int64_t cupti = since(static_cast<std::int64_t>(cupti_now));
  const auto magnitude = [](std::int64_t d) { return d < 0 ? -d : d; };
  if (raw >= 0 && cupti >= 0) return raw <= cupti ? sample_clock::monotonic_raw : sample_clock::cupti;
  if (raw >= 0) return sample_clock::monotonic_raw;
  if (cupti >= 0) return sample_clock::cupti;
  return magnitude(raw) <= magnitude(cupti) ? sample_clock::monotonic_raw : sample_clock::cupti;
}

void sample_converter::add(std::uint64_t start, std::uint64_t end, const double* values,
                           std::int64_t offset_ns, runtime::gpu_metric_batch& batch) {
  const std::uint64_t begin_ns = start + static_cast<std::uint64_t>(offset_ns);
  const std::uint64_t end_ns = end + static_cast<std::uint64_t>(offset_ns);
  if (end <= start || begin_ns < last_end_) {
    ++dropped_;
    return;
  }
  last_end_ = end_ns;
  batch.intervals.push_back({begin_ns, end_ns});
  batch.values.insert(batch.values.end(), values, values + metric_count_);
}

}  // namespace ferret::cupti
