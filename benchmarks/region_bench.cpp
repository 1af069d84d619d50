// region_bench.cpp — ferret-bench: what one region enter+exit pair costs.
//
// Run it as docs/performance.md shows. Columns: Time is Google Benchmark's
// real time per iteration, which for N threads is divided by N; per_thread is
// the wall time per pair as each thread saw it (Time x N); CPU is the thread CPU
// time per pair, per thread. Wall time also holds the time a thread was not
// running (other jobs on a shared machine, hypervisor steal, which the program
// prints at the end); CPU time does not. Traced rows also show `drained`: the
// share of their events that the runtime drained into the backend while the
// timed loop ran (0 for the *_nodrain rows, whose drains are outside the timing).
//
// Every row runs the same loop body, a region around benchmark::ClobberMemory()
// (a compiler barrier, no instructions), so that each iteration is exactly one
// enter+exit pair and nothing can be hoisted out of the region:
//
//   for (auto _ : state) { <open a region>; benchmark::ClobberMemory(); }
//
// Rows (each with 1 and 2 threads, real time):
//   baseline/empty_loop         the loop alone
//   ferret/compiled_out         FERRET_REGION in a FERRET_ENABLED=0 TU (compiled_out.cpp)
//   ferret/not_recording        runtime loaded, backend active, ferret::pause()d: the
//                               same code path as "no backend" (one byte load + branch
//                               per annotation)
//   ferret/traced_macro         FERRET_REGION("x"), recording, sustained: includes the
//                               amortised draining of the buffers into the backend
//   ferret/traced_literal       ferret::region r{"x"}          (sustained, as above)
//   ferret/traced_name          ferret::region r{registered}   (sustained, as above)
//   ferret/*_nodrain            the same three, each run short enough to fit in the
//                               buffers (drained after the timed loop): the hot path
//   ferret/drain                manual time: the backend-side cost of one pair, i.e. the
//                               thread CPU time ferret::flush() takes per buffered pair
//   nvtx3/scoped_range_no_tool  nvtx3::scoped_range r{"x"} without NVTX_INJECTION64_PATH
//   clock/rdtsc, clock/steady_clock_now   ONE clock read per iteration (a pair needs two)
//
// The runtime needs a backend to record: this program registers "discard"
// (counts the records it receives and drops them) and selects it unless
// FERRET_BACKEND is already set. At exit it prints the events the backend
// received against the events the traced rows wrote, and the runtime's drop count.
#include <ferret/ferret.hpp>
#include <ferret/runtime/backend.hpp>

#include <benchmark/benchmark.h>

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

#include <time.h>

#include "discard_backend.hpp"

namespace ferret_bench {

void compiled_out(benchmark::State& state);  // compiled_out.cpp (FERRET_ENABLED=0)

// ---------------------------------------------------------------------------
// Event accounting: what the traced code wrote (the discard backend counts
// what it received, see discard_backend.hpp).

std::atomic<std::uint64_t> g_expected{0};

namespace {

constexpr double sustained_min_time = 0.5;  // s; many buffer-fulls per run (see drained)
constexpr double min_time = 0.2;            // s; the other rows
// *_nodrain rows: pairs per thread per run. 2 threads x 2^19 pairs x 2 events
// x 16 bytes = 32 MiB, half the default 64 MiB buffer: no drain is needed
// during the timed loop (and the pool never falls below the 1/4 that wakes
// the background drainer early).
constexpr benchmark::IterationCount nodrain_pairs = benchmark::IterationCount{1} << 19;
// ferret/drain: pairs buffered, then flushed, per iteration.
constexpr long drain_pairs = 1L << 18;

ferret::name g_name;  // ferret/traced_name

// Wall time per pair as each thread saw it. Google Benchmark's Time column for
// N threads is (mean per-thread wall time) / (iterations of all threads), i.e.
// per-thread time / N when the threads run in parallel; this counter undoes
// the division: 1/N summed over threads, / seconds / threads x iterations,
// inverted = seconds x N / iterations.
void per_thread_time(benchmark::State& state) {
  using C = benchmark::Counter;
  state.counters["per_thread"] =
      C(1.0 / state.threads(), static_cast<C::Flags>(C::kIsRate | C::kAvgThreads |
                                                     C::kIsIterationInvariant | C::kInvert));
}

// Traced rows: count the events written, and (thread 0) the share of them that
// reached the backend inside the timed loop, i.e. whose draining the row paid for.
class traced_accounting {
 public:
  explicit traced_accounting(benchmark::State& state)
      : state_(state), received_before_(g_discard.received.load()) {}
  ~traced_accounting() {
    const auto pairs = static_cast<std::uint64_t>(state_.iterations());
    g_expected.fetch_add(2 * pairs, std::memory_order_relaxed);
    if (state_.thread_index() == 0) {
      const double written = 2.0 * static_cast<double>(pairs) * state_.threads();
      const auto drained = static_cast<double>(g_discard.received.load() - received_before_);
      state_.counters["drained"] = written > 0 ? drained / written : 0.0;
    }
    per_thread_time(state_);
  }
  traced_accounting(const traced_accounting&) = delete;
  traced_accounting& operator=(const traced_accounting&) = delete;

