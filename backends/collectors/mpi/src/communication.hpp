// The MPI layer's communication recording (communication.cpp): what the PMPI
// wrappers of point-to-point, collective and communicator calls share with
// MPI_Init / MPI_Finalize (mpi_layer.cpp).
#pragma once

#include <mpi.h>

#include <cstdint>

namespace ferret::mpi {

/// Starts recording communication (after MPI_Init, with a session): names
/// MPI_COMM_WORLD and MPI_COMM_SELF and hands the runtime a collector that
/// delivers the events at every drain. `world_rank` is this process's rank.
void start_communication_recording(std::uint32_t world_rank);

/// Stops recording (MPI_Finalize, before the session ends) and writes the
/// counts of events kept and lost into the run metadata.
void stop_communication_recording();

}  // namespace ferret::mpi
