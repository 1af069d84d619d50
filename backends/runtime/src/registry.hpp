// registry.hpp — backends known by name: linked ones register themselves, the
// others are loaded from the runtime's own library directory on demand.
#pragma once

#include <string>
#include <vector>

#include "ferret/runtime/backend.hpp"

namespace ferret::runtime::internal {

struct backend_entry {
  std::string name;
  std::string description;
  backend_factory factory;
};

// The factory registered under `name`, loading libferret_<name>.so from the
// runtime's directory if it is not registered yet; nullptr if neither works.
backend_factory find_backend(const std::string& name);

// Registered backends plus the loadable libraries beside the runtime, sorted.
std::vector<std::string> available_backends();

// The directory holding libferret_runtime.so.
std::string runtime_directory();

}  // namespace ferret::runtime::internal
