// JSON string escaping with strict UTF-8 validation.
//
// Perfetto's JSON parser rejects raw control characters and mangles invalid
// UTF-8, and names come from user code (file names, registered names), so every
// string is checked here rather than trusted.
#include "chrome_backend.hpp"

#include <cstddef>

#include "ferret/runtime/text.hpp"

namespace ferret::chrome {
namespace {

constexpr char hex_digits[] = "0123456789abcdef";

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
      if (const std::size_t length = runtime::utf8_sequence_length(bytes, i); length != 0) {
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
