// ferret-trace-check: checks Chrome Trace Event Format JSON files strictly
// against what Perfetto's JSON importer accepts.
//
//   ferret-trace-check [--quiet] [--summary] FILE...
//
// Exit status: 0 when every file is ok, 1 when some file has errors, 2 on a
// usage error or when a file cannot be read.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "trace_check.hpp"

namespace {

namespace tc = ferret::trace_check;

void print_usage(std::FILE* out) {
  fmt::print(out,
             "usage: ferret-trace-check [--quiet] [--summary] FILE...\n"
             "Checks Chrome Trace Event Format JSON files strictly against what\n"
             "Perfetto's JSON importer accepts.\n"
             "\n"
             "  --quiet    print only the result line of each file, not its errors\n"
             "  --summary  also print the process and thread names of each file\n"
             "\n"
             "Exit status: 0 all files ok, 1 errors found, 2 usage error or\n"
             "unreadable file.\n");
}

// "X: 3, i: 2"
std::string phase_list(const tc::report& r) {
  std::string out;
  for (const auto& [phase, count] : r.phase_counts) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{}: {}", phase, count);
  }
  return out;
}

// Names are printed as JSON strings, so that odd characters stay visible.
void print_summary(const std::string& file, const tc::report& r) {
  for (const auto& [pid, name] : r.process_names) {
    fmt::print("{}: process {}: {}\n", file, pid, nlohmann::json(name).dump());
  }
  std::set<std::pair<std::uint64_t, std::uint64_t>> threads = r.threads;
  for (const auto& entry : r.thread_names) threads.insert(entry.first);
  for (const auto& thread : threads) {
    const auto it = r.thread_names.find(thread);
    fmt::print("{}: thread {}/{}: {}\n", file, thread.first, thread.second,
               it == r.thread_names.end() ? std::string("(unnamed)")
                                          : nlohmann::json(it->second).dump());
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quiet = false;
  bool summary = false;
  bool options_done = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!options_done && arg == "--") {
      options_done = true;
    } else if (!options_done && arg == "--quiet") {
      quiet = true;
    } else if (!options_done && arg == "--summary") {
      summary = true;
    } else if (!options_done && (arg == "-h" || arg == "--help")) {
      print_usage(stdout);
      return 0;
    } else if (!options_done && arg.size() > 1 && arg.front() == '-') {
      fmt::print(stderr, "ferret-trace-check: unknown option {}\n", arg);
      print_usage(stderr);
      return 2;
    } else {
      files.emplace_back(arg);
    }
  }
  if (files.empty()) {
    print_usage(stderr);
    return 2;
  }

  int status = 0;
  for (const std::string& file : files) {
    tc::report r;
    try {
      r = tc::check_file(file);
    } catch (const std::exception& e) {
      std::fflush(stdout);  // keep the order of stdout and stderr lines
      fmt::print(stderr, "ferret-trace-check: {}\n", e.what());
      status = 2;
      continue;
    }
    if (!quiet) {
      for (const std::string& line : r.errors) fmt::print("{}: {}\n", file, line);
      if (r.error_count > r.errors.size()) {
        fmt::print("{}: ... and {} more errors\n", file,
                   r.error_count - r.errors.size());
      }
    }
    if (summary) print_summary(file, r);
    if (r.ok()) {
      const std::string phases = phase_list(r);
      fmt::print("{}: ok, {} event{}{}\n", file, r.event_count,
                 r.event_count == 1 ? "" : "s",
                 phases.empty() ? "" : " (" + phases + ")");
    } else {
      fmt::print("{}: {} error{}\n", file, r.error_count,
                 r.error_count == 1 ? "" : "s");
      status = std::max(status, 1);
    }
  }
  return status;
}
