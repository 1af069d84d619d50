// backend_regions N: N regions (an outer one with an inner one in it, so that
// writers see nesting) in a loop on the main thread, for measuring a whole
// program's instructions per region with each backend
// (benchmarks/backend_instructions.sh). The empty asm keeps the loop's body.
#include <cstdio>
#include <cstdlib>

#include "ferret/ferret.hpp"

int main(int argc, char** argv) {
  const long pairs = argc > 1 ? std::atol(argv[1]) / 2 : 500000;
  for (long i = 0; i < pairs; ++i) {
    FERRET_REGION("outer");
    asm volatile("" ::: "memory");
    FERRET_REGION("inner");
    asm volatile("" ::: "memory");
  }
  std::printf("%ld regions\n", 2 * pairs);
  return 0;
}
