// gpu-test-peer-access-patch: the device function the Compute Sanitizer
// inserts for FERRET_CUDA_PEER_ACCESSES (peer_access_patch.cu), called here
// directly from an ordinary kernel, so that its counting — range search,
// local accesses left out, warp lanes with one key added together, address
// bounds, a full table counted lost — and its timing of a kernel (block
// entry and exit on the global timer) are checked on the GPU without the
// sanitizer. The counters are decoded by the collector's own decoder. Exit 0
// pass, 1 fail, 77 without a GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "memory_ranges.hpp"
#include "peer_access_decoder.hpp"
#include "peer_access_layout.h"

extern "C" __device__ int ferret_peer_access(void* userdata, uint64_t pc, void* pointer, uint32_t access_size,
                                             uint32_t flags, const void* new_value);
extern "C" __device__ int ferret_peer_block_enter(void* userdata, uint64_t pc);
extern "C" __device__ int ferret_peer_block_exit(void* userdata, uint64_t pc);

namespace {

constexpr std::uint64_t local_base = 0x1'0000'0000, peer_base = 0x2'0000'0000, host_base = 0x3'0000'0000;
constexpr std::uint64_t kernel_pc = 0x7000'0000;

// Per thread of 4 warps: a load from the peer (all lanes one key), a store to
// host memory from odd lanes only, a local access, an access in no range, and
// a load whose key depends on the lane (8 keys per warp).
__global__ void accesses(ferret_peer_launch* launch) {
  const unsigned thread = blockIdx.x * blockDim.x + threadIdx.x;
  ferret_peer_access(launch, kernel_pc + 0x10, reinterpret_cast<void*>(peer_base + 4 * thread), 4,
                     FERRET_PEER_FLAG_READ, nullptr);
  if (thread % 2 == 1)
    ferret_peer_access(launch, kernel_pc + 0x20, reinterpret_cast<void*>(host_base + 8 * thread), 8,
                       FERRET_PEER_FLAG_WRITE, nullptr);
  ferret_peer_access(launch, kernel_pc + 0x30, reinterpret_cast<void*>(local_base + 4 * thread), 4,
                     FERRET_PEER_FLAG_READ, nullptr);
  ferret_peer_access(launch, kernel_pc + 0x40, reinterpret_cast<void*>(0x9'0000'0000 + thread), 1,
                     FERRET_PEER_FLAG_READ, nullptr);
  ferret_peer_access(launch, kernel_pc + 0x50 + 0x10 * (thread % 8), reinterpret_cast<void*>(peer_base), 4,
                     FERRET_PEER_FLAG_READ | FERRET_PEER_FLAG_WRITE, nullptr);
}

__device__ unsigned long long global_timer() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

// Timed as the sanitizer would patch it (every thread enters and exits); the
// kernel notes its own first and last reading of the timer in `seen`, and its
// last block runs 100 µs longer than the others.
__global__ void timed(ferret_peer_launch* launch, unsigned long long* seen) {
  ferret_peer_block_enter(launch, 0);
  const unsigned long long start = global_timer();
  atomicMin(&seen[0], start);
  const unsigned long long spin = blockIdx.x + 1 == gridDim.x ? 120'000 : 20'000;
  unsigned long long now = start;
  while (now - start < spin) now = global_timer();
  atomicMax(&seen[1], now);
  ferret_peer_block_exit(launch, 0);
}

int failures = 0;
void expect(bool condition, const char* what) {
  if (!condition) {
    std::printf("peer access patch: FAILED: %s\n", what);
    ++failures;
  }
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("peer access patch: skipped: no GPU\n");
    return 77;
  }
  ferret::compute_sanitizer::memory_ranges known;
  known.allocated(local_base, 1 << 20, 0);
  known.allocated(peer_base, 1 << 20, 1);
  known.allocated(host_base, 1 << 20, -1);
  const auto table = known.current();
  constexpr std::uint32_t slots = 64;
  ferret_peer_range* ranges = nullptr;
  ferret_peer_counter* counters = nullptr;
  ferret_peer_launch* launch = nullptr;
  cudaMalloc(&ranges, table->ranges.size() * sizeof(ferret_peer_range));
  cudaMalloc(&counters, slots * sizeof(ferret_peer_counter));
  cudaMalloc(&launch, sizeof(ferret_peer_launch));
  cudaMemcpy(ranges, table->ranges.data(), table->ranges.size() * sizeof(ferret_peer_range), cudaMemcpyHostToDevice);
  cudaMemset(counters, 0, slots * sizeof(ferret_peer_counter));
  const ferret_peer_launch given{ranges, static_cast<std::uint32_t>(table->ranges.size()), 0, counters, slots, 0, {0, 0}, 0, 0};
  cudaMemcpy(launch, &given, sizeof given, cudaMemcpyHostToDevice);
  accesses<<<2, 64>>>(launch);
  if (const cudaError_t status = cudaDeviceSynchronize(); status != cudaSuccess) {
    std::printf("peer access patch: FAILED: the kernel: %s\n", cudaGetErrorString(status));
    return 1;
  }
  ferret_peer_launch header{};
  std::vector<ferret_peer_counter> read(slots);
  cudaMemcpy(&header, launch, sizeof header, cudaMemcpyDeviceToHost);
  cudaMemcpy(read.data(), counters, slots * sizeof(ferret_peer_counter), cudaMemcpyDeviceToHost);

