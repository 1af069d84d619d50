// instruction_count.cpp — ferret-instruction-count: one noinline function per
// mode, each running `pairs` region enter+exit pairs (default 1,000,000), for
// counting instructions under callgrind (benchmarks/count_instructions.sh):
//
//   count_empty_loop       the loop alone
//   count_compiled_out     FERRET_REGION in a FERRET_ENABLED=0 TU (compiled_out.cpp)
//   count_not_recording    runtime loaded, backend active, ferret::pause()d
//   count_traced_macro     FERRET_REGION, recording
//   count_traced_literal   ferret::region r{"..."}, recording
//   count_traced_name      ferret::region r{registered name}, recording
//   count_nvtx3_no_tool    nvtx3::scoped_range, no NVTX_INJECTION64_PATH
//   count_rdtsc            two __rdtsc() per iteration (what a pair's clock reads cost)
//   count_steady_clock     two steady_clock::now() per iteration
//
// The self count of a function is its inline code (for ferret: the hot path);
// the inclusive count adds what it calls (for ferret: the out-of-line chunk
// switch every 4096 events; for NVTX: the calls through its function table).
// The buffers are flushed before each traced function and hold all of its
// events (2 x pairs x 16 bytes = 32 MB for 10^6 pairs, under the default
// 64 MiB), so no drain runs inside the counted functions.
#include <ferret/ferret.hpp>
#include <ferret/runtime/backend.hpp>

#include <benchmark/benchmark.h>  // benchmark::ClobberMemory, as in ferret-bench

#if defined(FERRET_BENCH_HAVE_NVTX3)
#include <nvtx3/nvtx3.hpp>
#endif
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "discard_backend.hpp"

namespace {

ferret::name g_name;
// One array for the counted function and the warm-up, so that the literal is
// interned (a one-off, out of line) before counting starts.
constexpr char k_literal[] = "traced_literal";

}  // namespace


extern "C" void count_compiled_out(long pairs);  // compiled_out.cpp

// Distinct region names keep the functions' code distinct (identical bodies
// could be folded into one function by -fipa-icf).
extern "C" __attribute__((noinline)) void count_empty_loop(long pairs) {
  for (long i = 0; i < pairs; ++i) benchmark::ClobberMemory();
}

extern "C" __attribute__((noinline)) void count_not_recording(long pairs) {
  for (long i = 0; i < pairs; ++i) {
    FERRET_REGION("not_recording");
    benchmark::ClobberMemory();
  }
}

extern "C" __attribute__((noinline)) void count_traced_macro(long pairs) {
  for (long i = 0; i < pairs; ++i) {
    FERRET_REGION("traced_macro");
    benchmark::ClobberMemory();
  }
}

extern "C" __attribute__((noinline)) void count_traced_literal(long pairs) {
  for (long i = 0; i < pairs; ++i) {
    ferret::region r{k_literal};
    benchmark::ClobberMemory();
  }
}

extern "C" __attribute__((noinline)) void count_traced_name(long pairs) {
  for (long i = 0; i < pairs; ++i) {
    ferret::region r{g_name};
    benchmark::ClobberMemory();
  }
}

#if defined(FERRET_BENCH_HAVE_NVTX3)
extern "C" __attribute__((noinline)) void count_nvtx3_no_tool(long pairs) {
  for (long i = 0; i < pairs; ++i) {
    nvtx3::scoped_range r{"nvtx3"};
    benchmark::ClobberMemory();
  }
}
#endif

#if defined(__x86_64__)
extern "C" __attribute__((noinline)) void count_rdtsc(long pairs) {
  for (long i = 0; i < pairs; ++i) {
    benchmark::DoNotOptimize(__rdtsc());
    benchmark::ClobberMemory();
    benchmark::DoNotOptimize(__rdtsc());
  }
}
#endif

extern "C" __attribute__((noinline)) void count_steady_clock(long pairs) {
  for (long i = 0; i < pairs; ++i) {
    benchmark::DoNotOptimize(std::chrono::steady_clock::now());
    benchmark::ClobberMemory();
    benchmark::DoNotOptimize(std::chrono::steady_clock::now());
  }
}

namespace {

std::uint64_t g_expected = 0;

// Runs one traced mode from empty buffers, and drains them afterwards (outside it).
void traced(void (*mode)(long), long pairs) {
  ferret::flush();
  ferret::resume();
  mode(pairs);
  ferret::pause();
  ferret::flush();
  g_expected += 2 * static_cast<std::uint64_t>(pairs);
}

}  // namespace

int main(int argc, char** argv) {
  const long pairs = argc > 1 ? std::atol(argv[1]) : 1000000;
  if (pairs <= 0) {
    std::fprintf(stderr, "usage: %s [pairs]   (default 1000000)\n", argv[0]);
    return 1;
  }
  setenv("FERRET_BACKEND", "discard", 0);
  setenv("FERRET_VERBOSE", "0", 0);
  ferret::pause();  // attaches the runtime and starts the backend
  g_name = ferret::register_name("traced_name");

  // Warm-up, not counted: the thread's first event (binds its buffer), and
  // interning the literal.
  ferret::resume();
  {
    FERRET_REGION("warm-up");
    ferret::region r{k_literal};
  }
  ferret::pause();
  ferret::flush();
  g_expected += 4;

  count_empty_loop(pairs);
  count_compiled_out(pairs);
  count_not_recording(pairs);  // paused: the no-backend path
  traced(count_traced_macro, pairs);
  traced(count_traced_literal, pairs);
  traced(count_traced_name, pairs);
#if defined(FERRET_BENCH_HAVE_NVTX3)
  count_nvtx3_no_tool(pairs);
#endif
#if defined(__x86_64__)
  count_rdtsc(pairs);
#endif
  count_steady_clock(pairs);

  ferret::flush();
  std::printf("ferret-instruction-count: %ld pairs per mode; the backend received %" PRIu64
              " events of %" PRIu64 " written%s\n",
              pairs, ferret_bench::g_discard.received.load(), g_expected,
              ferret_bench::g_discard.received.load() == g_expected ? "" : " - MISMATCH (was FERRET_BACKEND set?)");
  return ferret_bench::g_discard.received.load() == g_expected ? 0 : 2;
}
