// metrics_sampling_setting.hpp — FERRET_CUDA_METRICS_SAMPLING read: off, or
// the interval at which CUPTI's PM sampling reads the GPU's counters, written
// as people write durations ("1ms", "500us", "2 ms", "0.5ms"; a plain number is
// milliseconds). No libcupti calls: unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <optional>

namespace ferret::cupti {

struct metrics_sampling_setting {
  bool on = false;
  std::int64_t interval_ns = 0;
};

/// What the setting accepts, for the one line that refuses a value.
inline constexpr const char* metrics_sampling_values =
    "an interval from 10us to 10s such as 1ms, 500us, 2 ms or 0.5ms (units ns, us, ms, s; "
    "a plain number is milliseconds), or 0, off or empty for off";

/// Unset, empty, "0" (with or without a unit) or "off": off; an interval
/// from 10 µs to 10 s: on. nullopt for anything else.
std::optional<metrics_sampling_setting> parse_metrics_sampling(const char* value);

}  // namespace ferret::cupti
