// ferret-info: what this installation offers — its backends and the
// environment variables the runtime reads (from the runtime's own table, so
// this output and the README's table cannot drift; a test checks the README).
#include <fmt/format.h>

#include <cstring>

#include "ferret/config.hpp"
#include "ferret/runtime/runtime.hpp"
#include "ferret/runtime/settings.hpp"

namespace {

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

}  // namespace

int main(int argc, char** argv) {
  const bool markdown = argc > 1 && std::strcmp(argv[1], "--markdown") == 0;
  if (argc > 1 && !markdown) {
    fmt::print(stderr, "usage: ferret-info [--markdown]\n");
    return 2;
  }
  if (!markdown) {
    fmt::print("ferret {}\nbackends: {}\n\nenvironment:\n", FERRET_VERSION_STRING,
               fmt::join(ferret::runtime::available_backends(), ", "));
  }
  print_settings(markdown);
  return 0;
}
