// target_program.cpp — target offload with known sizes, traced by the OpenMP
// collector (linked in) for ompt_test. Built by clang++-19 with
// -fopenmp-targets=x86_64-pc-linux-gnu: the "device" is the host, which
// gives libomptarget's target callbacks without a GPU.
#include <cstdio>
#include <vector>

#include <ferret/ferret.hpp>

int main() {
  constexpr int n = 1000;  // 8000 bytes of doubles
  std::vector<double> values(n, 1.0);
  double* data = values.data();
  ferret::data_object object{"values", data, n * sizeof(double)};
#pragma omp target enter data map(to : data[0 : n])
#pragma omp target teams distribute parallel for num_teams(2)
  for (int i = 0; i < n; ++i) data[i] *= 2;
#pragma omp target teams num_teams(1)
  data[0] += 1;
#pragma omp target exit data map(from : data[0 : n])
  std::printf("%.1f %.1f\n", values[0], values[1]);
  return values[0] == 3.0 && values[1] == 2.0 ? 0 : 1;
}
