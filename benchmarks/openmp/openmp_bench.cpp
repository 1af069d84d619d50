// openmp_bench.cpp — ferret-openmp-bench: what the OpenMP collector costs an
// OpenMP program, with and without the tool, side by side in one run.
//
// Whether the OpenMP runtime starts a tool is decided once per process, so
// the program runs itself three times (child processes, same arguments) and
// prints their Google Benchmark tables one after the other:
//
//   no tool       OMP_TOOL=disabled: the runtime's own cost
//   empty tool    a tool whose callbacks (the same ones) do nothing
//                 (empty_tool.cpp, OMP_TOOL_LIBRARIES): what having a tool
//                 costs in the runtime itself
//   tool, paused  ferret's tool started, ferret::pause()d: every callback runs
//                 and keeps its per-thread state, nothing is written
//   tool          recording into the "discard" backend (counts and drops)
//
// Rows (2 threads, real time per iteration):
//   parallel_for/N   one `parallel for schedule(static)` over N trivial
//                    iterations per benchmark iteration: fork, join, implicit
//                    tasks, loop and implicit barrier of each thread
//   tasks/N          one `parallel` + `single` creating N empty tasks, then
//                    taskwait: per task a create, a begin and an end
//
// Built with g++ against LLVM's libomp (its GNU entry points), like the host
// test program. The tool's rows account for their events at exit (as
// ferret-bench does): "all events accounted for".
#include <benchmark/benchmark.h>
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <ferret/ferret.hpp>

#include "discard_backend.hpp"

namespace {

void parallel_for(benchmark::State& state) {
  const long n = state.range(0);
  std::vector<double> values(static_cast<std::size_t>(n), 1.0);
  double* data = values.data();
  for (auto _ : state) {
#pragma omp parallel for schedule(static) num_threads(2)
    for (long i = 0; i < n; ++i) data[i] = data[i] * 0.5 + 1.0;
    benchmark::ClobberMemory();
  }
  state.counters["per_element_ns"] = benchmark::Counter(
      static_cast<double>(state.iterations() * n),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(parallel_for)->Arg(1024)->Arg(65536)->UseRealTime();

void tasks(benchmark::State& state) {
  const long n = state.range(0);
  for (auto _ : state) {
#pragma omp parallel num_threads(2)
#pragma omp single
    {
      for (long i = 0; i < n; ++i) {
#pragma omp task
        benchmark::ClobberMemory();
      }
#pragma omp taskwait
    }
  }
  state.counters["per_task_ns"] = benchmark::Counter(
      static_cast<double>(state.iterations() * n),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(tasks)->Arg(1000)->UseRealTime();

struct variant {
  const char* title;
  const char* mode;
};
constexpr variant variants[] = {
    {"no tool (OMP_TOOL=disabled)", "no-tool"},
    {"empty tool (the same callbacks, doing nothing)", "empty-tool"},
    {"ferret's tool, paused (callbacks run, nothing written)", "paused"},
    {"ferret's tool, recording into the discard backend", "recording"},
};

int run_child(char** argv, const variant& which) {
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    setenv("FERRET_OPENMP_BENCH_MODE", which.mode, 1);
    if (std::strcmp(which.mode, "no-tool") == 0) {
      setenv("OMP_TOOL", "disabled", 1);
      unsetenv("FERRET_BACKEND");
    } else if (std::strcmp(which.mode, "empty-tool") == 0) {
      // ferret's tool declines without FERRET_BACKEND; the runtime then
      // tries the libraries listed.
      unsetenv("FERRET_BACKEND");
      setenv("OMP_TOOL_LIBRARIES", FERRET_BENCH_EMPTY_TOOL, 1);
    } else {
      setenv("FERRET_BACKEND", "discard", 1);
    }
    execv("/proc/self/exe", argv);
    std::perror("ferret-openmp-bench: exec");
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = std::getenv("FERRET_OPENMP_BENCH_MODE");
  if (mode == nullptr) {
    int failures = 0;
    for (const variant& which : variants) {
      std::printf("== %s\n", which.title);
      failures += run_child(argv, which) != 0;
    }
    return failures == 0 ? 0 : 1;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (std::strcmp(mode, "paused") == 0) ferret::pause();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  ferret::flush();
  if (std::strcmp(mode, "recording") == 0) {
    const auto& counts = ferret_bench::g_discard;
    const std::uint64_t received = counts.received.load();
    const std::uint64_t recorded = counts.runtime_recorded.load();
    const std::uint64_t dropped = counts.runtime_dropped.load();
    std::printf("events: %llu recorded, %llu received by the backend, %llu dropped: %s\n",
                static_cast<unsigned long long>(recorded), static_cast<unsigned long long>(received),
                static_cast<unsigned long long>(dropped),
                received == recorded && dropped == 0 && received > 0 ? "all events accounted for"
                                                                     : "events missing");
  }
  return 0;
}
