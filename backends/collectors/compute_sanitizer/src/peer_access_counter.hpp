// peer_access_counter.hpp — device-initiated traffic, counted exactly
// (FERRET_CUDA_PEER_ACCESSES=1): the Compute Sanitizer patches every global
// memory access of each module the program loads with ferret's device
// function (peer_access_patch.cu), which counts on the device the accesses
// that leave the executing GPU's memory; nothing per access reaches the host.
//
//   program thread (sanitizer callbacks)       drain thread (collect)
//   ────────────────────────────────────       ──────────────────────
//   module loaded: add ferret's patch,          kernels whose records arrived
//     patch its global accesses                   (they ended): copy their
//   memory allocated/freed: the ranges            counters back, decode them
//   launch begin: a counter slot for the          (peer_access_decoder) into
//     launch, the current range table on          the launch's totals and
//     its device; joined to the CUPTI             per-instruction batches,
//     launch call's correlation id                zero the slot, free it
//
// Counted: kernels launched through the launch APIs. Not yet: kernels replayed
// from CUDA graphs (their launches carry no counter slot, the patch returns at
// once), accesses in device functions the kernel calls without inlining
// (counted as outside functions).
#pragma once

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
    // The file's path and line; nullopt without one.
    std::function<std::optional<std::pair<std::string, std::uint32_t>>(
        const std::string& cubin, const char* function, std::uint64_t pc_offset)>
        line_of;
  };
  /// Loads the Compute Sanitizer and subscribes; on failure returns nullptr
  /// and sets `error` to one line.
  static std::unique_ptr<peer_access_counter> start(cubin_lines lines, std::string& error);
  ~peer_access_counter();
  peer_access_counter(const peer_access_counter&) = delete;
  peer_access_counter& operator=(const peer_access_counter&) = delete;

  /// On the launching thread, at the entry of a launch call (CUPTI's API
  /// callback): the correlation id the launch's counters are joined with.
  static void note_launch_call(std::uint64_t correlation) noexcept;
  /// At the exit of that call.
  static void end_launch_call(std::uint64_t correlation) noexcept;

  /// Kernels of `activities` whose launches were counted get their totals
  /// (gpu_activity::remote, valid until the next call) and their counters
  /// become batches for hand_over. Call after the activity flush.
  void collect(std::vector<runtime::gpu_activity>& activities, bool final);
  void hand_over(std::vector<runtime::gpu_remote_access_batch>& batches);
  void add_metadata(runtime::metadata_list& metadata) const;

 private:
  struct context_state;
  struct device_table;
  struct launch_in_flight;

  peer_access_counter(api::functions functions, cubin_lines lines);
  static void on_callback(void* self, int domain, api::callback_id id, const void* data);
  void on_resource(api::callback_id id, const void* data);
  void on_launch_begin(const api::launch_data& launch);
  void module_loaded(const api::resource_module_data& module);
  context_state* context_of(CUcontext context);  // under mutex_
  bool prepare_slab(context_state& state, CUcontext context);
  device_table* current_table(context_state& state, api::stream_handle stream);  // under mutex_
  void release_tables(context_state& state);  // under mutex_
  // Copies a launch's counters back; false when it took none (nothing to zero).
  bool read_back(launch_in_flight& launch, std::vector<ferret_peer_counter>& counters,
                 std::uint64_t (&lost)[ferret_peer_loss_reasons]);
  std::string error_text(api::result result) const;
  source_line line_of(const function_map::function& function, std::uint64_t offset);  // under mutex_

  const api::functions api_;
  const cubin_lines lines_from_cubins_;
  api::subscriber_handle subscriber_ = nullptr;

  mutable std::mutex mutex_;  // guards everything below; never held while calling CUDA from the drain
  memory_ranges ranges_;
  std::unordered_map<CUcontext, std::unique_ptr<context_state>> contexts_;
  std::unordered_map<std::uint64_t, std::string> cubins_;  // with line information, by module id
  std::unordered_map<CUmodule, std::uint64_t> module_ids_;
  std::uint64_t next_module_id_ = 1;
  function_map functions_;
  std::unordered_map<std::uint64_t, launch_in_flight> launches_;  // by correlation id
  std::vector<runtime::gpu_remote_access_batch> batches_;
  std::deque<runtime::gpu_kernel_remote_traffic> totals_;  // pointed to by the last collect's activities
  decode_losses losses_;
  std::uint64_t modules_patched_ = 0;
  std::uint64_t modules_refused_ = 0;
  std::uint64_t launches_counted_ = 0;
  std::uint64_t launches_without_slot_ = 0;
  std::uint64_t launches_without_call_ = 0;
  std::uint64_t read_failures_ = 0;
  std::uint64_t launches_never_ended_ = 0;
  std::unordered_set<std::string> interned_names_;  // functions and files: stable c_str()
  std::map<std::pair<std::uint64_t, std::uint64_t>, source_line> lines_;  // by function start, offset
  bool said_refusal_ = false;
};

}  // namespace ferret::compute_sanitizer
