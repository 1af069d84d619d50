// backends/writers/otf2 — writes an OTF2 archive (Score-P's trace format, read by
// Vampir, Scalasca, otf2-print and the OTF2 reader API).
//
// Naming: the archive is the directory runtime::output_directory(context) (the
// TAU profile's too); inside it, as Score-P lays out its experiment
// directories, the anchor file traces.otf2, the global definitions traces.def
// and the event files traces/<location>.evt. FERRET_OUTPUT=run → run/traces.otf2;
// FERRET_OUTPUT=run.otf2 or run.json → the same; FERRET_OUTPUT=dir/ →
// dir/ferret-<exe>-<pid>/traces.otf2 (and so does FERRET_OUTPUT=run when run is
// an existing directory, e.g. the archive of an earlier run: the runtime treats
// an existing directory as one to write into). An existing archive is never
// overwritten: the backend refuses to start (the OTF2 writer cannot reuse one).
//
// Layout: clock properties (1 ns resolution, global offset = the session's start on
// CLOCK_MONOTONIC_RAW, realtime timestamp = the same instant on CLOCK_REALTIME);
// system tree machine → node (hostname) → process location group; one CPU_THREAD
// location per host thread; one ACCELERATOR location group per GPU (created by the
// process) with one ACCELERATOR_STREAM location per stream.
//   regions   → Enter/Leave (paradigm USER with source file and line; domain "cuda",
//               the CUDA API calls, → paradigm CUDA); properly nested per thread:
//               an end that skips open regions leaves them first, an end that
//               matches nothing is dropped, regions open at the end are left at
//               the session's end (all counted in the properties).
//   counters  → metrics (one metric class per counter, double, absolute point).
//   marks     → OTF2 markers (marker group "ferret", category = the domain or
//               "mark", text = the name, scope = the thread's location): the OTF2
//               record meant for user annotations; Vampir shows them on the
//               timeline; read with OTF2_Reader_GetMarkerReader.
//   data objects → markers of category "data object" on the registering thread
//               ("A registered: 4096 bytes of device memory on GPU 0 at 0x…",
//               "A unregistered"). Markers are held in memory until the archive
//               is closed: at most 100 000 (marks and objects), the rest counted.
//   kernels   → Enter/Leave of a region per kernel name (paradigm CUDA) on the
//               stream's location, with attributes: grid, block, registers per
//               thread, static/dynamic shared memory, local memory, theoretical
//               occupancy, correlation id, calling context (annotated regions)
//               and the launching API call. Memsets → region "Memset"
//               (DATA_TRANSFER, named as in the chrome trace) with the object set and the
//               memory kind.
//   copies    → one-sided communication as Score-P writes CUDA memcpys: RmaGet
//               when the stream's device receives (HtoD, peer copies into it),
//               RmaPut otherwise, at the start on the stream's location;
//               RmaOpCompleteBlocking at the end; window "CUDA" over a CUDA
//               communicator of all the process's locations; remote = the launching host
//               thread's location (the main thread's when the launch is unknown),
//               the other GPU's memory location for peer copies, the stream
//               itself within one device; bytes on the record; attributes: the
//               source and destination objects and devices, plus launch ones.
//   allocations → a metric per device and memory kind ("GPU 0 allocated device
//               memory", bytes in use) on the GPU's metric location "GPU <n> memory".
//   synchronizations → not written: a wait overlaps the stream's kernels, which
//               a location's nesting cannot hold; the host thread's API call
//               region shows the wait (counted: GPU_SYNCHRONIZATIONS_NOT_WRITTEN).
//   MPI communication (backends/collectors/mpi) → Score-P's MPI records on the calling
//               thread's location, inside the call's region (paradigm MPI,
//               Score-P's region roles): MpiSend, MpiIsend, MpiIsendComplete,
//               MpiRecv, MpiIrecvRequest, MpiIrecv, MpiCollectiveBegin/End;
//               communicators over one MPI COMM_LOCATIONS group (docs/mpi.md).
//               The events of a drain wait per thread until the thread's
//               records around them are written. Each rank's clock offsets to
//               rank 0 become ClockOffset records of its locations.
// GPU operations of a drain are sorted per location; a time earlier than the last
// written on its location (overlap, or across drains) is clamped to it and
// counted.
//
// Archive properties (FERRET::...): version, hostname, executable, command line,
// clock source, events recorded and dropped, the loss counters above, runtime
// metadata (FERRET::RUNTIME::<KEY>) and run metadata (FERRET::RUN::<KEY>), each
// key escaped injectively into OTF2's [A-Z0-9_] and kept as given in
// <...>::KEY (otf2_text.hpp); integers exact. Texts are bounded to what OTF2's
// files hold; run metadata beyond that is counted (FERRET::METADATA_OMITTED).
//
// Errors: the OTF2 library's own messages stay off stderr (otf2_errors.hpp);
// a failed archive is one line, at exit (FERRET_VERBOSE=1) or when it fails
// (FERRET_VERBOSE=0), with OTF2's first message and how many it gave.
//
// Memory stays bounded: events go through OTF2's buffered event writers (256 KiB
// chunks, mapped as needed); a location gets more than one chunk only while it
// holds fewer than 16 and all locations together less than 64 MiB, and when a
// writer is refused one OTF2 flushes that location's chunks to its .evt file
// (OTF2 then adds a BufferFlush record): otf2_chunks.hpp. A location costs its
// unwritten events, up to a chunk, and a few pages at exit (OTF2 fills each
// buffer's last chunk when it writes it; the definition chunk is as small as the
// largest definition record allows). Definitions (names, locations) and
// markers are kept until the final flush, which writes them and closes the
// archive: the archive is readable only after the final flush.
//
// Nothing recorded: the archive holds the main thread's location, without
// events (readers reject an archive without locations). Markers beyond the
// limit are counted and said on stderr at exit, in the archive's line.
//
// MPI (docs/mpi.md): when libferret_mpi is loaded, the ranks of a run write ONE
// archive. The backend holds what it receives until MPI_Init returns (at most
// 2^20 events; the rest dropped and counted), then opens the archive with
// collective callbacks over the runtime's process group (otf2_collectives.hpp),
// in rank 0's directory (its expansion of FERRET_OUTPUT, broadcast). Each rank
// is a location group "MPI Rank <r>" under the node of its host; location ids
// are rank << 32 | local id. At the final flush (in MPI_Finalize) rank 0 gathers
// and unifies the ranks' definitions and writes the global ones, the markers
// and the properties (counts summed over ranks); every rank writes mapping
// tables for its local ids (otf2_definitions.hpp). Without MPI_Init the held
// events go to a per-process archive at exit, as without the MPI layer.
#pragma once

#include "ferret/runtime/backend.hpp"

#include <memory>
#include <string>

namespace ferret::otf2 {

/// Opens the archive. On failure returns nullptr and sets `error` to
/// "cannot write the OTF2 archive '<directory>': <reason>".
FERRET_EXPORT std::unique_ptr<runtime::backend> make_backend(
    const runtime::backend_context& context, std::string& error);

}  // namespace ferret::otf2