  ferret::compute_sanitizer::function_map functions;
  static const char name[] = "_Z8accessesP18ferret_peer_launch";
  functions.add({kernel_pc, 0x1000, name, 1});
  std::vector<ferret::runtime::gpu_remote_access_batch> batches;
  ferret::compute_sanitizer::decode_losses losses;
  ferret::compute_sanitizer::decode_launch(
      read.data(), read.size(), header.lost, *table, 7, 0, functions, nullptr,
      [](std::uint64_t lowest, std::uint64_t highest, bool& spans) -> std::uint64_t {
        spans = false;
        return lowest >= peer_base && highest < peer_base + 4 * 128 ? 1 : 0;  // the first load's addresses
      },
      batches, losses);
  // A key's counter has a replica per quarter of the SMs: the two blocks may
  // have counted in two of them. Summed per key, as the runtime sums them.
  struct key_total {
    std::uint64_t accesses = 0, bytes = 0;
    bool all_in_object = true;
  };
  std::map<std::tuple<std::uint64_t, int, ferret::runtime::memory_access>, key_total> keys;
  for (const auto& batch : batches)
    for (const auto& access : batch.accesses) {
      std::printf("peer access patch: offset %#llx device %d %s: %llu accesses, %llu bytes, object %llu\n",
                  static_cast<unsigned long long>(access.pc_offset), access.target_device,
                  std::string{ferret::runtime::to_string(access.kind)}.c_str(),
                  static_cast<unsigned long long>(access.accesses), static_cast<unsigned long long>(access.bytes),
                  static_cast<unsigned long long>(access.object_id));
      key_total& total = keys[{access.pc_offset, access.target_device, access.kind}];
      total.accesses += access.accesses;
      total.bytes += access.bytes;
      total.all_in_object = total.all_in_object && access.object_id == 1;
    }
  expect(header.used_slots >= 11 && keys.size() == 1 + 1 + 8,
         "10 keys in at least 11 counters: peer load, host store, 8 lane-dependent (and no range's)");
  expect(losses.accesses_in_no_range == 128, "128 accesses in no range");
  expect(header.lost[0] == 0 && header.lost[1] == 0, "nothing lost");
  expect(batches.size() == 1, "one function");
  std::uint64_t lane_keys = 0, lane_accesses = 0;
  for (const auto& [key, total] : keys) {
    const auto& [offset, device, kind] = key;
    if (offset == 0x10) {
      expect(device == 1 && total.accesses == 128 && total.bytes == 512, "the peer load: 128 × 4 bytes");
      expect(total.all_in_object, "the peer load's bounds: within the first 128 floats");
    } else if (offset == 0x20) {
      expect(device == -1 && total.accesses == 64 && total.bytes == 512, "the host store: 64 × 8 bytes");
      expect(kind == ferret::runtime::memory_access::store, "a store");
    } else if (offset >= 0x50 && offset < 0xd0) {
      ++lane_keys;
      lane_accesses += total.accesses;
      expect(kind == ferret::runtime::memory_access::atomic, "read and write: an atomic");
    } else {
      expect(false, "an access at an unexpected offset (the local one must not be counted)");
    }
  }
  expect(lane_keys == 8 && lane_accesses == 128, "8 lane-dependent keys, 128 accesses in all");

