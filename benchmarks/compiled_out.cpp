// compiled_out.cpp — the "compiled out" rows. CMake compiles this translation
// unit alone with FERRET_ENABLED=0, so every annotation here is an empty
// statement and the loops below are the same machine code as the empty loops
// of region_bench.cpp / instruction_count.cpp.
#include <ferret/ferret.hpp>

#include <benchmark/benchmark.h>

#if FERRET_ENABLED
#error "compiled_out.cpp must be compiled with FERRET_ENABLED=0 (see benchmarks/CMakeLists.txt)"
#endif

namespace ferret_bench {

// ferret-bench: ferret/compiled_out (body as in every other row).
void compiled_out(benchmark::State& state) {
  for (auto _ : state) {
    FERRET_REGION("x");
    benchmark::ClobberMemory();
  }
}

}  // namespace ferret_bench

// ferret-instruction-count: `pairs` compiled-out region pairs. extern "C" so
// that callgrind_annotate and objdump show a plain name.
extern "C" __attribute__((noinline)) void count_compiled_out(long pairs) {
  for (long i = 0; i < pairs; ++i) {
    FERRET_REGION("x");
    benchmark::ClobberMemory();
  }
}
