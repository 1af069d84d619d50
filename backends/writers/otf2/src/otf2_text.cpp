// See otf2_text.hpp.
#include "otf2_text.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <iterator>

namespace ferret::otf2 {
namespace {

std::uint64_t fnv1a(std::string_view text) noexcept {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

// Length of the well-formed UTF-8 sequence at text[at] (1 to 4), 0 when it is
// not one (overlong forms, surrogates, beyond U+10FFFF, truncated, stray).
std::size_t utf8_sequence_length(std::string_view text, std::size_t at) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    else if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    else if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (at + length > text.size() || byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
  return length;
}

}  // namespace

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
  return name + fmt::format("__{:016X}", fnv1a(key));
}

std::string archive_text(std::string_view text, std::size_t limit) {
  std::string out;
  out.reserve(text.size() < limit ? text.size() : limit);
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0 || text[i] == '\0') {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  if (out.size() <= limit) return out;
  const std::string tail = fmt::format("\xE2\x80\xA6{:08x}", static_cast<std::uint32_t>(fnv1a(text)));
  std::size_t cut = limit - tail.size();
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0U) == 0x80U) --cut;  // UTF-8
  out.resize(cut);
  return out + tail;
}

}  // namespace ferret::otf2
