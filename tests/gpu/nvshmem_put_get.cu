// nvshmem-put-get PE UNIQUE_ID_FILE: one of two NVSHMEM PEs, PE r on GPU r,
// for checking that FERRET_CUDA_PEER_ACCESSES attributes NVSHMEM's puts and
// gets to the right device despite the symmetric heap (every PE's buffer has
// the same symmetric address; a kernel reaches the peer's copy through the
// peer's heap mapped elsewhere in its own address space: Snoopie, section 4.3).
// Built and run by tests/gpu/nvshmem_check.sh (nvcc -rdc=true -lineinfo,
// NVSHMEM's device and host libraries); plain CUDA, traced through ferret-run.
//   Bootstrap: NVSHMEM's unique-id bootstrap; PE 0 writes the id to
//   UNIQUE_ID_FILE (written aside, then renamed), PE 1 waits for it.
//   PE 0: ferret_put_get puts N floats into PE 1's symmetric buffer with
//   nvshmem_float_p (one store per thread) and gets M floats from PE 1's with
//   nvshmem_float_g (one load per thread) into a symmetric buffer of its own
//   (a local store: not counted). Both PEs: ferret_fill writes their own
//   symmetric buffers (local: not counted). Then barriers, and each PE checks
//   what it received.
// Prints "results right" (or what is wrong, exit 1) and one line
// "expected {json}" for tests/gpu/nvshmem_check.py.
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.hpp"

constexpr int put_line = __LINE__ + 4;
constexpr int get_line = __LINE__ + 4;
__global__ void ferret_put_get(float* peer_out, const float* peer_in, float* got, int n, int m, int peer) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) nvshmem_float_p(peer_out + i, static_cast<float>(i), peer);  // the put: one store to the peer
  if (i < m) got[i] = nvshmem_float_g(peer_in + i, peer);  // the get: one load from the peer
}

__global__ void ferret_fill(float* data, int count, float base) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) data[i] = base + static_cast<float>(i);
}

namespace {

constexpr int n = 1 << 20;  // floats put into PE 1
constexpr int m = 1 << 18;  // floats got from PE 1
constexpr int threads = 256;
constexpr float get_base = 1000000.0f;  // PE 1's values to get: get_base + i (exact in a float)

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "nvshmem-put-get: %s\n", message.c_str());
  std::exit(1);
}

