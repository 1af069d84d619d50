// The hostile battery (issue 24): what programs do and environments impose,
// each run as a user would (support/hostile_app, support/test_app) with a
// time limit, so that a hang fails instead of stalling the suite. The rule
// for each: the program finishes as it would untraced, with its exit status;
// every output written is valid; every loss is counted and said on stderr in
// one line. CMakeLists.txt registers each case as a test of its own.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/run_program.hpp"
#include "trace_check.hpp"

namespace fs = std::filesystem;

namespace {

constexpr std::chrono::seconds time_limit{60};

struct run_result {
  ferret::testing::program_result ran;
  fs::path directory;
  std::vector<std::string> error_lines() const {
    std::vector<std::string> lines;
    std::istringstream in{ran.err};
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  bool says(const std::string& text) const { return ran.err.find(text) != std::string::npos; }
};

fs::path fresh_directory() {
  static int counter = 0;
  return ferret::testing::fresh_directory("hostile-test", std::to_string(++counter));
}

run_result run_in(const fs::path& directory, const std::vector<std::string>& command,
                  const ferret::testing::environment& environment) {
  run_result result{ferret::testing::run_program(directory, command, environment, time_limit), directory};
  INFO("stdout: " << result.ran.out);
  INFO("stderr: " << result.ran.err);
  REQUIRE_FALSE(result.ran.timed_out);
  return result;
}

run_result run(const std::vector<std::string>& command, const ferret::testing::environment& environment) {
  return run_in(fresh_directory(), command, environment);
}

ferret::trace_check::report checked(const fs::path& file) {
  auto report = ferret::trace_check::check_file(file.string());
  for (const auto& error : report.errors) MESSAGE(error);
  CHECK(report.ok());
  return report;
}

std::size_t count(const ferret::trace_check::report& report, const std::string& name) {
  const auto it = report.name_counts.find(name);
  return it == report.name_counts.end() ? 0 : it->second;
}

std::int64_t metadata_number(const ferret::trace_check::report& report, const std::string& key) {
  return report.metadata.contains(key) ? report.metadata.at(key).get<std::int64_t>() : -1;
}

}  // namespace

TEST_CASE("a mark from a signal handler: recorded or dropped and counted, never a deadlock") {
  // SIGALRM every 100 µs, each handler marking, while the main thread records
  // into a buffer of 4 KiB chunks: handlers land in chunk switches.
  ferret::testing::environment environment{{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "run.json"},
                                           {"FERRET_BUFFER_SIZE", "256K"}, {"FERRET_VERBOSE", "0"}};
  // Every event through the runtime: then every mark is written or counted.
  bool every_event_counted = false;
  SUBCASE("the hot path writes") {}
  SUBCASE("FERRET_CLOCK=monotonic_raw: the runtime writes") {
    environment.emplace_back("FERRET_CLOCK", "monotonic_raw");
    every_event_counted = true;
  }
  const auto result = run({FERRET_HOSTILE_APP, "signal-marks"}, environment);
  CHECK(result.ran.exit_code == 0);
  int alarms = 0;
  std::sscanf(result.ran.out.c_str(), "alarms %d", &alarms);
  REQUIRE(alarms >= 3000);
  const auto report = checked(result.directory / "run.json");
  const auto marks = static_cast<std::int64_t>(count(report, "alarm"));
  const std::int64_t dropped = metadata_number(report, "events-dropped-reentrant");
  MESSAGE(alarms << " alarms: " << marks << " marks written, " << dropped << " dropped");
  CHECK(marks > 0);
  CHECK(marks <= alarms);
  // In the hot path a mark that lands inside another annotation's store can
  // be overwritten by it, or overwrite it (README); through the runtime every
  // mark is written or counted.
  if (every_event_counted) CHECK(marks + dropped == alarms);
  // Said: the drops, and the region ends whose begin a mark overwrote.
  for (const auto& line : result.error_lines()) {
    const bool expected =
        line.find(" events were dropped: a signal handler annotated while its thread was in ferret") !=
            std::string::npos ||
        line.find(" region ends matched no open region") != std::string::npos;
    CHECK_MESSAGE(expected, line);
  }
  CHECK(result.says("a signal handler annotated while its thread was in ferret") == (dropped > 0));
}

// FERRET_OUTPUT=run names run.json for the chrome trace: a FIFO there (not
// FERRET_OUTPUT itself, which is refused at the start).
TEST_CASE("an output that is a FIFO: refused at once, never opened for writing, never removed") {
  SUBCASE("without a reader (open would block)") {
    const fs::path directory = fresh_directory();
    REQUIRE(mkfifo((directory / "run.json").c_str(), 0644) == 0);
    const auto result = run_in(directory, {FERRET_TEST_APP, "regions"},
                               {{"FERRET_BACKEND", "chrome,tau"}, {"FERRET_OUTPUT", "run"},
                                {"FERRET_VERBOSE", "0"}});
    CHECK(result.ran.exit_code == 0);
    const auto lines = result.error_lines();
    REQUIRE(lines.size() == 1);
    CHECK(lines[0] == "ferret: cannot write the chrome trace to 'run.json': a FIFO, not a regular "
                      "file; backend 'chrome' is off");
    CHECK(fs::is_fifo(directory / "run.json"));
    CHECK(fs::exists(directory / "run" / "profile.0.0.0"));  // the other output goes on
  }
  SUBCASE("with a reader (open would succeed, the trace would be written into the pipe)") {
    const fs::path directory = fresh_directory();
    REQUIRE(mkfifo((directory / "run.json").c_str(), 0644) == 0);
    const int reader = open((directory / "run.json").c_str(), O_RDONLY | O_NONBLOCK);
    REQUIRE(reader >= 0);
    const auto result = run_in(directory, {FERRET_TEST_APP, "regions"},
                               {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "run"},
                                {"FERRET_VERBOSE", "0"}});
    char byte = 0;
    const ssize_t read_back = read(reader, &byte, 1);
    close(reader);
    CHECK(result.ran.exit_code == 0);
    const auto lines = result.error_lines();
    REQUIRE(lines.size() == 1);
    CHECK(lines[0] == "ferret: cannot write the chrome trace to 'run.json': a FIFO, not a regular "
                      "file; running untraced");
    CHECK(read_back <= 0);  // nothing was written into it
    CHECK(fs::is_fifo(directory / "run.json"));
  }
}

