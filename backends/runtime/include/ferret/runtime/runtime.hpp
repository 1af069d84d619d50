// ferret/runtime/runtime.hpp — services the runtime offers to collectors and tools.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ferret/runtime/backend.hpp"

namespace ferret::runtime {

/// The innermost live data object containing `address` (thread-safe), for
/// attributing transfers to the arrays they move.
FERRET_EXPORT std::optional<data_object_info> find_data_object(const void* address);

/// Backends that FERRET_BACKEND may name: registered ones and the
/// libferret_<name>.so libraries installed beside the runtime.
FERRET_EXPORT std::vector<std::string> available_backends();

}  // namespace ferret::runtime
