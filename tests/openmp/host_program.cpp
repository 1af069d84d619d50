// host_program.cpp — OpenMP host constructs with known shapes, traced by the
// OpenMP collector (linked in) for ompt_test. Built by clang, and by g++
// against LLVM's libomp (through its GNU entry points), so that it also runs
// under the sanitizers of the build. Results shared between threads are
// atomics: libomp is not built for ThreadSanitizer, which therefore cannot
// see that its barriers, taskwait and critical order the program's accesses.
#include <omp.h>

#include <atomic>
#include <cstdio>

#include <ferret/ferret.hpp>

namespace {

long fibonacci(int n) {
  if (n < 2) return n;
  std::atomic<long> a{0}, b{0};
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
  std::atomic<long> sum{0};
  {
    FERRET_REGION("loops");
#pragma omp parallel num_threads(3)
    {
#pragma omp for schedule(static)
      for (int i = 0; i < 3000; ++i) sum.fetch_add(i, std::memory_order_relaxed);
#pragma omp for schedule(dynamic, 10)
      for (int i = 0; i < 3000; ++i) sum.fetch_add(i, std::memory_order_relaxed);
    }
  }
  std::atomic<long> fib{0};
  {
    FERRET_REGION("tasks");
#pragma omp parallel num_threads(2)
#pragma omp single
    fib = fibonacci(10);  // 177 calls, 176 explicit tasks
  }
  std::atomic<int> entered{0};
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
  std::printf("sum %ld fib %ld critical %d\n", sum.load(), fib.load(), entered.load());
  return fib == 55 && entered == 2 ? 0 : 1;
}
