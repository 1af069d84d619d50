// Decimal numbers written straight into a byte buffer: the chrome writer's
// inner loop formats two timestamps per region, so these take no format
// string, no locale and no std::string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ferret::chrome {

// "00" "01" ... "99": two digits per table load halves the divisions.
inline constexpr char digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/// The number of decimal digits of `value` (1 for 0).
inline unsigned decimal_digits(std::uint64_t value) noexcept {
  unsigned digits = 1;
  for (;;) {  // four at a time: most timestamps have 4 to 10 digits
    if (value < 10U) return digits;
    if (value < 100U) return digits + 1;
    if (value < 1000U) return digits + 2;
    if (value < 10000U) return digits + 3;
    value /= 10000U;
    digits += 4;
  }
}

/// Writes `value` at `out` (at most 20 bytes); returns the end.
inline char* write_decimal(char* out, std::uint64_t value) noexcept {
  const unsigned digits = decimal_digits(value);
  char* cursor = out + digits;
  while (value >= 100U) {
    const auto pair = static_cast<unsigned>(value % 100U) * 2U;
    value /= 100U;
    cursor -= 2;
    std::memcpy(cursor, digit_pairs + pair, 2);
  }
  if (value >= 10U) {
    std::memcpy(cursor - 2, digit_pairs + value * 2U, 2);
  } else {
    cursor[-1] = static_cast<char>('0' + value);
  }
  return out + digits;
}

/// Writes `value` (signed) at `out` (at most 20 bytes); returns the end.
inline char* write_decimal(char* out, std::int64_t value) noexcept {
  if (value >= 0) return write_decimal(out, static_cast<std::uint64_t>(value));
  *out++ = '-';
  // Negating in unsigned arithmetic is defined for INT64_MIN too.
  return write_decimal(out, ~static_cast<std::uint64_t>(value) + 1U);
}

// ".000" ".001" ... ".999": a timestamp's fraction is one 4-byte copy.
struct fraction_table {
  char text[1000][4];
};
constexpr fraction_table make_fraction_table() {
  fraction_table table{};
  for (unsigned k = 0; k < 1000; ++k) {
    table.text[k][0] = '.';
    table.text[k][1] = static_cast<char>('0' + k / 100);
    table.text[k][2] = static_cast<char>('0' + k / 10 % 10);
    table.text[k][3] = static_cast<char>('0' + k % 10);
  }
  return table;
}
inline constexpr fraction_table fractions = make_fraction_table();

/// Writes ".ddd" for `fraction` < 1000; returns the end.
inline char* write_fraction(char* out, unsigned fraction) noexcept {
  std::memcpy(out, fractions.text[fraction], 4);
  return out + 4;
}

/// Writes `ns` nanoseconds as microseconds with exactly three decimals
/// ("1234.567"; at most 25 bytes); returns the end. Integer arithmetic only: a
/// double holds ns exactly only up to 2^53 and would print rounding noise such
/// as 1234.5670000000002.
inline char* write_microseconds(char* out, std::int64_t ns) noexcept {
  std::uint64_t magnitude = static_cast<std::uint64_t>(ns);
  if (ns < 0) {
    *out++ = '-';
    magnitude = ~magnitude + 1U;
  }
  out = write_decimal(out, magnitude / 1000U);
  return write_fraction(out, static_cast<unsigned>(magnitude % 1000U));
}

/// write_microseconds() for a stream of nearby timestamps: the digits above
/// the last four of the microseconds (they change every 10 ms) are formatted
/// once and copied while they last, so a timestamp costs a few multiplications
/// and stores instead of a division per digit pair.
class microsecond_writer {
 public:
  __attribute__((always_inline)) char* write(char* out, std::int64_t ns) noexcept {
    if (ns < 0) return write_microseconds(out, ns);
    const auto magnitude = static_cast<std::uint64_t>(ns);
    const std::uint64_t us = magnitude / 1000U;
    const auto fraction = static_cast<unsigned>(magnitude - us * 1000U);
    const std::uint64_t high = us / 10000U;
    const auto low = static_cast<unsigned>(us - high * 10000U);
    if (high == 0) {  // the first 10 ms: no digits above the last four
      out = write_decimal(out, std::uint64_t{low});
      return write_fraction(out, fraction);
    }
    if (high != high_) {
      high_ = high;
      high_size_ = static_cast<unsigned>(write_decimal(high_text_, high) - high_text_);
    }
    std::memcpy(out, high_text_, sizeof high_text_);  // fixed size: no call
    out += high_size_;
    std::memcpy(out, digit_pairs + (low / 100U) * 2U, 2);
    std::memcpy(out + 2, digit_pairs + (low % 100U) * 2U, 2);
    return write_fraction(out + 4, fraction);
  }

  /// A duration: most regions are shorter than a microsecond ("0.047").
  static char* write_duration(char* out, std::int64_t ns) noexcept {
    if (ns < 0 || ns >= 1000) return write_microseconds(out, ns);
    out[0] = '0';
    return write_fraction(out + 1, static_cast<unsigned>(ns));
  }

 private:
  std::uint64_t high_ = 0;  // 0: nothing cached (written the plain way)
  unsigned high_size_ = 0;
  char high_text_[24] = {};
};

/// Bytes that write_microseconds() and write_decimal() may write at most.
inline constexpr std::size_t max_number_bytes = 25;

}  // namespace ferret::chrome
