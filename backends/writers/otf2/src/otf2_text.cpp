// See otf2_text.hpp.
#include "otf2_text.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <iterator>

#include "ferret/runtime/text.hpp"

namespace ferret::otf2 {

std::string property_key(std::string_view key) {
  if (key.empty()) return "_";
  std::string name;
  name.reserve(key.size());
  for (const char c : key) {
    if (c >= 'a' && c <= 'z')
      name.push_back(static_cast<char>(c - 'a' + 'A'));
    else if (c >= '0' && c <= '9')
      name.push_back(c);
    else
      fmt::format_to(std::back_inserter(name), "_{:02X}", static_cast<unsigned char>(c));
  }
  if (name.size() <= longest_property_key) return name;
  std::size_t cut = longest_property_key - 18;  // "__" and 16 hex digits follow
  // Not inside an escape: '_' and its two hex digits stay together.
  if (name[cut - 1] == '_') cut -= 1;
  else if (cut >= 2 && name[cut - 2] == '_') cut -= 2;
  name.resize(cut);
  return name + fmt::format("__{:016X}", runtime::fnv1a_64(key));
}

std::string archive_text(std::string_view text, std::size_t limit) {
  std::string out;
  out.reserve(text.size() < limit ? text.size() : limit);
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = runtime::utf8_sequence_length(text, i);
    if (length == 0 || text[i] == '\0') {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  if (out.size() <= limit) return out;
  // The low half of the 64-bit hash (not fnv1a_32: the names written stay as they were).
  const std::string tail =
      fmt::format("\xE2\x80\xA6{:08x}", static_cast<std::uint32_t>(runtime::fnv1a_64(text)));
  std::size_t cut = limit - tail.size();
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0U) == 0x80U) --cut;  // UTF-8
  out.resize(cut);
  return out + tail;
}

}  // namespace ferret::otf2
