// An MPI program that returns from main without MPI_Finalize (erroneous, but
// it happens): ferret's final flush then comes at exit, outside MPI_Finalize,
// where the ranks may never meet in a collective. The OTF2 backend must say so
// and let the program end, not wait for the other ranks.
#include <ferret/ferret.hpp>
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  FERRET_REGION("work");
  return 0;
}
