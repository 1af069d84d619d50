// ferret/runtime/components.hpp — what each of ferret's libraries is: a
// backend (an output that FERRET_BACKEND names) or a collector (a source of
// events, enabled by linking it or by ferret-run, never by FERRET_BACKEND).
// One table drives the FERRET_BACKEND messages, `ferret-info` and the README.
#pragma once

#include <cstddef>

#include "ferret/runtime/settings.hpp"  // FERRET_EXPORT

namespace ferret::runtime {

enum class component_kind { backend, collector };

struct component {
  const char* name;     // what FERRET_BACKEND (backends) or the docs (collectors) call it
  const char* library;  // libferret_<library>.so
  component_kind kind;
  const char* what;        // what it writes or records
  const char* enabled_by;  // how it is turned on
};

/// ferret's own backends and collectors, backends first.
struct component_table {
  const component* entries;
  std::size_t size;
  const component* begin() const noexcept { return entries; }
  const component* end() const noexcept { return entries + size; }
};
FERRET_EXPORT component_table components() noexcept;

/// Whether the component's library is installed beside the runtime (or, for
/// a backend, linked into the program).
FERRET_EXPORT bool installed(const component& c) noexcept;

}  // namespace ferret::runtime
