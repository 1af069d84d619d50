// The CUDA API calls by what they do to GPU work: which become regions
// (launch ... order), which are counted (other, the default for calls not
// named here) and which are left alone (internal). See api_table.hpp.
#include "api_table.hpp"

#include <initializer_list>

namespace ferret::cupti {
namespace {

using runtime::api_effect;

// The CUPTI callback id of a runtime or driver function, by its name in
// cupti_runtime_cbid.h / cupti_driver_cbid.h.
#define RT(name) CUPTI_RUNTIME_TRACE_CBID_##name
#define DRV(name) CUPTI_DRIVER_TRACE_CBID_##name

struct rows {
  api_effect effect;
  call_handling handling;
  std::initializer_list<CUpti_CallbackId> ids;
};

// ---------------------------------------------------------------------------
// Runtime API. Per-thread-default-stream variants (_ptsz, _ptds) are other
// entry points of the same call and share its row.
const rows runtime_rows[] = {
    // Kernels, graphs and host functions put into a stream. __cudaLaunchKernel
    // is what CUDA 13's nvcc generates for <<<>>>.
    {api_effect::launch, call_handling::plain,
     {RT(cudaLaunchKernel_v7000), RT(cudaLaunchKernel_ptsz_v7000), RT(cudaLaunchKernelExC_v11060),
      RT(cudaLaunchKernelExC_ptsz_v11060), RT(cudaLaunchCooperativeKernel_v9000),
      RT(cudaLaunchCooperativeKernel_ptsz_v9000), RT(cudaLaunchCooperativeKernelMultiDevice_v9000),
      RT(__cudaLaunchKernel_v13000), RT(__cudaLaunchKernel_ptsz_v13000), RT(cudaLaunch_v3020),
      RT(cudaLaunch_ptsz_v7000), RT(cudaGraphLaunch_v10000), RT(cudaGraphLaunch_ptsz_v10000),
      RT(cudaLaunchHostFunc_v10000), RT(cudaLaunchHostFunc_ptsz_v10000),
      RT(cudaStreamAddCallback_v5000), RT(cudaStreamAddCallback_ptsz_v7000)}},

    // Copies whose (destination, source) the collector reads to name data objects.
    {api_effect::copy, call_handling::copy,
     {RT(cudaMemcpy_v3020), RT(cudaMemcpy_ptds_v7000), RT(cudaMemcpyAsync_v3020),
      RT(cudaMemcpyAsync_ptsz_v7000)}},
    {api_effect::copy, call_handling::copy_peer,
     {RT(cudaMemcpyPeer_v4000), RT(cudaMemcpyPeerAsync_v4000)}},
    {api_effect::copy, call_handling::copy_2d,
     {RT(cudaMemcpy2D_v3020), RT(cudaMemcpy2D_ptds_v7000), RT(cudaMemcpy2DAsync_v3020),
      RT(cudaMemcpy2DAsync_ptsz_v7000)}},
    {api_effect::copy, call_handling::copy_3d,
     {RT(cudaMemcpy3D_v3020), RT(cudaMemcpy3D_ptds_v7000), RT(cudaMemcpy3DAsync_v3020),
      RT(cudaMemcpy3DAsync_ptsz_v7000)}},
    {api_effect::copy, call_handling::copy_3d_peer,
     {RT(cudaMemcpy3DPeer_v4000), RT(cudaMemcpy3DPeer_ptds_v7000), RT(cudaMemcpy3DPeerAsync_v4000),
      RT(cudaMemcpy3DPeerAsync_ptsz_v7000)}},
    // The other copies (arrays, symbols, batches) and the calls that
    // migrate or discard managed memory: device work, addresses not read.
    {api_effect::copy, call_handling::plain,
     {RT(cudaMemcpyToArray_v3020), RT(cudaMemcpyToArray_ptds_v7000),
      RT(cudaMemcpy2DToArray_v3020), RT(cudaMemcpy2DToArray_ptds_v7000),
      RT(cudaMemcpyFromArray_v3020), RT(cudaMemcpyFromArray_ptds_v7000),
      RT(cudaMemcpy2DFromArray_v3020), RT(cudaMemcpy2DFromArray_ptds_v7000),
      RT(cudaMemcpyArrayToArray_v3020), RT(cudaMemcpyArrayToArray_ptds_v7000),
      RT(cudaMemcpy2DArrayToArray_v3020), RT(cudaMemcpy2DArrayToArray_ptds_v7000),
      RT(cudaMemcpyToSymbol_v3020), RT(cudaMemcpyToSymbol_ptds_v7000),
      RT(cudaMemcpyFromSymbol_v3020), RT(cudaMemcpyFromSymbol_ptds_v7000),
      RT(cudaMemcpyToArrayAsync_v3020), RT(cudaMemcpyToArrayAsync_ptsz_v7000),
      RT(cudaMemcpyFromArrayAsync_v3020), RT(cudaMemcpyFromArrayAsync_ptsz_v7000),
      RT(cudaMemcpy2DToArrayAsync_v3020), RT(cudaMemcpy2DToArrayAsync_ptsz_v7000),
      RT(cudaMemcpy2DFromArrayAsync_v3020), RT(cudaMemcpy2DFromArrayAsync_ptsz_v7000),
      RT(cudaMemcpyToSymbolAsync_v3020), RT(cudaMemcpyToSymbolAsync_ptsz_v7000),
      RT(cudaMemcpyFromSymbolAsync_v3020), RT(cudaMemcpyFromSymbolAsync_ptsz_v7000),
      RT(cudaMemcpyBatchAsync_v12080),
      RT(cudaMemcpyBatchAsync_ptsz_v12080), RT(cudaMemcpy3DBatchAsync_v12080),
      RT(cudaMemcpy3DBatchAsync_ptsz_v12080), RT(cudaMemcpyBatchAsync_v13000),
      RT(cudaMemcpyBatchAsync_ptsz_v13000), RT(cudaMemcpy3DBatchAsync_v13000),
      RT(cudaMemcpy3DBatchAsync_ptsz_v13000), RT(cudaMemPrefetchAsync_v8000),
      RT(cudaMemPrefetchAsync_ptsz_v8000), RT(cudaMemPrefetchAsync_v12020),
      RT(cudaMemPrefetchAsync_ptsz_v12020), RT(cudaMemPrefetchBatchAsync_v13000),
      RT(cudaMemPrefetchBatchAsync_ptsz_v13000), RT(cudaMemDiscardBatchAsync_v13000),
      RT(cudaMemDiscardBatchAsync_ptsz_v13000), RT(cudaMemDiscardAndPrefetchBatchAsync_v13000),
      RT(cudaMemDiscardAndPrefetchBatchAsync_ptsz_v13000)}},

    // Memsets: the destination is read (3D ones: their pitched pointer's).
    {api_effect::set, call_handling::set,
     {RT(cudaMemset_v3020), RT(cudaMemset_ptds_v7000), RT(cudaMemsetAsync_v3020),
      RT(cudaMemsetAsync_ptsz_v7000), RT(cudaMemset2D_v3020), RT(cudaMemset2D_ptds_v7000),
      RT(cudaMemset2DAsync_v3020), RT(cudaMemset2DAsync_ptsz_v7000), RT(cudaMemset3D_v3020),
      RT(cudaMemset3D_ptds_v7000), RT(cudaMemset3DAsync_v3020), RT(cudaMemset3DAsync_ptsz_v7000)}},

    // Allocations that become anonymous data objects ("cudaMalloc@solve").
    {api_effect::allocate, call_handling::allocate_device,
     {RT(cudaMalloc_v3020), RT(cudaMallocAsync_v11020), RT(cudaMallocAsync_ptsz_v11020),
      RT(cudaMallocFromPoolAsync_v11020), RT(cudaMallocFromPoolAsync_ptsz_v11020)}},
    {api_effect::allocate, call_handling::allocate_managed, {RT(cudaMallocManaged_v6000)}},
    {api_effect::allocate, call_handling::allocate_pinned,
     {RT(cudaMallocHost_v3020), RT(cudaHostAlloc_v3020)}},
    // Allocations of arrays and pitched memory, and pinning of host memory.
    {api_effect::allocate, call_handling::plain,
     {RT(cudaMallocPitch_v3020), RT(cudaMallocArray_v3020), RT(cudaMalloc3D_v3020),
      RT(cudaMalloc3DArray_v3020), RT(cudaMallocMipmappedArray_v5000), RT(cudaHostRegister_v4000)}},

    {api_effect::release, call_handling::release_device,
     {RT(cudaFree_v3020), RT(cudaFreeAsync_v11020), RT(cudaFreeAsync_ptsz_v11020)}},
    {api_effect::release, call_handling::release_host, {RT(cudaFreeHost_v3020)}},
    // Releases of arrays, pinned host ranges, and of pool or graph memory.
    {api_effect::release, call_handling::plain,
     {RT(cudaFreeArray_v3020), RT(cudaFreeMipmappedArray_v5000), RT(cudaHostUnregister_v4000),
      RT(cudaMemPoolTrimTo_v11020), RT(cudaDeviceGraphMemTrim_v11040)}},
    // Frees everything of the device (and waits for it).
    {api_effect::release, call_handling::reset,
     {RT(cudaDeviceReset_v3020), RT(cudaThreadExit_v3020)}},

    // The host waits for the device: blocking, or by polling (a query is how a
    // program waits without blocking; CUPTI gives its synchronisation record
    // the query's correlation id).
    {api_effect::synchronize, call_handling::plain,
     {RT(cudaDeviceSynchronize_v3020), RT(cudaThreadSynchronize_v3020),
      RT(cudaStreamSynchronize_v3020), RT(cudaStreamSynchronize_ptsz_v7000),
      RT(cudaEventSynchronize_v3020)}},
    {api_effect::synchronize, call_handling::query,
     {RT(cudaStreamQuery_v3020), RT(cudaStreamQuery_ptsz_v7000), RT(cudaEventQuery_v3020)}},

    // Work ordered between streams, captured into graphs or put into a stream
    // as a dependency: events recorded (no device record of their own) and
    // waited for, capture, graph upload, external semaphores, managed memory
    // attached to a stream.
    {api_effect::order, call_handling::marker,
     {RT(cudaEventRecord_v3020), RT(cudaEventRecord_ptsz_v7000),
      RT(cudaEventRecordWithFlags_v11010), RT(cudaEventRecordWithFlags_ptsz_v11010)}},
    {api_effect::order, call_handling::plain,
     {RT(cudaStreamWaitEvent_v3020), RT(cudaStreamWaitEvent_ptsz_v7000),
      RT(cudaStreamBeginCapture_v10000), RT(cudaStreamBeginCapture_ptsz_v10000),
      RT(cudaStreamBeginCaptureToGraph_v12030), RT(cudaStreamBeginCaptureToGraph_ptsz_v12030),
      RT(cudaStreamEndCapture_v10000), RT(cudaStreamEndCapture_ptsz_v10000),
      RT(cudaGraphUpload_v10000), RT(cudaGraphUpload_ptsz_v10000),
      RT(cudaSignalExternalSemaphoresAsync_v10000),
      RT(cudaSignalExternalSemaphoresAsync_ptsz_v10000),
      RT(cudaWaitExternalSemaphoresAsync_v10000), RT(cudaWaitExternalSemaphoresAsync_ptsz_v10000),
      RT(cudaSignalExternalSemaphoresAsync_v11020),
      RT(cudaSignalExternalSemaphoresAsync_ptsz_v11020),
      RT(cudaWaitExternalSemaphoresAsync_v11020), RT(cudaWaitExternalSemaphoresAsync_ptsz_v11020),
      RT(cudaStreamAttachMemAsync_v6000), RT(cudaStreamAttachMemAsync_ptsz_v7000)}},
    // Copies and memsets put into a graph as nodes (graphs built explicitly):
    // the addresses are read, for the node's replayed records.
    {api_effect::order, call_handling::graph_copy, {RT(cudaGraphAddMemcpyNode_v10000)}},
    {api_effect::order, call_handling::graph_copy_1d, {RT(cudaGraphAddMemcpyNode1D_v11010)}},
    {api_effect::order, call_handling::graph_set, {RT(cudaGraphAddMemsetNode_v10000)}},
    {api_effect::order, call_handling::graph_node_with_edges, {RT(cudaGraphAddNode_v12030)}},

    // Code the compiler generates around every <<<>>> launch (the launch itself
    // is recorded) and the registration of a module's kernels and variables at
    // load: not the program's calls. Counting them would cost two callbacks per
    // launch and say nothing.
    {api_effect::internal, call_handling::plain,
     {RT(__cudaPushCallConfiguration_v13000), RT(__cudaPopCallConfiguration_v13000),
      RT(__cudaGetKernel_v13000), RT(cudaConfigureCall_v3020), RT(cudaSetupArgument_v3020),
      RT(__cudaRegisterFatBinary_v13000), RT(__cudaRegisterFatBinaryEnd_v13000),
      RT(__cudaUnregisterFatBinary_v13000), RT(__cudaRegisterVar_v13000),
      RT(__cudaRegisterHostVar_v13000), RT(__cudaRegisterFunction_v13000),
      RT(__cudaRegisterManagedVar_v13000), RT(__cudaInitModule_v13000),
      RT(__cudaRegisterUnifiedTable_v13000), RT(__cudaGetProcAddress_v13000)}},
};

// ---------------------------------------------------------------------------
// Driver API: only calls that start or order GPU work (see api_table.hpp).
const rows driver_rows[] = {
    {api_effect::launch, call_handling::plain,
     {DRV(cuLaunchKernel), DRV(cuLaunchKernel_ptsz), DRV(cuLaunchKernelEx),
      DRV(cuLaunchKernelEx_ptsz), DRV(cuLaunchCooperativeKernel),
      DRV(cuLaunchCooperativeKernel_ptsz), DRV(cuGraphLaunch), DRV(cuGraphLaunch_ptsz),
      DRV(cuLaunchHostFunc), DRV(cuLaunchHostFunc_ptsz)}},
    // HtoD, DtoH and DtoD start with (destination, source) like cuMemcpy.
    {api_effect::copy, call_handling::copy,
     {DRV(cuMemcpy), DRV(cuMemcpy_ptds), DRV(cuMemcpyAsync), DRV(cuMemcpyAsync_ptsz),
      DRV(cuMemcpyHtoD_v2), DRV(cuMemcpyHtoD_v2_ptds), DRV(cuMemcpyDtoH_v2),
      DRV(cuMemcpyDtoH_v2_ptds), DRV(cuMemcpyDtoD_v2), DRV(cuMemcpyDtoD_v2_ptds),
      DRV(cuMemcpyHtoDAsync_v2), DRV(cuMemcpyHtoDAsync_v2_ptsz), DRV(cuMemcpyDtoHAsync_v2),
      DRV(cuMemcpyDtoHAsync_v2_ptsz), DRV(cuMemcpyDtoDAsync_v2), DRV(cuMemcpyDtoDAsync_v2_ptsz)}},
    {api_effect::copy, call_handling::copy_peer,
     {DRV(cuMemcpyPeer), DRV(cuMemcpyPeer_ptds), DRV(cuMemcpyPeerAsync), DRV(cuMemcpyPeerAsync_ptsz)}},
    {api_effect::copy, call_handling::copy_2d,
     {DRV(cuMemcpy2D_v2), DRV(cuMemcpy2D_v2_ptds), DRV(cuMemcpy2DUnaligned_v2),
      DRV(cuMemcpy2DUnaligned_v2_ptds), DRV(cuMemcpy2DAsync_v2), DRV(cuMemcpy2DAsync_v2_ptsz)}},
    {api_effect::copy, call_handling::copy_3d,
     {DRV(cuMemcpy3D_v2), DRV(cuMemcpy3D_v2_ptds), DRV(cuMemcpy3DAsync_v2),
      DRV(cuMemcpy3DAsync_v2_ptsz)}},
    {api_effect::copy, call_handling::copy_3d_peer,
     {DRV(cuMemcpy3DPeer), DRV(cuMemcpy3DPeer_ptds), DRV(cuMemcpy3DPeerAsync),
      DRV(cuMemcpy3DPeerAsync_ptsz)}},
    {api_effect::copy, call_handling::plain,
     {DRV(cuMemcpyBatchAsync), DRV(cuMemPrefetchAsync), DRV(cuMemPrefetchAsync_v2)}},
    {api_effect::set, call_handling::set,
     {DRV(cuMemsetD8_v2), DRV(cuMemsetD8_v2_ptds), DRV(cuMemsetD16_v2), DRV(cuMemsetD16_v2_ptds),
      DRV(cuMemsetD32_v2), DRV(cuMemsetD32_v2_ptds), DRV(cuMemsetD8Async),
      DRV(cuMemsetD8Async_ptsz), DRV(cuMemsetD16Async), DRV(cuMemsetD16Async_ptsz),
      DRV(cuMemsetD32Async), DRV(cuMemsetD32Async_ptsz), DRV(cuMemsetD2D8_v2),
      DRV(cuMemsetD2D8_v2_ptds), DRV(cuMemsetD2D16_v2), DRV(cuMemsetD2D16_v2_ptds),
      DRV(cuMemsetD2D32_v2), DRV(cuMemsetD2D32_v2_ptds), DRV(cuMemsetD2D8Async),
      DRV(cuMemsetD2D8Async_ptsz), DRV(cuMemsetD2D16Async), DRV(cuMemsetD2D16Async_ptsz),
      DRV(cuMemsetD2D32Async), DRV(cuMemsetD2D32Async_ptsz)}},
    {api_effect::allocate, call_handling::allocate_device,
     {DRV(cuMemAlloc_v2), DRV(cuMemAllocAsync), DRV(cuMemAllocAsync_ptsz),
      DRV(cuMemAllocFromPoolAsync), DRV(cuMemAllocFromPoolAsync_ptsz)}},
    {api_effect::allocate, call_handling::allocate_managed, {DRV(cuMemAllocManaged)}},
    {api_effect::allocate, call_handling::allocate_pinned,
     {DRV(cuMemAllocHost_v2), DRV(cuMemHostAlloc)}},
    // Pitched memory, pinned host ranges.
    {api_effect::allocate, call_handling::plain, {DRV(cuMemAllocPitch_v2), DRV(cuMemHostRegister_v2)}},
    // Virtual memory management (PyTorch's expandable segments, JAX, NCCL):
    // every step, so that the call CUPTI ties an allocation record to is seen
    // whichever it is (NVIDIA's vectorAddMMAP sample's 3 allocations were
    // "launch not seen" with cuMemCreate and cuMemMap alone).
    {api_effect::allocate, call_handling::create_physical, {DRV(cuMemCreate)}},
    {api_effect::allocate, call_handling::map_range, {DRV(cuMemMap)}},
    {api_effect::allocate, call_handling::plain,
     {DRV(cuMemAddressReserve), DRV(cuMemSetAccess), DRV(cuMemMapArrayAsync),
      DRV(cuMemMapArrayAsync_ptsz)}},
    {api_effect::release, call_handling::release_device,
     {DRV(cuMemFree_v2), DRV(cuMemFreeAsync), DRV(cuMemFreeAsync_ptsz)}},
    {api_effect::release, call_handling::release_host, {DRV(cuMemFreeHost)}},
    {api_effect::release, call_handling::release_physical, {DRV(cuMemRelease)}},
    {api_effect::release, call_handling::unmap_range, {DRV(cuMemUnmap)}},
    {api_effect::release, call_handling::plain, {DRV(cuMemAddressFree), DRV(cuMemHostUnregister)}},
    {api_effect::synchronize, call_handling::plain,
     {DRV(cuCtxSynchronize), DRV(cuStreamSynchronize), DRV(cuStreamSynchronize_ptsz),
      DRV(cuEventSynchronize)}},
    {api_effect::synchronize, call_handling::query,
     {DRV(cuStreamQuery), DRV(cuStreamQuery_ptsz), DRV(cuEventQuery)}},
    {api_effect::order, call_handling::marker,
     {DRV(cuEventRecord), DRV(cuEventRecord_ptsz), DRV(cuEventRecordWithFlags),
      DRV(cuEventRecordWithFlags_ptsz)}},
    {api_effect::order, call_handling::plain,
     {DRV(cuStreamWaitEvent), DRV(cuStreamWaitEvent_ptsz),
      DRV(cuStreamBeginCapture), DRV(cuStreamBeginCapture_ptsz), DRV(cuStreamBeginCapture_v2),
      DRV(cuStreamBeginCapture_v2_ptsz), DRV(cuStreamEndCapture), DRV(cuStreamEndCapture_ptsz),
      DRV(cuGraphUpload), DRV(cuGraphUpload_ptsz)}},
    {api_effect::order, call_handling::graph_copy, {DRV(cuGraphAddMemcpyNode)}},
    {api_effect::order, call_handling::graph_set, {DRV(cuGraphAddMemsetNode)}},
    {api_effect::order, call_handling::graph_node, {DRV(cuGraphAddNode)}},
    {api_effect::order, call_handling::graph_node_with_edges, {DRV(cuGraphAddNode_v2)}},
};

#undef RT
#undef DRV

const api_call unknown_call{};

}  // namespace

std::optional<cuda_api_setting> parse_cuda_api(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  // The runtime's work calls are not subscribed to; the driver's are, as always.
  if (text == "driver") return cuda_api_setting{runtime::api_recording::work_uncounted, true};
  if (const auto recording = runtime::parse_api_recording(text)) return cuda_api_setting{*recording};
  return std::nullopt;
}

std::string_view to_string(const cuda_api_setting& setting) noexcept {
  return setting.driver_only ? "driver" : runtime::to_string(setting.recording);
}

api_table::api_table()
    : runtime_(CUPTI_RUNTIME_TRACE_CBID_SIZE), driver_(CUPTI_DRIVER_TRACE_CBID_SIZE) {
  for (const rows& group : runtime_rows)
    for (const CUpti_CallbackId id : group.ids) runtime_[id] = {group.effect, group.handling};
  for (const rows& group : driver_rows)
    for (const CUpti_CallbackId id : group.ids) {
      driver_[id] = {group.effect, group.handling};
      driver_listed_.push_back(id);
    }
}

const api_table& api_table::cuda() {
  static const api_table table;
  return table;
}

const api_call& api_table::runtime_call(CUpti_CallbackId id) const noexcept {
  return id < runtime_.size() ? runtime_[id] : unknown_call;
}

const api_call& api_table::driver_call(CUpti_CallbackId id) const noexcept {
  return id < driver_.size() ? driver_[id] : unknown_call;
}

std::vector<CUpti_CallbackId> api_table::runtime_subscriptions(runtime::api_recording recording) const {
  std::vector<CUpti_CallbackId> ids;
  for (CUpti_CallbackId id = CUPTI_RUNTIME_TRACE_CBID_INVALID + 1; id < runtime_.size(); ++id)
    if (runtime::subscribes(recording, runtime_[id].effect)) ids.push_back(id);
  return ids;
}

}  // namespace ferret::cupti
