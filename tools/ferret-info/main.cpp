// ferret-info: what this installation offers — its backends and collectors,
// and the environment variables the runtime reads (both from the runtime's
// own tables, so this output and the README's tables cannot drift; a test
// checks the README).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <string>

#include "ferret/config.hpp"
#include "ferret/runtime/components.hpp"
#include "ferret/runtime/runtime.hpp"
#include "ferret/runtime/settings.hpp"

namespace {

using ferret::runtime::component;
using ferret::runtime::component_kind;

void print_settings(bool markdown) {
  if (markdown) {
    fmt::print("| Variable | Accepts | Default | Meaning |\n|---|---|---|---|\n");
    for (const auto& s : ferret::runtime::settings())
      fmt::print("| `{}` | {} | `{}` | {} |\n", s.variable, s.kind, s.default_value, s.help);
    return;
  }
  for (const auto& s : ferret::runtime::settings())
    fmt::print("{}  ({}; default {})\n    {}\n", s.variable, s.kind, s.default_value, s.help);
}

void print_components_markdown() {
  fmt::print("| Name | Kind | Library | What | Enabled by |\n|---|---|---|---|---|\n");
  for (const component& c : ferret::runtime::components())
    fmt::print("| `{}` | {} | `libferret_{}` | {} | {} |\n", c.name,
               c.kind == component_kind::backend ? "backend" : "collector", c.library, c.what,
               c.enabled_by);
}

void print_components() {
  fmt::print("backends, the outputs FERRET_BACKEND names (installed: {}):\n",
             fmt::join(ferret::runtime::available_backends(), ", "));
  for (const component& c : ferret::runtime::components())
    if (c.kind == component_kind::backend)
      fmt::print("  {:<11} {}{}\n", c.name, c.what,
                 ferret::runtime::installed(c) ? "" : " [not installed]");
  fmt::print("collectors, what records events besides the annotations (not FERRET_BACKEND names):\n");
  for (const component& c : ferret::runtime::components())
    if (c.kind == component_kind::collector)
      fmt::print("  {:<11} {} (libferret_{}){}\n  {:<11} enabled by {}\n", c.name, c.what, c.library,
                 ferret::runtime::installed(c) ? "" : " [not installed]", "", c.enabled_by);
}

// "<kind> <name>" for every name of the table, and a collector's library
// name too where it differs (FERRET_BACKEND=cupti is as likely as cuda).
void print_names() {
  for (const component& c : ferret::runtime::components()) {
    const char* kind = c.kind == component_kind::backend ? "backend" : "collector";
    fmt::print("{} {}\n", kind, c.name);
    if (std::strcmp(c.name, c.library) != 0) fmt::print("{} {}\n", kind, c.library);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string option = argc > 1 ? argv[1] : "";
  if (argc > 2 || (argc == 2 && option != "--markdown" && option != "--markdown-components" &&
                    option != "--names")) {
    fmt::print(stderr, "usage: ferret-info [--markdown | --markdown-components | --names]\n");
    return 2;
  }
  if (option == "--names") {
    print_names();
  } else if (option == "--markdown") {
    print_settings(true);
  } else if (option == "--markdown-components") {
    print_components_markdown();
  } else {
    fmt::print("ferret {}\n", FERRET_VERSION_STRING);
    print_components();
    fmt::print("\nenvironment:\n");
    print_settings(false);
  }
  return 0;
}
