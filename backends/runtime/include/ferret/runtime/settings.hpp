// ferret/runtime/settings.hpp — the table of FERRET_* environment variables.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

// The runtime is built with hidden visibility; this marks its public surface.
#ifndef FERRET_EXPORT
#define FERRET_EXPORT __attribute__((visibility("default")))
#endif

namespace ferret::runtime {

struct setting {
  const char* variable;
  const char* kind;           // what it accepts, in words
  const char* default_value;
  const char* help;
};

/// Every environment variable the runtime reads, in documentation order.
struct setting_table {
  const setting* entries;
  std::size_t size;
  const setting* begin() const noexcept { return entries; }
  const setting* end() const noexcept { return entries + size; }
};
FERRET_EXPORT setting_table settings() noexcept;

/// An on/off value as people write it: 1, on, yes, true or 0, off, no, false,
/// in any case, blanks around ignored; nullopt for anything else (empty too).
FERRET_EXPORT std::optional<bool> parse_switch(std::string_view value) noexcept;

}  // namespace ferret::runtime
