// ferret/runtime/deferred_backend.hpp — a backend that opens its output only
// once the processes of the run know each other.
//
// A backend that writes one output for all processes of a parallel run (the
// OTF2 archive of all MPI ranks) cannot open it when the session starts: the
// session starts before MPI_Init, and the output's name and layout are agreed
// on collectively. Its factory returns make_deferred_backend(...) instead when
// runtime::process_group_expected(). The deferred backend keeps copies of what
// the runtime hands it (thread records, data-object events, GPU devices and
// activities), at most `max_held_events` events, and creates the real backend
//   - with the group, in join_process_group (MPI_Init returned), or
//   - without a group (nullptr: a per-process output) at the final flush, when
//     no group ever came (MPI_Init was never called),
// then hands it what it held, in the order it came, and forwards everything
// after. Events over the bound are dropped and counted (a region's end goes
// where its begin went, so that the records held still nest): every later flush
// passes them in events_dropped and as the runtime metadata
// "events-dropped-before-process-group".
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "ferret/runtime/backend.hpp"

namespace ferret::runtime {

/// Creates the real backend; `group` is nullptr without a process group. On
/// failure returns nullptr and sets `error` to one line.
using deferred_opener =
    std::function<std::unique_ptr<backend>(process_group* group, std::string& error)>;

/// `waiting_description`: describe()'s line until the real backend exists.
FERRET_EXPORT std::unique_ptr<backend> make_deferred_backend(deferred_opener open,
                                                             std::string waiting_description,
                                                             std::size_t max_held_events);

}  // namespace ferret::runtime
