// gpu-test-event-polling: the asynchronous-API pattern, plain CUDA (traced
// through ferret-run): a kernel that spins for a while, then the host polls
// until it is done instead of blocking — by recording an event and calling
// cudaEventQuery until it stops answering cudaErrorNotReady (even rounds), or
// by calling cudaStreamQuery (odd rounds). Ends with cudaEventSynchronize and
// a 1 MiB copy back. Prints one line "expected {json}" with the counts the
// trace must show: kernels, polls per kind, rounds per kind.
#include <cstdio>
#include <vector>

#include "cuda_check.hpp"

constexpr int rounds = 40;
constexpr long long spin_cycles = 200000;  // ~0.1 ms: several polls per round
constexpr std::size_t bytes = std::size_t{1} << 20;

__global__ void spin(long long cycles, float* out) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  out[threadIdx.x] += 1.0f;
}

int main() {
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t done = nullptr;
  CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  float* device = nullptr;
  CHECK_CUDA(cudaMalloc(&device, bytes));
  CHECK_CUDA(cudaMemsetAsync(device, 0, bytes, stream));

  long long event_queries = 0, stream_queries = 0;
  int event_rounds = 0, stream_rounds = 0;
  for (int round = 0; round < rounds; ++round) {
    spin<<<1, 32, 0, stream>>>(spin_cycles, device);
    CHECK_CUDA(cudaGetLastError());
    cudaError_t status;
    if (round % 2 == 0) {
      CHECK_CUDA(cudaEventRecord(done, stream));
      do {
        status = cudaEventQuery(done);
        ++event_queries;
      } while (status == cudaErrorNotReady);
      ++event_rounds;
    } else {
      do {
        status = cudaStreamQuery(stream);
        ++stream_queries;
      } while (status == cudaErrorNotReady);
      ++stream_rounds;
    }
    CHECK_CUDA(status);
  }
  CHECK_CUDA(cudaEventRecord(done, stream));
  CHECK_CUDA(cudaEventSynchronize(done));
  std::vector<float> host(bytes / sizeof(float));
  CHECK_CUDA(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost));
  if (host[0] != static_cast<float>(rounds)) {
    std::fprintf(stderr, "gpu-test-event-polling: host[0] = %g, expected %d\n",
                 static_cast<double>(host[0]), rounds);
    return 1;
  }
  CHECK_CUDA(cudaFree(device));
  CHECK_CUDA(cudaEventDestroy(done));
  CHECK_CUDA(cudaStreamDestroy(stream));
  std::printf(
      "expected {\"kernels\": %d, \"event rounds\": %d, \"event queries\": %lld, "
      "\"stream rounds\": %d, \"stream queries\": %lld, \"event records\": %d, "
      "\"copy bytes\": %zu, \"memset bytes\": %zu}\n",
      rounds, event_rounds, event_queries, stream_rounds, stream_queries, event_rounds + 1, bytes,
      bytes);
  return 0;
}
