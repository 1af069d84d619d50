// chrome-otf2-compare <trace.json> <archive/traces.otf2>: exits 0 when the two
// files of one FERRET_BACKEND=chrome,otf2 run show the same events; otherwise
// prints the differences and exits 1.
#include "support/chrome_otf2_compare.hpp"

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: chrome-otf2-compare <trace.json> <archive/traces.otf2>\n");
    return 2;
  }
  const ferret::testing::comparison result =
      ferret::testing::compare_chrome_with_otf2(argv[1], argv[2]);
  for (const std::string& difference : result.differences)
    std::printf("difference: %s\n", difference.c_str());
  std::printf("compared %zu region names (%llu calls), %llu copies, %llu marks, %llu counter "
              "samples, %zu thread names: %s\n",
              result.regions, static_cast<unsigned long long>(result.calls),
              static_cast<unsigned long long>(result.copies),
              static_cast<unsigned long long>(result.marks),
              static_cast<unsigned long long>(result.counter_samples), result.threads,
              result.differences.empty() ? "the same" : "DIFFERENT");
  return result.differences.empty() ? 0 : 1;
}