 private:
  benchmark::State& state_;
  std::uint64_t received_before_;
};

// Setup/teardown of traced runs (called once per run, outside the threads and
// the timing): start from empty buffers, leave empty buffers behind.
void start_tracing(const benchmark::State&) {
  ferret::flush();
  ferret::resume();
}
void stop_tracing(const benchmark::State&) {
  ferret::pause();
  ferret::flush();
}

// ---------------------------------------------------------------------------
// Rows

void empty_loop(benchmark::State& state) {
  for (auto _ : state) benchmark::ClobberMemory();
  per_thread_time(state);
}

void compiled_out_row(benchmark::State& state) {
  compiled_out(state);
  per_thread_time(state);
}

void not_recording(benchmark::State& state) {
  for (auto _ : state) {
    FERRET_REGION("x");
    benchmark::ClobberMemory();
  }
  per_thread_time(state);
}

void traced_macro(benchmark::State& state) {
  traced_accounting accounting{state};
  for (auto _ : state) {
    FERRET_REGION("x");
    benchmark::ClobberMemory();
  }
}

void traced_literal(benchmark::State& state) {
  traced_accounting accounting{state};
  for (auto _ : state) {
    ferret::region r{"x"};
    benchmark::ClobberMemory();
  }
}

void traced_name(benchmark::State& state) {
  traced_accounting accounting{state};
  for (auto _ : state) {
    ferret::region r{g_name};
    benchmark::ClobberMemory();
  }
}

double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Manual time: buffer drain_pairs pairs (untimed), then time ferret::flush(),
// which converts them and hands them to the backend on the calling thread;
// the iteration's time is that flush's thread CPU time divided by drain_pairs
// (CPU time: on this VM the hypervisor steals a large share of wall time).
// The flush's wall time per pair is the wall_per_pair counter.
void drain(benchmark::State& state) {
  double wall = 0;
  for (auto _ : state) {
    ferret::resume();
    for (long i = 0; i < drain_pairs; ++i) {
      FERRET_REGION("x");
      benchmark::ClobberMemory();
    }
    ferret::pause();
    const double cpu_start = thread_cpu_seconds();
    const auto wall_start = std::chrono::steady_clock::now();
    ferret::flush();
    const std::chrono::duration<double> wall_took = std::chrono::steady_clock::now() - wall_start;
    state.SetIterationTime((thread_cpu_seconds() - cpu_start) / static_cast<double>(drain_pairs));
    wall += wall_took.count() / static_cast<double>(drain_pairs);
  }
  g_expected.fetch_add(2 * static_cast<std::uint64_t>(drain_pairs) *
                           static_cast<std::uint64_t>(state.iterations()),
                       std::memory_order_relaxed);
  state.counters["wall_per_pair"] =
      benchmark::Counter(wall, benchmark::Counter::kAvgIterations);
}

#if defined(FERRET_BENCH_HAVE_NVTX3)
void nvtx3_scoped_range(benchmark::State& state) {
  for (auto _ : state) {
    nvtx3::scoped_range r{"x"};
    benchmark::ClobberMemory();
  }
  per_thread_time(state);
}
#endif

#if defined(__x86_64__)
void rdtsc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(__rdtsc());
  per_thread_time(state);
}
#endif

void steady_clock_now(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
  per_thread_time(state);
}

benchmark::internal::Benchmark* row(const char* name, void (*function)(benchmark::State&),
                                    double seconds = min_time) {
  return benchmark::RegisterBenchmark(name, function)
      ->Threads(1)
      ->Threads(2)
      ->UseRealTime()
      ->MinTime(seconds);
}

benchmark::internal::Benchmark* traced_row(const char* name,
                                           void (*function)(benchmark::State&)) {
  return row(name, function, sustained_min_time)->Setup(start_tracing)->Teardown(stop_tracing);
}

benchmark::internal::Benchmark* nodrain_row(const char* name,
                                            void (*function)(benchmark::State&)) {
  return benchmark::RegisterBenchmark(name, function)
      ->Threads(1)
      ->Threads(2)
      ->UseRealTime()
      ->Iterations(nodrain_pairs)
      ->Setup(start_tracing)
      ->Teardown(stop_tracing);
}

void register_rows() {
  row("baseline/empty_loop", empty_loop);
  row("ferret/compiled_out", compiled_out_row);
  row("ferret/not_recording", not_recording);
  traced_row("ferret/traced_macro", traced_macro);
  traced_row("ferret/traced_literal", traced_literal);
  traced_row("ferret/traced_name", traced_name);
  nodrain_row("ferret/traced_macro_nodrain", traced_macro);
  nodrain_row("ferret/traced_literal_nodrain", traced_literal);
  nodrain_row("ferret/traced_name_nodrain", traced_name);
  benchmark::RegisterBenchmark("ferret/drain", drain)->UseManualTime()->Iterations(16);
#if defined(FERRET_BENCH_HAVE_NVTX3)
  row("nvtx3/scoped_range_no_tool", nvtx3_scoped_range);
#endif
#if defined(__x86_64__)
  row("clock/rdtsc", rdtsc);
#endif
  row("clock/steady_clock_now", steady_clock_now);
}

// Jiffies of all CPUs from /proc/stat: {steal, total}; {0, 0} where unavailable.
struct cpu_jiffies {
  unsigned long long steal = 0;
  unsigned long long total = 0;
};
cpu_jiffies read_cpu_jiffies() {
  cpu_jiffies result;
  if (std::FILE* stat = std::fopen("/proc/stat", "r")) {
    unsigned long long field[8] = {};
    if (std::fscanf(stat, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &field[0], &field[1],
                    &field[2], &field[3], &field[4], &field[5], &field[6], &field[7]) == 8) {
      for (const unsigned long long value : field) result.total += value;
      result.steal = field[7];
    }
    std::fclose(stat);
  }
  return result;
}

const char* env_or(const char* variable, const char* fallback) {
  const char* value = std::getenv(variable);
  return value != nullptr ? value : fallback;
}

}  // namespace
}  // namespace ferret_bench

