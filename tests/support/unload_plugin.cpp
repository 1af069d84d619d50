// unload_plugin: an annotated shared library that a program loads with
// dlopen() and unloads with dlclose() (tests/library_unload.cmake). Its names
// live in its own memory: literals, static call-site records (with their file
// and function), a library domain, a counter and a registered name.
#include "ferret/ferret.hpp"

namespace {
struct plugin_domain {
  static constexpr const char* name = "unload-plugin";
};
}  // namespace

// Records `iterations` times: two regions, a mark and a counter sample each.
extern "C" [[gnu::visibility("default")]] void unload_plugin_work(int iterations) {
  static const ferret::name registered = ferret::register_name("plugin registered name");
  static const ferret::counter_in<plugin_domain> samples{"plugin counter"};
  FERRET_FUNCTION();
  for (int i = 0; i < iterations; ++i) {
    FERRET_REGION_IN(plugin_domain, "plugin step");
    ferret::region named{registered};
    ferret::mark<plugin_domain>("plugin mark");
    samples.record(i);
  }
}
