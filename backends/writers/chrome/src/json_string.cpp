// JSON string escaping with strict UTF-8 validation.
//
// Perfetto's JSON parser rejects raw control characters and mangles invalid
// UTF-8, and names come from user code (file names, registered names), so every
// string is checked here rather than trusted.
#include "chrome_backend.hpp"

#include <cstddef>
#include <cstdint>

namespace ferret::chrome {
namespace {

constexpr char hex_digits[] = "0123456789abcdef";

constexpr bool is_continuation(unsigned char c) noexcept { return (c & 0xC0U) == 0x80U; }

// Length of the valid UTF-8 sequence that starts at bytes[i] (i < size, and
// bytes[i] >= 0x80), or 0 when that lead byte does not start one. The second
// byte's range excludes overlong forms, surrogates and code points above
// U+10FFFF (RFC 3629, table 3-7 of the Unicode standard).
std::size_t valid_sequence_length(std::string_view bytes, std::size_t i) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(bytes[i + k]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  unsigned char second_min = 0x80;
  unsigned char second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_min = 0xA0;  // overlong below U+0800
    if (lead == 0xED) second_max = 0x9F;  // surrogates U+D800..U+DFFF
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_min = 0x90;  // overlong below U+10000
    if (lead == 0xF4) second_max = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // stray continuation byte, C0/C1 overlong lead, or F5..FF
  }
  if (bytes.size() - i < length) return 0;  // truncated at the end
  if (byte(1) < second_min || byte(1) > second_max) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if (!is_continuation(byte(k))) return 0;
  return length;
}

}  // namespace

void append_json_string(std::string& out, std::string_view bytes) {
  out.push_back('"');
  std::size_t run_start = 0;  // start of the bytes that need no change, copied in bulk
  std::size_t i = 0;
  const auto flush_run = [&](std::size_t end) {
    out.append(bytes.data() + run_start, end - run_start);
  };
  while (i < bytes.size()) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      if (const std::size_t length = valid_sequence_length(bytes, i); length != 0) {
        i += length;
        continue;
      }
      flush_run(i);
      out.append("\\ufffd");
      run_start = ++i;
      continue;
    }
    flush_run(i);
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\n': out.append("\\n"); break;
      case '\t': out.append("\\t"); break;
      case '\r': out.append("\\r"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
      default: {
        const char escape[] = {'\\', 'u', '0', '0', hex_digits[c >> 4], hex_digits[c & 0xFU]};
        out.append(escape, sizeof escape);
        break;
      }
    }
    run_start = ++i;
  }
  flush_run(i);
  out.push_back('"');
}

}  // namespace ferret::chrome
