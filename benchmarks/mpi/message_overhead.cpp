// What the MPI layer adds to one message. One rank sends 8-byte messages to
// itself over MPI_COMM_SELF — MPI_Isend + MPI_Irecv + MPI_Waitall, and
// MPI_Sendrecv — so that the time is the calls' own, not another process's
// scheduling (the CI host is shared), and prints the best of `repeats` timings
// in ns per message (one send and its receive).
// Built twice (benchmarks/CMakeLists.txt): ferret-mpi-bare without the layer,
// ferret-mpi-layer with it and the "discard" backend, which drops what it gets:
// the cost measured is the layer's and the runtime's, not an output format's.
// benchmarks/mpi/run.sh runs them side by side.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace {

double best_ns_per_message(int messages, int repeats, bool nonblocking) {
  double best = 1e300;
  for (int repeat = 0; repeat < repeats; ++repeat) {
    const double start = MPI_Wtime();
    long out = repeat, in = 0;
    for (int i = 0; i < messages; ++i) {
      if (nonblocking) {
        MPI_Request requests[2];
        MPI_Irecv(&in, 1, MPI_LONG, 0, 0, MPI_COMM_SELF, &requests[0]);
        MPI_Isend(&out, 1, MPI_LONG, 0, 0, MPI_COMM_SELF, &requests[1]);
        MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
      } else {
        MPI_Sendrecv(&out, 1, MPI_LONG, 0, 0, &in, 1, MPI_LONG, 0, 0, MPI_COMM_SELF,
                     MPI_STATUS_IGNORE);
      }
    }
    best = std::min(best, (MPI_Wtime() - start) * 1e9 / messages);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int messages = argc > 1 ? std::atoi(argv[1]) : 100000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 7;
  const double nonblocking = best_ns_per_message(messages, repeats, true);
  const double blocking = best_ns_per_message(messages, repeats, false);
  std::printf("isend+irecv+waitall %.0f ns per message, sendrecv %.0f ns per message\n", nonblocking,
              blocking);
  MPI_Finalize();
  return 0;
}
