// sass_source.cpp — see sass_source.hpp.
#include "sass_source.hpp"

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <cstdlib>

namespace ferret::cupti {

std::optional<sass_source> source_of_instruction(const std::string& cubin, const char* function,
                                                 std::uint64_t pc_offset) {
  CUpti_GetSassToSourceCorrelationParams query{};
  query.size = CUpti_GetSassToSourceCorrelationParamsSize;
  query.cubin = cubin.data();
  query.cubinSize = cubin.size();
  query.functionName = function;
  query.pcOffset = pc_offset;
  std::optional<sass_source> found;
  if (cuptiGetSassToSourceCorrelation(&query) == CUPTI_SUCCESS && query.lineNumber > 0 &&
      query.fileName != nullptr) {
    std::string path = query.fileName;
    if (!path.empty() && path.front() != '/' && query.dirName != nullptr && *query.dirName != '\0')
      path = std::string{query.dirName} + "/" + path;
    found = sass_source{std::move(path), query.lineNumber};
  }
  std::free(query.fileName);
  std::free(query.dirName);
  return found;
}

}  // namespace ferret::cupti
