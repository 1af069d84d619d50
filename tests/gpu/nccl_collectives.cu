// gpu-test-nccl-collectives: NCCL collectives and sends/receives with known bytes, for the
// profiler plugin's GPU checks (tests/gpu/nccl_one_gpu.sh, nccl_two_gpus.sh).
// Plain CUDA without ferret (traced through ferret-run); NCCL is loaded with
// dlopen("libnccl.so.2") and declared here, because the GPU machine has NCCL's
// library (from PyTorch) but not its header.
//   gpu-test-nccl-collectives one              one rank on GPU 0: all-reduce, all-gather, and a
//                                  send/receive to itself in one group
//   gpu-test-nccl-collectives devices          one process, one communicator per GPU (ranks 0, 1):
//                                  all-reduce and all-gather in groups
//   gpu-test-nccl-collectives devices-timed K  as devices, then K more all-reduces of both GPUs
//                                  timed (each group synchronised): prints
//                                  "result workload=allreduce per_op_us=..." (what
//                                  counting device-initiated traffic costs NCCL)
//   gpu-test-nccl-collectives rank R N FILE    rank R of N on GPU R (rank 0 writes the unique id
//                                  into FILE, the others wait for it): all-reduce,
//                                  all-gather
// Every operation moves `elements` floats (4 MiB); results are checked.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_check.hpp"

namespace {

struct unique_id { char internal[128]; };
using comm_t = struct nccl_comm*;
using result_t = int;
constexpr int float32 = 7;  // ncclFloat32
constexpr int sum = 0;      // ncclSum

struct nccl_library {
  result_t (*get_version)(int*);
  result_t (*get_unique_id)(unique_id*);
  result_t (*comm_init_rank)(comm_t*, int, unique_id, int);
  result_t (*comm_init_all)(comm_t*, int, const int*);
  result_t (*comm_destroy)(comm_t);
  result_t (*all_reduce)(const void*, void*, std::size_t, int, int, comm_t, cudaStream_t);
  result_t (*all_gather)(const void*, void*, std::size_t, int, comm_t, cudaStream_t);
  result_t (*send)(const void*, std::size_t, int, int, comm_t, cudaStream_t);
  result_t (*recv)(void*, std::size_t, int, int, comm_t, cudaStream_t);
  result_t (*group_start)();
  result_t (*group_end)();
  const char* (*error_string)(result_t);
};
nccl_library nccl;

template <class F>
void find(void* library, const char* name, F& function) {
  function = reinterpret_cast<F>(dlsym(library, name));
  if (function == nullptr) {
    std::fprintf(stderr, "gpu-test-nccl-collectives: no %s in libnccl.so.2\n", name);
    std::exit(1);
  }
}

void load_nccl() {
  void* library = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
  if (library == nullptr) {
    std::fprintf(stderr, "gpu-test-nccl-collectives: %s (put NCCL's lib folder on LD_LIBRARY_PATH)\n", dlerror());
    std::exit(1);
  }
  find(library, "ncclGetVersion", nccl.get_version);
  find(library, "ncclGetUniqueId", nccl.get_unique_id);
  find(library, "ncclCommInitRank", nccl.comm_init_rank);
  find(library, "ncclCommInitAll", nccl.comm_init_all);
  find(library, "ncclCommDestroy", nccl.comm_destroy);
  find(library, "ncclAllReduce", nccl.all_reduce);
  find(library, "ncclAllGather", nccl.all_gather);
  find(library, "ncclSend", nccl.send);
  find(library, "ncclRecv", nccl.recv);
  find(library, "ncclGroupStart", nccl.group_start);
  find(library, "ncclGroupEnd", nccl.group_end);
  find(library, "ncclGetErrorString", nccl.error_string);
}

void check(result_t status, const char* call, int line) {
  if (status == 0) return;
  std::fprintf(stderr, "gpu-test-nccl-collectives:%d: %s failed: %s\n", line, call, nccl.error_string(status));
  std::exit(1);
}
#define CHECK_NCCL(call) check((call), #call, __LINE__)

constexpr std::size_t elements = 1 << 20;
constexpr std::size_t bytes = elements * sizeof(float);

// One rank's buffers on its GPU: send holds rank + 1 everywhere.
struct rank_buffers {
  int device;
  int rank;
  int ranks;
  comm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* send = nullptr;
  float* reduced = nullptr;
  float* gathered = nullptr;

