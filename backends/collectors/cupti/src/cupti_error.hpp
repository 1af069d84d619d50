// cupti_error.hpp — a CUPTI result in CUPTI's words, for the collector's messages.
#pragma once

#include <cupti.h>

#include <fmt/format.h>

#include <string>

namespace ferret::cupti {

inline std::string cupti_error(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr)
    return fmt::format("CUPTI error {}", static_cast<int>(result));
  return text;
}

}  // namespace ferret::cupti
