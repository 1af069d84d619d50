#include "settings.hpp"

#include "ferret/detail/abi.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <iterator>
#include <string_view>
#include <utility>

namespace ferret::runtime {

namespace {
constexpr setting table[] = {
    {"FERRET_BACKEND", "comma-separated list of backend names", "none",
     "Backends that receive the events (e.g. chrome,summary; in any case; blanks and semicolons "
     "separate too). 'none', 'off', '0' or unset: nothing is recorded and each annotation costs "
     "one load and one branch. A name that is no backend (a typo, a collector) gets one line and "
     "is left out; the others run."},
    {"FERRET_OUTPUT", "path", "ferret-%e-%p",
     "Output file, or directory when it ends in '/' or exists. Each backend adds its extension "
     "(.json for chrome; otf2 and tau write into the directory of that name without its "
     "extension: run.json gives run/; the summary is printed on stderr, or written to a name "
     "ending in .txt). %p: process id, %h: host name, %e: executable name, "
     "%%: '%'; a leading ~/ is $HOME. A name "
     "without %p that several processes share (children, MPI ranks): the first keeps it, the "
     "others write beside it with their pid."},
    {"FERRET_BUFFER_SIZE", "bytes, with K/M/G suffix, 256K to 4G", "8M",
     "Memory for buffered events, all threads together (16 bytes per event), in chunks of 1/64 of "
     "it (4 to 64 KiB). A thread hands each full chunk to the background thread and goes on in a "
     "free one; it waits only when no chunk is free, for one chunk (counted: application-waits, "
     "application-wait-ns). Events that still cannot be kept are counted and reported. A value "
     "out of the range is taken to its nearest end, with a message."},
    {"FERRET_FLUSH_INTERVAL", "milliseconds (500, 500ms, 2s), 0 to 60000", "200",
     "How often the background thread drains the buffers. 0: only when a buffer fills, at "
     "ferret::flush() and at exit. More than a minute is taken as a minute, with a message."},
    {"FERRET_SIGNAL_WAIT", "milliseconds (500, 500ms, 2s), 0 to 60000", "4000",
     "After SIGINT or SIGTERM (when the application has no handler of its own), how long buffered "
     "events are still written; then the outputs are closed (within one more second) and the "
     "signal takes its default action. Events not written are counted "
     "(events-dropped-unwritten-at-signal) and reported. More than a minute is taken as a minute, "
     "with a message."},
    {"FERRET_CLOCK", "auto, tsc or monotonic_raw", "auto",
     "Host clock. auto: the CPU's invariant timestamp counter where the CPU or kernel vouches for "
     "it, else CLOCK_MONOTONIC_RAW. The choice is written in the output's metadata."},
    {"FERRET_VERBOSE", "0, 1 or 2", "1",
     "0: errors only. 1: also one line per output at exit. 2: also start-up details."},
    {"FERRET_PYTHON", "0, 1 (or off, on, ...) or api", "1",
     "Python call paths as calling context of GPU work launched by CPython (3.9+) code. 1: "
     "frames read in place (CPython 3.9 to 3.13, GIL held or not), else through CPython's API "
     "while the launching thread holds the GIL; api: always through the API; 0: off."},
    {"FERRET_TAU_METRICS", "comma-separated counter names, or none", "none",
     "tau backend: metrics besides TIME, one per counter: a region's value is the counter's "
     "change on its thread between the region's begin and end (for cumulative counters, like "
     "TAU_METRICS=TIME:PAPI_...). Written as MULTI__<metric> directories."},
    {"FERRET_CUDA_API", "driver, work, work-uncounted or all", "work",
     "CUDA collector: which API calls become regions. work: the calls that launch, copy, set, "
     "allocate, free, synchronise, wait for or order GPU work; every other runtime call is "
     "counted per name (metadata cuda-api-unrecorded:<call>, a CUPTI callback each). "
     "work-uncounted: the same regions, the other calls not subscribed to (no counts). "
     "driver: the same work seen at the driver calls the runtime makes (cuLaunchKernel for "
     "cudaLaunchKernel), no runtime callback at all: the runtime's other calls cost nothing. "
     "all: every runtime call."},
    {"FERRET_CUDA_PC_SAMPLING", "0, 1 (or off, on, ...), 5 to 31, or cycles (a power of two)", "0",
     "CUDA collector: instruction samples with stall reasons (CUPTI's PC sampling, continuous: "
     "concurrent kernels stay concurrent), by source line where the code has line information "
     "(-lineinfo) and by the calling context of the launch. 1: at CUPTI's period for the GPU; "
     "5 to 31: a sample every 2^N cycles per SM; 32 to 2147483648, a power of two: every that "
     "many cycles. 0: off, nothing subscribed. See docs/gpu-inside.md."},
    {"FERRET_CUDA_PEER_ACCESSES", "0 or 1 (or off, on, no, yes, false, true)", "0",
     "CUDA collector: device-initiated traffic, exact — every load, store and atomic a kernel "
     "makes to another GPU's memory or to host memory, counted on the device per instruction "
     "through the Compute Sanitizer API (libsanitizer-public.so, from the toolkit's "
     "compute-sanitizer/), by kernel, source line, data object and device pair. A counting run: "
     "CUPTI cannot run beside the sanitizer, so CUDA driver calls and kernels are recorded (the "
     "kernels timed by ferret's patch, as the counting slows them) but no copies or memsets. 0: "
     "off, nothing loaded. See docs/gpu-inside.md."},
    {"FERRET_CUDA_METRICS_SAMPLING", "an interval (1ms, 500us, 2 ms; a number alone: ms), or 0", "0",
     "CUDA collector: each GPU's hardware counters sampled at this interval by CUPTI's PM "
     "sampling, nothing replayed — NVLink bytes sent and received, PCIe bytes read and written, "
     "DRAM bytes read and written, SMs active — those the GPU has (the others said once), as "
     "counter tracks beside the kernels. 10us to 10s; 0, off or empty: off, nothing enabled. "
     "See docs/gpu-inside.md."},
    {"FERRET_SANITIZER_LIBRARY", "a path", "(searched)",
     "FERRET_CUDA_PEER_ACCESSES: the Compute Sanitizer's libsanitizer-public.so, where it is not "
     "under $CUDA_HOME/compute-sanitizer or /usr/local/cuda/compute-sanitizer."},
    {"FERRET_LEVEL_ZERO_API", "work, work-uncounted or all", "work",
     "Level Zero collector: which API calls become regions, as FERRET_CUDA_API (metadata "
     "level-zero-api-unrecorded:<call>). all: every call the collector traces."},
};
}  // namespace

setting_table settings() noexcept { return {table, std::size(table)}; }

std::optional<bool> parse_switch(std::string_view value) noexcept {
  const auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!value.empty() && blank(value.front())) value.remove_prefix(1);
  while (!value.empty() && blank(value.back())) value.remove_suffix(1);
  const auto is = [&](std::string_view word) {
    return value.size() == word.size() &&
           std::equal(value.begin(), value.end(), word.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == b;
           });
  };
  for (const std::string_view on : {"1", "on", "yes", "true"})
    if (is(on)) return true;
  for (const std::string_view off : {"0", "off", "no", "false"})
    if (is(off)) return false;
  return std::nullopt;
}

