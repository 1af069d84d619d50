// The addresses a copy or memset call names; see call_addresses.hpp.
#include "call_addresses.hpp"

// cupti.h (through call_addresses.hpp) brings the parameter structs of every
// runtime and driver call (generated_cuda*_meta.h, which have no include guards).

#include <cstddef>
#include <cstdint>

namespace ferret::cupti {
namespace {

const void* as_pointer(CUdeviceptr address) { return reinterpret_cast<const void*>(address); }

// The first byte of a pitched (2D/3D) region: base + z planes + y rows + x bytes.
const void* pitched(const void* base, std::size_t x_bytes, std::size_t y, std::size_t z,
                    std::size_t pitch, std::size_t height) {
  if (base == nullptr) return nullptr;
  return static_cast<const char*>(base) + z * pitch * height + y * pitch + x_bytes;
}

// Runtime 3D parameters (cudaMemcpy3DParms, cudaMemcpy3DPeerParms): an array
// side has no address; a pointer side's x position is in bytes.
template <typename Parameters>
call_addresses of_runtime_3d(const Parameters* p) {
  if (p == nullptr) return {};
  const void* destination =
      p->dstArray != nullptr ? nullptr
                             : pitched(p->dstPtr.ptr, p->dstPos.x, p->dstPos.y, p->dstPos.z,
                                       p->dstPtr.pitch, p->dstPtr.ysize);
  const void* source =
      p->srcArray != nullptr ? nullptr
                             : pitched(p->srcPtr.ptr, p->srcPos.x, p->srcPos.y, p->srcPos.z,
                                       p->srcPtr.pitch, p->srcPtr.ysize);
  return {destination, source};
}

// Driver copy descriptors say which of host, device and array memory a side is.
const void* driver_side(CUmemorytype type, const void* host, CUdeviceptr device) {
  switch (type) {
    case CU_MEMORYTYPE_HOST: return host;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: return as_pointer(device);
    default: return nullptr;  // an array
  }
}

// CUDA_MEMCPY3D and CUDA_MEMCPY3D_PEER share the fields read here.
template <typename Descriptor>
call_addresses of_driver_3d(const Descriptor* p) {
  if (p == nullptr) return {};
  return {pitched(driver_side(p->dstMemoryType, p->dstHost, p->dstDevice), p->dstXInBytes, p->dstY,
                  p->dstZ, p->dstPitch, p->dstHeight),
          pitched(driver_side(p->srcMemoryType, p->srcHost, p->srcDevice), p->srcXInBytes, p->srcY,
                  p->srcZ, p->srcPitch, p->srcHeight)};
}

call_addresses of_driver_2d(const CUDA_MEMCPY2D* p) {
  if (p == nullptr) return {};
  return {pitched(driver_side(p->dstMemoryType, p->dstHost, p->dstDevice), p->dstXInBytes, p->dstY,
                  0, p->dstPitch, 0),
          pitched(driver_side(p->srcMemoryType, p->srcHost, p->srcDevice), p->srcXInBytes, p->srcY,
                  0, p->srcPitch, 0)};
}

// The generic node calls (cudaGraphAddNode, cuGraphAddNode): by the node's type.
call_addresses of_runtime_node(const cudaGraphNodeParams* p) {
  if (p == nullptr) return {};
  if (p->type == cudaGraphNodeTypeMemcpy) return of_runtime_3d(&p->memcpy.copyParams);
  if (p->type == cudaGraphNodeTypeMemset) return {p->memset.dst, nullptr};
  return {};
}

call_addresses of_driver_node(const CUgraphNodeParams* p) {
  if (p == nullptr) return {};
  if (p->type == CU_GRAPH_NODE_TYPE_MEMCPY) return of_driver_3d(&p->memcpy.copyParams);
  if (p->type == CU_GRAPH_NODE_TYPE_MEMSET) return {as_pointer(p->memset.dst), nullptr};
  return {};
}

call_addresses runtime_addresses(call_handling handling, const void* params) {
  switch (handling) {
    case call_handling::copy: {
      const auto* p = static_cast<const cudaMemcpy_v3020_params*>(params);
      return {p->dst, p->src};
    }
    case call_handling::copy_peer: {
      const auto* p = static_cast<const cudaMemcpyPeer_v4000_params*>(params);
      return {p->dst, p->src};
    }
    case call_handling::copy_2d: {
      const auto* p = static_cast<const cudaMemcpy2D_v3020_params*>(params);
      return {p->dst, p->src};
    }
    case call_handling::copy_3d:
      return of_runtime_3d(static_cast<const cudaMemcpy3D_v3020_params*>(params)->p);
    case call_handling::copy_3d_peer:
      return of_runtime_3d(static_cast<const cudaMemcpy3DPeer_v4000_params*>(params)->p);
    case call_handling::set:
      return {static_cast<const cudaMemset_v3020_params*>(params)->devPtr, nullptr};
    case call_handling::graph_copy:
      return of_runtime_3d(static_cast<const cudaGraphAddMemcpyNode_v10000_params*>(params)->pCopyParams);
    case call_handling::graph_copy_1d: {
      const auto* p = static_cast<const cudaGraphAddMemcpyNode1D_v11010_params*>(params);
      return {p->dst, p->src};
    }
    case call_handling::graph_set: {
      const cudaMemsetParams* p = static_cast<const cudaGraphAddMemsetNode_v10000_params*>(params)->pMemsetParams;
      return {p != nullptr ? p->dst : nullptr, nullptr};
    }
    case call_handling::graph_node_with_edges:
      return of_runtime_node(static_cast<const cudaGraphAddNode_v12030_params*>(params)->nodeParams);
    default: return {};
  }
}

call_addresses driver_addresses(call_handling handling, const void* params) {
  switch (handling) {
    case call_handling::copy: {
      const auto* p = static_cast<const cuMemcpy_params*>(params);
      return {as_pointer(p->dst), as_pointer(p->src)};
    }
    case call_handling::copy_peer: {
      const auto* p = static_cast<const cuMemcpyPeer_params*>(params);
      return {as_pointer(p->dstDevice), as_pointer(p->srcDevice)};
    }
    case call_handling::copy_2d: return of_driver_2d(static_cast<const cuMemcpy2D_v2_params*>(params)->pCopy);
    case call_handling::copy_3d: return of_driver_3d(static_cast<const cuMemcpy3D_v2_params*>(params)->pCopy);
    case call_handling::copy_3d_peer:
      return of_driver_3d(static_cast<const cuMemcpy3DPeer_params*>(params)->pCopy);
    case call_handling::set:
      return {as_pointer(static_cast<const cuMemsetD8_v2_params*>(params)->dstDevice), nullptr};
    case call_handling::graph_copy:
      return of_driver_3d(static_cast<const cuGraphAddMemcpyNode_params*>(params)->copyParams);
    case call_handling::graph_set: {
      const CUDA_MEMSET_NODE_PARAMS* p = static_cast<const cuGraphAddMemsetNode_params*>(params)->memsetParams;
      return {p != nullptr ? as_pointer(p->dst) : nullptr, nullptr};
    }
    case call_handling::graph_node:
      return of_driver_node(static_cast<const cuGraphAddNode_params*>(params)->nodeParams);
    case call_handling::graph_node_with_edges:
      return of_driver_node(static_cast<const cuGraphAddNode_v2_params*>(params)->nodeParams);
    default: return {};
  }
}

// One row of the table covers a call and its variants (async, per-thread
// stream); these keep the layouts the switches above read alike.
static_assert(offsetof(cuMemcpyHtoD_v2_params, dstDevice) == offsetof(cuMemcpy_params, dst) &&
                  offsetof(cuMemcpyHtoD_v2_params, srcHost) == offsetof(cuMemcpy_params, src) &&
                  offsetof(cuMemcpyDtoH_v2_params, dstHost) == offsetof(cuMemcpy_params, dst) &&
                  offsetof(cuMemcpyDtoHAsync_v2_params, srcDevice) == offsetof(cuMemcpy_params, src),
              "driver copy parameters start with (destination, source)");
static_assert(offsetof(cuMemcpyPeerAsync_params, srcDevice) == offsetof(cuMemcpyPeer_params, srcDevice) &&
                  offsetof(cuMemcpy2DAsync_v2_params, pCopy) == 0 &&
                  offsetof(cuMemcpy2DUnaligned_v2_params, pCopy) == 0 &&
                  offsetof(cuMemcpy3DAsync_v2_params, pCopy) == 0 &&
                  offsetof(cuMemcpy3DPeerAsync_params, pCopy) == 0,
              "driver pitched and peer copy variants share their descriptor's place");
static_assert(offsetof(cuMemsetD2D8_v2_params, dstDevice) == 0 &&
                  offsetof(cuMemsetD2D16_v2_params, dstDevice) == 0 &&
                  offsetof(cuMemsetD2D32_v2_params, dstDevice) == 0 &&
                  offsetof(cuMemsetD2D8Async_params, dstDevice) == 0 &&
                  offsetof(cuMemsetD2D16Async_params, dstDevice) == 0 &&
                  offsetof(cuMemsetD2D32Async_params, dstDevice) == 0 &&
                  offsetof(cuMemsetD32Async_params, dstDevice) == 0,
              "driver memset parameters start with the destination");
static_assert(offsetof(cudaMemcpyAsync_v3020_params, src) == offsetof(cudaMemcpy_v3020_params, src) &&
                  offsetof(cudaMemsetAsync_v3020_params, devPtr) == 0 &&
                  offsetof(cudaMemset2D_v3020_params, devPtr) == 0 &&
                  offsetof(cudaMemcpy2DAsync_v3020_params, src) == offsetof(cudaMemcpy2D_v3020_params, src) &&
                  offsetof(cudaMemcpyPeerAsync_v4000_params, src) == offsetof(cudaMemcpyPeer_v4000_params, src) &&
                  offsetof(cudaMemcpy3DAsync_v3020_params, p) == 0 &&
                  offsetof(cudaMemcpy3DPeerAsync_v4000_params, p) == 0,
              "runtime copy/memset parameter layouts shared by their variants");
// cudaMemset3D takes its pitched pointer by value, first: its address is where
// the other memsets keep theirs.
static_assert(offsetof(cudaMemset3D_v3020_params, pitchedDevPtr) == 0 &&
                  offsetof(cudaMemset3DAsync_v3020_params, pitchedDevPtr) == 0 &&
                  offsetof(cudaPitchedPtr, ptr) == 0,
              "cudaMemset3D's pointer comes first");

}  // namespace

bool names_objects(call_handling handling) noexcept {
  switch (handling) {
    case call_handling::copy:
    case call_handling::copy_peer:
    case call_handling::copy_2d:
    case call_handling::copy_3d:
    case call_handling::copy_3d_peer:
    case call_handling::set:
    case call_handling::graph_copy:
    case call_handling::graph_copy_1d:
    case call_handling::graph_set:
    case call_handling::graph_node:
    case call_handling::graph_node_with_edges: return true;
    default: return false;
  }
}

call_addresses addresses_of(CUpti_CallbackDomain domain, call_handling handling, const void* params) noexcept {
  if (params == nullptr) return {};
  return domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_addresses(handling, params)
                                               : driver_addresses(handling, params);
}

}  // namespace ferret::cupti
