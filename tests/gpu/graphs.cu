// gpu-test-graphs: work captured into a CUDA graph and replayed, as PyTorch's
// CUDA graphs and torch.compile's "reduce-overhead" mode run it.
//   region capture:  a stream captured into a graph: memset B, kernel scale(A),
//                    kernel add(A into B), copy B -> C (device to device); the
//                    graph instantiated. Capturing runs nothing on the GPU.
//   region replay:   the graph launched `replays` times, then synchronised.
//   region build:    a graph built node by node, as XLA's command buffers
//                    are: memset D, copy A -> D (1D node), copy D -> E (3D
//                    node, 256 rows of 4 KiB), instantiated.
//   region replay built: that graph launched `replays` times, synchronised.
// A to E are 1 MiB each, registered as data objects "A" to "E".
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

// A graph of memset D, copy A -> D, copy D -> E, added node by node.
cudaGraph_t build_graph(float* a, float* d, float* e) {
  cudaGraph_t graph;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaMemsetParams set{};
  set.dst = d;
  set.value = 0;
  set.elementSize = 4;
  set.width = elements;
  set.height = 1;
  cudaGraphNode_t cleared, copied, moved;
  CHECK_CUDA(cudaGraphAddMemsetNode(&cleared, graph, nullptr, 0, &set));
  CHECK_CUDA(cudaGraphAddMemcpyNode1D(&copied, graph, &cleared, 1, d, a, bytes, cudaMemcpyDeviceToDevice));
  constexpr std::size_t row_bytes = 4096;
  constexpr std::size_t rows = bytes / row_bytes;
  cudaMemcpy3DParms pitched{};
  pitched.srcPtr = make_cudaPitchedPtr(d, row_bytes, row_bytes, rows);
  pitched.dstPtr = make_cudaPitchedPtr(e, row_bytes, row_bytes, rows);
  pitched.extent = make_cudaExtent(row_bytes, rows, 1);
  pitched.kind = cudaMemcpyDeviceToDevice;
  CHECK_CUDA(cudaGraphAddMemcpyNode(&moved, graph, &copied, 1, &pitched));
  return graph;
}

int main() {
  float *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr, *e = nullptr;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  CHECK_CUDA(cudaMalloc(&c, bytes));
  CHECK_CUDA(cudaMalloc(&d, bytes));
  CHECK_CUDA(cudaMalloc(&e, bytes));
  CHECK_CUDA(cudaMemset(a, 0, bytes));
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph, built;
  cudaGraphExec_t executable, built_executable;
  {
    const ferret::data_object object_a{"A", a, bytes, ferret::memory_kind::device, 0};
    const ferret::data_object object_b{"B", b, bytes, ferret::memory_kind::device, 0};
    const ferret::data_object object_c{"C", c, bytes, ferret::memory_kind::device, 0};
    const ferret::data_object object_d{"D", d, bytes, ferret::memory_kind::device, 0};
    const ferret::data_object object_e{"E", e, bytes, ferret::memory_kind::device, 0};
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
    {
      FERRET_REGION("build");
      built = build_graph(a, d, e);
      CHECK_CUDA(cudaGraphInstantiate(&built_executable, built, 0));
    }
    {
      FERRET_REGION("replay built");
      for (int i = 0; i < replays; ++i) CHECK_CUDA(cudaGraphLaunch(built_executable, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
    }
  }
  CHECK_CUDA(cudaGraphExecDestroy(executable));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaGraphExecDestroy(built_executable));
  CHECK_CUDA(cudaGraphDestroy(built));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(c));
  CHECK_CUDA(cudaFree(d));
  CHECK_CUDA(cudaFree(e));
  std::printf("expected {\"replays\": %d, \"bytes\": %zu}\n", replays, bytes);
  return 0;
}
