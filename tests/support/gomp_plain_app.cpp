// An OpenMP program built with g++ -fopenmp (GNU libgomp, which has no OMPT)
// and without annotations: under ferret-run nothing can be recorded, and the
// program is told why at exit.
#include <cstdio>

int main() {
  long sum = 0;
#pragma omp parallel for reduction(+ : sum)
  for (long i = 0; i < 1000; ++i) sum += i;
  std::printf("%ld\n", sum);
  return 0;
}
