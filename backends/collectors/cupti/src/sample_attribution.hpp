// sample_attribution.hpp — which kernel launch PC samples belong to.
//
// In continuous mode (the one that leaves concurrent kernels concurrent) CUPTI
// does not say which launch a sample came from: a collection gives, per
// function, instruction and stall reason, the samples taken since the last
// one. So samples are shared among the launches of their function that ran
// in the collection's window, by the time each ran in it:
//
//   collect():  GetData ─▶ add() per instruction, collected(now)
//               activity flush ─▶ hold_kernels(): kernels wait here
//               release(now): pending samples of a function ─▶ shared among its
//                 held launches; a launch leaves (with its totals) once
//                 `latency` has passed since its end, so that CUPTI's
//                 decoding has delivered all its samples
//
// Samples of a function none of whose launches is held go to its launches
// released in the last `recent` (samples that came later than the latency:
// their calling contexts are right, the launches' totals already written
// miss them), else wait for a launch (a record arrives after its samples when
// the kernel ends between the two); at the end of the session what still
// waits goes to no launch (the runtime counts it). Memory: the held launches of one latency, and per function at most
// one entry per (instruction, reason). No libcupti calls: unit-tested
// without a GPU.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ferret/runtime/backend.hpp"
#include "ferret/runtime/runtime.hpp"

namespace ferret::cupti {

class sample_attribution {
 public:
  /// What turns a launch's duration into the samples it could give (GSAMP:EXP).
  struct device_clock {
    std::uint32_t multiprocessors = 0;
    double cycles_per_ns = 0;        // the SM clock
    std::uint32_t period_cycles = 0;  // between two samples of one SM
  };

  explicit sample_attribution(std::int64_t latency_ns) : latency_ns_(latency_ns) {}

  /// A device whose kernels are sampled (only their kernels wait for samples).
  void set_device(std::uint32_t device, device_clock clock) { clocks_[device] = clock; }

  /// Samples at one instruction with one reason, from the collection now
  /// under way. `function` and `file` live as long as the session.
  void add(std::uint32_t device, const char* function, std::uint64_t pc_offset, const char* file,
           std::uint32_t line, const runtime::gpu_stall_reason* reason, std::uint32_t samples);
  /// The collection ended at host time `now_ns` (CLOCK_MONOTONIC_RAW, as activities).
  void collected(std::int64_t now_ns);

  /// Takes the kernels out of `activities`: they wait for their samples.
  void hold_kernels(std::vector<runtime::gpu_activity>& activities);

  /// Shares the pending samples among the held launches and appends to
  /// `activities` the launches whose samples are all in (every one when
  /// `final`), with their totals (valid until the next call), and to
  /// `batches` the shared samples.
  void release(std::int64_t now_ns, bool final, std::vector<runtime::gpu_activity>& activities,
               std::vector<runtime::gpu_sample_batch>& batches);

  std::size_t held_kernels() const noexcept { return held_.size(); }
  std::size_t pending_functions() const noexcept { return pending_.size(); }

 private:
  // Released launches, for samples that come late: what sharing needs of them.
  struct released_kernel {
    std::uint32_t device;
    const char* name;
    std::uint64_t correlation;
    std::int64_t start_ns, end_ns, released_ns;
  };
  struct held_kernel {
    runtime::gpu_activity activity;
    double samples = 0;
    double by_stall[runtime::gpu_stall_classes] = {};
    std::vector<std::pair<const runtime::gpu_stall_reason*, double>> reasons;
  };
  struct instruction_key {
    std::uint64_t pc_offset;
    const runtime::gpu_stall_reason* reason;
    bool operator<(const instruction_key& other) const noexcept {
      return pc_offset != other.pc_offset ? pc_offset < other.pc_offset : reason < other.reason;
    }
  };
  // Samples of one function on one device not yet shared, and the window they came in.
  struct pending_function {
    std::int64_t first_ns = 0;  // the collection before the first of them
    std::int64_t last_ns = 0;   // the collection that brought the last of them
    std::vector<runtime::gpu_sample_batch::instruction> instructions;
    std::map<instruction_key, std::size_t> index;  // into instructions
  };
  using function_key = std::pair<std::uint32_t, const char*>;  // device, function

  // The held and recently released launches of each function on each device,
  // made once per release() (a drain may hold many launches, a PyTorch step
  // hundreds of functions: sharing must not compare every pair).
  struct launches_by_function {
    std::map<std::pair<std::uint32_t, std::string_view>, std::vector<held_kernel*>> held;
    std::map<std::pair<std::uint32_t, std::string_view>, std::vector<const released_kernel*>> recent;
  };
  launches_by_function index_launches();
  bool share(const function_key& key, pending_function& pending, const launches_by_function& launches,
             std::vector<runtime::gpu_sample_batch>& batches);
  runtime::gpu_kernel_samples totals_of(const held_kernel& kernel) const;

  // How long released launches stay candidates for late samples (CUPTI
  // decodes every 10 ms; memory: the launches of this long).
  static constexpr std::int64_t recent_ns = 500'000'000;
  const std::int64_t latency_ns_;
  std::unordered_map<std::uint32_t, device_clock> clocks_;
  std::deque<held_kernel> held_;
  std::deque<released_kernel> recent_;  // oldest first
  std::map<function_key, pending_function> pending_;
  std::vector<function_key> touched_;  // functions with samples in the collection under way
  std::int64_t previous_collection_ns_ = 0;
  std::deque<runtime::gpu_kernel_samples> released_totals_;
};

}  // namespace ferret::cupti
