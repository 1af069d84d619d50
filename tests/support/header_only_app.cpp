// Annotated, but linked with the header-only API alone (ferret::ferret): it
// records only where a runtime is in the process, as under ferret-run, which
// preloads one.
#include <ferret/ferret.hpp>

#include <cstdio>

int main() {
  for (int i = 0; i < 10; ++i) ferret::region step{"header only step"};
  std::puts("finished");
  return 0;
}
