// The MPI communication the tests trace (mpi_communication_test.py), on any
// number of ranks >= 2. Per rank it sends exactly `messages_per_rank` messages
// (and receives as many):
//   ring        20 x Send to the right / Recv from the left (every other one from
//               MPI_ANY_SOURCE), rank 0 sending first
//   halo        20 x Irecv + Isend to both neighbours, completed by Waitall,
//               Waitany or a Test loop in turn
//   shift        5 x Sendrecv
//   split        5 x Sendrecv between the two ranks of a pair (MPI_Comm_split),
//               then an Allreduce in the pair (an odd rank out stays alone)
//   dup          1 x Isend/Irecv/Wait on a duplicate of MPI_COMM_WORLD
//   persistent   3 x Startall + Waitall of a Send_init to the right and a
//               Recv_init from the left (16 bytes), then Request_free
// and calls every wrapped collective once on MPI_COMM_WORLD.
#include <ferret/ferret.hpp>
#include <mpi.h>

#include <cstdio>
#include <vector>

namespace {

constexpr int ring_rounds = 20, halo_rounds = 20, shift_rounds = 5, pair_rounds = 5,
              persistent_rounds = 3;

void ring(int rank, int size) {
  FERRET_REGION("ring");
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (int round = 0; round < ring_rounds; ++round) {
    int token = rank * 1000 + round, received = 0;
    const int source = round % 2 == 0 ? left : MPI_ANY_SOURCE;
    if (rank == 0) {
      MPI_Send(&token, 1, MPI_INT, right, 1, MPI_COMM_WORLD);
      MPI_Recv(&received, 1, MPI_INT, source, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&received, 1, MPI_INT, source, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&token, 1, MPI_INT, right, 1, MPI_COMM_WORLD);
    }
  }
}

void halo(int rank, int size) {
  FERRET_REGION("halo");
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  std::vector<double> cells(130, rank), from_left(64), from_right(64);
  for (int round = 0; round < halo_rounds; ++round) {
    MPI_Request requests[4];
    MPI_Irecv(from_left.data(), 64, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &requests[0]);
    MPI_Irecv(from_right.data(), 64, MPI_DOUBLE, right, 3, MPI_COMM_WORLD, &requests[1]);
    MPI_Isend(cells.data() + 1, 64, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &requests[2]);
    MPI_Isend(cells.data() + 65, 64, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &requests[3]);
    if (round % 3 == 0) {
      MPI_Waitall(4, requests, MPI_STATUSES_IGNORE);
    } else if (round % 3 == 1) {
      for (int done = 0; done < 4; ++done) {
        int index = MPI_UNDEFINED;
        MPI_Waitany(4, requests, &index, MPI_STATUS_IGNORE);
      }
    } else {
      for (MPI_Request& request : requests) {
        int flag = 0;
        while (flag == 0) MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
      }
    }
  }
}

void persistent(int rank, int size) {
  FERRET_REGION("persistent");
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  double out[2] = {1.0 * rank, 2.0 * rank}, in[2] = {};
  MPI_Request requests[2];
  MPI_Recv_init(in, 2, MPI_DOUBLE, left, 6, MPI_COMM_WORLD, &requests[0]);
  MPI_Send_init(out, 2, MPI_DOUBLE, right, 6, MPI_COMM_WORLD, &requests[1]);
  for (int round = 0; round < persistent_rounds; ++round) {
    MPI_Startall(2, requests);
    MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
  }
  MPI_Request_free(&requests[0]);
  MPI_Request_free(&requests[1]);
}

void shift(int rank, int size, MPI_Comm communicator, int rounds) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (int round = 0; round < rounds; ++round) {
    long out = rank, in = -1;
    MPI_Sendrecv(&out, 1, MPI_LONG, right, 4, &in, 1, MPI_LONG, left, 4, communicator,
                 MPI_STATUS_IGNORE);
  }
}

void collectives(int rank, int size) {
  FERRET_REGION("collectives");
  std::vector<int> one(1, rank), all(static_cast<std::size_t>(size)), all2(all.size());
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Bcast(one.data(), 1, MPI_INT, 1, MPI_COMM_WORLD);
  int sum = 0;
  MPI_Reduce(&rank, &sum, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Gather(&rank, 1, MPI_INT, all.data(), 1, MPI_INT, size - 1, MPI_COMM_WORLD);
  MPI_Scatter(all.data(), 1, MPI_INT, one.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Allgather(&rank, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  MPI_Alltoall(all.data(), 1, MPI_INT, all2.data(), 1, MPI_INT, MPI_COMM_WORLD);
  MPI_Scan(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  // The v-collectives: rank r contributes r + 1 ints.
  std::vector<int> counts(static_cast<std::size_t>(size)), displacements(counts.size());
  for (int r = 0; r < size; ++r) {
    counts[static_cast<std::size_t>(r)] = r + 1;
    displacements[static_cast<std::size_t>(r)] = r * (r + 1) / 2;
  }
  const std::vector<int> mine(static_cast<std::size_t>(rank + 1), rank);
  std::vector<int> gathered(static_cast<std::size_t>(size * (size + 1) / 2));
  MPI_Gatherv(mine.data(), rank + 1, MPI_INT, gathered.data(), counts.data(), displacements.data(),
              MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> scattered(static_cast<std::size_t>(rank + 1));
  MPI_Scatterv(gathered.data(), counts.data(), displacements.data(), MPI_INT, scattered.data(),
               rank + 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Allgatherv(mine.data(), rank + 1, MPI_INT, gathered.data(), counts.data(),
                 displacements.data(), MPI_INT, MPI_COMM_WORLD);
  std::vector<int> block(static_cast<std::size_t>(rank + 1));
  MPI_Reduce_scatter(gathered.data(), block.data(), counts.data(), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Reduce_scatter_block(all.data(), one.data(), 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Exscan(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  // Non-blocking collectives: regions of their own, completed by MPI_Wait.
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  MPI_Ibcast(one.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &request);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
}

void sub_communicators(int rank, int size) {
  FERRET_REGION("sub-communicators");
  MPI_Comm pair = MPI_COMM_NULL;
  // Ranks 2k and 2k+1 form a pair; with an odd size the last rank is alone.
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
  int pair_rank = 0, pair_size = 0;
  MPI_Comm_rank(pair, &pair_rank);
  MPI_Comm_size(pair, &pair_size);
  if (pair_size == 2) shift(pair_rank, pair_size, pair, pair_rounds);
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, pair);
  MPI_Comm_free(&pair);

  MPI_Comm copy = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &copy);
  MPI_Request requests[2];
  int out = rank, in = -1;
  MPI_Irecv(&in, 1, MPI_INT, (rank + size - 1) % size, 5, copy, &requests[0]);
  MPI_Isend(&out, 1, MPI_INT, (rank + 1) % size, 5, copy, &requests[1]);
  MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
  MPI_Wait(&requests[1], MPI_STATUS_IGNORE);
  MPI_Comm_free(&copy);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    std::fprintf(stderr, "mpi_communication_app: needs at least 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  {
    FERRET_REGION("exchange");
    ring(rank, size);
    halo(rank, size);
    persistent(rank, size);
    {
      FERRET_REGION("shift");
      shift(rank, size, MPI_COMM_WORLD, shift_rounds);
    }
    collectives(rank, size);
    sub_communicators(rank, size);
    FERRET_COUNTER("rank", rank);  // a thread's counter: its track keeps the thread's id when merged
  }
  MPI_Finalize();
  return 0;
}
