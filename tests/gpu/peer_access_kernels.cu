// gpu-test-peer-accesses: kernels whose device-initiated traffic is known,
// for checking FERRET_CUDA_PEER_ACCESSES (tests/gpu/peer_access_check.py).
// Built with -lineinfo, so that accesses map to the lines below.
//   region "host_reads"  on GPU 0: loads N floats from mapped pinned host
//                        memory (data object "host_input"), stores them locally
//   region "local_only"  on GPU 0: loads and stores its own memory only
//   region "graph_reads" on GPU 0: the host reads again, and the local kernel,
//                        as a CUDA graph (two kernel nodes) launched twice
//   region "peer"        (two GPUs with peer access) on GPU 0: loads N floats
//                        from GPU 1 ("peer_input") and stores M to GPU 1
//                        ("peer_output")
//   region "idle"        no GPU work for 20 ms (sampled counters: no traffic)
// With FERRET_BACKEND=peer_dump (registered below; run through ferret-run)
// the device-initiated traffic is written as JSON to
// <FERRET_OUTPUT>.peer.json; with metrics_dump, the regions and the sampled
// counters (FERRET_CUDA_METRICS_SAMPLING) to <FERRET_OUTPUT>.metrics.json
// (tests/gpu/metrics_sampling_check.py). Prints one line "expected {json}".
#include <ferret/ferret.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cuda_check.hpp"
#include "ferret/runtime/backend.hpp"
#include "dump_json.hpp"

namespace {

constexpr int load_line = __LINE__ + 3;
__global__ void read_host(float* out, const float* host, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = host[i] * 2.0f;  // the load from host memory
}

__global__ void local_only(float* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] + 1.0f;
}

constexpr int peer_load_line = __LINE__ + 4;
constexpr int peer_store_line = __LINE__ + 4;
__global__ void peer_traffic(float* local, const float* remote_in, float* remote_out, int n, int m) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) local[i] = remote_in[i];  // the load from the peer
  if (i < m) remote_out[i] = local[i];  // the store to the peer
}

class peer_dump final : public ferret::runtime::backend {
 public:
  explicit peer_dump(std::string path) : path_(std::move(path)) {}
  void thread_records(const ferret::runtime::thread_info&, const ferret::runtime::record*, std::size_t) override {}
  void data_object(const ferret::runtime::data_object_event&) override {}
  void gpu_activities(const ferret::runtime::gpu_activity* activities, std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i) {
      const auto& a = activities[i];
      if (a.operation != ferret::runtime::gpu_operation::kernel) continue;
      std::string entry = "{\"kernel\": " + json_string(ferret::runtime::demangled_kernel_name(a.name)) +
                          ", \"context\": " + json_string(ferret::runtime::context_path(a.launch.context)) +
                          ", \"targets\": [";
      for (std::uint32_t t = 0; a.remote != nullptr && t < a.remote->target_count; ++t)
        entry += std::string{t ? ", " : ""} + "{\"device\": " + std::to_string(a.remote->targets[t].device) +
                 ", \"loaded\": " + std::to_string(a.remote->targets[t].loaded_bytes) +
                 ", \"stored\": " + std::to_string(a.remote->targets[t].stored_bytes) + "}";
      kernels_.push_back(entry + "]}");
    }
  }
  void gpu_remote_accesses(const ferret::runtime::gpu_remote_access* accesses, std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i) {
      const auto& a = accesses[i];
      const auto key = std::make_tuple(ferret::runtime::context_path(a.context),
                                       ferret::runtime::demangled_kernel_name(a.function),
                                       a.line, a.device, a.target_device,
                                       std::string{ferret::runtime::to_string(a.access)},
                                       a.object != nullptr ? a.object->name : std::string{});
      auto& [accesses_so_far, bytes] = rows_[key];
      accesses_so_far += a.accesses;
      bytes += a.bytes;
    }
  }
  void flush(const ferret::runtime::session_status& status) override {
    if (!status.final) return;
    std::FILE* out = start_dump(path_, kernels_, "accesses");
    if (out == nullptr) return;
    std::size_t written = 0;
    for (const auto& [key, totals] : rows_) {
      const auto& [context, function, line, device, target, access, object] = key;
      std::fprintf(out,
                   "%s{\"context\": %s, \"function\": %s, \"line\": %u, \"device\": %u, \"target\": %d, "
                   "\"access\": %s, \"object\": %s, \"accesses\": %llu, \"bytes\": %llu}\n",
                   written++ ? "," : "", json_string(context).c_str(), json_string(function).c_str(), line,
                   device, target, json_string(access).c_str(), json_string(object).c_str(),
                   static_cast<unsigned long long>(totals.first), static_cast<unsigned long long>(totals.second));
    }
    finish_dump(out, *status.runtime_metadata, {"peer-", "gpu-device-initiated"});
  }
  void abandon() noexcept override {}
  std::string describe() const override { return "peer dump: " + path_; }

 private:
  std::string path_;
  std::vector<std::string> kernels_;
  std::map<std::tuple<std::string, std::string, std::uint32_t, std::uint32_t, std::int32_t, std::string, std::string>,
           std::pair<std::uint64_t, std::uint64_t>>
      rows_;
};

