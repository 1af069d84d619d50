// Stops a GPU test program with one line on stderr when a CUDA call fails.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, call, cudaGetErrorString(status));
  std::exit(1);
}

#define CHECK_CUDA(call) check_cuda((call), #call, __FILE__, __LINE__)
