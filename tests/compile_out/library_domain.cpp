// Annotations in a library's own domain, switched off by the domain alone
// (FERRET_ENABLED stays 1) in one of the builds compared by the test.
#include <ferret/ferret.hpp>

#include <cstddef>

struct library_domain {
  static constexpr const char* name = "library";
  static constexpr bool enabled = LIBRARY_DOMAIN_ENABLED;
};

#if ANNOTATE
#define ANNOTATION(...) __VA_ARGS__
#else
#define ANNOTATION(...)
#endif

double sum_library_domain(const double* data, int n) {
  ANNOTATION(FERRET_FUNCTION_IN(library_domain);)
  ANNOTATION(ferret::counter_in<library_domain> running_sum{"running sum"};)
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    ANNOTATION(FERRET_REGION_IN(library_domain, "iteration");)
    ANNOTATION(ferret::region_in<library_domain> literal{"literal"};)
    sum += data[i];
    ANNOTATION(FERRET_COUNTER_IN(library_domain, "sum", sum);)
    ANNOTATION(running_sum.record(sum);)
  }
  ANNOTATION(ferret::begin<library_domain>("explicit");)
  ANNOTATION(FERRET_MARK_IN(library_domain, "macro mark");)
  ANNOTATION(ferret::mark<library_domain>("done");)
  ANNOTATION(ferret::end<library_domain>("explicit");)
  return sum;
}
