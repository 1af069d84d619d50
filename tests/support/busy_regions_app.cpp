// busy_regions_app SECONDS: two threads enter and leave nested regions of
// about half a microsecond each, with marks and counter samples, for SECONDS
// (default 30) or until killed: a busy trace (about a million events a second,
// written every few milliseconds) that stays small enough to check
// quickly. For the chrome backend's kill test (chrome_kill_test.sh).
#include <chrono>
#include <cstdlib>
#include <thread>

#include "ferret/ferret.hpp"

namespace {

void work(std::chrono::steady_clock::time_point until) {
  ferret::counter progress{"progress"};
  for (long i = 0; std::chrono::steady_clock::now() < until; ++i) {
    FERRET_REGION("outer");
    for (int k = 0; k < 8; ++k) {
      FERRET_REGION("inner");
      const auto start = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() - start < std::chrono::nanoseconds{300}) {
      }
    }
    if (i % 1024 == 0) {
      ferret::mark("checkpoint");
      progress.record(static_cast<double>(i));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 30.0;
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(seconds));
  std::thread worker{work, until};
  work(until);
  worker.join();
  return 0;
}
