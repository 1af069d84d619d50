// ferret/backends/tau — TAU profiles (FERRET_BACKEND=tau): the profile.N.C.T
// text files that TAU itself writes, so that ParaProf (`paraprof <dir>`), pprof
// (`cd <dir> && pprof`), PerfExplorer/TAUdb and hatchet open ferret runs.
//
//   <dir>/profile.N.0.T            one metric (TIME)
//   <dir>/MULTI__TIME/profile.N.0.T, <dir>/MULTI__<counter>/...   several metrics
//
// <dir> is FERRET_OUTPUT as runtime::output_file() expands it, without an
// extension made of letters only (FERRET_OUTPUT=run.json with chrome,tau gives
// run.json and run/). N: the run metadata's "mpi-rank" when present, else 0.
// T: 0 for the main thread, then the other threads in order of appearance, then
// one virtual thread per GPU (device, stream) as TAU lays them out.
//
// Per thread: the calling-context tree of the regions, written as flat entries
// (one per region name) and call-path entries ".TAU application => a => b"
// (group TAU_CALLPATH|<group>), under a ".TAU application" entry that spans the
// thread; user events for counters, marks and bytes moved by the GPU, each also
// per calling context ("event : .TAU application => a => b").
//
// GPU streams: kernels (demangled), "Memory copy Host to Device" etc. and
// "Memory set" are timed entries; bytes per direction, per data object and, on
// the launching thread, per calling context of the launch are user events.
//
// Metrics: TIME (microseconds) always. FERRET_TAU_METRICS=<counter>,... adds,
// per listed counter, a metric whose value for a region is the counter's change
// on that thread between the region's begin and end (the latest sample taken on
// the thread counts; 0 before the first) — the way TAU_METRICS=TIME:PAPI_...
// gives a hardware counter's count per region. Counters meant for this are
// cumulative (bytes allocated so far, iterations done, flops).
//
// Everything is aggregated while records arrive (memory grows with the number
// of distinct call paths and user events, never with the number of events) and
// written once, at the final flush; a fork() child (abandon()) writes nothing.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferret/runtime/backend.hpp"

namespace ferret::tau {

/// The factory FERRET_BACKEND=tau uses: creates the profile directory now, so
/// that an unwritable place is reported at start ("cannot write the TAU profile
/// to '<dir>': <reason>"), and reads FERRET_TAU_METRICS.
FERRET_EXPORT std::unique_ptr<runtime::backend> make_backend(
    const runtime::backend_context& context, std::string& error);

/// A backend writing into `directory` (created if missing) with the given
/// counter metrics besides TIME, for tests. nullptr and `error` on failure.
FERRET_EXPORT std::unique_ptr<runtime::backend> make_backend_in(
    const runtime::session_info& session, const std::string& directory,
    const std::vector<std::string>& counter_metrics, std::string& error);

/// FERRET_TAU_METRICS's value as counter names: comma-separated, blanks around
/// names ignored, duplicates dropped, "TIME" (always measured) skipped; empty
/// or "none" for no counter. nullopt for an empty name between commas.
FERRET_EXPORT std::optional<std::vector<std::string>> parse_metrics(std::string_view text);

/// `text` as a name TAU's readers take back unchanged: pprof reads a quoted
/// name up to the next '"' and every reader goes line by line, ParaProf splits
/// call paths at "=>" and context events at " : ". So '"' becomes '\'', control
/// characters become ' ', "=>" becomes "->", " : " becomes ": ", and invalid
/// UTF-8 becomes U+FFFD (TAU itself writes names as they are).
FERRET_EXPORT std::string profile_name(std::string_view text);

/// Appends `text` as XML character data for the metadata block: '&', '<' and
/// '>' as entities, '#' as "&#x23;" (readers split the header line at " #"),
/// newline, carriage return and tab as character references (the block is one
/// line), other control characters and invalid UTF-8 as U+FFFD.
FERRET_EXPORT void append_xml_text(std::string& out, std::string_view text);

/// A metric's directory suffix and header name: TAU's rule, the characters
/// /\?%*:|"<>= and blanks become '_'.
FERRET_EXPORT std::string metric_file_name(std::string_view metric);

}  // namespace ferret::tau
