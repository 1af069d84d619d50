// plain_target_program.cpp — a target offload program that knows nothing of
// ferret (offloaded to the host), for ferret-run on an unmodified binary: the
// tool comes through OMP_TOOL_LIBRARIES, and libomptarget must find libomp.so.
#include <cstdio>

int main() {
  double values[500];
  for (double& v : values) v = 1.0;
#pragma omp target teams distribute parallel for map(tofrom : values)
  for (int i = 0; i < 500; ++i) values[i] += 1.0;
  std::printf("%.1f\n", values[499]);
  return values[499] == 2.0 ? 0 : 1;
}
