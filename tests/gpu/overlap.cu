// gpu-test-overlap: two streams each run a kernel that spins for a known time,
// launched back to back in region "overlap": the trace must show them on two
// stream tracks, running at the same time. Region "warm-up" first runs each
// kernel once, so that loading the module does not delay the second launch.
// Prints the spin time: one line "expected {json}".
#include <ferret/ferret.hpp>

#include <cstdio>

#include "cuda_check.hpp"

constexpr unsigned long long spin_nanoseconds = 2'000'000;

__device__ unsigned long long global_time_ns() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

// Global and not static: its demangled name is "spin_for(unsigned long long)".
__global__ void spin_for(unsigned long long nanoseconds) {
  const unsigned long long start = global_time_ns();
  while (global_time_ns() - start < nanoseconds) {
  }
}

int main() {
  cudaStream_t first, second;
  CHECK_CUDA(cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking));
  {
    FERRET_REGION("warm-up");
    spin_for<<<1, 32, 0, first>>>(0);
    spin_for<<<1, 32, 0, second>>>(0);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  {
    FERRET_REGION("overlap");
    spin_for<<<1, 32, 0, first>>>(spin_nanoseconds);
    spin_for<<<1, 32, 0, second>>>(spin_nanoseconds);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  CHECK_CUDA(cudaStreamDestroy(first));
  CHECK_CUDA(cudaStreamDestroy(second));
  std::printf("expected {\"spin ns\": %llu}\n", spin_nanoseconds);
  return 0;
}
