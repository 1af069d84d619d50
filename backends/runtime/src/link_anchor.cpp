// link_anchor.cpp — installed as libferret_runtime_anchor.o, which the
// installed libferret_runtime.so (a linker script) adds to every plain
// `-lferret_runtime` link, before the library itself.
//
// Annotated code refers to the runtime only weakly (ferret/detail/abi.hpp),
// and linkers that drop the libraries no strong reference needs (--as-needed,
// the default of Debian's and Ubuntu's compilers) would drop the runtime: the
// program would never record. This strong reference keeps it.
#define FERRET_RUNTIME_LINKED 1
#include "ferret/detail/abi.hpp"

namespace {
[[gnu::used]] const auto runtime_anchor = &ferret_runtime_attach_v1;
}  // namespace
