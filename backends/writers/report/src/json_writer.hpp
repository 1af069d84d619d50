// A small JSON writer for data embedded in an HTML page: every string goes
// through readable_text (valid UTF-8, no control characters) and '<', '>',
// '&', U+2028 and U+2029 are written as \u escapes, so that no name can end
// the <script> element that holds the data or be read as markup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ferret::report {

class json_writer {
 public:
  /// Names longer than this many display columns are cut (bounded output).
  static constexpr std::size_t longest_string = 1000;

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  /// The key of the next value in an object.
  void key(std::string_view name);

  void string(std::string_view text);
  void number(std::uint64_t value);
  void number(std::int64_t value);
  void number(std::uint32_t value) { number(std::uint64_t{value}); }
  void number(std::int32_t value) { number(std::int64_t{value}); }
  void number(double value);
  void boolean(bool value);
  void null();

  /// A value of whatever type: strings, booleans, numbers.
  void value(std::string_view text) { string(text); }
  void value(const std::string& text) { string(text); }
  void value(const char* text) { string(text); }
  void value(bool flag) { boolean(flag); }
  void value(double number_value) { number(number_value); }
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
  void value(T integer) {
    if constexpr (std::is_signed_v<T>)
      number(static_cast<std::int64_t>(integer));
    else
      number(static_cast<std::uint64_t>(integer));
  }

  /// key + value in one call.
  template <typename T>
  void field(std::string_view name, const T& field_value) {
    key(name);
    value(field_value);
  }

  const std::string& text() const noexcept { return out_; }

 private:
  void open(char bracket);
  void close(char bracket);
  void separate();

  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace ferret::report
