// sampled_metrics.hpp — what FERRET_CUDA_METRICS_SAMPLING samples and how its
// samples become the runtime's intervals, apart from the CUPTI calls
// (metrics_sampling.cpp makes them): the counters wanted, the subset a device
// has that fits in one pass, which clock the samples' times are on, and the
// conversion of decoded samples into a gpu_metric_batch. No libcupti calls:
// unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ferret/runtime/backend.hpp"
#include "ferret/runtime/runtime.hpp"

namespace ferret::cupti {

/// The counters sampled where the device has them, most wanted first: when
/// they do not fit in one pass, the later ones are left out.
const std::vector<runtime::gpu_metric>& wanted_metrics();

struct metric_selection {
  std::vector<runtime::gpu_metric> sampled;        // in wanted order
  std::vector<runtime::gpu_metric> not_available;  // the device lacks them, or CUPTI refused them
  std::vector<runtime::gpu_metric> left_out;       // had, but beyond one pass
};

/// What configuring a set of counters gave.
enum class metric_fit { one_pass, more_passes, refused };

/// The wanted metrics the device has (`has`), each added to the set when the
/// set with it still configures in one pass (`fits`, asked once per metric
/// had, in wanted order). A metric CUPTI refuses leaves the others sampled: a
/// single H200 names the NVLink counters but refuses to configure them.
metric_selection select_metrics(const std::vector<runtime::gpu_metric>& wanted,
                                const std::function<bool(const std::string&)>& has,
                                const std::function<metric_fit(const std::vector<runtime::gpu_metric>&)>& fits);

/// "nvltx__bytes.sum, nvlrx__bytes.sum" — for the line that says what is missing.
std::string metric_names(const std::vector<runtime::gpu_metric>& metrics);

/// The clocks PM samples' times may be on: CUPTI documents them only as "CPU
/// based", so the first decode with samples tells (see sample_clock_of).
enum class sample_clock { monotonic_raw, cupti };

/// The clock on which the newest sample's end lies just before "now": the
/// sample ended before it was decoded. Where neither now follows the end,
/// the nearer one.
sample_clock sample_clock_of(std::uint64_t newest_end, std::int64_t monotonic_raw_now,
                             std::uint64_t cupti_now);

/// Decoded samples of one device turned into intervals on CLOCK_MONOTONIC_RAW
/// (timestamp + offset_ns): a sample that ends before it begins, or begins
/// before the previous one's end, is dropped and counted.
class sample_converter {
 public:
  explicit sample_converter(std::uint32_t device, std::size_t metric_count)
      : device_(device), metric_count_(metric_count) {}

  /// Appends one sample to `batch` (its device's), or counts it dropped.
  void add(std::uint64_t start, std::uint64_t end, const double* values, std::int64_t offset_ns,
           runtime::gpu_metric_batch& batch);

  std::uint32_t device() const noexcept { return device_; }
  std::uint64_t dropped() const noexcept { return dropped_; }

 private:
  std::uint32_t device_;
  std::size_t metric_count_;
  std::uint64_t last_end_ = 0;  // CLOCK_MONOTONIC_RAW
  std::uint64_t dropped_ = 0;
};

}  // namespace ferret::cupti