namespace internal {
namespace {

std::string trim(std::string text) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  text.erase(text.begin(), std::find_if(text.begin(), text.end(), not_space));
  text.erase(std::find_if(text.rbegin(), text.rend(), not_space).base(), text.end());
  return text;
}

const setting& entry(const char* variable) {
  for (const setting& s : table)
    if (std::string_view{s.variable} == variable) return s;
  return table[0];  // unreachable: every caller names a row of the table
}

std::string value_of(env_lookup lookup, const char* variable) {
  const char* raw = lookup(variable);
  return trim(raw != nullptr ? raw : entry(variable).default_value);
}

std::string malformed(const char* variable, const std::string& value) {
  return fmt::format("{}='{}' is not valid (expected {})", variable, value, entry(variable).kind);
}

std::optional<unsigned long> parse_unsigned(const std::string& text) {
  unsigned long value = 0;
  const char* first = text.data();
  const char* last = first + text.size();
  const auto [end, error] = std::from_chars(first, last, value);
  if (error != std::errc{} || end != last || text.empty()) return std::nullopt;
  return value;
}

// "64 MiB" -> {64, "mib"}: the leading digits, and what follows them,
// trimmed and in lower case; nullopt without digits.
std::optional<std::pair<std::uint64_t, std::string>> number_and_unit(const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const auto number = parse_unsigned(text.substr(0, digits));
  if (!number) return std::nullopt;
  std::string unit = trim(text.substr(digits));
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::pair{std::uint64_t{*number}, std::move(unit)};
}

}  // namespace

