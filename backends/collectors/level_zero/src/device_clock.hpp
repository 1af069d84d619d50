// device_clock.hpp — Level Zero kernel timestamps onto the host clock.
//
// A KERNEL_TIMESTAMP event holds device ticks (timerResolution per second)
// with only kernelTimestampValidBits valid: the counter wraps. A pair from
// zeDeviceGetGlobalTimestamps (host ns on CLOCK_MONOTONIC_RAW, device ticks)
// anchors them: a masked start is placed nearest to the pair's device time
// (within half a wrap period), and the end follows from the masked duration,
// so that an operation that straddles a wrap keeps its length. Pairs are taken
// occasionally (at drains), never per operation: the call is slow.
#pragma once

#include <cstdint>

namespace ferret::level_zero {

__extension__ typedef __int128 wide_integer;  // GCC and Clang: products of 64-bit values

struct clock_pair {
  std::int64_t host_ns;
  std::uint64_t device_ticks;
};

struct device_timer {
  std::uint64_t ticks_per_second;  // timerResolution with DEVICE_PROPERTIES_1_2
  std::uint32_t valid_bits;        // kernelTimestampValidBits

  std::uint64_t mask() const noexcept {
    return valid_bits >= 64 || valid_bits == 0 ? ~std::uint64_t{0} : (std::uint64_t{1} << valid_bits) - 1;
  }

  /// Nanoseconds of `ticks` (rounded down; the conversion error is below one ns).
  std::int64_t nanoseconds(std::int64_t ticks) const noexcept {
    const wide_integer scaled = static_cast<wide_integer>(ticks) * 1000000000;
    return static_cast<std::int64_t>(scaled / static_cast<wide_integer>(ticks_per_second));
  }

  /// Ticks from `from` to `to`, both masked, across at most one wrap.
  std::uint64_t elapsed(std::uint64_t from, std::uint64_t to) const noexcept { return (to - from) & mask(); }

  /// Host time of a masked device timestamp, the one nearest the pair.
  std::int64_t host_ns(const clock_pair& pair, std::uint64_t masked_ticks) const noexcept {
    const std::uint64_t period_mask = mask();
    std::uint64_t forward = (masked_ticks - pair.device_ticks) & period_mask;
    std::int64_t delta = 0;
    if (period_mask == ~std::uint64_t{0})
      delta = static_cast<std::int64_t>(forward);
    else if (forward > period_mask / 2)
      delta = -static_cast<std::int64_t>((period_mask - forward) + 1);
    else
      delta = static_cast<std::int64_t>(forward);
    return pair.host_ns + nanoseconds(delta);
  }
};

}  // namespace ferret::level_zero
