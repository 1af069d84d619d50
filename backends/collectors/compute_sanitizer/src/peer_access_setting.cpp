// peer_access_setting.cpp — see peer_access_setting.hpp.
#include "peer_access_setting.hpp"

#include <string_view>

#include "ferret/runtime/settings.hpp"

namespace ferret::compute_sanitizer {

std::optional<bool> parse_peer_accesses(const char* value) noexcept {
  const std::string_view text = value != nullptr ? value : "";
  if (text.empty()) return false;
  return runtime::parse_switch(text);
}

}  // namespace ferret::compute_sanitizer
