// gomp_program.cpp — an annotated OpenMP program built with g++ -fopenmp
// (GNU's libgomp, which has no OMPT) and linked with the OpenMP collector:
// the collector must say once that it cannot trace it, and the rest of
// ferret works on.
#include <cstdio>

#include <ferret/ferret.hpp>

int main() {
  FERRET_REGION("gomp program");
  double sum = 0;
#pragma omp parallel for num_threads(2) reduction(+ : sum)
  for (int i = 0; i < 1000; ++i) sum += i;
  std::printf("%.0f\n", sum);
  return sum == 499500.0 ? 0 : 1;
}
