// sampling_setting.hpp — FERRET_CUDA_PC_SAMPLING read: off, on at CUPTI's
// period, or on at a period given as 2^N cycles (N, CUPTI's own unit) or as
// the cycles themselves (a power of two, as Nsight Compute's users give it).
// No libcupti calls: unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <optional>

namespace ferret::cupti {

struct pc_sampling_setting {
  bool on = false;
  std::uint32_t period_exponent = 0;  // 0: CUPTI's default (it depends on the GPU)
};

/// Unset or "0": off; "1": on at CUPTI's period; "5" to "31": a sample every
/// 2^N cycles per SM; "32" to "2147483648", a power of two: every that many
/// cycles. nullopt for anything else.
std::optional<pc_sampling_setting> parse_pc_sampling(const char* value) noexcept;

}  // namespace ferret::cupti
