// cuda-streams: a saxpy pipeline over several CUDA streams, annotated with
// ferret. The input is cut into chunks; each chunk goes through one stream:
// copy x in, clear y, compute y = a*x + y many times over, copy y out. A last
// kernel sums y on stream 0 once it has waited for the other streams' events.
// Run it traced:
//   FERRET_BACKEND=chrome,summary FERRET_OUTPUT=streams.json ./cuda-streams
// and open streams.json in https://ui.perfetto.dev: under "GPU 0" one track per
// stream, the copies of one chunk overlapping the kernels of another, and flow
// arrows from each launching call to its device work.
#include <ferret/ferret.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void check_cuda(cudaError_t status, const char* call, int line) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "cuda-streams: line %d: %s failed: %s\n", line, call,
               cudaGetErrorString(status));
  std::exit(1);
}
#define CHECK_CUDA(call) check_cuda((call), #call, __LINE__)

constexpr int threads_per_block = 256;
constexpr float factor = 2.0f;
// Enough arithmetic per element for a kernel to last about as long as a
// chunk's copy, so that one stream's copies run while another stream computes.
// Inputs are small integers: every result is an integer below 2^24, exact in
// float, so the check can compare exactly.
constexpr int repeats = 1024;
constexpr std::size_t input_period = 1024;

__global__ void saxpy_repeated(std::size_t n, float a, const float* x, float* y, int times) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float xi = x[i];
    float value = y[i];
    for (int r = 0; r < times; ++r) value = a * xi + value;
    y[i] = value;
  }
}

__global__ void sum(std::size_t n, const float* values, unsigned long long* total) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned long long partial = 0;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    partial += static_cast<unsigned long long>(values[i]);
  atomicAdd(total, partial);
}

struct buffers {
  std::size_t elements;
  float* host_x;
  float* host_y;
  unsigned long long* host_total;
  float* device_x;
  float* device_y;
  unsigned long long* device_total;
};

void fill_input(const buffers& b) {
  FERRET_FUNCTION();
  for (std::size_t i = 0; i < b.elements; ++i) b.host_x[i] = static_cast<float>(i % input_period);
}

// Every chunk through its stream; one block per multiprocessor per kernel, so
// that the kernels of all streams fit on the GPU together.
void enqueue_chunks(const buffers& b, const std::vector<cudaStream_t>& streams, int chunks,
                    int blocks) {
  FERRET_FUNCTION();
  const std::size_t chunk_elements = (b.elements + static_cast<std::size_t>(chunks) - 1) /
                                     static_cast<std::size_t>(chunks);
  for (int c = 0; c < chunks; ++c) {
    FERRET_REGION("enqueue chunk");
    const std::size_t first = static_cast<std::size_t>(c) * chunk_elements;
    if (first >= b.elements) break;
    const std::size_t count = std::min(chunk_elements, b.elements - first);
    const std::size_t bytes = count * sizeof(float);
    const cudaStream_t stream = streams[static_cast<std::size_t>(c) % streams.size()];
    CHECK_CUDA(cudaMemcpyAsync(b.device_x + first, b.host_x + first, bytes,
                               cudaMemcpyHostToDevice, stream));
    CHECK_CUDA(cudaMemsetAsync(b.device_y + first, 0, bytes, stream));
    saxpy_repeated<<<blocks, threads_per_block, 0, stream>>>(count, factor, b.device_x + first,
                                                             b.device_y + first, repeats);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpyAsync(b.host_y + first, b.device_y + first, bytes,
                               cudaMemcpyDeviceToHost, stream));
  }
}

// Stream 0 waits for the other streams' work, sums y and copies the total out;
// the host waits for that last copy.
void sum_when_done(const buffers& b, const std::vector<cudaStream_t>& streams, int blocks) {
  FERRET_FUNCTION();
  std::vector<cudaEvent_t> chunks_done(streams.size());
  for (std::size_t s = 1; s < streams.size(); ++s) {
    CHECK_CUDA(cudaEventCreateWithFlags(&chunks_done[s], cudaEventDisableTiming));
    CHECK_CUDA(cudaEventRecord(chunks_done[s], streams[s]));
    CHECK_CUDA(cudaStreamWaitEvent(streams[0], chunks_done[s], 0));
  }
  CHECK_CUDA(cudaMemsetAsync(b.device_total, 0, sizeof *b.device_total, streams[0]));
  sum<<<blocks, threads_per_block, 0, streams[0]>>>(b.elements, b.device_y, b.device_total);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpyAsync(b.host_total, b.device_total, sizeof *b.host_total,
                             cudaMemcpyDeviceToHost, streams[0]));
  cudaEvent_t total_copied;
  CHECK_CUDA(cudaEventCreateWithFlags(&total_copied, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventRecord(total_copied, streams[0]));
  CHECK_CUDA(cudaEventSynchronize(total_copied));
  CHECK_CUDA(cudaEventDestroy(total_copied));
  for (std::size_t s = 1; s < streams.size(); ++s) CHECK_CUDA(cudaEventDestroy(chunks_done[s]));
}

