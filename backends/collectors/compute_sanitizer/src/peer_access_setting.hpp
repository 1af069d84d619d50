// peer_access_setting.hpp — FERRET_CUDA_PEER_ACCESSES: 0 or 1 (unset or empty: 0).
#pragma once

#include <optional>

namespace ferret::compute_sanitizer {

/// Whether to count device-initiated traffic; nullopt for a value that is not 0 or 1.
std::optional<bool> parse_peer_accesses(const char* value) noexcept;

}  // namespace ferret::compute_sanitizer
