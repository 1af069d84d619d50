// backends/writers/otf2 — OTF2's collective callbacks over the runtime's process
// group, so that the ranks of an MPI run write one archive while
// libferret_otf2 itself needs no MPI (libferret_mpi implements the group).
// The equivalent of OTF2_MPI_Collectives.h; that header would make this
// library link MPI, or need a library of its own between OTF2 and MPI, for
// what is a translation from element counts to bytes.
#pragma once

#include <ferret/runtime/runtime.hpp>
#include <otf2/otf2.h>

namespace ferret::otf2 {

/// Sets `group` as the archive's collective context (a single file per
/// location: no local communicators). `group` must outlive the archive.
OTF2_ErrorCode set_collective_callbacks(OTF2_Archive* archive, runtime::process_group& group);

}  // namespace ferret::otf2
