// How numbers are written. See number_format.hpp.
#include "number_format.hpp"

#include <fmt/format.h>

#include <array>

namespace ferret::profile {
namespace {

__extension__ typedef unsigned __int128 wide;  // exact products of 64-bit values

// numerator / denominator rounded to the nearest integer, ties to even.
wide rounded(wide numerator, wide denominator) noexcept {
  const wide quotient = numerator / denominator;
  const wide twice_remainder = 2 * (numerator % denominator);
  if (twice_remainder > denominator || (twice_remainder == denominator && quotient % 2 == 1))
    return quotient + 1;
  return quotient;
}

// `units` of 10^digits as "<whole>.<fraction>".
std::string with_decimals(wide units, unsigned digits) {
  wide scale = 1;
  for (unsigned i = 0; i < digits; ++i) scale *= 10;
  return fmt::format("{}.{:0{}}", static_cast<std::uint64_t>(units / scale),
                     static_cast<std::uint64_t>(units % scale), digits);
}

}  // namespace

std::string bytes_text(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  constexpr std::array<const char*, 5> units = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  std::size_t unit = 0;
  wide divisor = 1024;
  while (unit + 1 < units.size() && bytes / divisor >= 1024) {
    divisor *= 1024;
    ++unit;
  }
  return fmt::format("{} {}", with_decimals(rounded(wide{bytes} * 10, divisor), 1), units[unit]);
}

namespace {

// ns / unit with three decimals, a minus sign for negative values.
std::string thousandths(std::int64_t ns, std::uint64_t unit) {
  const bool negative = ns < 0;
  const wide magnitude = negative ? wide{0} - static_cast<wide>(ns) : static_cast<wide>(ns);
  const wide units = rounded(magnitude, unit / 1000);
  return (negative && units != 0 ? "-" : "") + with_decimals(units, 3);
}

}  // namespace

std::string seconds_text(std::int64_t ns) { return thousandths(ns, 1'000'000'000); }

std::string milliseconds_text(std::int64_t ns) { return thousandths(ns, 1'000'000); }

std::string mean_microseconds_text(std::int64_t total_ns, std::uint64_t count) {
  if (count == 0 || total_ns < 0) return "-";
  return with_decimals(rounded(static_cast<wide>(total_ns), count), 3);
}

std::string rate_text(std::uint64_t bytes, std::int64_t ns) {
  if (ns <= 0) return "-";
  return with_decimals(rounded(wide{bytes} * 100, static_cast<wide>(ns)), 2);
}

std::string percent_text(std::uint64_t ppm_sum, std::uint64_t count) {
  if (count == 0) return "-";
  return with_decimals(rounded(ppm_sum, wide{count} * 1000), 1) + "%";
}

std::string value_text(double value) { return fmt::format("{:.6g}", value); }

}  // namespace ferret::profile
