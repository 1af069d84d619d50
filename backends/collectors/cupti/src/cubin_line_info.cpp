#include "cubin_line_info.hpp"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string_view>

namespace ferret::cupti {

bool cubin_has_line_info(const void* image, std::size_t size) noexcept {
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
    const std::string_view name{table + entry.sh_name,
                                strnlen(table + entry.sh_name, names.sh_size - entry.sh_name)};
    if (name == ".debug_line" || name == ".nv_debug_line_sass") return true;
  }
  return false;
}

}  // namespace ferret::cupti
