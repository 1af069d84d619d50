// backends/writers/tau — writes a thread_profile as a profile.N.C.T file, line
// by line as TAU writes them:
//
//   <n> templated_functions_MULTI_<metric>
//   # Name Calls Subrs Excl Incl ProfileCalls # <metadata>...</metadata>
//   ".TAU application" 1 <subrs> <excl> <incl> 0 GROUP="TAU_DEFAULT"     (first: hatchet)
//   "<function>" <calls> <subrs> <excl> <incl> 0 GROUP="<group>"         (flat entries)
//   ".TAU application => a => b" ... GROUP="TAU_CALLPATH|<group of b>"   (call paths)
//   0 aggregates
//   <k> userevents                                                        (when there are any)
//   # eventname numevents max min mean sumsqr
//   "<event>" <count> <max> <min> <mean> <sumsqr>
//   "<event> : .TAU application => a" ...                                 (per calling context)
//
// Values: TIME in microseconds, to the nanosecond (at most three decimals,
// computed in integers: no rounding noise); the ".TAU application" line in whole
// units, as TAU's gettimeofday clock gives them (hatchet reads that line with
// int()). Other metrics and user events as the shortest text that reads back as
// the same double. A user event's sum of squares beyond the largest double
// (samples of 1e200) is written as the largest double and counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tau_thread_profile.hpp"

namespace ferret::tau {

struct function_entry {
  std::string name;   // as written (tau_names.hpp)
  std::string group;
};

/// The backend's tables the files refer to.
struct profile_tables {
  const std::vector<function_entry>& functions;  // [0] is ".TAU application"
  const std::vector<std::string>& events;        // user event names, as written
  const std::vector<std::string>& metrics;       // as written: TIME, then the counters
};

struct flat_totals {
  std::uint32_t function = 0;
  std::uint64_t calls = 0;
  std::uint64_t child_calls = 0;
  std::vector<double> exclusive, inclusive;
};

/// Everything of a thread's file that does not depend on the metric.
struct thread_layout {
  std::vector<flat_totals> flat;          // functions called on the thread, by id
  std::vector<std::uint32_t> path_nodes;  // nodes with calls, parents first
  std::vector<double> root_inclusive;     // per metric
  // User events per calling context, merged where a context has no entry.
  std::vector<context_event> context_events;
  std::uint64_t saturated_values = 0;     // sums of squares written as the largest double
};

thread_layout layout_of(const thread_profile& thread, const profile_tables& tables);

/// The call path of `node`: ".TAU application => a => b".
std::string path_of(const thread_profile& thread, std::uint32_t node, const profile_tables& tables);

/// Writes the file of `thread` for metric `metric` (an index into
/// tables.metrics) at `path`. `metadata` is the inside of the <metadata>
/// element after its "Metric Name" attribute. Returns 0 or the errno.
int write_profile(const std::string& path, const thread_profile& thread, const thread_layout& layout,
                  std::size_t metric, std::string_view metadata, const profile_tables& tables);

/// <attribute><name>name</name><value>value</value></attribute>, both as XML
/// text (tau_names.hpp); a value longer than longest_value bytes is cut at a
/// character boundary and ended with "…".
void append_attribute(std::string& out, std::string_view name, std::string_view value);
inline constexpr std::size_t longest_value = 4096;

}  // namespace ferret::tau
