// gpu-test-openmp-offload: OpenMP target offload to an NVIDIA GPU, built by
// LLVM 22's clang with the device runtime of tools/build-openmp-device-runtime
// (cmake/ferret_openmp_programs.cmake), traced by gpu_trace_test through
// ferret-run with both collectors: the OpenMP collector's target regions on
// the host thread, CUPTI's copies and kernel on the GPU.
//
// Known work: the data object "values" (4 MiB of doubles) is mapped to the
// device by `target data` (one host-to-device copy), one kernel runs with a
// requested team count, `target update from` copies it back (one
// device-to-host copy); `map(to:)` copies nothing at the end of the data
// region. All of it inside the region "offload". Prints "expected {json}",
// with the line of each construct (where the trace must locate it).
#include <cstdio>
#include <vector>

#include <ferret/ferret.hpp>

int main() {
  constexpr int elements = 1 << 19;
  constexpr int teams = 64;
  constexpr std::size_t bytes = elements * sizeof(double);
  std::vector<double> values(elements, 1.0);
  double* data = values.data();
  int target_data_line = 0, target_line = 0, target_update_line = 0;
  {
    ferret::region offload{"offload"};
    ferret::data_object object{"values", data, bytes};
    target_data_line = __LINE__ + 1;
#pragma omp target data map(to : data[0 : elements])
    {
      target_line = __LINE__ + 1;
#pragma omp target teams distribute parallel for num_teams(teams) thread_limit(128)
      for (int i = 0; i < elements; ++i) data[i] = 2.0 * data[i] + i;
      target_update_line = __LINE__ + 1;
#pragma omp target update from(data[0 : elements])
    }
  }
  for (int i = 0; i < elements; ++i)
    if (values[static_cast<std::size_t>(i)] != 2.0 + i) {
      std::fprintf(stderr, "gpu-test-openmp-offload: values[%d] = %g, expected %g\n", i,
                   values[static_cast<std::size_t>(i)], 2.0 + i);
      return 1;
    }
  std::printf("gpu-test-openmp-offload: results correct\n");
  std::printf(
      "expected {\"mapped bytes\": %zu, \"teams\": %d, \"lines\": {\"target data\": %d, \"target\": %d, "
      "\"target update\": %d}}\n",
      bytes, teams, target_data_line, target_line, target_update_line);
  return 0;
}