TEST_CASE("a file-size limit (ulimit -f): EFBIG is an output error, never SIGXFSZ") {
  // 64 KiB allowed; the chrome trace of 200,000 events needs megabytes, the
  // TAU profile a few hundred bytes.
  const auto result = run({"/bin/sh", "-c", "ulimit -f 64 && exec \"$0\" many-regions", FERRET_TEST_APP},
                          {{"FERRET_BACKEND", "chrome,tau"}, {"FERRET_OUTPUT", "run"},
                           {"FERRET_VERBOSE", "0"}});
  CHECK(result.ran.exit_code == 0);
  CHECK(result.ran.out.find("finished") != std::string::npos);
  const auto lines = result.error_lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("ferret: chrome trace: run.json (") == 0);
  CHECK(lines[0].find("incomplete: write: File too large;") != std::string::npos);
  CHECK(lines[0].find(" events not written") != std::string::npos);
  // The trace is a closed document that counts its loss; the profile is whole.
  const auto report = checked(result.directory / "run.json");
  CHECK(metadata_number(report, "events-not-written") > 0);
  CHECK(fs::file_size(result.directory / "run.json") <= 64 * 1024);
  CHECK(fs::exists(result.directory / "run" / "profile.0.0.0"));
}

TEST_CASE("no thread can be started: the program's threads write the outputs, and it is said") {
  const auto result = run({FERRET_HOSTILE_APP, "no-thread"},
                          {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "run.json"},
                           {"FERRET_BUFFER_SIZE", "256K"}, {"FERRET_VERBOSE", "2"}});
  CHECK(result.ran.exit_code == 0);
  CHECK(result.ran.out.find("no thread") != std::string::npos);
  CHECK(result.says("ferret: cannot start the thread that writes the outputs ("));
  CHECK(result.says("the buffers are written when they fill and at exit, by the application's threads"));
  const auto report = checked(result.directory / "run.json");
  CHECK(count(report, "work") == 20000);  // 40,000 events through 256 KiB: nothing lost
  CHECK(metadata_number(report, "events-dropped") == 0);
}