int main(int argc, char** argv) {
  using namespace ferret_bench;
  // Before the first call into ferret: the runtime reads its settings when it attaches.
  setenv("FERRET_BACKEND", "discard", 0);
  setenv("FERRET_VERBOSE", "0", 0);
  ferret::pause();  // attaches the runtime (which starts the backend); rows resume as needed
  g_name = ferret::register_name("x");

  // Warm-up: write more events than the buffers hold, so every page of the
  // arena is faulted in and the drain path has run before anything is timed.
  constexpr long warm_up_pairs = 4L << 20;
  ferret::resume();
  for (long i = 0; i < warm_up_pairs; ++i) {
    FERRET_REGION("x");
    benchmark::ClobberMemory();
  }
  ferret::pause();
  ferret::flush();
  g_expected.fetch_add(2 * warm_up_pairs);
  const bool backend_active = g_discard.started.load() && g_discard.received.load() > 0;
  if (!backend_active)
    std::fprintf(stderr,
                 "ferret-bench: WARNING: the discard backend is not recording "
                 "(FERRET_BACKEND=%s); the traced rows measure nothing\n",
                 env_or("FERRET_BACKEND", "unset"));

  benchmark::AddCustomContext("FERRET_BACKEND", env_or("FERRET_BACKEND", "unset"));
  benchmark::AddCustomContext("FERRET_BUFFER_SIZE", env_or("FERRET_BUFFER_SIZE", "64M (default)"));
  benchmark::AddCustomContext("FERRET_FLUSH_INTERVAL",
                              env_or("FERRET_FLUSH_INTERVAL", "200 (default)"));
  benchmark::AddCustomContext("FERRET_CLOCK", env_or("FERRET_CLOCK", "auto (default)"));
  benchmark::AddCustomContext("NVTX_INJECTION64_PATH", env_or("NVTX_INJECTION64_PATH", "unset"));

  register_rows();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const cpu_jiffies before = read_cpu_jiffies();
  benchmark::RunSpecifiedBenchmarks();
  const cpu_jiffies after = read_cpu_jiffies();
  benchmark::Shutdown();
  if (after.total > before.total)
    std::printf("\nferret-bench: hypervisor steal during the run: %.1f%% of all vCPUs' time "
                "(/proc/stat); wall times include it, CPU times do not\n",
                100.0 * static_cast<double>(after.steal - before.steal) /
                    static_cast<double>(after.total - before.total));

  ferret::flush();
  const std::uint64_t received = g_discard.received.load();
  const std::uint64_t expected = g_expected.load();
  const std::uint64_t dropped = g_discard.runtime_dropped.load();
  std::printf(
      "ferret-bench: the discard backend received %" PRIu64 " events; the traced code wrote %" PRIu64
      " (2 per pair); the runtime reported %" PRIu64 " recorded, %" PRIu64 " dropped%s\n",
      received, expected, g_discard.runtime_recorded.load(), dropped,
      !backend_active       ? " (backend not active)"
      : received == expected ? " - all events accounted for"
                             : " - MISMATCH");
  return backend_active && received != expected ? 2 : 0;
}
