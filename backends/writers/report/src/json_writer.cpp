// JSON for an HTML page. See json_writer.hpp.
#include "json_writer.hpp"

#include <fmt/format.h>

#include <cmath>

#include "readable_text.hpp"

namespace ferret::report {

void json_writer::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

void json_writer::open(char bracket) {
  separate();
  out_ += bracket;
  first_.push_back(true);
}

void json_writer::close(char bracket) {
  out_ += bracket;
  first_.pop_back();
}

void json_writer::key(std::string_view name) {
  string(name);
  out_ += ':';
  after_key_ = true;
}

void json_writer::string(std::string_view text) {
  separate();
  const std::string shown = profile::cut_end(profile::readable_text(text), longest_string);
  out_ += '"';
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const char c = shown[i];
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '<': out_ += "\\u003c"; break;
      case '>': out_ += "\\u003e"; break;
      case '&': out_ += "\\u0026"; break;
      default:
        // U+2028 and U+2029 (E2 80 A8/A9) end a line in older JavaScript.
        if (c == '\xe2' && i + 2 < shown.size() && shown[i + 1] == '\x80' &&
            (shown[i + 2] == '\xa8' || shown[i + 2] == '\xa9')) {
          out_ += shown[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
          i += 2;
        } else {
          out_ += c;  // readable_text left no control characters
        }
    }
  }
  out_ += '"';
}

void json_writer::number(std::uint64_t value) {
  separate();
  out_ += fmt::format("{}", value);
}

void json_writer::number(std::int64_t value) {
  separate();
  out_ += fmt::format("{}", value);
}

void json_writer::number(double value) {
  separate();
  if (std::isfinite(value))
    out_ += fmt::format("{}", value);
  else
    out_ += "null";  // JSON has no infinities
}

void json_writer::boolean(bool value) {
  separate();
  out_ += value ? "true" : "false";
}

void json_writer::null() {
  separate();
  out_ += "null";
}

}  // namespace ferret::report
