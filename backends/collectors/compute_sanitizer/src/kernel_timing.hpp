// kernel_timing.hpp — a counting run's kernels as GPU operations of their own
// (CUPTI, which times kernels in other runs, cannot run beside the Compute
// Sanitizer). The patch notes each launch's first block entry and last warp
// exit on the device's global timer (%globaltimer, nanoseconds); that timer
// runs apart from the host's clocks (on an H200, 2026-11-29: 137–153 µs ahead
// of CLOCK_REALTIME, a tick every 32 ns), so it is placed on the host's clock
// here, from the launches themselves. No sanitizer or CUDA calls: unit-tested
// without a GPU.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "ferret/runtime/runtime.hpp"

namespace ferret::compute_sanitizer {

/// One device's global timer on CLOCK_MONOTONIC_RAW. A kernel cannot begin
/// before its launch was submitted, so each launch bounds the timer's offset
/// from above; the least bound so far is taken. A kernel is then never placed
/// before its own launch, and is placed early by at most the least launch
/// latency seen (microseconds: the GPU idle at some launch, as at a program's
/// first).
class global_timer_clock {
 public:
  /// A launch submitted after `submitted_ns` (host) whose first block entered at `entered` (timer).
  void bound(std::int64_t submitted_ns, std::uint64_t entered) noexcept;
  /// The host time of a timer reading; only after a bound.
  std::int64_t to_host(std::uint64_t timer_ns) const noexcept {
    return static_cast<std::int64_t>(timer_ns) - offset_;
  }

 private:
  std::int64_t offset_ = std::numeric_limits<std::int64_t>::max();  // timer - host
};

/// A launch's device-initiated bytes per memory it reached, from its decoded
/// batches: loads, and stores with atomics; most bytes first.
runtime::gpu_kernel_remote_traffic kernel_remote_traffic(const runtime::gpu_remote_access_batch* batches,
                                                         std::size_t count);

}  // namespace ferret::compute_sanitizer
