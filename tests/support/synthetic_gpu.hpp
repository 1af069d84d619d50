// synthetic_gpu.hpp — a stand-in for the CUDA collector in programs that run
// without a GPU: a launch writes into the calling thread's buffer exactly what
// backends/collectors/cupti writes at a kernel launch (the API call's region, the Python
// call stack, the correlation id), and a collector hands the kernel over at the
// next drain, so that the runtime's attribution runs for real.
#pragma once

#include <cstdint>

namespace ferret::testing {

/// A kernel named `kernel` of `duration_ns`, launched now by the calling
/// thread through "cudaLaunchKernel" (domain "cuda"), on GPU 0, stream 7.
void synthetic_launch(const char* kernel, std::int64_t duration_ns = 10000);
/// A host-to-device copy of `bytes`, through "cudaMemcpyAsync".
void synthetic_copy(std::uint64_t bytes);

}  // namespace ferret::testing
