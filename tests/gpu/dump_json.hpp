// dump_json.hpp — what the dump backends of the GPU test programs share: a
// JSON string literal, the file's kernels array, the metadata's counts.
#pragma once

#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ferret/runtime/backend.hpp"

inline std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

/// Opens `path` and writes {"kernels": [...], "<next>": [ — nullptr if it cannot.
inline std::FILE* start_dump(const std::string& path, const std::vector<std::string>& kernels,
                             const char* next) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) return nullptr;
  std::fprintf(out, "{\"kernels\": [\n");
  for (std::size_t i = 0; i < kernels.size(); ++i)
    std::fprintf(out, "%s%s\n", kernels[i].c_str(), i + 1 < kernels.size() ? "," : "");
  std::fprintf(out, "], \"%s\": [\n", next);
  return out;
}

/// Ends the array, writes "metadata" with the entries whose names start with
/// one of `prefixes` (integers and strings), and closes the file.
inline void finish_dump(std::FILE* out, const ferret::runtime::metadata_list& metadata,
                        std::initializer_list<std::string_view> prefixes) {
  std::fprintf(out, "], \"metadata\": {");
  std::size_t index = 0;
  for (const auto& [name, value] : metadata) {
    bool wanted = false;
    for (const std::string_view prefix : prefixes) wanted = wanted || name.rfind(prefix, 0) == 0;
    if (!wanted) continue;
    std::string text;
    if (const auto* number = std::get_if<std::int64_t>(&value)) text = std::to_string(*number);
    else if (const auto* words = std::get_if<std::string>(&value)) text = json_string(*words);
    else continue;
    std::fprintf(out, "%s%s: %s", index++ ? ", " : "", json_string(name).c_str(), text.c_str());
  }
  std::fprintf(out, "}}\n");
  std::fclose(out);
}
