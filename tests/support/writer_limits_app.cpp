// writer_limits_app: runs that test what the writers do at their limits, for
// writer_limits_test.
//   nothing      starts a session (ferret::flush attaches) and records nothing
//   marks <n>    n marks on the main thread
//   threads <n>  n threads one after the other, each with one region
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "ferret/ferret.hpp"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const long count = argc > 2 ? std::atol(argv[2]) : 0;
  if (mode == "nothing") {
    ferret::flush();
  } else if (mode == "marks") {
    for (long i = 0; i < count; ++i) ferret::mark("tick");
  } else if (mode == "threads") {
    for (long i = 0; i < count; ++i) std::thread{[] { ferret::region work{"work"}; }}.join();
  } else {
    std::fprintf(stderr, "usage: %s nothing | marks <n> | threads <n>\n", argv[0]);
    return 2;
  }
  std::puts("done");
  return 0;
}