std::unique_ptr<ferret::runtime::backend> make_dump(const ferret::runtime::backend_context& context, std::string&) {
  return std::make_unique<peer_dump>(ferret::runtime::output_file(context, ".peer.json"));
}
FERRET_REGISTER_BACKEND("peer_dump", "device-initiated traffic as JSON (gpu-test-peer-accesses)", make_dump);

// The regions' times and every sampled interval, as they arrive.
class metrics_dump final : public ferret::runtime::backend {
 public:
  explicit metrics_dump(std::string path) : path_(std::move(path)) {}
  void thread_records(const ferret::runtime::thread_info&, const ferret::runtime::record* records,
                      std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i) {
      const auto& r = records[i];
      if (r.kind == ferret::runtime::record_kind::region_begin && r.name->domain.empty())
        open_[r.name->name] = r.time_ns;
      if (r.kind == ferret::runtime::record_kind::region_end && open_.count(r.name->name) != 0)
        regions_.push_back("{\"name\": " + json_string(r.name->name) + ", \"begin\": " +
                           std::to_string(open_[r.name->name]) + ", \"end\": " + std::to_string(r.time_ns) + "}");
    }
  }
  void data_object(const ferret::runtime::data_object_event&) override {}
  void gpu_sampled_metrics(const ferret::runtime::gpu_metric_set& set) override {
    std::string entry = "{\"device\": " + std::to_string(set.device) +
                        ", \"interval_ns\": " + std::to_string(set.interval_ns) + ", \"metrics\": [";
    for (std::size_t i = 0; i < set.metrics.size(); ++i)
      entry += std::string{i ? ", " : ""} + json_string(set.metrics[i].name);
    sets_.push_back(entry + "]}");
    metric_counts_[set.device] = set.metrics.size();
  }
  void gpu_metric_intervals(const ferret::runtime::gpu_metric_interval* intervals, std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i) {
      const auto& interval = intervals[i];
      std::string entry = "{\"device\": " + std::to_string(interval.device) + ", \"begin\": " +
                          std::to_string(interval.begin_ns) + ", \"end\": " + std::to_string(interval.end_ns) +
                          ", \"values\": [";
      for (std::size_t m = 0; m < metric_counts_[interval.device]; ++m) {
        char value[64];
        std::snprintf(value, sizeof value, "%.17g", interval.values[m]);
        entry += std::string{m ? ", " : ""} + (std::isfinite(interval.values[m]) ? value : "null");
      }
      intervals_.push_back(entry + "]}");
    }
  }
  void flush(const ferret::runtime::session_status& status) override {
    if (!status.final) return;
    std::FILE* out = start_dump(path_, {}, "regions");
    if (out == nullptr) return;
    const auto write = [&](const std::vector<std::string>& entries) {
      for (std::size_t i = 0; i < entries.size(); ++i)
        std::fprintf(out, "%s%s\n", i ? "," : "", entries[i].c_str());
    };
    write(regions_);
    std::fprintf(out, "], \"sets\": [\n");
    write(sets_);
    std::fprintf(out, "], \"intervals\": [\n");
    write(intervals_);
    finish_dump(out, *status.runtime_metadata, {"gpu-metric"});
  }
  void abandon() noexcept override {}
  std::string describe() const override { return "metrics dump: " + path_; }

 private:
  std::string path_;
  std::map<std::string, std::int64_t> open_;
  std::vector<std::string> regions_, sets_, intervals_;
  std::map<std::uint32_t, std::size_t> metric_counts_;
};

