// discard_backend.hpp — the "discard" backend both benchmark programs select:
// it counts the records the runtime hands it and drops them, so that a run
// can account for every event it wrote without the cost of an output format.
#pragma once

#include <atomic>
#include <cstdint>

namespace ferret_bench {

// Written by the drainer and at the end of runs: on cache lines of their own,
// so that they never share one with the mode flag that every annotation reads.
struct alignas(64) discard_accounting {
  std::atomic<bool> started{false};
  std::atomic<std::uint64_t> received{0};          // records handed to the backend
  std::atomic<std::uint64_t> runtime_recorded{0};  // the runtime's count, last flush
  std::atomic<std::uint64_t> runtime_dropped{0};   // the runtime's drop count, last flush
};

extern discard_accounting g_discard;

}  // namespace ferret_bench
