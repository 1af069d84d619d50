// heat_mpi: 1-D heat diffusion split across MPI ranks, annotated with ferret.
// Each rank owns a slice of the rod plus one ghost cell on each side; every
// step exchanges the ghost cells with the neighbouring ranks (halo exchange),
// sweeps its slice, and agrees on the largest change with MPI_Allreduce. A
// second thread per rank analyses snapshots of the slice while the solver
// runs on, as an asynchronous I/O or analysis thread would.
//
// One OTF2 archive for all ranks (ferret::mpi is linked in):
//   FERRET_BACKEND=otf2 FERRET_OUTPUT=heat.otf2 mpirun -np 2 ./heat_mpi
//   otf2-print heat/traces.otf2 | less      (or open heat/traces.otf2 in Vampir)
// One Chrome trace per rank (the pid in each name):
//   FERRET_BACKEND=chrome FERRET_OUTPUT=traces/ mpirun -np 2 ./heat_mpi
#include <ferret/ferret.hpp>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace {

// Snapshots handed from the solver to the analysis thread (latest one wins).
class snapshot_queue {
 public:
  void push(std::vector<double> snapshot) {
    {
      std::lock_guard lock{mutex_};
      pending_ = std::move(snapshot);
    }
    ready_.notify_one();
  }
  void close() {
    {
      std::lock_guard lock{mutex_};
      closed_ = true;
    }
    ready_.notify_one();
  }
  // The next snapshot, or nothing once closed and drained.
  std::optional<std::vector<double>> pop() {
    std::unique_lock lock{mutex_};
    ready_.wait(lock, [&] { return pending_.has_value() || closed_; });
    return std::exchange(pending_, std::nullopt);
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::optional<std::vector<double>> pending_;
  bool closed_ = false;
};

void analyse(snapshot_queue& snapshots) {
  ferret::set_thread_name("analysis");
  ferret::counter energy{"energy"};
  while (auto snapshot = snapshots.pop()) {
    FERRET_REGION("analyse");
    double sum = 0.0;
    for (const double cell : *snapshot) sum += cell;
    energy.record(sum);
  }
}

// Ghost cells: u[0] from the left neighbour, u[n + 1] from the right one.
void exchange_halo(std::vector<double>& u, int rank, int size) {
  FERRET_FUNCTION();
  const int n = static_cast<int>(u.size()) - 2;
  const int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  const int right = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
  MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 0, &u[static_cast<std::size_t>(n) + 1], 1, MPI_DOUBLE,
               right, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(&u[static_cast<std::size_t>(n)], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE,
               left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

double sweep(const std::vector<double>& u, std::vector<double>& next) {
  FERRET_FUNCTION();
  double change = 0.0;
  for (std::size_t i = 1; i + 1 < u.size(); ++i) {
    next[i] = u[i] + 0.25 * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
    change = std::max(change, std::fabs(next[i] - u[i]));
  }
  return change;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t cells = 200000;  // per rank
  int steps = 200;
  {
    // Recorded before MPI_Init: the OTF2 backend holds it until the ranks
    // know each other, then writes it into the archive of all ranks.
    FERRET_REGION("startup");
    ferret::set_thread_name("main");
    if (argc > 1) cells = std::strtoul(argv[1], nullptr, 10);
    if (argc > 2) steps = std::atoi(argv[2]);
    if (cells == 0 || steps <= 0) {
      std::fprintf(stderr, "usage: heat_mpi [cells per rank] [steps]\n");
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ferret::set_metadata("cells-per-rank", static_cast<std::int64_t>(cells));
  ferret::set_metadata("steps", steps);

  std::vector<double> u(cells + 2, 0.0), next(cells + 2, 0.0);
  if (rank == 0) {
    // Only rank 0 has this region: the ranks' definitions differ.
    FERRET_REGION("hot end");
    u[1] = next[1] = 1000.0;
  }
  ferret::data_object slice{"temperature", u.data(), u.size() * sizeof(double)};
  ferret::counter residual{"residual"};

  snapshot_queue snapshots;
  std::thread analysis{analyse, std::ref(snapshots)};
  double global_change = 0.0;
  {
    FERRET_REGION("solve");
    for (int step = 0; step < steps; ++step) {
      exchange_halo(u, rank, size);
      const double change = sweep(u, next);
      std::copy(next.begin() + 1, next.end() - 1, u.begin() + 1);
      {
        FERRET_REGION("allreduce");
        MPI_Allreduce(&change, &global_change, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      }
      residual.record(global_change);
      if (step % 50 == 0) snapshots.push({u.begin() + 1, u.end() - 1});
    }
  }
  snapshots.close();
  analysis.join();
  if (rank == 0)
    std::printf("%d ranks, %zu cells each, %d steps: largest change in the last step %.3g\n", size,
                cells, steps, global_change);
  MPI_Finalize();
  return 0;
}
