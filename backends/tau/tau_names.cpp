// Names, metadata text and metric names as TAU's readers need them. See
// tau_backend.hpp for the rules and why.
#include "tau_backend.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace ferret::tau {
namespace {

constexpr std::string_view replacement_character = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed UTF-8 sequence starting at text[at] (1 to 4), or 0
// when it is not one: overlong forms, surrogates, code points above U+10FFFF,
// truncated sequences and stray continuation bytes are all invalid.
std::size_t utf8_sequence_length(std::string_view text, std::size_t at) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;       // overlong
    else if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;       // overlong
    else if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
  return length;
}

}  // namespace

std::string profile_name(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      out += replacement_character;
      ++i;
      continue;
    }
    if (length > 1) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    const char c = text[i];
    if (c == '"') {
      out += '\'';
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      out += ' ';
    } else if (c == '=' && i + 1 < text.size() && text[i + 1] == '>') {
      out += "->";
      ++i;
    } else if (c == ' ' && text.substr(i, 3) == " : ") {
      out += ": ";
      i += 2;
    } else {
      out += c;
    }
    ++i;
  }
  return out;
}

void append_xml_text(std::string& out, std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      out += replacement_character;
      ++i;
      continue;
    }
    if (length > 1) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    const char c = text[i++];
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '#': out += "&#x23;"; break;
      case '\n': out += "&#xa;"; break;
      case '\r': out += "&#xd;"; break;
      case '\t': out += "&#x9;"; break;
      default:
        // XML 1.0 allows no other control characters, not even as references.
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
          out += replacement_character;
        else
          out += c;
    }
  }
}

std::string metric_file_name(std::string_view metric) {
  std::string out{metric};
  constexpr std::string_view replaced = "/\\?%*:|\"<>= \t";
  std::replace_if(
      out.begin(), out.end(), [&](char c) { return replaced.find(c) != std::string_view::npos; },
      '_');
  return out;
}

std::optional<std::vector<std::string>> parse_metrics(std::string_view text) {
  std::vector<std::string> names;
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  std::string_view trimmed = text;
  while (!trimmed.empty() && blank(trimmed.front())) trimmed.remove_prefix(1);
  while (!trimmed.empty() && blank(trimmed.back())) trimmed.remove_suffix(1);
  if (trimmed.empty() || trimmed == "none") return names;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    std::string_view name = text.substr(start, comma - start);
    while (!name.empty() && blank(name.front())) name.remove_prefix(1);
    while (!name.empty() && blank(name.back())) name.remove_suffix(1);
    if (name.empty()) return std::nullopt;
    if (name != "TIME" && std::find(names.begin(), names.end(), name) == names.end())
      names.emplace_back(name);
    start = comma + 1;
  }
  return names;
}

}  // namespace ferret::tau
