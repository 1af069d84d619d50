// Names made safe to show. See readable_text.hpp.
#include "readable_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "ferret/runtime/text.hpp"

namespace ferret::profile {
namespace {

bool starts_character(char byte) noexcept {
  return (static_cast<unsigned char>(byte) & 0xC0U) != 0x80U;  // not a UTF-8 continuation
}

bool acts_on_display(std::uint32_t point) noexcept {
  return (point >= 0x80 && point <= 0x9F) || (point >= 0x202A && point <= 0x202E) ||
         (point >= 0x2066 && point <= 0x2069);
}

}  // namespace

std::string readable_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7F) {
      out += text[i++];
      continue;
    }
    if (byte < 0x80) {
      switch (byte) {
        case '\t': out += "\\t"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        default: out += fmt::format("\\x{:02x}", byte);
      }
      ++i;
      continue;
    }
    const std::size_t length = runtime::utf8_sequence_length(text, i);
    if (length == 0) {
      out += fmt::format("\\x{:02x}", byte);
      ++i;
      continue;
    }
    const std::string_view sequence = text.substr(i, length);
    if (const std::uint32_t point = runtime::utf8_code_point(sequence); acts_on_display(point))
      out += fmt::format("\\u{:04x}", point);
    else
      out += sequence;
    i += length;
  }
  return out;
}

std::size_t display_width(std::string_view text) noexcept {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), starts_character));
}

std::string cut_end(std::string text, std::size_t columns) {
  if (display_width(text) <= columns) return text;
  std::size_t kept = 0;
  std::size_t cut = 0;
  for (; cut < text.size(); ++cut) {
    if (!starts_character(text[cut])) continue;
    if (kept + 1 == columns) break;
    ++kept;
  }
  text.resize(cut);
  text += "…";
  return text;
}

std::string cut_middle(const std::string& text, std::size_t columns) {
  const std::size_t width = display_width(text);
  if (width <= columns || columns < 3) return cut_end(text, columns);
  const std::size_t head = (columns - 1) / 2;
  const std::size_t tail = columns - 1 - head;
  // Byte offsets of the head's end and of the tail's start.
  std::size_t head_end = 0;
  for (std::size_t seen = 0; head_end < text.size(); ++head_end)
    if (starts_character(text[head_end]) && seen++ == head) break;
  std::size_t tail_start = text.size();
  for (std::size_t seen = 0; tail_start > 0 && seen < tail;)
    if (starts_character(text[--tail_start])) ++seen;
  return text.substr(0, head_end) + "…" + text.substr(tail_start);
}

}  // namespace ferret::profile
