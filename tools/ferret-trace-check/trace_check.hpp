// ferret::trace_check: a strict checker for Chrome Trace Event Format JSON, as
// Perfetto's JSON importer reads it.
//
// Perfetto accepts a lot of malformed input without a word: it drops unknown
// phases, coerces a missing or zero tid to the pid, drops partially
// overlapping complete events, ignores unmatched ends, and so on. The trace
// then looks plausible but is wrong. This checker turns every such case into
// an error line, so that ferret's tests can assert that what ferret writes is
// imported exactly as written.
//
// The rules are listed at the top of trace_check.cpp. They follow what
// Perfetto's JSON importer does (json_trace_tokenizer.cc,
// json_trace_parser_impl.cc and slice_tracker.cc in its trace_processor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferret::trace_check {

/// How many error lines a report keeps; report::error_count counts all.
inline constexpr std::size_t max_stored_errors = 100;

/// Slices deeper than this on one thread are dropped by Perfetto.
inline constexpr std::size_t max_nesting_depth = 512;

/// The result of checking one trace.
struct report {
  /// One line per error, at most max_stored_errors of them. Event errors read
  /// "event 12 (pid 5 tid 7, ts 3.5): ...", where 12 is the index of the event
  /// in traceEvents (from 0).
  std::vector<std::string> errors;
  /// Number of errors found, including those not stored in `errors`.
  std::size_t error_count = 0;

  // Statistics, filled while checking (also for traces with errors).

  /// Events per phase, e.g. "X" -> 3. Unknown phases are counted too.
  std::map<std::string, std::size_t> phase_counts;
  /// Events per name, for phases X, i, I, C and b.
  std::map<std::string, std::size_t> name_counts;
  /// Number of elements of traceEvents (valid or not).
  std::size_t event_count = 0;
  /// (pid, tid) pairs of the thread tracks that carry events: those of X, B,
  /// E and thread-scoped i/I events.
  std::set<std::pair<std::uint64_t, std::uint64_t>> threads;
  /// (pid, tid) -> name, from M thread_name events.
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> thread_names;
  /// (pid, track name) -> samples, for each counter track as Perfetto names
  /// it: "<name> <args key>", or "<name> id: <id> <args key>" with an id.
  std::map<std::pair<std::uint64_t, std::string>, std::size_t> counter_tracks;
  /// pid -> name, from M process_name events.
  std::map<std::uint64_t, std::string> process_names;
  /// The top-level "metadata" object, or null when there is none (or when it
  /// is not an object, which is an error).
  nlohmann::json metadata;

  bool ok() const { return error_count == 0; }
};

/// Checks the trace in the file at `path`, read whole into memory.
/// Throws std::runtime_error when the file cannot be opened or read; a file
/// that can be read but is not a valid trace yields a report with errors.
report check_file(const std::string& path);

/// Checks a trace held in memory.
report check_text(std::string_view json_text);

}  // namespace ferret::trace_check
