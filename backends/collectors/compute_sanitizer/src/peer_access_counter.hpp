// peer_access_counter.hpp — device-initiated traffic, counted exactly
// (FERRET_CUDA_PEER_ACCESSES=1): the Compute Sanitizer patches every global
// memory access of each module the program loads with ferret's device
// function (peer_access_patch.cu), which counts on the device the accesses
// that leave the executing GPU's memory; nothing per access reaches the host.
//
// The Compute Sanitizer and CUPTI exclude each other in a process (measured,
// CUDA 13.0: once the sanitizer has a subscriber CUPTI refuses every call
// with CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; a sanitizer subscribed
// after CUPTI gets no callback), so a counting run takes the API calls from
// the sanitizer's driver callbacks too (forwarded to the collector, which
// gives each outermost call its correlation id), and its kernels' times from
// the patch (kernel_timing.hpp): no copies, memsets or other GPU operations.
//
//   program thread (sanitizer callbacks)       drain thread (collect)
//   ────────────────────────────────────       ──────────────────────
//   module loaded: add ferret's patch,          every launch in flight: copy
//     patch its global accesses                   its counters back on its own
//   memory allocated/freed: the ranges            stream (the copy waits for the
//   launch begin: a counter slot for the          kernel), decode them
//     launch, the current range table on          (peer_access_decoder) into
//     its device; joined to its launch            per-instruction batches and
//     call's correlation id                       a timed kernel, zero the
//                                                 slot, free it
//   no slot free, a stream or context going:
//     read back its launches there
//
// Host memory the sanitizer does not report is taken from the driver calls
// that make it reachable from the device: cuMemHostRegister (NCCL's shared
// memory segments) and cuMemMap of a handle cuMemCreate made in host memory
// (NCCL's cuMem host allocations).
//
// Counted: kernels launched through the launch APIs, and the kernel nodes of
// CUDA graphs launched from the host: a graph launch's kernels share one
// counter slot (the sanitizer gives them all the data set for its last node),
// so their bytes are exact per kernel function and line, joined to the graph
// launch's call, but they have no kernel events of their own. Not counted:
// graphs launched from the device.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ferret/runtime/runtime.hpp"
#include "kernel_timing.hpp"
#include "memory_ranges.hpp"
#include "peer_access_decoder.hpp"
#include "sanitizer_api.hpp"

namespace ferret::compute_sanitizer {

class peer_access_counter {
 public:
  /// Source lines from the cubins of loaded modules: which cubins have a line
  /// table (only those are kept), and the line of a function's instruction.
  struct cubin_lines {
    std::function<bool(const char* cubin, std::size_t bytes)> has_lines;
    // The functions a cubin holds (mangled), device functions too: an access
    // in one the kernel calls without inlining is found by its code address.
    std::function<std::vector<std::string>(const char* cubin, std::size_t bytes)> function_names;
    // The file's path and line; nullopt without one.
    std::function<std::optional<std::pair<std::string, std::uint32_t>>(
        const std::string& cubin, const char* function, std::uint64_t pc_offset)>
        line_of;
  };
  /// The program's driver API calls, forwarded from the sanitizer's callbacks
  /// (on the calling thread, at entry and at exit; `cbid` numbers are CUPTI's:
  /// both APIs number driver calls alike). Not for calls made while the
  /// counter itself calls CUDA.
  using driver_call_handler = void (*)(std::uint32_t cbid, const api::callback_data& call);
  /// Loads the Compute Sanitizer and subscribes; on failure returns nullptr
  /// and sets `error` to one line.
  static std::unique_ptr<peer_access_counter> start(cubin_lines lines, driver_call_handler on_driver_call,
                                                    std::string& error);
  /// Forwards the calls with this callback id to the handler; false if refused.
  bool forward_driver_call(std::uint32_t cbid);
  /// The device of a context the program created (0 if unknown).
  std::uint32_t device_of(CUcontext context) const;
  ~peer_access_counter();
  peer_access_counter(const peer_access_counter&) = delete;
  peer_access_counter& operator=(const peer_access_counter&) = delete;

  /// On the launching thread, at the entry of a launch call: the correlation
  /// id the launch's counters are joined with.
  static void note_launch_call(std::uint64_t correlation) noexcept;
  /// At the exit of that call.
  static void end_launch_call(std::uint64_t correlation) noexcept;

  /// Reads back every launch in flight (waiting, on each launch's stream, for
  /// its kernel to end) into batches for hand_over and kernels for hand_over_kernels.
  void collect(bool final);
  void hand_over(std::vector<runtime::gpu_remote_access_batch>& batches);
  /// The kernels read back since the last call, timed on CLOCK_MONOTONIC_RAW;
  /// their `remote` stays valid until the next call.
  void hand_over_kernels(std::vector<runtime::gpu_activity>& kernels);
  void add_metadata(runtime::metadata_list& metadata) const;

  /// While one lives, the CUDA calls this thread makes are ferret's own: not
  /// forwarded as the program's, not followed for memory.
  class own_calls {
   public:
    own_calls();
    ~own_calls();
    own_calls(const own_calls&) = delete;
    own_calls& operator=(const own_calls&) = delete;

   private:
    bool outer_;  // nested: a read-back inside a launch callback
  };

 private:
  struct context_state;
  struct device_table;
  struct launch_in_flight;

