// backends/writers/chrome — writes Chrome Trace Event Format JSON, which
// Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
//   {"traceEvents":[
//   {"ph":"M","name":"process_name",...},      one event per line
//   {"ph":"X","name":"solve","pid":P,"tid":T,"ts":12.345,"dur":0.678},
//   ...
//   ],"metadata":{...session facts, counts,
//     "source-locations":{"solve":[{"file":...,"line":N,"function":...}]},
//     "run":{...}}}
//
// Events carry no source location: the metadata's "source-locations" holds,
// per name, each distinct (file, line, function[, cat]) once. A region is
// about 80 bytes.
//
// The file is streamed: events are formatted into a reusable byte buffer and
// written in batches of 256 KiB, and each time (at every flush() and whenever
// a batch fills) the trailer — the closing bracket and the metadata — is
// rewritten after the last event. The file on disk is thus a complete
// document after each write; the exit guard (exit_guard.hpp) closes it when
// the process dies during one. A write that fails (a full disk) ends the
// events there: the document is closed after the last events written (the
// last batch is dropped if the trailer needs its room), later events are
// counted, not written ("events-not-written", "write-error"), and describe()
// says so — also at FERRET_VERBOSE=0.
//
// Perfetto shows at most 512 nested slices per thread: deeper regions are
// written all the same, counted in "regions-deeper-than-perfetto-shows" and
// named in describe().
//
// Mapping: regions → complete events X (nested per thread; unbalanced ends and
// regions still open at the end are closed and counted in the metadata), marks →
// thread-scoped instants i, counters → C, data objects → async b/e events on
// the process (category "data_object").
//
// GPU activity: one process per device (pid 0x80000000 | device << 22 | the
// low 22 bits of the host pid, never a real pid), named "GPU <n>: <device
// name>" (or "GPU <n>" for a device never announced) and sorted after the host;
// one track per stream (tid stream + 1). Kernels, memcpys and memsets → X
// events (categories "kernel", "memcpy", "memset") with their launch's
// correlation id, calling context and API call as args; allocations and
// releases → the counter "allocated memory" per memory kind; synchronizations
// → async b/e events (category "sync"). Each operation with a known launch gets
// a flow (category "launch") from the launching thread to its slice. The
// metadata counts "gpu-operations-written" and
// "gpu-operations-written-without-launch" (all kinds; those without launch
// have no flow and no context), beside the runtime's own "gpu-operations".
//
// MPI (communication events from backends/collectors/mpi): each message's ends as thread
// instants of category "mpi-message" — "MPI send" where it was posted, "MPI
// receive" where it completed — with args to/from (MPI_COMM_WORLD rank),
// communicator, tag and bytes; tools/ferret-merge joins the ranks' traces and
// draws a flow from each send to its receive.
#pragma once

#include "ferret/runtime/backend.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace ferret::chrome {

/// Opens the output file (runtime::output_file(context, ".json")) and writes
/// the document's head. On failure returns nullptr and sets `error` to
/// "cannot write the chrome trace to '<path>': <reason>".
FERRET_EXPORT std::unique_ptr<runtime::backend> make_backend(
    const runtime::backend_context& context, std::string& error);

/// Appends `bytes` as a quoted JSON string. Invalid UTF-8 (overlong forms,
/// surrogates, code points above U+10FFFF, truncated sequences, stray
/// continuation bytes) becomes one \ufffd per offending byte; '"', '\\' and
/// every byte below 0x20 are escaped.
FERRET_EXPORT void append_json_string(std::string& out, std::string_view bytes);

}  // namespace ferret::chrome