std::optional<std::uint64_t> parse_size(const std::string& text) {
  const auto parsed = number_and_unit(text);
  if (!parsed) return std::nullopt;
  const auto& [value, unit] = *parsed;
  unsigned shift = 0;
  if (unit.empty() || unit == "b") shift = 0;
  else if (unit == "k" || unit == "kb" || unit == "kib") shift = 10;
  else if (unit == "m" || unit == "mb" || unit == "mib") shift = 20;
  else if (unit == "g" || unit == "gb" || unit == "gib") shift = 30;
  else return std::nullopt;
  if (value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

std::optional<std::uint64_t> parse_milliseconds(const std::string& text) {
  const auto parsed = number_and_unit(text);
  if (!parsed) return std::nullopt;
  const auto& [value, unit] = *parsed;
  if (unit.empty() || unit == "ms") return value;
  if (unit == "s" && value <= UINT64_MAX / 1000) return value * 1000;
  return std::nullopt;
}

settings parse_settings(env_lookup lookup) {
  settings result{};
  // The value of a variable, or its default with a notice when `valid` refuses it.
  const auto checked = [&](const char* variable, const auto& valid) {
    const std::string value = value_of(lookup, variable);
    if (valid(value)) return value;
    result.notices.push_back(malformed(variable, value) +
                             fmt::format("; using {}", entry(variable).default_value));
    return std::string{entry(variable).default_value};
  };

  // Names in any case, separated by commas, blanks or semicolons (as people
  // write lists), empty entries ignored; the words that turn tracing off are
  // no names. Whether each names a backend is decided when the session
  // starts (registry.hpp), one line per name that does not, so that one typo
  // never turns the others off.
  const std::string backends = value_of(lookup, "FERRET_BACKEND");
  const std::string_view separators = ferret::detail::backend_separators;
  const auto& off_words = ferret::detail::backend_off_words;
  std::size_t start = 0;
  while (start < backends.size()) {
    const std::size_t end = std::min(backends.find_first_of(separators, start), backends.size());
    std::string name = backends.substr(start, end - start);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (!name.empty() && std::find(std::begin(off_words), std::end(off_words), name) == std::end(off_words) &&
        std::find(result.backends.begin(), result.backends.end(), name) == result.backends.end())
      result.backends.push_back(std::move(name));
    start = end + 1;
  }

  result.output = checked("FERRET_OUTPUT", [](const std::string& value) { return !value.empty(); });

  // A number: a malformed value is the default (checked); a well-formed one
  // out of range is taken to the nearest bound (the closest to what was
  // asked), said in one line.
  const auto number_in_range = [&](const char* variable, const auto& parse, std::uint64_t least,
                                   std::uint64_t most, const char* least_text, const char* most_text) {
    const std::string text = checked(variable, [&](const std::string& value) { return parse(value).has_value(); });
    const std::uint64_t value = *parse(text);
    if (value < least) {
      result.notices.push_back(
          fmt::format("{}='{}' is less than the smallest, {}; using {}", variable, text, least_text, least_text));
      return least;
    }
    if (value > most) {
      result.notices.push_back(
          fmt::format("{}='{}' is more than the largest, {}; using {}", variable, text, most_text, most_text));
      return most;
    }
    return value;
  };

  // Less would drain too often to keep up; more only costs: the chunks'
  // bookkeeping grows with it (1T took 538 MB).
  constexpr std::uint64_t smallest_buffer = 256u << 10;
  constexpr std::uint64_t largest_buffer = std::uint64_t{4} << 30;
  result.buffer_bytes = static_cast<std::size_t>(
      number_in_range("FERRET_BUFFER_SIZE", parse_size, smallest_buffer, largest_buffer, "256K", "4G"));

  constexpr std::uint64_t a_minute_ms = 60000;
  result.flush_interval_ms = static_cast<unsigned>(
      number_in_range("FERRET_FLUSH_INTERVAL", parse_milliseconds, 0, a_minute_ms, "0", "60s"));
  result.signal_wait_ms = static_cast<unsigned>(
      number_in_range("FERRET_SIGNAL_WAIT", parse_milliseconds, 0, a_minute_ms, "0", "60s"));

  const std::string clock = checked("FERRET_CLOCK", [](const std::string& value) {
    return value == "auto" || value == "tsc" || value == "monotonic_raw";
  });
  result.clock = clock == "tsc"             ? clock_choice::tsc
                 : clock == "monotonic_raw" ? clock_choice::monotonic_raw
                                            : clock_choice::automatic;

  const std::string verbose = checked("FERRET_VERBOSE", [](const std::string& value) {
    const auto level = parse_unsigned(value);
    return level && *level <= 2;
  });
  result.verbose = static_cast<int>(*parse_unsigned(verbose));
  return result;
}

}  // namespace internal
}  // namespace ferret::runtime
