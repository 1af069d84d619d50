// ferret/runtime/context_source.hpp — calling-context sources beside the
// annotations: what places the GPU work of an API call under more than the
// regions open on its thread (an interpreter's call stack, ...).
//
//   collector (cupti, level_zero)           context source (python)
//     at its start:                            its library's static initialiser:
//       load_launch_context_sources()  ──dlopen──▶ register_launch_context_source(writer)
//     entering a call that creates GPU work:
//       region begin
//       record_launch_context()  ─────────────────▶ writer(): e.g. one kind_call_stack event
//       kind_correlation
//
// A collector never includes a source's header, and a source never knows the
// collectors: a new one of either kind touches its own folder (and, for a
// source, the runtime's list of libraries to load, context_sources.cpp).
#pragma once

#include "ferret/runtime/settings.hpp"  // FERRET_EXPORT

namespace ferret::runtime {

/// Writes the calling thread's context for the GPU API call being entered, as
/// events in the thread's buffer. Runs on the application thread inside the
/// call's region, before its correlation; must never throw, block or wait for
/// a lock another thread may hold long.
using launch_context_writer = void (*)() noexcept;

/// Adds a source (lock-free: sources register from static initialisers, also
/// while the runtime loads them). Registering one twice keeps one.
FERRET_EXPORT void register_launch_context_source(launch_context_writer writer) noexcept;

/// Loads the runtime's context-source libraries once (libferret_python, from
/// the runtime's directory). Collectors call it when they start, holding no
/// lock of their own or of the runtime's.
FERRET_EXPORT void load_launch_context_sources() noexcept;

/// Calls every registered source in registration order: collectors, at the
/// entry of every API call that creates GPU work. No source: one load and one
/// branch.
FERRET_EXPORT void record_launch_context() noexcept;

}  // namespace ferret::runtime
