// Names, metadata text and metric names as TAU's readers need them. See
// tau_names.hpp for the rules and why.
#include "tau_names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>

#include "ferret/runtime/text.hpp"

namespace ferret::tau {
namespace {

constexpr std::string_view replacement_character = "\xEF\xBF\xBD";  // U+FFFD
constexpr std::string_view ellipsis = "\xE2\x80\xA6";                // U+2026

bool is_control(unsigned char c) noexcept { return c < 0x20 || c == 0x7F; }

// The start of the character that holds byte `at` (UTF-8 continuation bytes
// are 10xxxxxx).
std::size_t character_start(std::string_view text, std::size_t at) noexcept {
  while (at > 0 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0U) == 0x80U) --at;
  return at;
}

// Valid UTF-8 without control characters or '"', blanks trimmed and collapsed.
std::string clean_characters(std::string_view text) {
  std::string out;
  out.reserve(std::min(text.size(), longest_name + 16));
  bool blank_pending = false;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = runtime::utf8_sequence_length(text, i);
    std::string_view piece;
    if (length == 0) {
      piece = replacement_character;
      ++i;
    } else if (length > 1) {
      piece = text.substr(i, length);
      i += length;
    } else {
      const char c = text[i++];
      if (c == ' ' || is_control(static_cast<unsigned char>(c))) {
        blank_pending = true;
        continue;
      }
      piece = c == '"' ? std::string_view{"'"} : text.substr(i - 1, 1);
    }
    if (blank_pending && !out.empty()) out += ' ';
    blank_pending = false;
    out.append(piece);
  }
  return out;
}

// Separators and annotations without their meaning. Each replacement leaves
// the text after it to the scan, so that none can form a new one.
std::string without_markers(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size();) {
    const std::string_view rest = text.substr(i);
    if (rest.substr(0, 2) == "=>") {
      out += "->";
      i += 2;
    } else if (rest.substr(0, 3) == " : ") {
      out += ":";  // the blank after it stays
      i += 2;
    } else if (rest.substr(0, 2) == "[{") {
      out += "[ {";
      i += 2;
    } else if (rest.substr(0, 3) == "[ <") {
      out += "[<";
      i += 3;
    } else if (rest.substr(0, 5) == " [@] ") {
      out += " [at]";  // the blank after it stays
      i += 4;
    } else {
      out += text[i++];
    }
  }
  return out;
}

// The colons of the annotations ParaProf parses in Function.getSourceLink
// (OpenMP "OpenMP location: file:f.c <31, 48>", mpiP "[file:ring.c line:37]",
// "!$omp … @file.f:12") become U+2236 RATIO, which looks the same: the reader
// throws on such a name whose numbers do not parse.
void without_annotation_colons(std::string& name) {
  constexpr std::string_view ratio = "\xE2\x88\xB6";
  const auto replace_colon_at = [&](std::size_t colon) { name.replace(colon, 1, ratio); };
  for (std::size_t at = name.find("OpenMP location:"); at != std::string::npos;
       at = name.find("OpenMP location:", at))
    replace_colon_at(at + 15);
  if (name.find("file:") != std::string::npos && name.find("line:") != std::string::npos) {
    for (const std::string_view keyword : {std::string_view{"file:"}, std::string_view{"line:"}})
      for (std::size_t at = name.find(keyword); at != std::string::npos; at = name.find(keyword, at))
        replace_colon_at(at + 4);
  }
  if (name.rfind("!$omp", 0) == 0) {
    const std::size_t at_sign = name.rfind('@');
    if (at_sign != std::string::npos)
      for (std::size_t colon = name.find(':', at_sign); colon != std::string::npos; colon = name.find(':', colon))
        replace_colon_at(colon);
  }
}

}  // namespace

std::string profile_name(std::string_view text) {
  std::string name = without_markers(clean_characters(text));
  without_annotation_colons(name);
  if (name.empty()) return std::string{unnamed};
  if (name.size() <= longest_name) return name;
  const std::string tail = fmt::format("{}{:08x}", ellipsis, runtime::fnv1a_32(name));
  name.resize(character_start(name, longest_name - tail.size()));
  return name + tail;
}

std::string located_name(std::string_view name, std::string_view file, std::uint32_t line) {
  std::string text = profile_name(name);
  std::replace(text.begin(), text.end(), '{', '(');
  std::replace(text.begin(), text.end(), '}', ')');
  std::string where = profile_name(file);
  std::replace_if(
      where.begin(), where.end(), [](char c) { return c == '{' || c == '}' || c == ']' || c == ' '; }, '_');
  if (where.size() > longest_file) {
    const std::size_t keep = where.size() - (longest_file - ellipsis.size());
    where = std::string{ellipsis} + where.substr(character_start(where, keep));
  }
  std::string located = fmt::format("{} [{{{}}} {{{},0}}]", text, where, line);
  without_annotation_colons(located);  // "file:" in the name, "line:" in the file
  return located;
}

std::string domain_group(std::string_view domain) {
  std::string group = profile_name(domain);
  std::replace_if(group.begin(), group.end(), [](char c) { return c == ' ' || c == '|'; }, '_');
  return "TAU_USER|" + group;
}

void append_xml_text(std::string& out, std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = runtime::utf8_sequence_length(text, i);
    if (length == 0) {
      out += "&#xFFFD;";
      ++i;
      continue;
    }
    if (length > 1) {
      fmt::format_to(std::back_inserter(out), "&#x{:X};",
                     runtime::utf8_code_point(text.substr(i, length)));
      i += length;
      continue;
    }
    const char c = text[i++];
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '#': out += "&#x23;"; break;
      case '\n': out += "&#xA;"; break;
      case '\r': out += "&#xD;"; break;
      case '\t': out += c; break;
      default:
        if (is_control(static_cast<unsigned char>(c)))
          out += "&#xFFFD;";
        else
          out += c;
    }
  }
}

std::string metric_file_name(std::string_view metric) {
  std::string out = profile_name(metric);
  constexpr std::string_view replaced = "/\\?%*:|\"<>= ";
  std::replace_if(
      out.begin(), out.end(), [&](char c) { return replaced.find(c) != std::string_view::npos; },
      '_');
  return out;
}

}  // namespace ferret::tau
