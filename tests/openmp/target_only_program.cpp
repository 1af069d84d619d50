// target_only_program.cpp — one target region and no data operation (a
// firstprivate scalar travels as a kernel argument): libomptarget initialises
// the device, and nothing tells the OpenMP collector before a drain whether
// CUDA's collector is in the process, unless it asks at the device's start.
#include <cstdio>

#include <ferret/ferret.hpp>

int main() {
  const int value = 41;
#pragma omp target firstprivate(value)
  {
    volatile int on_device = value + 1;
    static_cast<void>(on_device);
  }
  std::printf("ran\n");
  return 0;
}
