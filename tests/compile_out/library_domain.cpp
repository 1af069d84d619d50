// Annotations in a library's own domain, switched off by the domain alone
// (FERRET_ENABLED stays 1) or by FERRET_ENABLED=0 in the builds compared by
// the test with the same file without annotations (and without the header).
#if ANNOTATE
#include <ferret/ferret.hpp>
#define ANNOTATION(...) __VA_ARGS__

struct library_domain {
  static constexpr const char* name = "library";
  static constexpr bool enabled = LIBRARY_DOMAIN_ENABLED;
};
#else
#define ANNOTATION(...)
#endif

namespace {
ANNOTATION([[maybe_unused]] const ferret::region_in<library_domain> file_region{"file"};)
ANNOTATION([[maybe_unused]] ferret::counter_in<library_domain> file_counter{"file counter"};)
}  // namespace

double sum_library_domain(const double* data, int n) {
  ANNOTATION(FERRET_FUNCTION_IN(library_domain);)
  ANNOTATION(ferret::counter_in<library_domain> running_sum{"running sum"};)
  ANNOTATION(const ferret::name registered = ferret::register_name<library_domain>("registered");)
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    ANNOTATION(FERRET_REGION_IN(library_domain, "iteration");)
    ANNOTATION(ferret::region_in<library_domain> literal{"literal"};)
    ANNOTATION(ferret::region_in<library_domain> named{registered};)
    sum += data[i];
    ANNOTATION(FERRET_COUNTER_IN(library_domain, "sum", sum);)
    ANNOTATION(running_sum.record(sum);)
    ANNOTATION(file_counter.record(sum);)
  }
  ANNOTATION(ferret::begin<library_domain>("explicit");)
  ANNOTATION(FERRET_MARK_IN(library_domain, "macro mark");)
  ANNOTATION(ferret::mark<library_domain>("done");)
  ANNOTATION(ferret::mark<library_domain>(registered);)
  ANNOTATION(ferret::end<library_domain>("explicit");)
  return sum;
}
