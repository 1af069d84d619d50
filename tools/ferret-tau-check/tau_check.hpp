// ferret::tau_check: a strict checker for TAU profile directories
// (profile.N.C.T files, alone or in MULTI__<metric> directories).
//
// TAU's readers are lenient: ParaProf and pprof report a corrupt file and still
// exit 0, and pprof misreads a number that does not parse without a word. This
// checker turns every departure from the format, and every inconsistency
// between the numbers of one profile, into an error line, so that ferret's tests
// can assert that a profile means exactly what was measured. The rules are listed at the top of
// tau_check.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferret::tau_check {

/// How many error lines a report keeps; report::error_count counts all.
inline constexpr std::size_t max_stored_errors = 100;

struct function_line {
  std::string name;
  std::uint64_t calls = 0;
  std::uint64_t subroutines = 0;
  double exclusive = 0.0;
  double inclusive = 0.0;
  std::string group;
};

struct user_event_line {
  std::string name;
  std::uint64_t count = 0;
  double max = 0.0, min = 0.0, mean = 0.0, sum_of_squares = 0.0;
};

/// One profile.N.C.T file as read.
struct profile {
  std::string metric;  // from the first line
  std::vector<std::pair<std::string, std::string>> metadata;  // attributes, in order, decoded
  std::vector<function_line> functions;
  std::vector<user_event_line> user_events;

  /// nullptr when absent.
  const function_line* function(std::string_view name) const;
  const user_event_line* user_event(std::string_view name) const;
  /// The value of a metadata attribute, "" when absent.
  std::string attribute(std::string_view name) const;
};

struct report {
  /// "<file>:<line>: <what>" or "<file>: <what>", at most max_stored_errors.
  std::vector<std::string> errors;
  std::size_t error_count = 0;
  /// Metric names: one for a plain directory, the MULTI__ suffixes otherwise.
  std::vector<std::string> metrics;
  /// By path relative to the directory ("profile.0.0.1", "MULTI__TIME/profile.0.0.1").
  std::map<std::string, profile> profiles;

  bool ok() const { return error_count == 0; }
  /// The profile of thread `thread` of node `node` (context 0) for `metric`
  /// (ignored for a plain directory); nullptr when absent.
  const profile* find(std::uint64_t node, std::uint64_t thread, std::string_view metric = "TIME") const;
};

/// Checks every profile of a directory and their agreement with one another.
/// A directory that cannot be read yields a report with that error.
report check_directory(const std::string& directory);

/// Checks one file's text; `name` is used in error lines, and `metric`, when
/// not empty, is what its first line must name.
report check_profile_text(std::string_view text, std::string_view name = "profile.0.0.0",
                          std::string_view metric = {});

/// Strict XML 1.0 well-formedness of one element (with its content), as the
/// metadata block must be: "" when well formed, else what is wrong.
std::string xml_error(std::string_view text);

}  // namespace ferret::tau_check
