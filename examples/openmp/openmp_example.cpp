// openmp_example.cpp — an annotated OpenMP program: a parallel loop, a task
// tree, a barrier-heavy phase, and a target offload of a named array.
//
//   clang++-19 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu ...  (see README)
//   FERRET_BACKEND=chrome,summary FERRET_OUTPUT=openmp.json ./openmp-example
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <ferret/ferret.hpp>

namespace {

double parallel_loop(std::vector<double>& values) {
  FERRET_FUNCTION();
  double sum = 0;
  const long n = static_cast<long>(values.size());
#pragma omp parallel for schedule(dynamic, 1024) reduction(+ : sum)
  for (long i = 0; i < n; ++i) {
    values[static_cast<std::size_t>(i)] = std::sqrt(static_cast<double>(i));
    sum += values[static_cast<std::size_t>(i)];
  }
  return sum;
}

long fibonacci(int n) {
  if (n < 2) return n;
  long a = 0, b = 0;
#pragma omp task shared(a) if (n > 12)
  a = fibonacci(n - 1);
#pragma omp task shared(b) if (n > 12)
  b = fibonacci(n - 2);
#pragma omp taskwait
  return a + b;
}

long task_tree(int n) {
  FERRET_FUNCTION();
  long result = 0;
#pragma omp parallel
#pragma omp single
  result = fibonacci(n);
  return result;
}

// Uneven work between barriers: the waits show the imbalance.
void barrier_phase(int steps) {
  FERRET_FUNCTION();
#pragma omp parallel
  {
    const int me = omp_get_thread_num();
    for (int step = 0; step < steps; ++step) {
      volatile double x = 0;
      for (int k = 0; k < 2000 * (me + 1); ++k) x = x + std::sin(k);
#pragma omp barrier
    }
#pragma omp critical
    { std::printf("%s", ""); }
  }
}

double offload(std::vector<double>& grid, int sweeps) {
  FERRET_FUNCTION();
  double* data = grid.data();
  const long n = static_cast<long>(grid.size());
  ferret::data_object object{"grid", data, grid.size() * sizeof(double)};
  double total = 0;
#pragma omp target data map(tofrom : data[0 : n])
  {
    for (int sweep = 0; sweep < sweeps; ++sweep) {
      FERRET_REGION("sweep");
#pragma omp target teams distribute parallel for num_teams(2)
      for (long i = 0; i < n; ++i) data[i] = data[i] * 0.5 + 1.0;
    }
#pragma omp target update from(data[0 : n])
  }
  for (const double v : grid) total += v;
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  const long size = argc > 1 ? std::atol(argv[1]) : 1 << 20;
  std::vector<double> values(static_cast<std::size_t>(size));
  const double sum = parallel_loop(values);
  const long fib = task_tree(20);
  barrier_phase(20);
  std::vector<double> grid(static_cast<std::size_t>(size), 1.0);
  const double total = offload(grid, 3);
  std::printf("sum %.1f fib(20) %ld offload %.1f\n", sum, fib, total);
  return fib == 6765 ? 0 : 1;
}
