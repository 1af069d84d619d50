#include "support/synthetic_gpu.hpp"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "ferret/ferret.hpp"
#include "ferret/runtime/context_source.hpp"
#include "ferret/runtime/runtime.hpp"

namespace ferret::testing {
namespace {

std::int64_t monotonic_raw_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

class synthetic_collector final : public runtime::collector {
 public:
  // `name`: a kernel's, kept for the backends (a deque's elements stay put).
  // Operations of the one stream run one after the other, as on a GPU.
  void queue(const runtime::gpu_activity& activity, const char* name) {
    std::lock_guard lock{mutex_};
    queued_.push_back(activity);
    runtime::gpu_activity& queued = queued_.back();
    const std::int64_t duration = queued.end_ns - queued.start_ns;
    queued.start_ns = std::max(queued.start_ns, stream_free_ns_);
    queued.end_ns = queued.start_ns + duration;
    stream_free_ns_ = queued.end_ns + 1;
    if (name != nullptr) queued_.back().name = names_.emplace_back(name).c_str();
  }
  void collect(std::vector<runtime::gpu_activity>& activities,
               std::vector<runtime::gpu_device_info>& devices, bool) override {
    std::lock_guard lock{mutex_};
    if (!described_) {
      runtime::gpu_device_info device{};
      device.name = "Synthetic GPU";
      device.multiprocessors = 1;
      devices.push_back(device);
      described_ = true;
    }
    activities.insert(activities.end(), queued_.begin(), queued_.end());
    queued_.clear();
  }
  void add_metadata(runtime::metadata_list&) const override {}
  void abandon() noexcept override {}

 private:
  std::mutex mutex_;
  bool described_ = false;
  std::int64_t stream_free_ns_ = 0;
  std::deque<std::string> names_;
  std::vector<runtime::gpu_activity> queued_;
};

synthetic_collector* collector() {
  static synthetic_collector* instance = [] {
    auto* made = new synthetic_collector;  // collectors outlive the process's statics
    if (runtime::register_collector(made)) {
      runtime::load_launch_context_sources();  // as the CUDA collector does when it starts
      return made;
    }
    delete made;  // no session: nothing to hand operations to
    return static_cast<synthetic_collector*>(nullptr);
  }();
  return instance;
}

std::atomic<std::uint64_t> g_correlation{1};

// What backends/collectors/cupti/src/collector.cpp writes at the entry of a call that
// creates GPU work, and the end of the call; returns the correlation id.
std::uint64_t api_call(const char* name) {
  const detail::runtime_api* api = detail::runtime();
  const detail::site* call = api->register_name(name, std::strlen(name), "cuda");
  const std::uint64_t correlation = g_correlation.fetch_add(1);
  detail::write(detail::word_of(call, detail::kind_begin));
  runtime::record_launch_context();
  detail::write_with_payload(detail::word_of(call, detail::kind_correlation), correlation);
  detail::write(detail::word_of(call, detail::kind_end));
  return correlation;
}

runtime::gpu_activity operation(runtime::gpu_operation kind, std::uint64_t correlation,
                                std::int64_t duration_ns) {
  runtime::gpu_activity activity{};
  activity.operation = kind;
  activity.start_ns = monotonic_raw_ns();
  activity.end_ns = activity.start_ns + duration_ns;
  activity.stream = 7;
  activity.launch.correlation = correlation;
  return activity;
}

}  // namespace

void synthetic_launch(const char* kernel, std::int64_t duration_ns) {
  synthetic_collector* gpu = collector();
  if (gpu == nullptr || !detail::recording()) return;
  runtime::gpu_activity activity =
      operation(runtime::gpu_operation::kernel, api_call("cudaLaunchKernel"), duration_ns);
  activity.kernel.grid[0] = activity.kernel.grid[1] = activity.kernel.grid[2] = 1;
  activity.kernel.block[0] = activity.kernel.block[1] = activity.kernel.block[2] = 32;
  activity.kernel.occupancy = -1;
  gpu->queue(activity, kernel);
}

void synthetic_copy(std::uint64_t bytes) {
  synthetic_collector* gpu = collector();
  if (gpu == nullptr || !detail::recording()) return;
  runtime::gpu_activity activity =
      operation(runtime::gpu_operation::memcpy, api_call("cudaMemcpyAsync"), 2000);
  activity.bytes = bytes;
  activity.copy = runtime::copy_kind::host_to_device;
  activity.source_device = -1;
  activity.destination_device = 0;
  gpu->queue(activity, nullptr);
}

}  // namespace ferret::testing
