// gpu-test-unannotated: plain CUDA, without ferret's headers or libraries;
// gpu_trace_test traces it through ferret-run (CUDA_INJECTION64_PATH).
// Copies x and y to the device (1 MiB each), adds them with one kernel and
// copies y back (1 MiB).
#include <cstdio>
#include <vector>

#include "cuda_check.hpp"

constexpr int elements = 1 << 18;  // floats: 1 MiB
constexpr std::size_t bytes = elements * sizeof(float);

// Global and not static: its demangled name is "add(int, float const*, float*)".
__global__ void add(int n, const float* x, float* y) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] += x[i];
}

int main() {
  std::vector<float> x(elements), y(elements);
  for (int i = 0; i < elements; ++i) {
    x[static_cast<std::size_t>(i)] = static_cast<float>(i % 100);
    y[static_cast<std::size_t>(i)] = 1.0f;
  }
  float* device_x = nullptr;
  float* device_y = nullptr;
  CHECK_CUDA(cudaMalloc(&device_x, bytes));
  CHECK_CUDA(cudaMalloc(&device_y, bytes));
  CHECK_CUDA(cudaMemcpy(device_x, x.data(), bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(device_y, y.data(), bytes, cudaMemcpyHostToDevice));
  add<<<elements / 256, 256>>>(elements, device_x, device_y);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(y.data(), device_y, bytes, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(device_x));
  CHECK_CUDA(cudaFree(device_y));
  for (int i = 0; i < elements; ++i)
    if (y[static_cast<std::size_t>(i)] != static_cast<float>(i % 100) + 1.0f) {
      std::fprintf(stderr, "gpu-test-unannotated: y[%d] is wrong\n", i);
      return 1;
    }
  std::printf("gpu-test-unannotated: results correct\n");
  return 0;
}
