// The writers at their limits, from outside (support/writer_limits_app): a run
// that records nothing, OTF2's marker limit, and many short-lived threads into
// OTF2. Every output is read back by its checker and, for OTF2, by otf2-print
// and python3-otf2.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "otf2_check.hpp"
#include "support/run_program.hpp"
#include "tau_check.hpp"
#include "trace_check.hpp"

namespace fs = std::filesystem;
using ferret::testing::program_result;
using ferret::testing::read_file;

namespace {

fs::path fresh_directory() {
  static int counter = 0;
  return ferret::testing::fresh_directory("writer-limits", std::to_string(++counter));
}

program_result run_app(const fs::path& directory, const std::vector<std::string>& arguments,
                       const ferret::testing::environment& variables) {
  std::vector<std::string> command{FERRET_WRITER_LIMITS_APP};
  command.insert(command.end(), arguments.begin(), arguments.end());
  program_result result = ferret::testing::run_program(directory, command, variables);
  CHECK_MESSAGE(result.exit_code == 0, "stderr: " << result.err);
  CHECK(result.out == "done\n");
  return result;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

// The archive through the reader API, otf2-print and python3-otf2.
ferret::otf2_check::report read_archive(const fs::path& anchor) {
  ferret::otf2_check::report report = ferret::otf2_check::check_archive(anchor.string());
  std::string errors;
  for (const std::string& line : report.errors) errors += line + "\n";
  CHECK_MESSAGE(report.ok(), "ferret-otf2-check: " << errors);
  const fs::path printed = anchor.parent_path() / "print.out";
  const fs::path print_errors = anchor.parent_path() / "print.err";
  CHECK(std::system((std::string{FERRET_OTF2_PRINT} + " '" + anchor.string() + "' > '" + printed.string() +
                     "' 2> '" + print_errors.string() + "'")
                        .c_str()) == 0);
  CHECK_MESSAGE(read_file(print_errors).empty(), "otf2-print: " << read_file(print_errors));
  CHECK(read_file(printed).find("INVALID") == std::string::npos);
  const fs::path python = anchor.parent_path() / "python.out";
  CHECK_MESSAGE(std::system((std::string{FERRET_OTF2_PYTHON} + " '" + FERRET_OTF2_PYTHON_READER + "' '" +
                             anchor.string() + "' > '" + python.string() + "' 2>&1")
                                .c_str()) == 0,
                "python3-otf2: " << read_file(python));
  return report;
}

// Minor page faults of the children waited for so far.
long children_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  return usage.ru_minflt;
}

}  // namespace

TEST_CASE("nothing recorded: every backend writes a valid empty output, which its readers read") {
  // docs/formats.md ("Nothing recorded"): the process (with its main thread,
  // where the format has threads) and no events.
  const fs::path directory = fresh_directory();
  const program_result result = run_app(
      directory, {"nothing"},
      {{"FERRET_BACKEND", "chrome,otf2,tau,summary,report"}, {"FERRET_OUTPUT", "run"}, {"FERRET_VERBOSE", "1"}});

  const ferret::trace_check::report chrome = ferret::trace_check::check_file((directory / "run.json").string());
  CHECK_MESSAGE(chrome.ok(), "ferret-trace-check: " << (chrome.errors.empty() ? "" : chrome.errors.front()));

  const ferret::otf2_check::report otf2 = read_archive(directory / "run" / "traces.otf2");
  REQUIRE(otf2.locations.size() == 1);
  CHECK(otf2.locations.begin()->second.name == "main");
  CHECK(otf2.locations.begin()->second.events_read == 0);
  CHECK(result.err.find("otf2 archive: run/traces.otf2 (1 locations)") != std::string::npos);

  const ferret::tau_check::report tau = ferret::tau_check::check_directory((directory / "run").string());
  CHECK_MESSAGE(tau.ok(), "ferret-tau-check: " << (tau.errors.empty() ? "" : tau.errors.front()));
  REQUIRE(tau.find(0, 0) != nullptr);
  CHECK(tau.profiles.size() == 1);
  CHECK(tau.find(0, 0)->function(".TAU application") != nullptr);
  CHECK(result.err.find("tau profile: run (1 thread)") != std::string::npos);

  CHECK(result.err.find("ferret summary: ") != std::string::npos);
  CHECK(read_file(directory / "run.html").find("</html>") != std::string::npos);
  fs::remove_all(directory);
}

TEST_CASE("OTF2 markers beyond its limit: one line on stderr at exit, at every verbosity") {
  for (const char* verbosity : {"0", "1"}) {
    INFO("FERRET_VERBOSE=" << verbosity);
    const fs::path directory = fresh_directory();
    const program_result result = run_app(
        directory, {"marks", "100005"},
        {{"FERRET_BACKEND", "otf2"}, {"FERRET_OUTPUT", "run"}, {"FERRET_VERBOSE", verbosity}});
    CHECK(occurrences(result.err, "; 5 marks and data-object changes not written: OTF2 holds markers in memory "
                                  "until the end, ferret at most 100000 (FERRET::MARKERS_NOT_WRITTEN)") == 1);
    const ferret::otf2_check::report archive = ferret::otf2_check::check_archive((directory / "run/traces.otf2").string());
    CHECK(archive.ok());
    CHECK(archive.markers.size() == 100'000);
    CHECK(archive.properties.at("FERRET::MARKERS_NOT_WRITTEN") == "5");
    fs::remove_all(directory);
  }
}

TEST_CASE("OTF2 with many short-lived threads: each location costs a few pages at exit, not megabytes") {
  // OTF2 fills each buffer's last chunk whole when it writes it. With 1 MiB
  // event and 4 MiB definition chunks from malloc, every location ever seen cost
  // 5 MiB of fresh pages at exit (1,280 page faults; 18 ms per thread ever
  // created on a busy VM). Bound: 512 KiB of page faults per location more than
  // the same run into Chrome's format; otf2_chunks.hpp keeps it near 256 KiB.
  // Under AddressSanitizer each of OTF2's own large mallocs (a copy of the
  // chunk it writes) is a fresh mapping whose shadow ASan fills: 2.3 MiB per
  // location then, 8.9 MiB before.
  constexpr long threads = 1000;
  constexpr long page = 4096;
#if defined(__SANITIZE_ADDRESS__)
  constexpr long allowance = 4 * 1024 * 1024;
#else
  constexpr long allowance = 512 * 1024;
#endif
  const fs::path chrome_directory = fresh_directory();
  long before = children_page_faults();
  run_app(chrome_directory, {"threads", std::to_string(threads)},
          {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "run"}, {"FERRET_VERBOSE", "0"}});
  const long chrome_faults = children_page_faults() - before;
  const fs::path otf2_directory = fresh_directory();
  before = children_page_faults();
  run_app(otf2_directory, {"threads", std::to_string(threads)},
          {{"FERRET_BACKEND", "otf2"}, {"FERRET_OUTPUT", "run"}, {"FERRET_VERBOSE", "0"}});
  const long otf2_faults = children_page_faults() - before;
  MESSAGE("page faults: chrome " << chrome_faults << ", otf2 " << otf2_faults << " (" << threads << " threads)");
  CHECK(otf2_faults - chrome_faults < threads * (allowance / page));

  const ferret::otf2_check::report archive = read_archive(otf2_directory / "run" / "traces.otf2");
  std::uint64_t enters = 0;
  for (const auto& [id, location] : archive.locations) enters += location.enters;
  CHECK(enters == threads);
  fs::remove_all(chrome_directory);
  fs::remove_all(otf2_directory);
}
