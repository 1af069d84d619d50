// Kernel timestamps onto the host clock (backends/collectors/level_zero/src/device_clock.hpp):
// conversion with a frequency that is not a whole number of ns per tick,
// masking to the valid bits, unwrapping around a clock pair, durations across a wrap.
#include <doctest/doctest.h>

#include "device_clock.hpp"

using ferret::level_zero::clock_pair;
using ferret::level_zero::device_timer;

TEST_CASE("ticks to nanoseconds at 19.2 MHz (52.083 ns a tick)") {
  const device_timer timer{19'200'000, 32};
  CHECK(timer.nanoseconds(0) == 0);
  CHECK(timer.nanoseconds(1) == 52);
  CHECK(timer.nanoseconds(3) == 156);             // 156.25
  CHECK(timer.nanoseconds(19'200'000) == 1'000'000'000);
  CHECK(timer.nanoseconds(-3) == -156);
  // A day of ticks stays exact (no 64-bit overflow of ticks * 1e9).
  CHECK(timer.nanoseconds(19'200'000LL * 86'400) == 86'400'000'000'000LL);
}

TEST_CASE("the valid bits: mask and elapsed ticks across a wrap") {
  const device_timer timer{19'200'000, 24};
  CHECK(timer.mask() == 0xffffff);
  CHECK(timer.elapsed(100, 250) == 150);
  CHECK(timer.elapsed(0xffff00, 0x000100) == 0x200);  // wrapped once
  const device_timer full{1'000'000'000, 64};
  CHECK(full.mask() == ~std::uint64_t{0});
}

TEST_CASE("a masked timestamp lands nearest the pair, before or after it, across a wrap") {
  const device_timer timer{1'000'000'000, 24};  // 1 ns a tick: easy numbers
  const clock_pair pair{5'000'000'000, 0xfffff0};
  CHECK(timer.host_ns(pair, 0xfffff0) == 5'000'000'000);
  CHECK(timer.host_ns(pair, 0xffff00) == 5'000'000'000 - 0xf0);   // before the pair
  CHECK(timer.host_ns(pair, 0x000010) == 5'000'000'000 + 0x20);   // after it, past the wrap
  // Just inside half a period each way.
  CHECK(timer.host_ns(pair, (0xfffff0 + 0x7fffff) & 0xffffff) == 5'000'000'000 + 0x7fffff);
  CHECK(timer.host_ns(pair, (0xfffff0 + 0x800001) & 0xffffff) == 5'000'000'000 - 0x7fffff);
}

TEST_CASE("64 valid bits: no unwrapping, plain differences") {
  const device_timer timer{19'200'000, 64};
  const clock_pair pair{1'000'000, 1'000'000'000'000};
  CHECK(timer.host_ns(pair, 1'000'000'000'000 + 19'200'000) == 1'000'000 + 1'000'000'000);
}
