// host_program.cpp — OpenMP host constructs with known shapes, traced by the
// OpenMP collector (linked in) for ompt_test. Built by g++ against LLVM's
// libomp (through its GNU entry points), so that it also runs under the
// sanitizers of the build.
#include <omp.h>

#include <cstdio>

#include <ferret/ferret.hpp>

namespace {

long fibonacci(int n) {
  if (n < 2) return n;
  long a = 0, b = 0;
#pragma omp task shared(a)
  a = fibonacci(n - 1);
#pragma omp task shared(b)
  b = fibonacci(n - 2);
#pragma omp taskwait
  return a + b;
}

}  // namespace

int main() {
  FERRET_REGION("host program");
  double sum = 0;
  {
    FERRET_REGION("loops");
#pragma omp parallel num_threads(3) reduction(+ : sum)
    {
#pragma omp for schedule(static)
      for (int i = 0; i < 3000; ++i) sum += i;
#pragma omp for schedule(dynamic, 10)
      for (int i = 0; i < 3000; ++i) sum += i;
    }
  }
  long fib = 0;
  {
    FERRET_REGION("tasks");
#pragma omp parallel num_threads(2)
#pragma omp single
    fib = fibonacci(10);  // 177 calls, 176 explicit tasks
  }
  int entered = 0;
  {
    FERRET_REGION("synchronization");
#pragma omp parallel num_threads(2)
    {
      for (int step = 0; step < 5; ++step) {
#pragma omp barrier
      }
#pragma omp critical
      ++entered;
    }
  }
  std::printf("sum %.0f fib %ld critical %d\n", sum, fib, entered);
  return fib == 55 && entered == 2 ? 0 : 1;
}
