// Compiled three ways by tests/CMakeLists.txt: without annotations (the header
// not even included), with annotations and FERRET_ENABLED=0 (and
// FERRET_CUDA_LINKED / FERRET_OMPT_LINKED, as code built against ferret::cuda
// and ferret::ompt), and with annotations enabled (the control that proves the
// comparison can fail). Every annotation of the API is here, in a function
// and at namespace scope.
#if ANNOTATE
#include <ferret/ferret.hpp>
#define ANNOTATION(...) __VA_ARGS__
#else
#define ANNOTATION(...)
#endif

#include <cstddef>
#include <utility>

namespace {

double table[64];

// Namespace-scope annotation objects: with FERRET_ENABLED=0 they need no
// initialiser and no atexit registration. Internal linkage, as such objects
// usually have (one with external linkage is a definition the program asked
// for: its byte stays).
ANNOTATION([[maybe_unused]] ferret::data_object table_object{"table", table, sizeof table};)
ANNOTATION([[maybe_unused]] const ferret::region file_region{"file"};)
ANNOTATION([[maybe_unused]] ferret::counter file_counter{"file counter"};)

}  // namespace

double sum_default_domain(const double* data, int n) {
  ANNOTATION(FERRET_FUNCTION();)
  ANNOTATION(ferret::data_object object{"data", data, static_cast<std::size_t>(n) * sizeof(double)};)
  ANNOTATION(ferret::data_object moved{std::move(object)};)
  ANNOTATION(ferret::counter running_sum{"running sum"};)
  ANNOTATION(const ferret::name registered = ferret::register_name("registered");)
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    ANNOTATION(FERRET_REGION("iteration");)
    ANNOTATION(ferret::region literal{"literal"};)
    ANNOTATION(ferret::region named{registered};)
    sum += data[i] + table[i % 64];
    ANNOTATION(FERRET_COUNTER("sum", sum);)
    ANNOTATION(running_sum.record(sum);)
    ANNOTATION(file_counter.record(sum);)
  }
  ANNOTATION(ferret::begin("explicit");)
  ANNOTATION(ferret::begin(registered);)
  ANNOTATION(FERRET_MARK("macro mark");)
  ANNOTATION(ferret::mark("done");)
  ANNOTATION(ferret::mark(registered);)
  ANNOTATION(ferret::end(registered);)
  ANNOTATION(ferret::end("explicit");)
  ANNOTATION(const ferret::data_object_id id = ferret::register_data_object("raw", data, sizeof(double));)
  ANNOTATION(if (id != moved.id()) ferret::unregister_data_object(id);)
  ANNOTATION(ferret::unregister_data_object_at(data);)
  ANNOTATION(ferret::set_metadata("n", n);)
  ANNOTATION(ferret::set_metadata("kind", "sum");)
  ANNOTATION(ferret::set_thread_name("worker");)
  ANNOTATION(ferret::pause();)
  ANNOTATION(ferret::resume();)
  ANNOTATION(ferret::flush();)
  return sum;
}
