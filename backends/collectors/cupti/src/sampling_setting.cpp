#include "sampling_setting.hpp"

#include "ferret/runtime/settings.hpp"

#include <string_view>

namespace ferret::cupti {

std::optional<pc_sampling_setting> parse_pc_sampling(const char* value) noexcept {
  const std::string_view text = value != nullptr ? value : "";
  if (text.empty()) return pc_sampling_setting{};
  if (const std::optional<bool> on = runtime::parse_switch(text))
    return *on ? pc_sampling_setting{true, 0} : pc_sampling_setting{};
  if (text.size() > 10) return std::nullopt;
  std::uint64_t number = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    number = number * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (number >= 5 && number <= 31) return pc_sampling_setting{true, static_cast<std::uint32_t>(number)};
  // Cycles: a power of two from 2^5 to 2^31.
  for (std::uint32_t exponent = 5; exponent <= 31; ++exponent)
    if (number == std::uint64_t{1} << exponent) return pc_sampling_setting{true, exponent};
  return std::nullopt;
}

}  // namespace ferret::cupti
