// plain_program.cpp — an OpenMP program that knows nothing of ferret, for
// tracing an unmodified binary through OMP_TOOL_LIBRARIES (ferret-run). Two
// parallel regions with serial work between them: libomp reports a worker's
// end of the first region's join barrier only when the second region starts.
#include <unistd.h>

#include <cstdio>

// Globals, not locals: g++ would pass locals to both regions in one block on
// main's stack, which libomp's fork and join order unseen by ThreadSanitizer.
double first = 0, second = 0;

int main() {
#pragma omp parallel for num_threads(2) reduction(+ : first)
  for (int i = 0; i < 1000; ++i) first += i;
  usleep(50000);  // serial: the worker is idle, outside every region
#pragma omp parallel for num_threads(2) reduction(+ : second)
  for (int i = 0; i < 1000; ++i) second += i;
  std::printf("%.0f\n", first + second);
  return first + second == 999000.0 ? 0 : 1;
}
