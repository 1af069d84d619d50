// peer_access_patch.cu — the device function the Compute Sanitizer inserts
// before every global memory access of a patched kernel
// (SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS; its signature is
// SanitizerCallbackMemoryAccess). Built with nvcc into a fatbin
// (--keep-device-functions, -Xptxas --compile-as-tools-patch) that the
// collector hands to sanitizerAddPatches; see peer_access_layout.h for what
// it counts and why it stays on the device. The block entry and exit patches
// below time the kernel.
#include "peer_access_layout.h"

namespace {

__device__ __forceinline__ unsigned lane_id() {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

__device__ __forceinline__ bool first_active_lane() {
  return lane_id() == static_cast<unsigned>(__ffs(static_cast<int>(__activemask()))) - 1;
}

__device__ __forceinline__ unsigned sm_id() {
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm;
}

__device__ __forceinline__ uint64_t global_timer() {
  uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__device__ __forceinline__ uint64_t read_shared(const uint64_t* value) {
  return *static_cast<const volatile uint64_t*>(value);
}

__device__ __forceinline__ void count_lost(ferret_peer_launch* launch, unsigned reason,
                                           unsigned accesses) {
  atomicAdd(reinterpret_cast<unsigned long long*>(&launch->lost[reason]), accesses);
}

}  // namespace

// The sanitizer's patch ABI: userdata, pc, address, size, flags, new value;
// returns SANITIZER_PATCH_SUCCESS (0).
extern "C" __device__ __noinline__ int ferret_peer_access(void* userdata, uint64_t pc, void* pointer,
                                                          uint32_t access_size, uint32_t flags,
                                                          const void* /*new_value*/) {
  ferret_peer_launch* launch = static_cast<ferret_peer_launch*>(userdata);
  if (launch == nullptr) return 0;
  const uint64_t address = reinterpret_cast<uint64_t>(pointer);
  const uint32_t range = ferret_peer_find_range(launch->ranges, launch->range_count, address);
  if (range < launch->range_count && launch->ranges[range].device == launch->device) return 0;  // local
  const uint32_t range_plus_one = range < launch->range_count ? range + 1 : 0;
  const uint64_t key = ferret_peer_key(pc, ferret_peer_kind_of(flags), range_plus_one);

  // Lanes of the warp with the same key add together, through their lowest
  // lane; the bounds of their addresses by shuffles (a tools patch may not
  // use the redux instructions): a butterfly when the whole warp shares the
  // key, the common case, else one lane after the other.
  const unsigned peers = __match_any_sync(__activemask(), key);
  unsigned long long lowest = address, highest = address;
  if (peers == 0xffffffffu) {
    for (int offset = 16; offset > 0; offset /= 2) {
      lowest = min(lowest, __shfl_xor_sync(peers, lowest, offset));
      highest = max(highest, __shfl_xor_sync(peers, highest, offset));
    }
  } else {
    for (unsigned rest = peers; rest != 0; rest &= rest - 1) {
      const unsigned long long other =
          __shfl_sync(peers, address, static_cast<int>(__ffs(static_cast<int>(rest))) - 1);
      lowest = min(lowest, other);
      highest = max(highest, other);
    }
  }
  const unsigned leader = static_cast<unsigned>(__ffs(static_cast<int>(peers))) - 1;
  if (lane_id() != leader) return 0;
  const unsigned group = static_cast<unsigned>(__popc(peers));
  if (key == 0) {
    count_lost(launch, ferret_peer_lost_key_overflow, group);
    return 0;
  }
  // Every warp of a kernel that streams to a peer adds to the same key: the
  // SMs of each quarter of the GPU start in their own quarter of the table, so
  // that four counters of the key share the atomics (the runtime adds them up).
  // NCCL AllReduce on 2×H200: one counter 12×, two 9.1×, four 8.1× bare.
  const uint32_t mask = launch->counter_slots - 1u;
  uint32_t slot = (ferret_peer_slot(key, launch->counter_slots) + (sm_id() & 3u) * (launch->counter_slots / 4u)) & mask;
  for (uint32_t probe = 0; probe < FERRET_PEER_PROBES; ++probe, slot = (slot + 1u) & mask) {
    ferret_peer_counter& counter = launch->counters[slot];
    auto* slot_key = reinterpret_cast<unsigned long long*>(&counter.key);
    const unsigned long long seen = atomicCAS(slot_key, 0ull, static_cast<unsigned long long>(key));
    if (seen != 0 && seen != key) continue;
    if (seen == 0) atomicAdd(&launch->used_slots, 1u);
    atomicAdd(reinterpret_cast<unsigned long long*>(&counter.accesses), group);
    atomicAdd(reinterpret_cast<unsigned long long*>(&counter.bytes),
              static_cast<unsigned long long>(group) * access_size);
    atomicMax(reinterpret_cast<unsigned long long*>(&counter.lowest_address_inverted), ~lowest);
    atomicMax(reinterpret_cast<unsigned long long*>(&counter.highest_address), highest);
    return 0;
  }
  count_lost(launch, ferret_peer_lost_table_full, group);
  return 0;
}

// SANITIZER_INSTRUCTION_BLOCK_ENTER (SanitizerCallbackBlockEnter), by every
// thread: one lane a warp (a block's warps start in any order) notes the time
// when it is earlier than the entry noted; later warps only look.
extern "C" __device__ __noinline__ int ferret_peer_block_enter(void* userdata, uint64_t /*pc*/) {
  ferret_peer_launch* launch = static_cast<ferret_peer_launch*>(userdata);
  if (launch == nullptr) return 0;
  if (!first_active_lane()) return 0;
  const uint64_t now = global_timer();
  const uint64_t noted = read_shared(&launch->first_entry_inverted);
  if (noted == 0 || now < ~noted)
    atomicMax(reinterpret_cast<unsigned long long*>(&launch->first_entry_inverted), ~now);
  return 0;
}

// SANITIZER_INSTRUCTION_BLOCK_EXIT (SanitizerCallbackBlockExit), by every
// thread at its exit: one lane a warp; warps ending within the same
// microsecond (1 024 ns) as the latest noted add no atomic, so that the
// atomics on this one word stay few (its error: under a microsecond).
extern "C" __device__ __noinline__ int ferret_peer_block_exit(void* userdata, uint64_t /*pc*/) {
  ferret_peer_launch* launch = static_cast<ferret_peer_launch*>(userdata);
  if (launch == nullptr) return 0;
  if (!first_active_lane()) return 0;
  const uint64_t now = global_timer();
  if ((now >> 10) > (read_shared(&launch->last_exit) >> 10))
    atomicMax(reinterpret_cast<unsigned long long*>(&launch->last_exit), now);
  return 0;
}

// The same call with nothing done: what the Compute Sanitizer's patching
// itself costs a kernel, for the benchmark's breakdown
// (FERRET_PEER_ACCESS_EMPTY_PATCH=1, benchmarks/cuda/run.sh's stencil table).
extern "C" __device__ __noinline__ int ferret_peer_access_nothing(void* /*userdata*/, uint64_t /*pc*/,
                                                                  void* /*pointer*/, uint32_t /*access_size*/,
                                                                  uint32_t /*flags*/, const void* /*new_value*/) {
  return 0;
}
