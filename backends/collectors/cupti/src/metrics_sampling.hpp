// metrics_sampling.hpp — a GPU's hardware counters sampled at a fixed interval
// (CUPTI's PM sampling, FERRET_CUDA_METRICS_SAMPLING): NVLink, PCIe and DRAM
// bytes and SM activity, per device, with nothing replayed.
//
//   program thread (context created)         drain thread (collect)
//   ────────────────────────────────         ──────────────────────
//   the device's first context: ask which    take(): cuptiPmSamplingDecodeData
//     counters it has (profiler host API),     into the counter data image; each
//     build the one-pass config image,         completed sample's times and values
//     enable, configure, start                 (host API evaluation) ─▶ intervals
//                                             final: stop, decode the rest, disable
//
// Nothing runs per API call. The functions are looked up in the loaded libcupti,
// so an older one without them gives one line and the collector runs on.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "ferret/runtime/backend.hpp"
#include "ferret/runtime/runtime.hpp"
#include "metrics_sampling_setting.hpp"

namespace ferret::cupti {

class metrics_sampler {
 public:
  /// nullptr, with the reason in `error`, where libcupti lacks PM sampling.
  static std::unique_ptr<metrics_sampler> start(metrics_sampling_setting setting, std::string& error);
  ~metrics_sampler();
  metrics_sampler(const metrics_sampler&) = delete;
  metrics_sampler& operator=(const metrics_sampler&) = delete;

  /// A context on `device` exists: sample it from the next drain on, once per
  /// device (set up on the drain thread: the profiler's set-up neither runs
  /// inside a CUPTI callback nor delays the program's thread).
  void device_used(std::uint32_t device);
  /// Decodes what the devices sampled since the last call (final: and stops).
  void take(std::vector<runtime::gpu_metric_set>& new_sets, std::vector<runtime::gpu_metric_batch>& batches,
            bool final);
  void add_metadata(runtime::metadata_list& metadata) const;

 private:
  struct functions;
  struct device_state;

  metrics_sampler(metrics_sampling_setting setting, std::unique_ptr<functions> api);
  void begin_sampling(std::uint32_t device);  // under mutex_
  // At exit, before the profiler's own exit handlers free its state: stops
  // every device and keeps what it sampled for the final take().
  static void end_sampling_at_exit();
  void end_sampling();
  bool start_device(device_state& state, std::string& error);
  void decode(device_state& state, std::vector<runtime::gpu_metric_batch>& batches);
  // Stops the device's sampling, decodes the rest and disables it.
  void decode_last(device_state& state, std::vector<runtime::gpu_metric_batch>& batches);
  void evaluate(device_state& state, std::size_t first, std::size_t completed, runtime::gpu_metric_batch& batch);
  void stop(device_state& state);

  const metrics_sampling_setting setting_;
  std::unique_ptr<functions> api_;
  mutable std::mutex mutex_;  // everything below
  std::map<std::uint32_t, std::unique_ptr<device_state>> devices_;
  std::set<std::uint32_t> refused_devices_;
  std::set<std::uint32_t> waiting_devices_;  // used, not yet set up
  bool exit_handler_registered_ = false;
  bool ended_ = false;  // end_sampling() ran: no more CUPTI calls
  std::vector<runtime::gpu_metric_batch> ended_batches_;  // its last samples
  std::vector<runtime::gpu_metric_set> new_sets_;
  std::set<std::string> said_missing_;
  bool said_decode_failed_ = false;
  std::uint64_t overflows_ = 0, decode_failures_ = 0, samples_ = 0;
  std::string clock_;  // which clock the samples' times were found on
};

}  // namespace ferret::cupti
