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

// Parses the FERRET_* variables through `lookup` (getenv in production). A
// malformed value is replaced by the variable's default, with a notice that
// names the variable, the bad value, what is accepted and the default: a typo
// in a tuning variable never costs the run its trace.
using env_lookup = const char* (*)(const char*);
settings parse_settings(env_lookup lookup);

// "64M" -> 67108864; nullopt for anything else (no sign, suffix K/M/G, optional B/iB,
// a blank before it allowed).
std::optional<std::uint64_t> parse_size(const std::string& text);

// "500" or "500ms" -> 500, "2s" -> 2000; nullopt for anything else.
std::optional<std::uint64_t> parse_milliseconds(const std::string& text);

}  // namespace ferret::runtime::internal
