// plain_program.cpp — an OpenMP program that knows nothing of ferret, for
// tracing an unmodified binary through OMP_TOOL_LIBRARIES (ferret-run).
#include <cstdio>

int main() {
  double sum = 0;
#pragma omp parallel for num_threads(2) reduction(+ : sum)
  for (int i = 0; i < 1000; ++i) sum += i;
  std::printf("%.0f\n", sum);
  return sum == 499500.0 ? 0 : 1;
}
