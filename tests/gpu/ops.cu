// gpu-test-ops: exactly known GPU work for gpu_trace_test, on the default stream.
//   region setup:    cudaMalloc A and B (1 MiB each; A is registered as data
//                    object "A", B is left to the runtime: "cudaMalloc@setup");
//                    copy host x -> A (1 MiB); set B to zero (1 MiB)
//   region compute:  one saxpy kernel B = 2 A + B, grid 512x2x1, block 128x2x1,
//                    1 KiB of dynamic shared memory
//   region readback: copy B -> host y (1 MiB); cudaDeviceSynchronize
// then frees A and B outside any region. The host buffers are data objects
// "host x" and "host y". Prints, as the CUDA runtime computes them, the kernel
// attributes the trace must show: one line "expected {json}".
#include <ferret/ferret.hpp>

#include <cstdio>
#include <vector>

#include "cuda_check.hpp"

constexpr int elements = 1 << 18;  // floats: 1 MiB
constexpr std::size_t bytes = elements * sizeof(float);
constexpr unsigned threads_per_block = 256;
constexpr dim3 grid{512, 2, 1};
constexpr dim3 block{128, 2, 1};
constexpr std::size_t dynamic_shared_bytes = threads_per_block * sizeof(float);

// Global and not static: its demangled name is "saxpy(int, float, float const*, float*)".
// Both operands pass through shared memory (one static, one dynamic array) so
// that the kernel's shared memory attributes are not zero.
__global__ void saxpy(int n, float a, const float* x, float* y) {
  __shared__ float staged_x[threads_per_block];
  extern __shared__ float staged_y[];
  const unsigned thread = threadIdx.y * blockDim.x + threadIdx.x;
  const unsigned block_index = blockIdx.y * gridDim.x + blockIdx.x;
  const int i = static_cast<int>(block_index * threads_per_block + thread);
  if (i < n) {
    staged_x[threads_per_block - 1 - thread] = x[i];
    staged_y[thread] = y[i];
  }
  __syncthreads();
  if (i < n) y[i] = a * staged_x[threads_per_block - 1 - thread] + staged_y[thread];
}

// The attributes and theoretical occupancy of saxpy as launched, from the runtime.
void print_expected_kernel() {
  cudaFuncAttributes attributes{};
  CHECK_CUDA(cudaFuncGetAttributes(&attributes, saxpy));
  int blocks_per_multiprocessor = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks_per_multiprocessor, saxpy, static_cast<int>(threads_per_block), dynamic_shared_bytes));
  int max_threads_per_multiprocessor = 0, warp_size = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&max_threads_per_multiprocessor,
                                    cudaDevAttrMaxThreadsPerMultiProcessor, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&warp_size, cudaDevAttrWarpSize, 0));
  const int warps_per_block = (static_cast<int>(threads_per_block) + warp_size - 1) / warp_size;
  const double occupancy = static_cast<double>(blocks_per_multiprocessor * warps_per_block) /
                           static_cast<double>(max_threads_per_multiprocessor / warp_size);
  std::printf(
      "expected {\"registers per thread\": %d, \"static shared memory\": %zu, "
      "\"dynamic shared memory\": %zu, \"local memory per thread\": %zu, "
      "\"theoretical occupancy\": %.6f}\n",
      attributes.numRegs, attributes.sharedSizeBytes, dynamic_shared_bytes,
      attributes.localSizeBytes, occupancy);
}

int main() {
  std::vector<float> host_x(elements), host_y(elements);
  for (int i = 0; i < elements; ++i) host_x[static_cast<std::size_t>(i)] = static_cast<float>(i % 1000);
  const ferret::data_object host_x_object{"host x", host_x.data(), bytes};
  const ferret::data_object host_y_object{"host y", host_y.data(), bytes};
  float* a = nullptr;
  float* b = nullptr;
  ferret::data_object_id a_object = 0;
  {
    FERRET_REGION("setup");
    CHECK_CUDA(cudaMalloc(&a, bytes));
    CHECK_CUDA(cudaMalloc(&b, bytes));
    a_object = ferret::register_data_object("A", a, bytes, ferret::memory_kind::device, 0);
    CHECK_CUDA(cudaMemcpy(a, host_x.data(), bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(b, 0, bytes));
  }
  print_expected_kernel();
  {
    FERRET_REGION("compute");
    saxpy<<<grid, block, dynamic_shared_bytes>>>(elements, 2.0f, a, b);
    CHECK_CUDA(cudaGetLastError());
  }
  {
    FERRET_REGION("readback");
    CHECK_CUDA(cudaMemcpy(host_y.data(), b, bytes, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  ferret::unregister_data_object(a_object);
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));

  // The block stages x in reverse and reads it back mirrored: y = 2 x.
  for (int i = 0; i < elements; ++i) {
    const float expected = 2.0f * host_x[static_cast<std::size_t>(i)];
    if (host_y[static_cast<std::size_t>(i)] != expected) {
      std::fprintf(stderr, "gpu-test-ops: y[%d] = %g, expected %g\n", i,
                   static_cast<double>(host_y[static_cast<std::size_t>(i)]),
                   static_cast<double>(expected));
      return 1;
    }
  }
  std::printf("gpu-test-ops: results correct\n");
  return 0;
}
