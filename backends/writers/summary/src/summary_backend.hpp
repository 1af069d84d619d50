// backends/writers/summary — a plain-text report on stderr at the end of the
// run (FERRET_BACKEND=summary, alone or beside another backend), so that a
// question such as "where does the GPU time go?" needs no file and no viewer;
// into FERRET_OUTPUT instead when that names a .txt file.
//
//   ferret summary: heat (pid 4242), 2.345 s, 1234 GPU operations
//   metrics (HPCToolkit's names): GKER kernel time, GXCOPY bytes copied, ...
//
//   GPU time by calling context      GPU work per region path of the launch
//   Kernels                          per kernel
//   GPU instruction sampling         PC sampling's counts, period, GSAMP:UTIL, drops
//   GPU instructions by source line  the 20 lines with the most samples, their reasons
//   GPU stalls by calling context    samples per region path and kernel, by stall class
//   Copies                           per copy direction
//   Device-to-device bytes           copied bytes, source × destination
//   Data objects                     size and bytes moved per data object (host ones too)
//   Memory                           allocations per device and memory kind
//   Host regions                     inclusive time per annotated region
//   Counters                         samples, min, mean, max and last value per counter
//   Marks                            count per mark
//   API calls counted, not recorded  the collectors' <collector>-api-unrecorded:<call> counts
//   Losses: ...                      events or GPU records that were lost
//
// Sections without data are left out; each table shows its first 10 rows
// (GPU lines: 20).
// The numbers come from profile_model (shared with the report backend);
// names are escaped and cut (readable_text.hpp), so no name acts on the
// terminal. The report is built in memory and written with a single write(2)
// at the final flush; earlier flushes print nothing, and a fork() child
// (abandon()) never prints.
#pragma once

#include <memory>
#include <string>

#include "ferret/runtime/backend.hpp"

namespace ferret::summary {

/// The factory FERRET_BACKEND=summary uses: reports on stderr, or into
/// FERRET_OUTPUT when it names a .txt file (made now; opened again to write at
/// exit). Fails (nullptr, `error` set) when the context has no session or that
/// file cannot be made.
FERRET_EXPORT std::unique_ptr<runtime::backend> make_backend(
    const runtime::backend_context& context, std::string& error);

/// A summary backend that writes its report to `fd` (not closed), for tests.
FERRET_EXPORT std::unique_ptr<runtime::backend> make_backend_writing_to(
    const runtime::session_info& session, int fd);

}  // namespace ferret::summary
