// An MPI program whose last rank returns from main without MPI_Finalize while
// the others wait in it (erroneous, but it happens): ferret's ranks in
// MPI_Finalize must not wait for that rank's part of the job summary for ever.
#include <ferret/ferret.hpp>
#include <mpi.h>

#include <chrono>
#include <thread>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  {
    FERRET_REGION("work");
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == size - 1) {
    // The others are in MPI_Finalize by now.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return 0;
  }
  MPI_Finalize();
  return 0;
}
