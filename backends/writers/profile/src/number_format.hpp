// How the summary and the report write numbers. Every value is rounded
// exactly, from integers (half to even), so that the report's page, which
// does the same in JavaScript (backends/writers/report/page/report.js, `format`),
// shows the digits the summary prints.
#pragma once

#include <cstdint>
#include <string>

namespace ferret::profile {

/// "512 B", "1.5 KiB", "3.0 GiB": the largest unit not above the value, one decimal.
std::string bytes_text(std::uint64_t bytes);
/// Nanoseconds as seconds with three decimals: "2.345".
std::string seconds_text(std::int64_t ns);
/// Nanoseconds as milliseconds with three decimals: "12.345".
std::string milliseconds_text(std::int64_t ns);
/// The mean of `total_ns` over `count` as microseconds with three decimals.
std::string mean_microseconds_text(std::int64_t total_ns, std::uint64_t count);
/// Bytes per nanosecond (GB/s) with two decimals; "-" when `ns` is 0.
std::string rate_text(std::uint64_t bytes, std::int64_t ns);
/// The mean of `ppm_sum` (millionths) over `count` as a percentage with one
/// decimal: "62.5%"; "-" when `count` is 0.
std::string percent_text(std::uint64_t ppm_sum, std::uint64_t count);
/// A counter's value (a double from the program): six significant digits,
/// as printf's %g writes them ("0.25", "1.23457e+06", "nan"). The report's
/// data carries this text, so that the page shows the same digits.
std::string value_text(double value);

}  // namespace ferret::profile
