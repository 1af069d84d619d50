// api_calls.hpp — what the CUDA collector does when the program enters and
// leaves a CUDA API call (CUPTI's runtime and driver API callbacks).
//
//   program thread, in the call's callback     what it is for
//   ───────────────────────────────────────     ──────────────────────────────
//   call that does or orders GPU work:
//     region begin, kind_correlation(id)        nests the call in the annotated
//     (copies, memsets: data objects by id)     regions; the runtime joins the
//     ... region end                            device records carrying the id
//     (allocations: an anonymous data object)   to this call and its context
//     (queries: the id on exit, if they found the work done; event records:
//     no id, no device record carries it)
//   other call: a count per name, or a region (FERRET_CUDA_API=all)
//
// Everything is written to the calling thread's own event buffer, on its
// clock: no lock on the way of a launch. A driver call made inside a runtime
// call is the runtime's implementation and is skipped: the device records of
// a runtime call carry the runtime call's correlation id (kernels, copies and
// synchronisations alike, as seen on the H100).
//
// No libcupti calls here (the collector passes what needs them), so the unit
// tests drive it with synthesised callback data.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "api_table.hpp"
#include "ferret/ferret.hpp"
#include "ferret/runtime/api_policy.hpp"
#include "ferret/runtime/backend.hpp"

namespace ferret::cupti {

/// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" ("_ptsz"/"_ptds" stay: they
/// are other entry points).
std::string api_name(const char* function);

class api_calls {
 public:
  /// What needs libcupti, supplied by the collector.
  struct services {
    /// The device ordinal of a context (allocations), 0 if unknown.
    std::uint32_t (*device_of)(CUcontext context) = nullptr;
    /// Hands over the records CUPTI holds (before cudaDeviceReset discards them).
    void (*deliver_records)() = nullptr;
  };

  api_calls(cuda_api_setting setting, services needs);

  runtime::api_recording recording() const noexcept { return setting_.recording; }

  /// A runtime or driver API callback (enter or exit).
  void on_api(CUpti_CallbackDomain domain, CUpti_CallbackId id, const CUpti_CallbackData& call);

  /// Sets the data objects of the copies and memsets in `activities` from
  /// their calls (matched by correlation id), or for those replayed from a CUDA
  /// graph from the call that captured their node; forgets calls a few drains old.
  void name_objects(std::vector<runtime::gpu_activity>& activities);

  /// CUDA graph nodes (CUPTI's resource callbacks): a copy or memset node made
  /// while its stream was captured takes the objects of the call that made it,
  /// on this thread; an instantiated graph's clone takes its original's.
  void graph_node_created(std::uint64_t node);
  void graph_node_cloned(std::uint64_t original, std::uint64_t clone);

  /// "cuda-api" (the recording in effect) and "cuda-api-unrecorded:<call>" for
  /// every call counted so far.
  void add_metadata(runtime::metadata_list& metadata) const;

 private:
  void enter(CUpti_CallbackDomain domain, CUpti_CallbackId id, const api_call& kind,
             const CUpti_CallbackData& call);
  void enter_work_call(CUpti_CallbackDomain domain, CUpti_CallbackId id, const api_call& kind,
                       const CUpti_CallbackData& call);
  void leave(CUpti_CallbackDomain domain, CUpti_CallbackId id, const api_call& kind,
             const CUpti_CallbackData& call);
  void count(CUpti_CallbackId id, const char* function) noexcept;
  const detail::site* site_for(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                               const char* function);

  const cuda_api_setting setting_;
  const runtime::api_recording recording_ = setting_.recording;
  const services services_;
  const api_table& table_ = api_table::cuda();

  // Region names by callback id, made at a call's first recording.
  std::vector<std::atomic<const detail::site*>> runtime_sites_ =
      std::vector<std::atomic<const detail::site*>>(CUPTI_RUNTIME_TRACE_CBID_SIZE);
  std::vector<std::atomic<const detail::site*>> driver_sites_ =
      std::vector<std::atomic<const detail::site*>>(CUPTI_DRIVER_TRACE_CBID_SIZE);

  // Counted runtime calls: one relaxed increment per call. CUPTI itself takes
  // a process-wide atomic per call (its correlation ids), so a per-thread
  // table would not make a counted call cheaper.
  std::vector<std::atomic<std::uint64_t>> counts_ =
      std::vector<std::atomic<std::uint64_t>>(CUPTI_RUNTIME_TRACE_CBID_SIZE);
  std::vector<std::atomic<const char*>> counted_names_ =
      std::vector<std::atomic<const char*>>(CUPTI_RUNTIME_TRACE_CBID_SIZE);

  // Data objects of copies and memsets, by correlation id, until the record comes.
  struct objects_of_call {
    std::uint64_t source;
    std::uint64_t destination;
    std::uint64_t cycle;
    std::uintptr_t source_address;  // where in the objects the call fell
    std::uintptr_t destination_address;
    // Both ends in device memory: a copy the driver stages through host memory
    // (peer access off) arrives as a DtoH and an HtoD record, each touching
    // only the object on its device side.
    bool between_devices;
  };
  std::mutex calls_mutex_;
  std::unordered_map<std::uint32_t, objects_of_call> objects_by_call_;
  // Graph nodes' objects, kept while records use them (replays may come at any time).
  std::unordered_map<std::uint64_t, objects_of_call> objects_by_graph_node_;
  std::uint64_t cycle_ = 0;  // name_objects() calls so far
  // Where each live physical allocation (cuMemCreate's handle) lives, until
  // cuMemRelease: a mapped range of it is a data object there.
  struct physical_memory {
    runtime::memory_kind memory;
    int device;
  };
  std::unordered_map<std::uint64_t, physical_memory> physical_by_handle_;
};

}  // namespace ferret::cupti
