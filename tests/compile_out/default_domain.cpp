// Compiled three ways by tests/CMakeLists.txt: without annotations, with
// annotations and FERRET_ENABLED=0, and with annotations enabled (the control
// that proves the comparison can fail).
#include <ferret/ferret.hpp>

#include <cstddef>

#if ANNOTATE
#define ANNOTATION(...) __VA_ARGS__
#else
#define ANNOTATION(...)
#endif

double sum_default_domain(const double* data, int n) {
  ANNOTATION(FERRET_FUNCTION();)
  ANNOTATION(ferret::data_object object{"data", data, static_cast<std::size_t>(n) * sizeof(double)};)
  ANNOTATION(ferret::counter running_sum{"running sum"};)
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    ANNOTATION(FERRET_REGION("iteration");)
    ANNOTATION(ferret::region literal{"literal"};)
    sum += data[i];
    ANNOTATION(FERRET_COUNTER("sum", sum);)
    ANNOTATION(running_sum.record(sum);)
  }
  ANNOTATION(ferret::begin("explicit");)
  ANNOTATION(FERRET_MARK("macro mark");)
  ANNOTATION(ferret::mark("done");)
  ANNOTATION(ferret::end("explicit");)
  ANNOTATION(ferret::set_metadata("n", n);)
  ANNOTATION(ferret::set_thread_name("worker");)
  return sum;
}
