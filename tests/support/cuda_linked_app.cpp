// A program linked with ferret::cuda that makes no CUDA call: the CUDA
// collector starts when its library loads, and says why if it cannot.
#include <ferret/ferret.hpp>

#include <cstdio>

int main() {
  { ferret::region linked{"linked with ferret::cuda"}; }
  std::puts("finished");
  return 0;
}
