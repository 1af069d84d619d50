// sustained <regions per thread> <threads>: each thread records the given
// number of regions (an outer region with an inner one in it, so writers see
// nesting) as fast as it can, for as long as the buffers need draining many
// times over. run_sustained.py runs it with each backend to a real file and,
// as the baseline, built with FERRET_ENABLED=0 (the same loop, untraced).
// Prints the loop's own time and, at exit, the peak resident memory; the
// script measures the whole process's wall time.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "ferret/ferret.hpp"

namespace {

void record_regions(long regions) {
  for (long i = 0; i < regions / 2; ++i) {
    FERRET_REGION("outer");
    asm volatile("" ::: "memory");  // keeps the loop's body when compiled out
    FERRET_REGION("inner");
    asm volatile("" ::: "memory");
  }
}

// Peak resident memory of this program's own address space (VmHWM): the
// wait4() rusage of a child would include the memory of the process that
// forked it. Runs after the runtime's exit drain (registered before the
// first annotation, so after the runtime's own handler).
void print_peak_memory() {
  FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return;
  char line[256];
  while (std::fgets(line, sizeof line, status) != nullptr)
    if (std::strncmp(line, "VmHWM:", 6) == 0) std::printf("sustained: peak %s", line + 6);
  std::fclose(status);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::atol(argv[1]) < 2 || std::atoi(argv[2]) < 1) {
    std::fprintf(stderr, "usage: %s <regions per thread, at least 2> <threads>\n", argv[0]);
    return 2;
  }
  std::atexit(print_peak_memory);
  const long regions = std::atol(argv[1]);
  const int threads = std::atoi(argv[2]);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> others;
  for (int i = 1; i < threads; ++i) others.emplace_back(record_regions, regions);
  record_regions(regions);
  for (std::thread& other : others) other.join();
  const auto loop_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - start).count();
  std::printf("sustained: %ld regions per thread, %d threads, loop %lld ns\n", regions / 2 * 2,
              threads, static_cast<long long>(loop_ns));
  return 0;
}
