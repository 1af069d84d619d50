// registry.hpp — backends known by name: linked ones register themselves, the
// others are loaded from the runtime's own library directory on demand.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferret/runtime/backend.hpp"

namespace ferret::runtime::internal {

struct backend_entry {
  std::string name;
  std::string description;
  backend_factory factory;
};

// FERRET_BACKEND's names resolved: the factories of the backends among them,
// and one line (without "ferret: ") for each name that is not one — unknown
// (with the nearest name) or a collector (with how it is enabled).
struct backend_selection {
  std::vector<std::pair<std::string, backend_factory>> factories;
  std::vector<std::string> problems;
};
// Loads libferret_<name>.so from the runtime's directory for a name that is
// not registered yet (never a collector's library). A library's initialiser
// may call back into the runtime: call this with none of its locks held.
backend_selection select_backends(const std::vector<std::string>& names);

// Registered backends plus ferret's own installed beside the runtime, sorted.
std::vector<std::string> available_backends();

// The candidate nearest to `name` if it is at most two edits away (and fewer
// than `name` has letters); else empty.
std::string nearest_name(std::string_view name, const std::vector<std::string>& candidates);

// The directory holding libferret_runtime.so.
std::string runtime_directory();

}  // namespace ferret::runtime::internal
