// backends/writers/report — one self-contained HTML file at exit
// (FERRET_BACKEND=report writes <output>.html): the profile of the run
// (profile_model, shared with the summary backend) in four views, after
// Snoopie's data-movement views and HPCToolkit's calling-context profile:
//
//   System    host and GPUs as nodes, edges by bytes or operations per
//             direction; the same as a heat-map matrix; totals; CSV export
//   Objects   every data object: bytes in and out by direction and device,
//             operations, lifetime, a heat strip over its address range;
//             select one for the contexts that moved it
//   Code      the calling-context tree with inclusive and exclusive host time
//             and HPCToolkit's GPU metrics, sortable, with file:line; select
//             a context for its objects and device pairs
//   Devices   per GPU: kernels, copies by direction, live memory over time,
//             and per stream a coarse utilisation timeline
//
// The page needs no network and no other file. It holds aggregates, never the
// trace, so its size is bounded for any run. The file is written once, at the
// final flush, through a temporary file renamed into place: a reader sees the
// whole report or none.
#pragma once

#include <memory>
#include <string>

#include "ferret/runtime/backend.hpp"

namespace ferret::report {

/// The factory FERRET_BACKEND=report uses. Fails (nullptr, `error` set) when
/// there is no session or the output's directory cannot be written.
FERRET_EXPORT std::unique_ptr<runtime::backend> make_backend(
    const runtime::backend_context& context, std::string& error);

}  // namespace ferret::report
