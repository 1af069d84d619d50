// target_locations_program.cpp — target constructs in an annotated function
// that the compiler inlines into main: the shape that once put them in
// ferret's own header, line 0, function main (the annotations' inlined code
// sits right before the runtime calls). ompt_test reads the construct lines
// from the "construct:" comments and checks every output names them.
// Built twice: by clang 19, which emits the runtime calls of `target data`
// and `target` without a source line, and by LLVM 22's clang, which does not.
#include <cstdio>
#include <vector>

#include <ferret/ferret.hpp>

namespace {

double offload_phase(std::vector<double>& grid) {
  FERRET_FUNCTION();
  double* data = grid.data();
  const long n = static_cast<long>(grid.size());
  ferret::data_object object{"grid", data, grid.size() * sizeof(double)};
#pragma omp target data map(to : data[0 : n])  // construct: target data
  {
    FERRET_REGION("sweep");
#pragma omp target teams distribute parallel for num_teams(2)  // construct: target
    for (long i = 0; i < n; ++i) data[i] = data[i] * 0.5 + 1.0;
#pragma omp target update from(data[0 : n])  // construct: target update
  }
#pragma omp target enter data map(to : data[0 : n])  // construct: target enter data
#pragma omp target exit data map(from : data[0 : n])  // construct: target exit data
  double total = 0;
  for (const double value : grid) total += value;
  return total;
}

}  // namespace

int main() {
  std::vector<double> grid(1000, 1.0);
  const double total = offload_phase(grid);
  std::printf("%.1f\n", total);
  return total == 1500.0 ? 0 : 1;
}
