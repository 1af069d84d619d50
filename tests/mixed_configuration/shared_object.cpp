// One annotated shared object, built twice into one program (see
// mixed_configuration_test.cpp): each copy must resolve its own mode flag.
#include <ferret/ferret.hpp>

extern "C" __attribute__((visibility("default"))) int SHARED_OBJECT_FUNCTION() {
  ferret::mark("shared object mark");
  return ferret::detail::g_mode.load(std::memory_order_relaxed);
}