// PE 0 makes the id; PE 1 reads it once the file is complete (renamed into place).
nvshmemx_uniqueid_t share_unique_id(int pe, const std::string& path) {
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (pe == 0) {
    if (nvshmemx_get_uniqueid(&id) != 0) fail("nvshmemx_get_uniqueid failed");
    const std::string aside = path + ".partial";
    std::FILE* out = std::fopen(aside.c_str(), "wb");
    if (out == nullptr || std::fwrite(&id, sizeof id, 1, out) != 1 || std::fclose(out) != 0)
      fail("cannot write the unique id to " + aside);
    if (std::rename(aside.c_str(), path.c_str()) != 0) fail("cannot rename " + aside + " to " + path);
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    if (std::FILE* in = std::fopen(path.c_str(), "rb")) {
      const bool read = std::fread(&id, sizeof id, 1, in) == 1;
      std::fclose(in);
      if (!read) fail("the unique id in " + path + " is short");
      return id;
    }
    if (std::chrono::steady_clock::now() > deadline) fail("PE 0 wrote no unique id to " + path + " in 60 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int blocks(int count) { return (count + threads - 1) / threads; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) fail("usage: nvshmem-put-get PE UNIQUE_ID_FILE (PE 0 or 1)");
  const int pe = std::atoi(argv[1]);
  if (pe != 0 && pe != 1) fail("the PE must be 0 or 1");
  int devices = 0;
  CHECK_CUDA(cudaGetDeviceCount(&devices));
  if (devices < 2) fail("needs two GPUs, sees " + std::to_string(devices));
  CHECK_CUDA(cudaSetDevice(pe));  // NVSHMEM takes the current device at initialisation

  nvshmemx_uniqueid_t id = share_unique_id(pe, argv[2]);
#ifdef NVSHMEMX_INIT_ATTR_INITIALIZER
  nvshmemx_init_attr_t attributes = NVSHMEMX_INIT_ATTR_INITIALIZER;
#else
  nvshmemx_init_attr_t attributes{};
#endif
  if (nvshmemx_set_attr_uniqueid_args(pe, 2, &id, &attributes) != 0) fail("nvshmemx_set_attr_uniqueid_args failed");
  if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attributes) != 0) fail("nvshmemx_init_attr failed");
  if (nvshmem_my_pe() != pe || nvshmem_n_pes() != 2)
    fail("NVSHMEM says PE " + std::to_string(nvshmem_my_pe()) + " of " + std::to_string(nvshmem_n_pes()) +
         ", expected " + std::to_string(pe) + " of 2");

  auto* put_target = static_cast<float*>(nvshmem_malloc(n * sizeof(float)));  // PE 1's receives the put
  auto* get_source = static_cast<float*>(nvshmem_malloc(m * sizeof(float)));  // PE 1's is read by the get
  auto* got = static_cast<float*>(nvshmem_malloc(m * sizeof(float)));         // PE 0's own copy of the get
  if (put_target == nullptr || get_source == nullptr || got == nullptr) fail("nvshmem_malloc failed");
  const int peer = 1 - pe;
  // Whether the peer's heap is mapped here: p and g are then plain stores and
  // loads to the peer's memory; without it they would go through NVSHMEM's proxy.
  const bool peer_mapped = nvshmem_ptr(put_target, peer) != nullptr;

  CHECK_CUDA(cudaMemset(put_target, 0xff, n * sizeof(float)));  // NaN: an element not put fails the check
  CHECK_CUDA(cudaMemset(got, 0xff, m * sizeof(float)));
  ferret_fill<<<blocks(m), threads>>>(get_source, m, pe == 1 ? get_base : 0.0f);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  nvshmem_barrier_all();  // PE 1's values are in place before PE 0 gets them

  double kernel_ms = 0;
  if (pe == 0) {
    const auto start = std::chrono::steady_clock::now();
    ferret_put_get<<<blocks(n > m ? n : m), threads>>>(put_target, get_source, got, n, m, peer);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    kernel_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  nvshmem_barrier_all();  // PE 0's puts are complete and visible before PE 1 checks them

  int wrong = 0;
  if (pe == 0) {
    std::vector<float> values(m);
    CHECK_CUDA(cudaMemcpy(values.data(), got, m * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < m; ++i) wrong += values[i] != get_base + static_cast<float>(i);
    if (wrong != 0) std::printf("results wrong: %d of %d values got from PE 1\n", wrong, m);
  } else {
    std::vector<float> values(n);
    CHECK_CUDA(cudaMemcpy(values.data(), put_target, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) wrong += values[i] != static_cast<float>(i);
    if (wrong != 0) std::printf("results wrong: %d of %d values put by PE 0\n", wrong, n);
  }
  if (wrong == 0) std::printf("results right\n");
  // ferret decodes a launch's counts at its next drain (every 200 ms): the
  // symmetric heap's objects are still there to be named then.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));

  nvshmem_barrier_all();
  nvshmem_free(got);
  nvshmem_free(get_source);
  nvshmem_free(put_target);
  nvshmem_finalize();
  std::printf("expected {\"pe\": %d, \"n\": %d, \"m\": %d, \"put_line\": %d, \"get_line\": %d, \"file\": \"%s\", "
              "\"kernel\": \"ferret_put_get\", \"fill_kernel\": \"ferret_fill\", \"peer_mapped\": %s, "
              "\"kernel_ms\": %.3f}\n",
              pe, n, m, put_line, get_line, __FILE__, peer_mapped ? "true" : "false", kernel_ms);
  return wrong == 0 ? 0 : 1;
}
