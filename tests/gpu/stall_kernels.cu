// gpu-test-stall-kernels: kernels whose bottleneck is known, for checking
// instruction samples (FERRET_CUDA_PC_SAMPLING) against Nsight Compute's
// (tests/gpu/stall_check.sh). Built with -lineinfo, so that samples map to
// the lines below. Each kernel runs in its own region:
//   memory_bound     a triad over 3 × 256 MiB: global memory (long scoreboard)
//   dependent_fma    one warp per scheduler, each FMA waiting for the last
//   bank_conflicts   32 threads of a warp reading one shared-memory bank
//   barrier_heavy    31 warps of a block waiting at __syncthreads for the first
//   divergent        the two halves of every warp on different paths
// Then, unless --bottlenecks is given (ncu replays kernels one at a time, so
// it runs only those), region "overlap": two kernels that spin, launched on
// two streams from regions "stream_one" and "stream_two", which must run at
// the same time with sampling on, and whose samples must go to their regions.
//
// With FERRET_BACKEND=stall_dump (the backend below, registered by this
// program; run it through ferret-run, so that the session starts after the
// registration) the samples are written as JSON to <FERRET_OUTPUT>.stalls.json:
// per kernel launch its totals and context, per (context, function, line,
// reason) its samples. Prints one line "expected {json}" with the kernels'
// names and regions.
#include <ferret/ferret.hpp>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_check.hpp"
#include "dump_json.hpp"
#include "ferret/runtime/backend.hpp"

namespace {

__global__ void memory_bound(float* a, const float* b, const float* c, float scale, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    a[i] = b[i] + scale * c[i];
  }
}