std::unique_ptr<ferret::runtime::backend> make_metrics_dump(const ferret::runtime::backend_context& context,
                                                            std::string&) {
  return std::make_unique<metrics_dump>(ferret::runtime::output_file(context, ".metrics.json"));
}
FERRET_REGISTER_BACKEND("metrics_dump", "sampled GPU counters as JSON (gpu-test-peer-accesses)", make_metrics_dump);

}  // namespace

int main() {
  constexpr int n = 1 << 20;  // floats loaded from host memory and from the peer
  constexpr int m = 1 << 18;  // floats stored to the peer
  constexpr int threads = 256;
  constexpr int graph_launches = 2;
  CHECK_CUDA(cudaSetDevice(0));
  float* host = nullptr;
  CHECK_CUDA(cudaHostAlloc(&host, n * sizeof(float), cudaHostAllocMapped));
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  const auto host_object = ferret::register_data_object("host_input", host, n * sizeof(float));
  float* host_on_device = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(&host_on_device, host, 0));
  float* local = nullptr;
  CHECK_CUDA(cudaMalloc(&local, n * sizeof(float)));
  // PM sampling's first sample spans its start-up (0.6-0.8 s on H200s, every
  // interval asked): the regions come after it, in samples of the interval asked.
  if (std::getenv("FERRET_CUDA_METRICS_SAMPLING") != nullptr)
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  {
    ferret::region r{"host_reads"};
    read_host<<<(n + threads - 1) / threads, threads>>>(local, host_on_device, n);
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  {
    ferret::region r{"local_only"};
    local_only<<<(n + threads - 1) / threads, threads>>>(local, n);
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  {
    ferret::region r{"graph_reads"};
    cudaStream_t stream = nullptr;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t graph_exec = nullptr;
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    read_host<<<(n + threads - 1) / threads, threads, 0, stream>>>(local, host_on_device, n);
    local_only<<<(n + threads - 1) / threads, threads, 0, stream>>>(local, n);
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&graph_exec, graph, 0));
    for (int launch = 0; launch < graph_launches; ++launch) CHECK_CUDA(cudaGraphLaunch(graph_exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_CUDA(cudaGraphExecDestroy(graph_exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_CUDA(cudaStreamDestroy(stream));
  }
  int devices = 0, can_access = 0;
  CHECK_CUDA(cudaGetDeviceCount(&devices));
  if (devices >= 2) CHECK_CUDA(cudaDeviceCanAccessPeer(&can_access, 0, 1));
  const bool peer = devices >= 2 && can_access != 0;
  if (peer) {
    float* remote_in = nullptr;
    float* remote_out = nullptr;
    CHECK_CUDA(cudaSetDevice(1));
    CHECK_CUDA(cudaMalloc(&remote_in, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&remote_out, m * sizeof(float)));
    CHECK_CUDA(cudaMemset(remote_in, 0, n * sizeof(float)));
    CHECK_CUDA(cudaDeviceSynchronize());
    const auto in_object = ferret::register_data_object("peer_input", remote_in, n * sizeof(float),
                                                        ferret::memory_kind::device, 1);
    const auto out_object = ferret::register_data_object("peer_output", remote_out, m * sizeof(float),
                                                         ferret::memory_kind::device, 1);
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaDeviceEnablePeerAccess(1, 0));
    {
      ferret::region r{"peer"};
      peer_traffic<<<(n + threads - 1) / threads, threads>>>(local, remote_in, remote_out, n, m);
      CHECK_CUDA(cudaDeviceSynchronize());
    }
    ferret::flush();  // the counts are decoded at a drain: name the objects while they live
    ferret::unregister_data_object(in_object);
    ferret::unregister_data_object(out_object);
  }
  {
    ferret::region r{"idle"};  // no GPU work: sampled links stay quiet
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ferret::flush();
  ferret::unregister_data_object(host_object);
  std::printf("expected {\"n\": %d, \"m\": %d, \"peer\": %s, \"load_line\": %d, \"peer_load_line\": %d, "
              "\"peer_store_line\": %d, \"graph_launches\": %d, \"file\": \"%s\"}\n",
              n, m, peer ? "true" : "false", load_line, peer_load_line, peer_store_line, graph_launches, __FILE__);
  return 0;
}
