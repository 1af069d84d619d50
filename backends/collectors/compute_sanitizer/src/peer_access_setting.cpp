// peer_access_setting.cpp — see peer_access_setting.hpp.
#include "peer_access_setting.hpp"

#include <string_view>

namespace ferret::compute_sanitizer {

std::optional<bool> parse_peer_accesses(const char* value) noexcept {
  const std::string_view text = value != nullptr ? value : "";
  if (text.empty() || text == "0") return false;
  if (text == "1") return true;
  return std::nullopt;
}

}  // namespace ferret::compute_sanitizer
