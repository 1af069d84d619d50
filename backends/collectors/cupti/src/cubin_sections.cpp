#include "cubin_sections.hpp"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace ferret::cupti {

namespace {

// Calls visit(name) for each section of a 64-bit ELF image until it returns
// true; false for an image that is not one (or is cut short).
template <typename Visit>
bool visit_sections(const void* image, std::size_t size, Visit visit) noexcept {
  const auto* bytes = static_cast<const unsigned char*>(image);
  Elf64_Ehdr header;
  if (image == nullptr || size < sizeof header) return false;
  std::memcpy(&header, bytes, sizeof header);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_shentsize != sizeof(Elf64_Shdr))
    return false;
  const auto section = [&](std::size_t index, Elf64_Shdr& out) {
    const std::uint64_t at = header.e_shoff + index * sizeof(Elf64_Shdr);
    if (header.e_shoff > size || at > size || size - at < sizeof(Elf64_Shdr)) return false;
    std::memcpy(&out, bytes + at, sizeof out);
    return true;
  };
  Elf64_Shdr names{};
  if (header.e_shstrndx >= header.e_shnum || !section(header.e_shstrndx, names) ||
      names.sh_offset > size || names.sh_size > size - names.sh_offset)
    return false;
  const auto* table = reinterpret_cast<const char*>(bytes + names.sh_offset);
  for (std::size_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr entry{};
    if (!section(i, entry) || entry.sh_name >= names.sh_size) continue;
    if (visit(std::string_view{table + entry.sh_name, strnlen(table + entry.sh_name, names.sh_size - entry.sh_name)}))
      return true;
  }
  return true;
}

}  // namespace

bool cubin_has_line_info(const void* image, std::size_t size) noexcept {
  bool found = false;
  visit_sections(image, size, [&](std::string_view name) {
    found = name == ".debug_line" || name == ".nv_debug_line_sass";
    return found;
  });
  return found;
}

std::vector<std::string> cubin_function_names(const void* image, std::size_t size) {
  constexpr std::string_view code_prefix = ".text.";
  std::vector<std::string> functions;
  visit_sections(image, size, [&](std::string_view name) {
    if (name.size() > code_prefix.size() && name.substr(0, code_prefix.size()) == code_prefix)
      functions.emplace_back(name.substr(code_prefix.size()));
    return false;
  });
  return functions;
}

}  // namespace ferret::cupti
