// settings.hpp — the runtime's environment variables: one table that drives
// the parser, the error messages and `ferret-info --settings` (and so the docs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ferret/runtime/settings.hpp"

namespace ferret::runtime::internal {

enum class clock_choice { automatic, tsc, monotonic_raw };

struct settings {
  std::vector<std::string> backends;  // empty: record nothing
  std::string output;                 // unexpanded FERRET_OUTPUT
  std::size_t buffer_bytes;
  unsigned flush_interval_ms;
  unsigned signal_wait_ms;  // SIGINT/SIGTERM: how long the handler waits for the outputs
  clock_choice clock;
  int verbose;
  std::vector<std::string> notices;  // values adjusted, one line each to say at start-up
};

// Parses the FERRET_* variables through `lookup` (getenv in production).
// On a malformed value returns nullopt and sets `error` to one line that names
// the variable, the bad value and what is accepted.
using env_lookup = const char* (*)(const char*);
std::optional<settings> parse_settings(env_lookup lookup, std::string& error);

// "64M" -> 67108864; nullopt for anything else (no sign, suffix K/M/G, optional B/iB).
std::optional<std::uint64_t> parse_size(const std::string& text);

}  // namespace ferret::runtime::internal