__global__ void dependent_fma(float* out, int iterations) {
  float x = threadIdx.x, y = blockIdx.x;
  for (int i = 0; i < iterations; ++i) {
    x = fmaf(x, 1.0001f, y);
    y = fmaf(y, 0.9999f, x);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = x + y;
}

__global__ void bank_conflicts(float* out, int iterations) {
  __shared__ float tile[32 * 33];
  for (unsigned i = threadIdx.x; i < 32 * 33; i += blockDim.x) tile[i] = static_cast<float>(i);
  __syncthreads();
  float sum = 0;
  for (int i = 0; i < iterations; ++i) {
    sum += tile[((threadIdx.x % 32) * 32 + i) % (32 * 32)];
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

__global__ void barrier_heavy(float* out, int iterations) {
  __shared__ float values[1024];
  float v = threadIdx.x;
  for (int i = 0; i < iterations; ++i) {
    if (threadIdx.x < 32) {
      for (int k = 0; k < 64; ++k) v = fmaf(v, 1.0001f, 0.5f);
    }
    values[threadIdx.x] = v;
    __syncthreads();
    v += values[(threadIdx.x + 1) % blockDim.x];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

__global__ void divergent(float* out, int iterations) {
  float v = threadIdx.x;
  if (threadIdx.x % 2 == 0) {
    for (int i = 0; i < iterations; ++i) v = fmaf(v, 1.0001f, 0.5f);
  } else {
    for (int i = 0; i < iterations; ++i) v = fmaf(v, 0.9999f, 0.25f) * 1.0001f;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

__device__ unsigned long long global_time_ns() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void spin_one(float* out, unsigned long long nanoseconds) {
  const unsigned long long start = global_time_ns();
  float v = threadIdx.x;
  while (global_time_ns() - start < nanoseconds) v = fmaf(v, 1.0001f, 0.5f);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

__global__ void spin_two(float* out, unsigned long long nanoseconds) {
  const unsigned long long start = global_time_ns();
  float v = threadIdx.x;
  while (global_time_ns() - start < nanoseconds) v = fmaf(v, 0.9999f, 0.25f);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// The stall-dump backend: what the checker compares with Nsight Compute.
class stall_dump final : public ferret::runtime::backend {
 public:
  explicit stall_dump(std::string path) : path_(std::move(path)) {}
  void thread_records(const ferret::runtime::thread_info&, const ferret::runtime::record*,
                      std::size_t) override {}
  void data_object(const ferret::runtime::data_object_event&) override {}
  void gpu_activities(const ferret::runtime::gpu_activity* activities, std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i) {
      const ferret::runtime::gpu_activity& a = activities[i];
      if (a.operation != ferret::runtime::gpu_operation::kernel) continue;
      std::string entry = "{\"kernel\": " + json_string(ferret::runtime::demangled_kernel_name(a.name)) +
                          ", \"context\": " + json_string(ferret::runtime::context_path(a.launch.context)) +
                          ", \"start_ns\": " + std::to_string(a.start_ns) +
                          ", \"end_ns\": " + std::to_string(a.end_ns) + ", \"stream\": " +
                          std::to_string(a.stream);
      if (a.samples != nullptr) {
        entry += ", \"samples\": " + std::to_string(a.samples->samples) +
                 ", \"expected\": " + std::to_string(a.samples->expected) +
                 ", \"period\": " + std::to_string(a.samples->period_cycles) + ", \"by_stall\": {";
        for (std::size_t s = 0; s < ferret::runtime::gpu_stall_classes; ++s)
          entry += (s ? ", " : "") +
                   json_string(std::string{ferret::runtime::metric_name(static_cast<ferret::runtime::gpu_stall>(s))}) +
                   ": " + std::to_string(a.samples->by_stall[s]);
        entry += "}, \"top\": [";
        for (std::size_t t = 0; t < 3 && a.samples->top_reasons[t] != nullptr; ++t)
          entry += (t ? ", " : "") + json_string(a.samples->top_reasons[t]->name);
        entry += "]";
      }
      kernels_.push_back(entry + "}");
    }
  }
  void gpu_instruction_samples(const ferret::runtime::gpu_instruction_sample* samples,
                               std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i) {
      const auto& s = samples[i];
      const auto key = std::make_tuple(ferret::runtime::context_path(s.context),
                                       ferret::runtime::demangled_kernel_name(s.function),
                                       std::string{s.file != nullptr ? s.file : ""}, s.line,
                                       s.pc_offset, s.reason->name);
      lines_[key] += s.samples;
    }
  }
  void flush(const ferret::runtime::session_status& status) override {
    if (!status.final) return;
    std::FILE* out = start_dump(path_, kernels_, "instructions");
    if (out == nullptr) return;
    std::size_t written = 0;
    for (const auto& [key, samples] : lines_) {
      const auto& [context, function, file, line, pc, reason] = key;
      std::fprintf(out,
                   "%s{\"context\": %s, \"function\": %s, \"file\": %s, \"line\": %u, \"pc\": %llu, "
                   "\"reason\": %s, \"samples\": %.3f}\n",
                   written++ ? "," : "", json_string(context).c_str(), json_string(function).c_str(),
                   json_string(file).c_str(), line, static_cast<unsigned long long>(pc),
                   json_string(reason).c_str(), samples);
    }
    finish_dump(out, *status.runtime_metadata, {"gpu-", "cupti-"});
  }
  void abandon() noexcept override {}
  std::string describe() const override { return "stall dump: " + path_; }

 private:
  std::string path_;
  std::vector<std::string> kernels_;
  std::map<std::tuple<std::string, std::string, std::string, std::uint32_t, std::uint64_t, std::string>, double>
      lines_;
};

std::unique_ptr<ferret::runtime::backend> make_dump(const ferret::runtime::backend_context& context,
                                                    std::string&) {
  return std::make_unique<stall_dump>(ferret::runtime::output_file(context, ".stalls.json"));
}
FERRET_REGISTER_BACKEND("stall_dump", "instruction samples as JSON (gpu-test-stall-kernels)", make_dump);

}  // namespace

int main(int argc, char** argv) {
  const bool bottlenecks_only = argc > 1 && std::strcmp(argv[1], "--bottlenecks") == 0;
  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  constexpr std::size_t n = std::size_t{1} << 26;
  float *a, *b, *c, *out;
  CHECK_CUDA(cudaMalloc(&a, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&b, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&c, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&out, std::size_t{1} << 24));
  CHECK_CUDA(cudaMemset(b, 0, n * sizeof(float)));
  CHECK_CUDA(cudaMemset(c, 0, n * sizeof(float)));
  {
    FERRET_REGION("memory_bound");
    for (int i = 0; i < 40; ++i) memory_bound<<<sms * 8, 256>>>(a, b, c, 2.0f, n);
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  {
    FERRET_REGION("dependent_fma");
    dependent_fma<<<sms, 128>>>(out, 1 << 21);
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  {
    FERRET_REGION("bank_conflicts");
    bank_conflicts<<<sms * 4, 256>>>(out, 1 << 16);
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  {
    FERRET_REGION("barrier_heavy");
    barrier_heavy<<<sms, 1024>>>(out, 1 << 13);
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  {
    FERRET_REGION("divergent");
    divergent<<<sms * 4, 256>>>(out, 1 << 18);
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  constexpr unsigned long long spin_ns = 200'000'000;
  if (!bottlenecks_only) {
    cudaStream_t first, second;
    CHECK_CUDA(cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking));
    // Half the SMs each, so that both fit at once.
    const int blocks = sms / 2 > 0 ? sms / 2 : 1;
    FERRET_REGION("overlap");
    {
      FERRET_REGION("stream_one");
      spin_one<<<blocks, 128, 0, first>>>(out, spin_ns);
    }
    {
      FERRET_REGION("stream_two");
      spin_two<<<blocks, 128, 0, second>>>(out + blocks * 128, spin_ns);
    }
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaStreamDestroy(first));
    CHECK_CUDA(cudaStreamDestroy(second));
  }
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(c));
  CHECK_CUDA(cudaFree(out));
  std::printf("expected {\"kernels\": {\"memory_bound\": \"memory_bound\", \"dependent_fma\": "
              "\"dependent_fma\", \"bank_conflicts\": \"bank_conflicts\", \"barrier_heavy\": "
              "\"barrier_heavy\", \"divergent\": \"divergent\", \"spin_one\": \"overlap/stream_one\", "
              "\"spin_two\": \"overlap/stream_two\"}, \"spin ns\": %llu}\n",
              spin_ns);
  return 0;
}
