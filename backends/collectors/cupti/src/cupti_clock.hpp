// cupti_clock.hpp — CUPTI's clock read against CLOCK_MONOTONIC_RAW, the
// runtime's: for mapping CUPTI's timestamps where the timestamp callback is
// not in use (collector.cpp) and for finding the clock of PM samples
// (metrics_sampling.cpp).
#pragma once

#include <cupti.h>

#include <cstdint>

#include "ferret/runtime/runtime.hpp"

namespace ferret::cupti {

struct cupti_clock_reading {
  std::int64_t monotonic_raw_ns;  // when CUPTI's clock was read
  std::uint64_t cupti_ns;         // what it read; 0 when CUPTI could not tell
  bool read;
};

/// CUPTI's clock read between two readings of CLOCK_MONOTONIC_RAW, whose
/// midpoint is taken as the time of CUPTI's reading.
inline cupti_clock_reading read_cupti_clock() noexcept {
  const std::int64_t before = runtime::monotonic_raw_ns();
  std::uint64_t cupti_now = 0;
  const bool read = cuptiGetTimestamp(&cupti_now) == CUPTI_SUCCESS;
  const std::int64_t after = runtime::monotonic_raw_ns();
  return {before + (after - before) / 2, cupti_now, read};
}

}  // namespace ferret::cupti