TEST_CASE("every descriptor closed by the program: no spinning, nothing written into its files") {
  const auto result = run({FERRET_HOSTILE_APP, "close-descriptors"},
                          {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "run.json"},
                           {"FERRET_VERBOSE", "0"}});
  CHECK(result.ran.exit_code == 0);
  CHECK(result.ran.out.find("own file intact") != std::string::npos);
  int running = -1;
  const auto at = result.ran.out.find("drainer running ");
  REQUIRE(at != std::string::npos);
  std::sscanf(result.ran.out.c_str() + at, "drainer running %d", &running);
  // Idle, the drainer sleeps (it drains every 200 ms, for microseconds);
  // spinning, it is found running or runnable every time.
  CHECK(running >= 0);
  CHECK(running <= 10);
  CHECK(result.ran.err.empty());
  const auto report = checked(result.directory / "run.json");
  CHECK(count(report, "before closing") == 100);
  CHECK(count(report, "after closing") == 100);
}

TEST_CASE("names with a NUL inside stay apart") {
  const auto result = run({FERRET_HOSTILE_APP, "nul-names"},
                          {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "run.json"},
                           {"FERRET_VERBOSE", "0"}});
  CHECK(result.ran.exit_code == 0);
  const auto report = checked(result.directory / "run.json");
  CHECK(count(report, "nul\u2400inside") == 1);
  CHECK(count(report, "nul\u2400other") == 2);
}

TEST_CASE("unmatched ends and non-finite counter samples are said at exit") {
  const auto result = run({FERRET_HOSTILE_APP, "unmatched"},
                          {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "run.json"},
                           {"FERRET_VERBOSE", "0"}});
  CHECK(result.ran.exit_code == 0);
  const auto lines = result.error_lines();
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "ferret: 3 region ends matched no open region of their thread and were ignored "
                    "(unmatched-region-ends in the output's metadata)");
  CHECK(lines[1] == "ferret: 3 counter samples were NaN or infinite: left out where an output cannot "
                    "hold them (nonfinite-counter-samples in its metadata)");
  const auto report = checked(result.directory / "run.json");
  CHECK(metadata_number(report, "unmatched-region-ends") == 3);
  CHECK(metadata_number(report, "nonfinite-counter-samples") == 3);
}

TEST_CASE("FERRET_BUFFER_SIZE beyond the largest buffer is taken to it, with one line") {
  const auto result = run({FERRET_TEST_APP, "regions"},
                          {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "run.json"},
                           {"FERRET_BUFFER_SIZE", "1024G"}, {"FERRET_VERBOSE", "0"}});
  CHECK(result.ran.exit_code == 0);
  const auto lines = result.error_lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "ferret: FERRET_BUFFER_SIZE='1024G' is more than the largest, 4G; using 4G");
  const auto report = checked(result.directory / "run.json");
  CHECK(metadata_number(report, "buffer-bytes") == std::int64_t{4} << 30);
  CHECK(count(report, "work") == 200);
}

TEST_CASE("a directory that cannot be made is named, with its reason") {
  const fs::path directory = fresh_directory();
  fs::create_directories(directory / "read-only");
  fs::permissions(directory / "read-only", fs::perms::owner_read | fs::perms::owner_exec |
                                               fs::perms::group_read | fs::perms::group_exec |
                                               fs::perms::others_read | fs::perms::others_exec);
  // Root writes anywhere: run as nobody then (setpriv), else skip.
  std::vector<std::string> command{FERRET_TEST_APP, "regions"};
  if (geteuid() == 0) {
    if (access("/usr/bin/setpriv", X_OK) != 0) {
      MESSAGE("skipped: running as root without setpriv");
      return;
    }
    fs::permissions(directory, fs::perms::all);
    command.insert(command.begin(), {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
  }
  const auto result = run_in(directory, command,
                             {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "read-only/sub/run.json"},
                              {"FERRET_VERBOSE", "0"}});
  CHECK(result.ran.exit_code == 0);
  const auto lines = result.error_lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "ferret: cannot write the chrome trace to 'read-only/sub/run.json': cannot create the "
                    "directory 'read-only/sub': Permission denied; running untraced");
}