bool results_correct(const buffers& b) {
  FERRET_FUNCTION();
  unsigned long long expected_total = 0;
  for (std::size_t i = 0; i < b.elements; ++i) {
    const float expected = static_cast<float>(repeats) * factor * b.host_x[i];
    if (b.host_y[i] != expected) {
      std::fprintf(stderr, "cuda-streams: y[%zu] = %g, expected %g\n", i,
                   static_cast<double>(b.host_y[i]), static_cast<double>(expected));
      return false;
    }
    expected_total += static_cast<unsigned long long>(expected);
  }
  if (*b.host_total != expected_total) {
    std::fprintf(stderr, "cuda-streams: sum %llu, expected %llu\n", *b.host_total, expected_total);
    return false;
  }
  return true;
}

// A positive integer argument, or 0 when `text` is not one.
unsigned long parse_count(const char* text) {
  char* end = nullptr;
  const unsigned long value = std::strtoul(text, &end, 10);
  return (*text != '\0' && *end == '\0' && text[0] != '-') ? value : 0;
}

}  // namespace

int main(int argc, char** argv) {
  FERRET_FUNCTION();
  const unsigned long elements = argc > 1 ? parse_count(argv[1]) : 1ul << 24;
  const unsigned long stream_count = argc > 2 ? parse_count(argv[2]) : 4;
  if (argc > 3 || elements == 0 || stream_count == 0 || stream_count > 64) {
    std::fprintf(stderr, "usage: cuda-streams [elements (default 16777216)] [streams 1..64 (default 4)]\n");
    return 2;
  }
  ferret::set_metadata("elements", static_cast<std::int64_t>(elements));
  ferret::set_metadata("streams", static_cast<std::int64_t>(stream_count));

  buffers b{};
  b.elements = elements;
  const std::size_t bytes = elements * sizeof(float);
  const int chunks = static_cast<int>(2 * stream_count);
  int multiprocessors = 0;
  std::vector<cudaStream_t> streams(stream_count);
  {
    FERRET_REGION("allocate");
    CHECK_CUDA(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, 0));
    CHECK_CUDA(cudaMallocHost(&b.host_x, bytes));
    CHECK_CUDA(cudaMallocHost(&b.host_y, bytes));
    CHECK_CUDA(cudaMallocHost(&b.host_total, sizeof *b.host_total));
    CHECK_CUDA(cudaMalloc(&b.device_x, bytes));
    CHECK_CUDA(cudaMalloc(&b.device_y, bytes));
    CHECK_CUDA(cudaMalloc(&b.device_total, sizeof *b.device_total));
    for (cudaStream_t& stream : streams)
      CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  bool correct = false;
  {
    // Named memory, until just before it is freed: copies and kernels are
    // attributed to these names.
    const ferret::data_object host_x{"host x", b.host_x, bytes, ferret::memory_kind::pinned};
    const ferret::data_object host_y{"host y", b.host_y, bytes, ferret::memory_kind::pinned};
    const ferret::data_object device_x{"x", b.device_x, bytes, ferret::memory_kind::device, 0};
    const ferret::data_object device_y{"y", b.device_y, bytes, ferret::memory_kind::device, 0};
    fill_input(b);
    enqueue_chunks(b, streams, chunks, multiprocessors);
    sum_when_done(b, streams, multiprocessors);
    correct = results_correct(b);
  }
  {
    FERRET_REGION("release");
    for (cudaStream_t stream : streams) CHECK_CUDA(cudaStreamDestroy(stream));
    CHECK_CUDA(cudaFree(b.device_total));
    CHECK_CUDA(cudaFree(b.device_y));
    CHECK_CUDA(cudaFree(b.device_x));
    CHECK_CUDA(cudaFreeHost(b.host_total));
    CHECK_CUDA(cudaFreeHost(b.host_y));
    CHECK_CUDA(cudaFreeHost(b.host_x));
  }
  std::printf("cuda-streams: %lu elements, %lu streams, %d chunks: %s\n", elements, stream_count,
              chunks, correct ? "results correct" : "WRONG RESULTS");
  return correct ? 0 : 1;
}