  void allocate() {
    CHECK_CUDA(cudaSetDevice(device));
    CHECK_CUDA(cudaStreamCreate(&stream));
    CHECK_CUDA(cudaMalloc(&send, bytes));
    CHECK_CUDA(cudaMalloc(&reduced, bytes));
    CHECK_CUDA(cudaMalloc(&gathered, bytes * static_cast<std::size_t>(ranks)));
    std::vector<float> values(elements, static_cast<float>(rank + 1));
    CHECK_CUDA(cudaMemcpy(send, values.data(), bytes, cudaMemcpyHostToDevice));
  }
  // Sum over ranks of (rank + 1); gathered block r holds r + 1.
  bool results_right() {
    CHECK_CUDA(cudaSetDevice(device));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::vector<float> values(elements * static_cast<std::size_t>(ranks));
    CHECK_CUDA(cudaMemcpy(values.data(), reduced, bytes, cudaMemcpyDeviceToHost));
    const auto expected_sum = static_cast<float>(ranks * (ranks + 1) / 2);
    for (std::size_t i = 0; i < elements; i += 4099)
      if (values[i] != expected_sum) return false;
    CHECK_CUDA(cudaMemcpy(values.data(), gathered, values.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < values.size(); i += 4099)
      if (values[i] != static_cast<float>(i / elements + 1)) return false;
    return true;
  }
  void release() {
    CHECK_CUDA(cudaSetDevice(device));
    CHECK_NCCL(nccl.comm_destroy(comm));
    CHECK_CUDA(cudaFree(send));
    CHECK_CUDA(cudaFree(reduced));
    CHECK_CUDA(cudaFree(gathered));
    CHECK_CUDA(cudaStreamDestroy(stream));
  }
};

void collectives(std::vector<rank_buffers>& ranks) {
  CHECK_NCCL(nccl.group_start());
  for (auto& r : ranks) {
    CHECK_CUDA(cudaSetDevice(r.device));
    CHECK_NCCL(nccl.all_reduce(r.send, r.reduced, elements, float32, sum, r.comm, r.stream));
  }
  CHECK_NCCL(nccl.group_end());
  CHECK_NCCL(nccl.group_start());
  for (auto& r : ranks) {
    CHECK_CUDA(cudaSetDevice(r.device));
    CHECK_NCCL(nccl.all_gather(r.send, r.gathered, elements, float32, r.comm, r.stream));
  }
  CHECK_NCCL(nccl.group_end());
}

int finish(std::vector<rank_buffers>& ranks) {
  bool right = true;
  for (auto& r : ranks) right = r.results_right() && right;
  for (auto& r : ranks) r.release();
  std::printf("gpu-test-nccl-collectives: %s\n", right ? "results right" : "RESULTS WRONG");
  return right ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  load_nccl();
  int version = 0;
  CHECK_NCCL(nccl.get_version(&version));
  std::printf("gpu-test-nccl-collectives: NCCL %d.%d.%d\n", version / 10000, version / 100 % 100, version % 100);
  if (mode == "one") {
    std::vector<rank_buffers> ranks{{0, 0, 1}};
    rank_buffers& r = ranks[0];
    r.allocate();
    const int device = 0;
    CHECK_NCCL(nccl.comm_init_all(&r.comm, 1, &device));
    // Separate calls (NCCL's implicit groups), then a send to itself.
    CHECK_NCCL(nccl.all_reduce(r.send, r.reduced, elements, float32, sum, r.comm, r.stream));
    CHECK_NCCL(nccl.all_gather(r.send, r.gathered, elements, float32, r.comm, r.stream));
    float* received = nullptr;
    CHECK_CUDA(cudaMalloc(&received, bytes));
    CHECK_NCCL(nccl.group_start());
    CHECK_NCCL(nccl.send(r.send, elements, float32, 0, r.comm, r.stream));
    CHECK_NCCL(nccl.recv(received, elements, float32, 0, r.comm, r.stream));
    CHECK_NCCL(nccl.group_end());
    CHECK_CUDA(cudaStreamSynchronize(r.stream));
    std::vector<float> values(elements);
    CHECK_CUDA(cudaMemcpy(values.data(), received, bytes, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(received));
    if (values[elements / 2] != 1.0f) {
      std::fprintf(stderr, "gpu-test-nccl-collectives: the send to itself arrived wrong\n");
      return 1;
    }
    return finish(ranks);
  }
  if (mode == "devices" || (mode == "devices-timed" && argc == 3)) {
    std::vector<rank_buffers> ranks{{0, 0, 2}, {1, 1, 2}};
    for (auto& r : ranks) r.allocate();
    comm_t comms[2];
    const int devices[2] = {0, 1};
    CHECK_NCCL(nccl.comm_init_all(comms, 2, devices));
    ranks[0].comm = comms[0];
    ranks[1].comm = comms[1];
    collectives(ranks);
    if (mode == "devices-timed") {
      const long iterations = std::max(1L, std::atol(argv[2]));
      const auto start = std::chrono::steady_clock::now();
      for (long i = 0; i < iterations; ++i) {
        CHECK_NCCL(nccl.group_start());
        for (auto& r : ranks) {
          CHECK_CUDA(cudaSetDevice(r.device));
          CHECK_NCCL(nccl.all_reduce(r.send, r.reduced, elements, float32, sum, r.comm, r.stream));
        }
        CHECK_NCCL(nccl.group_end());
        for (auto& r : ranks) {
          CHECK_CUDA(cudaSetDevice(r.device));
          CHECK_CUDA(cudaStreamSynchronize(r.stream));
        }
      }
      const std::chrono::duration<double, std::micro> taken = std::chrono::steady_clock::now() - start;
      std::printf("result workload=allreduce per_op_us=%.2f ops=%ld\n", taken.count() / static_cast<double>(iterations),
                  iterations);
    }
    return finish(ranks);
  }
  if (mode == "rank" && argc == 5) {
    const int rank = std::atoi(argv[2]);
    const int count = std::atoi(argv[3]);
    const std::string file = argv[4];
    unique_id id{};
    if (rank == 0) {
      CHECK_NCCL(nccl.get_unique_id(&id));
      const std::string partial = file + ".partial";
      FILE* out = std::fopen(partial.c_str(), "wb");
      if (out == nullptr || std::fwrite(&id, sizeof id, 1, out) != 1 || std::fclose(out) != 0 ||
          std::rename(partial.c_str(), file.c_str()) != 0) {
        std::fprintf(stderr, "gpu-test-nccl-collectives: cannot write %s\n", file.c_str());
        return 1;
      }
    } else {
      FILE* in = nullptr;
      for (int tries = 0; tries < 600 && (in = std::fopen(file.c_str(), "rb")) == nullptr; ++tries) usleep(100000);
      if (in == nullptr || std::fread(&id, sizeof id, 1, in) != 1) {
        std::fprintf(stderr, "gpu-test-nccl-collectives: no unique id in %s\n", file.c_str());
        return 1;
      }
      std::fclose(in);
    }
    std::vector<rank_buffers> ranks{{rank, rank, count}};
    ranks[0].allocate();
    CHECK_NCCL(nccl.comm_init_rank(&ranks[0].comm, count, id, rank));
    collectives(ranks);
    return finish(ranks);
  }
  std::fprintf(stderr, "usage: gpu-test-nccl-collectives one | devices | devices-timed K | rank R N FILE\n");
  return 2;
}
