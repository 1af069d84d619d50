// Theoretical occupancy through NVIDIA's header-only occupancy calculator,
// fed from gpu_device_info instead of cudaDeviceProp (no CUDA runtime calls).
#include "occupancy.hpp"

#include <cuda_occupancy.h>

#include <algorithm>
#include <climits>
#include <cstdint>

namespace ferret::cupti {

namespace {

// Every NVIDIA GPU so far; gpu_device_info does not carry it.
constexpr int warp_size = 32;
// Shared memory the driver keeps per block from compute capability 8.0 on
// (cudaDeviceProp::reservedSharedMemPerBlock).
constexpr std::size_t reserved_shared_memory_per_block = 1024;

}  // namespace

double theoretical_occupancy(const runtime::gpu_device_info& device,
                             const runtime::kernel_attributes& kernel) {
  const std::uint64_t threads_per_block =
      std::uint64_t{kernel.block[0]} * kernel.block[1] * kernel.block[2];
  if (threads_per_block == 0 || threads_per_block > INT_MAX ||
      device.max_warps_per_multiprocessor == 0 ||
      device.max_warps_per_multiprocessor > INT_MAX / warp_size)
    return -1.0;

  const std::uint32_t shared_memory_per_multiprocessor =
      kernel.shared_memory_executed != 0 ? kernel.shared_memory_executed
                                         : device.max_shared_memory_per_multiprocessor;
  const std::uint32_t largest_shared_memory =
      std::max(kernel.shared_memory_executed, device.max_shared_memory_per_multiprocessor);

  cudaOccDeviceProp properties;
  properties.computeMajor = static_cast<int>(device.compute_major);
  properties.computeMinor = static_cast<int>(device.compute_minor);
  properties.maxThreadsPerBlock = static_cast<int>(device.max_threads_per_block);
  properties.maxThreadsPerMultiprocessor =
      static_cast<int>(device.max_warps_per_multiprocessor) * warp_size;
  properties.regsPerBlock = static_cast<int>(device.max_registers_per_block);
  properties.regsPerMultiprocessor = static_cast<int>(device.max_registers_per_multiprocessor);
  properties.warpSize = warp_size;
  properties.sharedMemPerMultiprocessor = shared_memory_per_multiprocessor;
  // The kernel was launched, so it fitted the per-block limit (default or
  // opted in): a limit as large as a whole multiprocessor never rejects it.
  properties.sharedMemPerBlock = largest_shared_memory;
  properties.sharedMemPerBlockOptin = largest_shared_memory;
  properties.numSms = static_cast<int>(device.multiprocessors);
  properties.reservedSharedMemPerBlock =
      device.compute_major >= 8 ? reserved_shared_memory_per_block : 0;

  cudaOccFuncAttributes attributes;
  attributes.maxThreadsPerBlock = static_cast<int>(device.max_threads_per_block);
  attributes.numRegs = static_cast<int>(kernel.registers_per_thread);
  attributes.sharedSizeBytes = kernel.static_shared_memory;
  attributes.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
  attributes.maxDynamicSharedSizeBytes = kernel.dynamic_shared_memory;
  attributes.numBlockBarriers = 1;  // what cudaFuncGetAttributes reports for a kernel

  // No carveout preference: the shared memory set above is the whole SM's.
  const cudaOccDeviceState state;
  cudaOccResult result{};
  if (cudaOccMaxActiveBlocksPerMultiprocessor(&result, &properties, &attributes, &state,
                                              static_cast<int>(threads_per_block),
                                              kernel.dynamic_shared_memory) != CUDA_OCC_SUCCESS)
    return -1.0;

  const std::uint64_t warps_per_block = (threads_per_block + warp_size - 1) / warp_size;
  const double active_warps =
      static_cast<double>(static_cast<std::uint64_t>(result.activeBlocksPerMultiprocessor) *
                          warps_per_block);
  return std::min(1.0, active_warps / device.max_warps_per_multiprocessor);
}

}  // namespace ferret::cupti
