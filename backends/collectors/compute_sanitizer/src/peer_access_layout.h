// peer_access_layout.h — what the device patch (peer_access_patch.cu, built by
// nvcc) and the host (peer_access_decoder.cpp) share: the memory-range table a
// launch is given, its counter table and how a counter's key packs an access.
// Plain C layouts, so that both compilers agree on them.
//
// Per launch the patch is given a ferret_peer_launch. For every global memory
// access of the kernel it finds the address's memory range (a binary search
// of `ranges`, sorted by address): accesses to the executing device's own
// memory return at once; the others are counted per (instruction, range,
// load/store/atomic) in `counters`, one atomic add per group of warp lanes
// with the same key. Nothing per access reaches the host. Two more patches,
// at each block's entry and each warp's exit, note when the kernel ran: a
// counting run has no CUPTI to time it.
#ifndef FERRET_PEER_ACCESS_LAYOUT_H
#define FERRET_PEER_ACCESS_LAYOUT_H

#include <stdint.h>

#if defined(__CUDACC__)
#define FERRET_PEER_HOST_DEVICE __host__ __device__
#else
#define FERRET_PEER_HOST_DEVICE
#endif

#ifdef __cplusplus
extern "C" {
#endif

/// A memory range the driver reported (an allocation): where it lives.
struct ferret_peer_range {
  uint64_t begin;
  uint64_t end;    // one past the last byte
  int32_t device;  // the device whose memory it is; -1 host memory (pinned, mapped or managed)
  uint32_t padding;
};

/// One counter: an instruction's accesses of one kind to one range.
struct ferret_peer_counter {
  uint64_t key;       // ferret_peer_key(); 0: the slot is free
  uint64_t accesses;  // thread-level
  uint64_t bytes;
  // The bounds of the addresses, so that the host can tell the data object
  // (and whether the accesses span several). The lowest is kept inverted so
  // that a zeroed counter starts both at their identity (atomicMax of 0).
  uint64_t lowest_address_inverted;
  uint64_t highest_address;
};

/// Accesses the patch could not count, by reason (indices of ferret_peer_launch::lost).
enum ferret_peer_loss {
  ferret_peer_lost_table_full = 0,    // no free counter within the probe limit
  ferret_peer_lost_key_overflow = 1,  // a pc or range index too large to pack
  ferret_peer_loss_reasons = 2
};

/// What the patch is given per launch (its userdata), in device memory.
struct ferret_peer_launch {
  const struct ferret_peer_range* ranges;  // sorted by begin, disjoint
  uint32_t range_count;
  int32_t device;  // the device the kernel runs on
  struct ferret_peer_counter* counters;
  uint32_t counter_slots;  // a power of two
  uint32_t used_slots;     // counters taken: the host reads them back only when some were
  uint64_t lost[ferret_peer_loss_reasons];  // accesses
  // When the kernel ran, on the device's global timer (%globaltimer, ns): the
  // first block's entry (inverted, as lowest_address_inverted, so that zero
  // is the identity) and the last warp's exit.
  uint64_t first_entry_inverted;
  uint64_t last_exit;
};

enum ferret_peer_access_kind { ferret_peer_load = 0, ferret_peer_store = 1, ferret_peer_atomic = 2 };

// The Compute Sanitizer's memory access flags (Sanitizer_DeviceMemoryFlags).
#define FERRET_PEER_FLAG_READ 0x1u
#define FERRET_PEER_FLAG_WRITE 0x2u
#define FERRET_PEER_FLAG_ATOMSYS 0x4u

/// The kind of an access from the sanitizer's flags: an atomic reads and writes.
FERRET_PEER_HOST_DEVICE static inline uint32_t ferret_peer_kind_of(uint32_t flags) {
  const uint32_t read_write = FERRET_PEER_FLAG_READ | FERRET_PEER_FLAG_WRITE;
  if ((flags & FERRET_PEER_FLAG_ATOMSYS) != 0 || (flags & read_write) == read_write)
    return ferret_peer_atomic;
  return (flags & FERRET_PEER_FLAG_WRITE) != 0 ? ferret_peer_store : ferret_peer_load;
}

// A key packs the instruction's address (SASS instructions are 16-byte
// aligned and device addresses below 2^49: 45 bits), the kind (2 bits) and
// the range index plus one (17 bits; 0: the address is in no known range).
#define FERRET_PEER_PC_BITS 45u
#define FERRET_PEER_KIND_BITS 2u
#define FERRET_PEER_RANGE_BITS 17u
#define FERRET_PEER_MAX_RANGES ((1u << FERRET_PEER_RANGE_BITS) - 1u)
// How many slots an insertion looks at before it counts the access lost.
#define FERRET_PEER_PROBES 64u

/// The key of an access, or 0 when it does not pack (counted lost).
FERRET_PEER_HOST_DEVICE static inline uint64_t ferret_peer_key(uint64_t pc, uint32_t kind,
                                                               uint32_t range_plus_one) {
  if ((pc & 15u) != 0 || (pc >> 4) >= ((uint64_t)1 << FERRET_PEER_PC_BITS) ||
      range_plus_one > FERRET_PEER_MAX_RANGES)
    return 0;
  return (pc >> 4) | ((uint64_t)kind << FERRET_PEER_PC_BITS) |
         ((uint64_t)range_plus_one << (FERRET_PEER_PC_BITS + FERRET_PEER_KIND_BITS));
}
FERRET_PEER_HOST_DEVICE static inline uint64_t ferret_peer_key_pc(uint64_t key) {
  return (key & (((uint64_t)1 << FERRET_PEER_PC_BITS) - 1u)) << 4;
}
FERRET_PEER_HOST_DEVICE static inline uint32_t ferret_peer_key_kind(uint64_t key) {
  return (uint32_t)((key >> FERRET_PEER_PC_BITS) & ((1u << FERRET_PEER_KIND_BITS) - 1u));
}
/// The range index plus one; 0: in no known range.
FERRET_PEER_HOST_DEVICE static inline uint32_t ferret_peer_key_range(uint64_t key) {
  return (uint32_t)(key >> (FERRET_PEER_PC_BITS + FERRET_PEER_KIND_BITS));
}
/// The first slot a key is looked for at (then the next ones, wrapping).
FERRET_PEER_HOST_DEVICE static inline uint32_t ferret_peer_slot(uint64_t key, uint32_t slots) {
  uint64_t h = key * 0x9E3779B97F4A7C15ull;  // Fibonacci hashing: the high bits mix every key bit
  return (uint32_t)(h >> 32) & (slots - 1u);
}

/// The range holding `address`: its index, or range_count when none does.
FERRET_PEER_HOST_DEVICE static inline uint32_t ferret_peer_find_range(
    const struct ferret_peer_range* ranges, uint32_t range_count, uint64_t address) {
  uint32_t low = 0, high = range_count;
  while (low < high) {  // the first range ending after the address
    const uint32_t middle = low + (high - low) / 2;
    if (ranges[middle].end <= address)
      low = middle + 1;
    else
      high = middle;
  }
  return low < range_count && ranges[low].begin <= address ? low : range_count;
}

#ifdef __cplusplus
}
#endif

#endif