  // A table of two counters: what does not fit is counted lost, not dropped silently.
  cudaMemset(counters, 0, slots * sizeof(ferret_peer_counter));
  const ferret_peer_launch small{ranges, static_cast<std::uint32_t>(table->ranges.size()), 0, counters, 2, 0, {0, 0}, 0, 0};
  cudaMemcpy(launch, &small, sizeof small, cudaMemcpyHostToDevice);
  accesses<<<2, 64>>>(launch);
  cudaDeviceSynchronize();
  cudaMemcpy(&header, launch, sizeof header, cudaMemcpyDeviceToHost);
  cudaMemcpy(read.data(), counters, 2 * sizeof(ferret_peer_counter), cudaMemcpyDeviceToHost);
  std::uint64_t counted = header.lost[ferret_peer_lost_table_full];
  for (std::uint32_t slot = 0; slot < 2; ++slot) counted += read[slot].accesses;
  expect(header.used_slots == 2, "a full table: two counters taken");
  expect(counted == 128 + 64 + 128 + 128, "a full table: every non-local access counted or counted lost");

  // Timing: the first entry before the kernel's first reading of the timer,
  // the last exit after its last, each within 5 µs (the exit to a microsecond).
  const ferret_peer_launch untimed{ranges, static_cast<std::uint32_t>(table->ranges.size()), 0, counters, slots, 0, {0, 0}, 0, 0};
  cudaMemcpy(launch, &untimed, sizeof untimed, cudaMemcpyHostToDevice);
  unsigned long long* seen = nullptr;
  cudaMalloc(&seen, 2 * sizeof(unsigned long long));
  const unsigned long long seen_start[2] = {~0ull, 0};
  cudaMemcpy(seen, seen_start, sizeof seen_start, cudaMemcpyHostToDevice);
  timed<<<264, 128>>>(launch, seen);
  if (const cudaError_t status = cudaDeviceSynchronize(); status != cudaSuccess) {
    std::printf("peer access patch: FAILED: the timed kernel: %s\n", cudaGetErrorString(status));
    return 1;
  }
  unsigned long long kernel_seen[2] = {0, 0};
  cudaMemcpy(kernel_seen, seen, sizeof kernel_seen, cudaMemcpyDeviceToHost);
  cudaMemcpy(&header, launch, sizeof header, cudaMemcpyDeviceToHost);
  const unsigned long long entered = ~header.first_entry_inverted, exited = header.last_exit;
  std::printf("peer access patch: timed kernel: entry %llu ns before its first reading, exit %lld ns after its "
              "last, %llu ns long\n",
              kernel_seen[0] - entered, static_cast<long long>(exited - kernel_seen[1]), exited - entered);
  expect(header.first_entry_inverted != 0 && exited != 0, "the timed kernel: entry and exit noted");
  expect(entered <= kernel_seen[0] && kernel_seen[0] - entered < 5'000, "the entry: at most 5 µs before the kernel's first reading");
  expect(exited + 1'024 > kernel_seen[1] && exited < kernel_seen[1] + 5'000, "the exit: within a µs before to 5 µs after the kernel's last reading");
  expect(exited - entered >= 120'000, "the timed kernel: at least its last block's 120 µs");

  if (failures == 0) std::printf("peer access patch: passed\n");
  return failures == 0 ? 0 : 1;
}