  peer_access_counter(api::functions functions, cubin_lines lines, driver_call_handler on_driver_call);
  static void on_callback(void* self, int domain, api::callback_id id, const void* data);
  void on_resource(api::callback_id id, const void* data);
  void on_host_memory_call(api::callback_id id, const api::callback_data& call);
  // A launch, or a kernel node of a graph's launch.
  void on_launch_begin(const api::launch_data& launch, bool graph_node);
  void module_loaded(const api::resource_module_data& module);
  // Maps the code addresses of a module's functions not yet mapped (lazily
  // loaded ones are retried at the module's first launches, a bounded number
  // of times: a name the sanitizer never resolves costs no more after that).
  void map_functions(CUmodule module, std::uint64_t module_id);  // under mutex_
  // Maps one function's code addresses; false when the sanitizer has none (yet).
  bool map_function(CUmodule module, const char* name, std::uint64_t module_id);  // under mutex_
  context_state* context_of(CUcontext context);  // under mutex_
  bool prepare_slab(context_state& state, CUcontext context);
  // Takes out of launches_ those `which` selects (under mutex_).
  template <typename Predicate>
  std::vector<launch_in_flight> take_launches(Predicate which);
  // Reads back and decodes launches taken out of launches_; without mutex_ held.
  void finish(std::vector<launch_in_flight>& launches);
  device_table* current_table(context_state& state, api::stream_handle stream);  // under mutex_
  void release_tables(context_state& state);  // under mutex_
  // A range the process owns (an allocation, or host memory mapped for the
  // devices): it replaces any peer view recorded at its address. Under mutex_.
  void own_range(std::uint64_t address, std::uint64_t bytes, std::int32_t device);
  enum class read_result { counters, no_counter_used, failed };
  // Copies a launch's header and counters back (without mutex_: it waits for the
  // kernel); a header that could not be read is zero.
  read_result read_back(const launch_in_flight& launch, ferret_peer_launch& header,
                        std::vector<ferret_peer_counter>& counters) const;
  // A kernel's registers, static shared and local memory, from the driver once
  // per function (under mutex_); grid and block left to the caller.
  runtime::kernel_attributes resources_of(CUfunction function);
  // The launch's kernel, timed from its header, with the bytes of its batches (under mutex_).
  void add_kernel(const launch_in_flight& launch, const ferret_peer_launch& header,
                  const runtime::gpu_remote_access_batch* batches, std::size_t batch_count);
  std::string error_text(api::result result) const;
  source_line line_of(const function_map::function& function, std::uint64_t offset);  // under mutex_

  const api::functions api_;
  const cubin_lines lines_from_cubins_;
  const driver_call_handler on_driver_call_;
  api::subscriber_handle subscriber_ = nullptr;

  mutable std::mutex mutex_;  // guards everything below; never held while calling CUDA from the drain
  std::condition_variable launches_finished_;  // a context's in_hands went to 0
  memory_ranges ranges_;
  std::unordered_set<std::uint64_t> peer_views_;  // ranges_ entries taken from peer views
  std::unordered_set<std::uint64_t> host_mappings_;  // ranges_ entries taken from host memory calls
  std::unordered_set<CUmemGenericAllocationHandle> host_handles_;  // cuMemCreate'd in host memory
  static constexpr std::uint32_t most_driver_calls = 1024;
  std::array<std::atomic<bool>, most_driver_calls> forwarded_{};  // by callback id
  std::unordered_map<CUcontext, std::unique_ptr<context_state>> contexts_;
  std::unordered_map<std::uint64_t, std::string> cubins_;  // with line information, by module id
  std::unordered_map<CUmodule, std::uint64_t> module_ids_;
  struct unmapped_functions {
    std::vector<std::string> names;
    std::uint32_t tries = 0;  // at load, then at the module's first launches
  };
  std::unordered_map<std::uint64_t, unmapped_functions> unmapped_functions_;  // by module id
  std::uint64_t next_module_id_ = 1;
  function_map functions_;
  std::unordered_map<CUcontext, std::uint32_t> devices_;
  std::unordered_map<std::uint64_t, launch_in_flight> launches_;  // by order: a graph's share a correlation id
  std::uint64_t launch_order_ = 0;
  std::vector<runtime::gpu_remote_access_batch> batches_;
  struct timed_kernel {
    runtime::gpu_activity activity;
    std::unique_ptr<runtime::gpu_kernel_remote_traffic> remote;  // nullptr: it reached no other memory
  };
  std::vector<timed_kernel> kernels_;         // read back, not yet handed over
  std::vector<timed_kernel> kernels_handed_;  // what the last hand_over_kernels' `remote` point into
  std::unordered_map<std::uint32_t, global_timer_clock> timer_clocks_;  // by device
  std::unordered_map<api::stream_handle, std::uint32_t> stream_ids_;  // of streams that exist
  std::uint32_t next_stream_id_ = 1;  // in order of first launch
  using function_attribute_fn = CUresult (*)(int*, CUfunction_attribute, CUfunction);
  function_attribute_fn get_function_attribute_ = nullptr;  // cuFuncGetAttribute, once the driver is loaded
  std::unordered_map<CUfunction, runtime::kernel_attributes> function_resources_;
  decode_losses losses_;
  std::uint64_t modules_patched_ = 0;
  std::uint64_t modules_refused_ = 0;
  std::uint64_t launches_counted_ = 0;
  std::uint64_t launches_without_slot_ = 0;
  std::uint64_t launches_waited_for_slot_ = 0;
  std::uint64_t launches_without_call_ = 0;
  std::uint64_t read_failures_ = 0;
  std::uint64_t kernels_untimed_ = 0;  // read back without a block's entry and exit noted
  std::uint64_t graph_kernel_nodes_ = 0;  // kernel nodes of graph launches counted
  std::unordered_set<std::string> interned_names_;  // functions and files: stable c_str()
  std::map<std::pair<std::uint64_t, std::uint64_t>, source_line> lines_;  // by function start, offset
  bool said_refusal_ = false;
};

}  // namespace ferret::compute_sanitizer
