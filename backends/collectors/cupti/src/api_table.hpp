// api_table.hpp — every CUDA API call the collector knows, by CUPTI callback
// id: what it does to GPU work (runtime::api_effect, which decides whether it
// becomes a region, is counted or is left alone; see ferret/runtime/api_policy.hpp)
// and how the collector handles it (the parameters it reads, when it writes
// the correlation id). The rows, grouped by effect with
// the reason, are in api_table.cpp.
//
//   const api_table& table = api_table::cuda();
//   if (runtime::records(recording, table.runtime_call(cbid).effect)) ...
//
// Runtime calls not in the table are `other`. Driver calls are subscribed to
// only when listed (driver_calls()): every runtime call runs several driver
// calls, so a callback on every driver call would fire inside each runtime
// call; the listed ones start or order GPU work for programs and libraries
// that skip the runtime (cuBLAS, Triton, NCCL, libomptarget).
#pragma once

#include <cupti.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ferret/runtime/api_policy.hpp"

namespace ferret::cupti {

/// How the collector handles a recorded call beyond its region: which
/// parameters it reads, and whether and when it writes the correlation id
/// that joins the call to its device records.
enum class call_handling : std::uint8_t {
  plain,             // the correlation id on entry, no parameters read
  copy,              // (destination, source) first
  copy_peer,         // cudaMemcpyPeer[Async]: (dst, dstDevice, src, ...)
  copy_2d,           // cudaMemcpy2D[Async]: (dst, dpitch, src, ...); driver: a CUDA_MEMCPY2D
  copy_3d,           // a cudaMemcpy3DParms (driver: CUDA_MEMCPY3D) first
  copy_3d_peer,      // a cudaMemcpy3DPeerParms (driver: CUDA_MEMCPY3D_PEER) first
  set,               // destination first
  // Calls that add a copy or memset node to a graph: the addresses are read as
  // for the copy; the node made inside the call keeps them (its records carry
  // the graph launch's correlation id, so none is written for the call).
  graph_copy,             // a cudaMemcpy3DParms / CUDA_MEMCPY3D, fifth
  graph_copy_1d,          // cudaGraphAddMemcpyNode1D: (..., dst, src, count, kind)
  graph_set,              // a cudaMemsetParams / CUDA_MEMSET_NODE_PARAMS, fifth
  graph_node,             // cuGraphAddNode: a CUgraphNodeParams, fifth
  graph_node_with_edges,  // cudaGraphAddNode, cuGraphAddNode_v2: the node's parameters, sixth
  allocate_device,   // the address written through the first parameter on exit
  allocate_managed,
  allocate_pinned,
  release_device,    // the address first
  release_host,
  // Virtual memory management (cuMemCreate / cuMemMap, as PyTorch's expandable
  // segments, JAX and NCCL allocate): the physical allocation's location is
  // kept by handle, and a mapped range becomes a data object until unmapped.
  create_physical,   // cuMemCreate: (handle out, size, prop): where the memory lives
  release_physical,  // cuMemRelease: the handle
  map_range,         // cuMemMap: (ptr, size, offset, handle): the range, on exit
  unmap_range,       // cuMemUnmap: (ptr, size)
  reset,             // cudaDeviceReset: the device's records are delivered first
  // A query (cudaEventQuery): the correlation id on exit, only when it
  // succeeded. Only a query that found the work done gets a synchronisation
  // record (the collector asks CUPTI for no others), so the turns of a
  // polling loop leave nothing for the runtime to keep.
  query,
  // Marks a point in a stream (cudaEventRecord): no device record carries its
  // id, so none is written.
  marker,
};

/// FERRET_CUDA_API: the vendor-neutral recording (ferret/runtime/api_policy.hpp)
/// and where the calls are seen. `driver` leaves the runtime's domain alone:
/// once any runtime callback is enabled CUPTI's dispatch costs every runtime
/// call ~0.24 µs, subscribed or not (PyTorch makes 7 calls that launch nothing
/// per operation), while the driver's callbacks cost calls that do not reach
/// them nothing; a runtime call's work is then joined to the driver call the
/// runtime makes (cudaLaunchKernel's kernels to its cuLaunchKernel), and the
/// runtime's other calls are not counted. Measured on an H200: docs/performance.md.
struct cuda_api_setting {
  constexpr cuda_api_setting(runtime::api_recording chosen = runtime::api_recording::work,
                             bool driver = false) noexcept
      : recording(chosen), driver_only(driver) {}
  runtime::api_recording recording;
  bool driver_only;  // no runtime callback at all
};
inline constexpr std::string_view cuda_api_values = "driver, work, work-uncounted or all";
/// "driver" or what runtime::parse_api_recording takes; nullopt for anything else.
std::optional<cuda_api_setting> parse_cuda_api(std::string_view text) noexcept;
/// The setting's name, as FERRET_CUDA_API takes it.
std::string_view to_string(const cuda_api_setting& setting) noexcept;

struct api_call {
  runtime::api_effect effect = runtime::api_effect::other;
  call_handling handling = call_handling::plain;
};

class api_table {
 public:
  /// The table of the CUDA headers ferret was built with.
  static const api_table& cuda();

  /// `other` for ids the table does not name (also those of newer releases).
  const api_call& runtime_call(CUpti_CallbackId id) const noexcept;
  /// `other` for driver calls not listed.
  const api_call& driver_call(CUpti_CallbackId id) const noexcept;

  /// The driver calls the collector subscribes to, in every mode.
  const std::vector<CUpti_CallbackId>& driver_calls() const noexcept { return driver_listed_; }

  /// The runtime calls to subscribe to under `recording` (not used for
  /// api_recording::all, which takes the whole runtime domain, newer ids too).
  std::vector<CUpti_CallbackId> runtime_subscriptions(runtime::api_recording recording) const;

 private:
  api_table();
  std::vector<api_call> runtime_;
  std::vector<api_call> driver_;
  std::vector<CUpti_CallbackId> driver_listed_;
};

}  // namespace ferret::cupti
