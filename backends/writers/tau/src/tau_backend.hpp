// backends/writers/tau — TAU profiles (FERRET_BACKEND=tau): the profile.N.C.T
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
// per calling context ("event : .TAU application => a => b"). The metadata says
// TAU_CALLPATH=on and TAU_CALLPATH_DEPTH=32, as TAU's call-path profiles do:
// regions nested deeper than 31 levels are folded into the call path of their
// caller at that depth (tau_thread_profile.hpp), and counted. OpenMP's explicit
// tasks (the OpenMP collector's "task" regions) are call paths of their own,
// ".TAU application => task [...]", whatever wait their thread ran them in, and
// the regions they interrupted do not count their time.
//
// A run that recorded nothing on the main thread still has its profile.N.0.0
// (".TAU application" only): docs/formats.md, "Nothing recorded".
//
// Names and metadata text follow the rules of tau_names.hpp, so that ParaProf,
// pprof and hatchet read them back as written (docs/formats.md).
//
// GPU streams: kernels (demangled), "Memory copy Host to Device" etc. and
// "Memory set" are timed entries; bytes per direction, per data object and, on
// the launching thread, per calling context of the launch are user events.
// Instruction samples (FERRET_CUDA_PC_SAMPLING) are user events too: GINST,
// GINST:STL_* and GSAMP:UTIL per sampled launch, and per GPU source line
// "[GPU line] file:line (kernel) GINST" under the launch's calling context
// (docs/gpu-inside.md).
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
// A counter of FERRET_TAU_METRICS that never had a sample is named in one line.
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

}  // namespace ferret::tau
