// sass_source.hpp — the source line of an instruction of a kept cubin, from
// its line table (cuptiGetSassToSourceCorrelation): for instruction samples
// and device-initiated traffic alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ferret::cupti {

struct sass_source {
  std::string path;  // the directory joined in when the file is relative
  std::uint32_t line;
};

/// nullopt when the cubin has no line for the instruction.
std::optional<sass_source> source_of_instruction(const std::string& cubin, const char* function,
                                                 std::uint64_t pc_offset);

}  // namespace ferret::cupti
