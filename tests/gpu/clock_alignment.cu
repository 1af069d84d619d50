// gpu-test-clock-alignment: measures how well GPU times line up with host
// times. Each trial opens host region "bracket", launches an empty kernel,
// waits for it and closes the region: the kernel ran inside the bracket, so
// in the trace it must lie inside it; how far it does (and whether it ever
// sticks out) is what gpu_trace_test reports. Argument: trials (default 200).
#include <ferret/ferret.hpp>

#include <cstdio>
#include <cstdlib>

#include "cuda_check.hpp"

// Global and not static: its demangled name is "empty_kernel()".
__global__ void empty_kernel() {}

int main(int argc, char** argv) {
  const int trials = argc > 1 ? std::atoi(argv[1]) : 200;
  if (trials <= 0) {
    std::fprintf(stderr, "usage: gpu-test-clock-alignment [trials > 0]\n");
    return 2;
  }
  {
    FERRET_REGION("warm-up");
    empty_kernel<<<1, 1>>>();
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  for (int trial = 0; trial < trials; ++trial) {
    FERRET_REGION("bracket");
    empty_kernel<<<1, 1>>>();
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  std::printf("expected {\"trials\": %d}\n", trials);
  return 0;
}
