#include "metrics_sampling_setting.hpp"

#include <cctype>
#include <string>
#include <string_view>

namespace ferret::cupti {
namespace {

constexpr std::int64_t shortest_ns = 10'000;          // PM sampling's hardware buffer fills fast below
constexpr std::int64_t longest_ns = 10'000'000'000;   // longer gives a handful of samples per run

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

}  // namespace

std::optional<metrics_sampling_setting> parse_metrics_sampling(const char* value) {
  std::string text{trimmed(value != nullptr ? value : "")};
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (text.empty() || text == "off") return metrics_sampling_setting{};
  // The number: digits, at most one point with digits after it.
  std::size_t at = 0;
  std::int64_t whole = 0;
  std::int64_t fraction = 0, fraction_scale = 1;
  bool digits = false;
  for (; at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])); ++at) {
    if (whole > longest_ns) return std::nullopt;
    whole = whole * 10 + (text[at] - '0');
    digits = true;
  }
  if (at < text.size() && text[at] == '.') {
    ++at;
    bool fraction_digits = false;
    for (; at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])); ++at) {
      if (fraction_scale < 1'000'000'000) {
        fraction = fraction * 10 + (text[at] - '0');
        fraction_scale *= 10;
      }
      fraction_digits = true;
    }
    if (!fraction_digits) return std::nullopt;
  }
  if (!digits) return std::nullopt;
  const std::string_view unit = trimmed(std::string_view{text}.substr(at));
  std::int64_t unit_ns = 0;
  if (unit.empty() || unit == "ms") unit_ns = 1'000'000;
  else if (unit == "us" || unit == "\xc2\xb5s") unit_ns = 1'000;  // also "µs"
  else if (unit == "ns") unit_ns = 1;
  else if (unit == "s") unit_ns = 1'000'000'000;
  else return std::nullopt;
  if (whole > longest_ns / unit_ns) return std::nullopt;
  const std::int64_t interval_ns = whole * unit_ns + fraction * unit_ns / fraction_scale;
  if (interval_ns == 0 && fraction == 0) return metrics_sampling_setting{};  // "0", "0ms": off
  if (interval_ns < shortest_ns || interval_ns > longest_ns) return std::nullopt;
  return metrics_sampling_setting{true, interval_ns};
}

}  // namespace ferret::cupti
