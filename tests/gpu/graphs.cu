// gpu-test-graphs: work captured into a CUDA graph and replayed, as PyTorch's
// CUDA graphs and torch.compile's "reduce-overhead" mode run it.
//   region capture:  a stream captured into a graph: memset B, kernel scale(A),
//                    kernel add(A into B), copy B -> C (device to device); the
//                    graph instantiated. Capturing runs nothing on the GPU.
//   region replay:   the graph launched `replays` times, then synchronised.
// A, B and C are 1 MiB each, registered as data objects "A", "B", "C".
// Every operation of a replay belongs to its cudaGraphLaunch: CUPTI gives them
// all that call's correlation id. Prints one line "expected {json}".
#include <ferret/ferret.hpp>

#include <cstdio>

#include "cuda_check.hpp"

constexpr int elements = 1 << 18;  // floats: 1 MiB
constexpr std::size_t bytes = elements * sizeof(float);
constexpr int replays = 5;

// Global and not static: demangled "scale(int, float*)" and "add(int, float const*, float*)".
__global__ void scale(int n, float* x) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] *= 2.0f;
}
__global__ void add(int n, const float* x, float* y) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] += x[i];
}

int main() {
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  CHECK_CUDA(cudaMalloc(&c, bytes));
  CHECK_CUDA(cudaMemset(a, 0, bytes));
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t executable;
  {
    const ferret::data_object object_a{"A", a, bytes, ferret::memory_kind::device, 0};
    const ferret::data_object object_b{"B", b, bytes, ferret::memory_kind::device, 0};
    const ferret::data_object object_c{"C", c, bytes, ferret::memory_kind::device, 0};
    {
      FERRET_REGION("capture");
      CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
      CHECK_CUDA(cudaMemsetAsync(b, 0, bytes, stream));
      scale<<<elements / 256, 256, 0, stream>>>(elements, a);
      add<<<elements / 256, 256, 0, stream>>>(elements, a, b);
      CHECK_CUDA(cudaMemcpyAsync(c, b, bytes, cudaMemcpyDeviceToDevice, stream));
      CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
      CHECK_CUDA(cudaGraphInstantiate(&executable, graph, 0));
    }
    {
      FERRET_REGION("replay");
      for (int i = 0; i < replays; ++i) CHECK_CUDA(cudaGraphLaunch(executable, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
    }
  }
  CHECK_CUDA(cudaGraphExecDestroy(executable));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(c));
  std::printf("expected {\"replays\": %d, \"bytes\": %zu}\n", replays, bytes);
  return 0;
}
