// ferret-tau-check: checks TAU profile directories strictly (the rules are at
// the top of tau_check.cpp).
//
//   ferret-tau-check [--quiet] DIRECTORY...
//
// Exit status: 0 when every directory is ok, 1 when some has errors, 2 on a
// usage error.
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "tau_check.hpp"

namespace {

// Calls of the flat entries and samples of the plain user events, over the
// files of one metric: what one run recorded, to compare with other formats.
std::pair<std::uint64_t, std::uint64_t> totals(const ferret::tau_check::report& r) {
  std::uint64_t calls = 0, samples = 0;
  for (const auto& [file, p] : r.profiles) {
    if (p.metric != r.metrics.front()) continue;
    for (const auto& f : p.functions)
      if (f.name != ".TAU application" && f.name.find(" => ") == std::string::npos) calls += f.calls;
    for (const auto& e : p.user_events)
      if (e.name.find(" : ") == std::string::npos) samples += e.count;
  }
  return {calls, samples};
}

void print_usage(std::FILE* out) {
  fmt::print(out,
             "usage: ferret-tau-check [--quiet] DIRECTORY...\n"
             "Checks TAU profile directories (profile.N.C.T files, MULTI__<metric>/)\n"
             "strictly: format, numbers, call paths against flat entries, metadata XML,\n"
             "user event statistics, agreement between metrics, and the rules ParaProf,\n"
             "pprof and hatchet need to read each line right. An ok directory gets the\n"
             "calls of its flat entries and the samples of its user events (first metric).\n"
             "\n"
             "  --quiet  print only the result line of each directory\n"
             "\n"
             "Exit status: 0 all ok, 1 errors found, 2 usage error.\n");
}

}  // namespace

int main(int argc, char** argv) {
  bool quiet = false;
  std::vector<std::string> directories;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--quiet") {
      quiet = true;
    } else if (arg == "-h" || arg == "--help") {
      print_usage(stdout);
      return 0;
    } else if (arg.size() > 1 && arg.front() == '-') {
      fmt::print(stderr, "ferret-tau-check: unknown option {}\n", arg);
      print_usage(stderr);
      return 2;
    } else {
      directories.emplace_back(arg);
    }
  }
  if (directories.empty()) {
    print_usage(stderr);
    return 2;
  }
  int status = 0;
  for (const std::string& directory : directories) {
    const ferret::tau_check::report r = ferret::tau_check::check_directory(directory);
    if (!quiet) {
      for (const std::string& line : r.errors) fmt::print("{}: {}\n", directory, line);
      if (r.error_count > r.errors.size())
        fmt::print("{}: ... and {} more errors\n", directory, r.error_count - r.errors.size());
    }
    if (r.ok()) {
      const auto [calls, samples] = totals(r);
      fmt::print("{}: ok, {} profile{}, metric{} {}; {} calls, {} user event samples\n", directory,
                 r.profiles.size(), r.profiles.size() == 1 ? "" : "s", r.metrics.size() == 1 ? "" : "s",
                 fmt::join(r.metrics, ", "), calls, samples);
    } else {
      fmt::print("{}: {} error{}\n", directory, r.error_count, r.error_count == 1 ? "" : "s");
      status = 1;
    }
  }
  return status;
}
