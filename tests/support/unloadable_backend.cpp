// libferret_unloadable_probe.so: a backend library the loader refuses, as
// libferret_otf2.so is refused where the OTF2 library is not on the loader's
// path. It needs a function nobody defines, so dlopen(RTLD_NOW) fails:
// FERRET_BACKEND=unloadable_probe must say why, not call the name unknown.
extern "C" void ferret_test_function_nobody_defines();

namespace {
[[maybe_unused]] const bool loaded = (ferret_test_function_nobody_defines(), true);
}  // namespace
