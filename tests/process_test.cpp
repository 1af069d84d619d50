// What a user sees from outside: environment handling, messages on stderr,
// output files, and every exit path. Each case runs support/test_app in its
// own empty directory with a controlled environment.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ferret/runtime/backend.hpp"
#include "support/run_program.hpp"
#include "trace_check.hpp"

namespace fs = std::filesystem;

namespace {

struct run_result {
  int exit_code = -1;     // or -signal when killed by a signal
  long peak_memory_kib = 0;
  std::string out, err;
  int pid = 0;            // as printed by the app
  fs::path directory;
  std::vector<fs::path> files() const {
    std::vector<fs::path> found;
    for (const auto& entry : fs::recursive_directory_iterator(directory))
      if (entry.is_regular_file() && entry.path().filename() != "stdout" &&
          entry.path().filename() != "stderr")
        found.push_back(entry.path());
    std::sort(found.begin(), found.end());
    return found;
  }
  std::vector<std::string> error_lines() const {
    std::vector<std::string> lines;
    std::istringstream in{err};
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
};

// Runs the app in a fresh directory with FERRET_* taken only from `environment`.
run_result run(const std::string& mode, const std::map<std::string, std::string>& environment) {
  static int counter = 0;
  run_result result;
  result.directory = fs::temp_directory_path() /
                     ("ferret-process-test-" + std::to_string(getpid()) + "-" + std::to_string(++counter));
  fs::remove_all(result.directory);
  fs::create_directories(result.directory);
  const ferret::testing::program_result ran = ferret::testing::run_program(
      result.directory, {FERRET_TEST_APP, mode}, {environment.begin(), environment.end()});
  result.exit_code = ran.exit_code;
  result.peak_memory_kib = ran.peak_memory_kib;
  result.out = ran.out;
  result.err = ran.err;
  std::sscanf(result.out.c_str(), "pid %d", &result.pid);
  return result;
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

}  // namespace

TEST_CASE("no backend: no file, no message") {
  for (const auto& environment : std::vector<std::map<std::string, std::string>>{
           {}, {{"FERRET_BACKEND", "none"}}}) {
    const auto result = run("regions", environment);
    CHECK(result.exit_code == 0);
    CHECK(result.err.empty());
    CHECK(result.files().empty());
  }
}

TEST_CASE("default output: per-process name in the working directory, one summary line") {
  const auto result = run("regions", {{"FERRET_BACKEND", "chrome"}});
  CHECK(result.exit_code == 0);
  CHECK(result.out.find("finished") != std::string::npos);
  const auto files = result.files();
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename() == "ferret-ferret-test-app-" + std::to_string(result.pid) + ".json");
  const auto report = checked(files[0]);
  CHECK(count(report, "work") == 200);
  CHECK(count(report, "tick") == 200);
  CHECK(count(report, "main") == 1);
  const auto lines = result.error_lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("ferret: chrome trace: ") == 0);
  CHECK(report.metadata.at("events-dropped") == 0);
}

TEST_CASE("FERRET_OUTPUT: file, pattern and directory") {
  auto result = run("regions", {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "run.json"}});
  REQUIRE(result.files().size() == 1);
  CHECK(result.files()[0].filename() == "run.json");
  checked(result.files()[0]);

  result = run("regions", {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "trace-%p-%e"}});
  REQUIRE(result.files().size() == 1);
  CHECK(result.files()[0].filename() ==
        "trace-" + std::to_string(result.pid) + "-ferret-test-app.json");

  result = run("regions", {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "traces/"}});
  REQUIRE(result.files().size() == 1);
  CHECK(result.files()[0].parent_path().filename() == "traces");
  checked(result.files()[0]);
}

TEST_CASE("configuration errors: one clear line, the program runs on untraced") {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases{
      {{{"FERRET_BACKEND", "chorme"}}, "unknown backend 'chorme' in FERRET_BACKEND (available: "},
      // No stub of the known backend's output either.
      {{{"FERRET_BACKEND", "chrome,chorme"}}, "unknown backend 'chorme' in FERRET_BACKEND"},
      {{{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "/dev/null"}},
       "FERRET_OUTPUT='/dev/null' is neither a file nor a directory"},
      {{{"FERRET_BACKEND", "chrome,"}}, "FERRET_BACKEND='chrome,' is not valid"},
      {{{"FERRET_BACKEND", "chrome"}, {"FERRET_BUFFER_SIZE", "huge"}},
       "FERRET_BUFFER_SIZE='huge' is not valid"},
      {{{"FERRET_BACKEND", "chrome"}, {"FERRET_FLUSH_INTERVAL", "soon"}},
       "FERRET_FLUSH_INTERVAL='soon' is not valid"},
      {{{"FERRET_BACKEND", "chrome"}, {"FERRET_CLOCK", "fast"}}, "FERRET_CLOCK='fast' is not valid"},
      {{{"FERRET_BACKEND", "chrome"}, {"FERRET_VERBOSE", "loud"}},
       "FERRET_VERBOSE='loud' is not valid"},
      {{{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "/proc/no-such-dir/trace.json"}},
       "cannot write the chrome trace to '/proc/no-such-dir/trace.json'"},
  };
  for (const auto& one_case : cases) {
    // No structured bindings: clang 14 cannot capture them in doctest's lambdas.
    const auto& environment = one_case.first;
    const std::string& expected = one_case.second;
    CAPTURE(expected);
    const auto result = run("regions", environment);
    CHECK(result.exit_code == 0);
    CHECK(result.out.find("finished") != std::string::npos);
    const auto lines = result.error_lines();
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].rfind("ferret: ", 0) == 0);
    CHECK(lines[0].find(expected) != std::string::npos);
    CHECK(lines[0].find("running untraced") != std::string::npos);
    CHECK(result.files().empty());
  }
  // The unknown-backend message lists what is available.
  const auto result = run("regions", {{"FERRET_BACKEND", "chorme"}});
  CHECK(result.err.find("chrome") != std::string::npos);
}

TEST_CASE("outputs: missing directories are made; one that cannot be written turns off only its backend") {
  SUBCASE("missing parent directories") {
    const auto result = run("regions", {{"FERRET_BACKEND", "chrome"},
                                        {"FERRET_OUTPUT", "a/b/trace.json"},
                                        {"FERRET_VERBOSE", "0"}});
    CHECK(result.err.empty());
    REQUIRE(fs::exists(result.directory / "a/b/trace.json"));
    CHECK(count(checked(result.directory / "a/b/trace.json"), "work") == 200);
  }
  SUBCASE("the chrome output cannot be written, the TAU profile can") {
    const fs::path outputs = fs::temp_directory_path() / ("ferret-process-test-outputs-" + std::to_string(getpid()));
    fs::remove_all(outputs);
    fs::create_directories(outputs / "run.json");  // where the chrome trace would go
    const auto result = run("regions", {{"FERRET_BACKEND", "chrome,tau"},
                                        {"FERRET_OUTPUT", (outputs / "run").string()},
                                        {"FERRET_VERBOSE", "0"}});
    CHECK(result.exit_code == 0);
    const auto lines = result.error_lines();
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("cannot write the chrome trace") != std::string::npos);
    CHECK(lines[0].find("backend 'chrome' is off") != std::string::npos);
    CHECK(fs::exists(outputs / "run/profile.0.0.0"));
    CHECK(fs::is_empty(outputs / "run.json"));
    fs::remove_all(outputs);
  }
  SUBCASE("a device is refused") {
    const bool existed = fs::exists("/dev/null.json");
    const auto result = run("regions", {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "/dev/null"}});
    CHECK(result.error_lines().size() == 1);
    CHECK(fs::exists("/dev/null.json") == existed);
  }
}

TEST_CASE("exit() from another thread writes a complete trace") {
  const auto result = run("exit-from-thread", {{"FERRET_BACKEND", "chrome"}});
  CHECK(result.exit_code == 3);
  REQUIRE(result.files().size() == 1);
  const auto report = checked(result.files()[0]);
  CHECK(count(report, "work") == 10);
  CHECK(report.metadata.at("unfinished-regions") == 1);  // main's region, still open
}

TEST_CASE("SIGTERM: the trace is written before the default action") {
  const auto result = run("sigterm", {{"FERRET_BACKEND", "chrome"}});
  CHECK(result.exit_code == -SIGTERM);
  REQUIRE(result.files().size() == 1);
  const auto report = checked(result.files()[0]);
  CHECK(count(report, "work") == 10);
}

TEST_CASE("SIGTERM with a large buffer: what the wait leaves unwritten is counted and said") {
  const std::map<std::string, std::string> busy{{"FERRET_BACKEND", "chrome"},
                                                {"FERRET_BUFFER_SIZE", "64M"},
                                                {"FERRET_FLUSH_INTERVAL", "0"}};
  SUBCASE("no time to write: every buffered record counted, the trace still closed") {
    auto environment = busy;
    environment["FERRET_SIGNAL_WAIT"] = "0";
    const auto result = run("sigterm-busy", environment);
    CHECK(result.exit_code == -SIGTERM);
    REQUIRE(result.files().size() == 1);
    const auto report = checked(result.files()[0]);
    const auto unwritten = report.metadata.at("events-dropped-unwritten-at-signal").get<std::int64_t>();
    CHECK(unwritten > 0);
    // begin, mark and end per region, and main's begin: written or counted,
    // none lost silently.
    CHECK(3 * static_cast<std::int64_t>(count(report, "work")) + unwritten == 300001);
    CHECK(result.err.find(std::to_string(unwritten) + " events were not written") != std::string::npos);
    CHECK(result.err.find("FERRET_SIGNAL_WAIT=0 ms") != std::string::npos);
  }
  SUBCASE("the default wait: everything written") {
    const auto result = run("sigterm-busy", busy);
    CHECK(result.exit_code == -SIGTERM);
    REQUIRE(result.files().size() == 1);
    const auto report = checked(result.files()[0]);
    CHECK(report.metadata.at("events-dropped-unwritten-at-signal") == 0);
    CHECK(count(report, "work") == 100000);
    CHECK(result.err.find("not written") == std::string::npos);
  }
}

TEST_CASE("fork: the child never writes into the parent's trace") {
  SUBCASE("one output file: the child's goes beside it, with its pid") {
    const auto result = run("fork", {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "one.json"}});
    CHECK(result.exit_code == 0);
    const auto files = result.files();
    REQUIRE(files.size() == 2);
    for (const auto& file : files) {
      const auto report = checked(file);
      const bool parent = file.filename() == "one.json";
      CHECK((parent || file.filename().string().rfind("one-", 0) == 0));
      CHECK(count(report, "parent before fork") == (parent ? 1u : 0u));
      CHECK(count(report, "parent after fork") == (parent ? 1u : 0u));
      CHECK(count(report, "child") == (parent ? 0u : 1u));
    }
  }
  SUBCASE("the parent's output directories are no place for the child's") {
    // TAU writes the directory 'run' for the parent: the child's outputs go
    // beside it (run-<pid>.json, run-<pid>/), never into it.
    const auto result = run("fork", {{"FERRET_BACKEND", "chrome,tau"}, {"FERRET_OUTPUT", "run"}});
    CHECK(result.exit_code == 0);
    std::size_t child_traces = 0;
    for (const auto& file : result.files()) {
      const std::string name = fs::relative(file, result.directory).string();
      CAPTURE(name);
      CHECK((name == "run.json" || name.rfind("run/profile.", 0) == 0 || name.rfind("run-", 0) == 0));
      if (name.rfind("run-", 0) == 0 && file.extension() == ".json") {
        ++child_traces;
        CHECK(count(checked(file), "child") == 1);
      }
    }
    CHECK(child_traces == 1);
  }
  SUBCASE("per-process output: the child gets its own trace") {
    const auto result = run("fork", {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "t-%p"}});
    CHECK(result.exit_code == 0);
    const auto files = result.files();
    REQUIRE(files.size() == 2);
    for (const auto& file : files) {
      const auto report = checked(file);
      const bool parent = file.filename() == "t-" + std::to_string(result.pid) + ".json";
      CHECK(count(report, "parent before fork") == (parent ? 1u : 0u));
      CHECK(count(report, "parent after fork") == (parent ? 1u : 0u));
      CHECK(count(report, "child") == (parent ? 0u : 1u));
    }
  }
  SUBCASE("children whose two threads start recording at once lose nothing") {
    const auto result = run("fork-two-threads", {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "t-%p"}});
    CHECK(result.exit_code == 0);
    const auto files = result.files();
    REQUIRE(files.size() == 21);
    for (const auto& file : files) {
      if (file.filename() == "t-" + std::to_string(result.pid) + ".json") continue;
      const auto report = checked(file);
      CHECK_MESSAGE(count(report, "work") == 4000, file);
      CHECK(report.metadata.at("events-dropped") == 0);
    }
  }
  SUBCASE("a program it starts (fork and exec) writes beside it, with its pid") {
    // PyTorch's compile workers and a script's subprocesses inherit
    // FERRET_OUTPUT: each used to overwrite the other's trace.
    const auto result = run("spawn", {{"FERRET_BACKEND", "chrome,tau"}, {"FERRET_OUTPUT", "run"}});
    CHECK(result.exit_code == 0);
    std::size_t parent_traces = 0, child_traces = 0, child_profiles = 0;
    for (const auto& file : result.files()) {
      const std::string name = fs::relative(file, result.directory).string();
      CAPTURE(name);
      if (name == "run.json") {
        ++parent_traces;
        const auto report = checked(file);
        CHECK(count(report, "parent before spawn") == 1);
        CHECK(count(report, "parent after spawn") == 1);
        CHECK(count(report, "spawned child") == 0);
      } else if (name.rfind("run-", 0) == 0 && file.extension() == ".json") {
        ++child_traces;
        const auto report = checked(file);
        CHECK(count(report, "spawned child") == 1);
        CHECK(count(report, "parent before spawn") == 0);
      } else if (name.rfind("run-", 0) == 0) {
        child_profiles += name.find("/profile.") != std::string::npos;
      } else {
        CHECK(name.rfind("run/profile.", 0) == 0);
      }
    }
    CHECK(parent_traces == 1);
    CHECK(child_traces == 1);
    CHECK(child_profiles >= 1);
    const auto lines = result.error_lines();
    CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& line) {
            return line.find("'run' is being written by another process") != std::string::npos;
          }) == 1);
  }
  SUBCASE("a child that only execs leaves no output") {
    const auto result = run("fork-exec", {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "t-%p"}});
    CHECK(result.exit_code == 0);
    CHECK(result.files().size() == 1);
  }
}

TEST_CASE("FERRET_CLOCK=monotonic_raw: every event through the slow path, same trace") {
  const auto result = run("regions", {{"FERRET_BACKEND", "chrome"}, {"FERRET_CLOCK", "monotonic_raw"}});
  REQUIRE(result.files().size() == 1);
  const auto report = checked(result.files()[0]);
  CHECK(count(report, "work") == 200);
  CHECK(report.metadata.at("clock-source") == "CLOCK_MONOTONIC_RAW");
}

TEST_CASE("two million begins never ended: memory stays bounded, the regions past the limit counted") {
  // Each open region once cost a node in the runtime's calling-context tree and a
  // frame in each backend, without limit: 243 MB with chrome (untraced: 3.5 MB).
  const auto result = run("never-ended", {{"FERRET_BACKEND", "chrome"}});
  REQUIRE(result.exit_code == 0);
  INFO("peak resident memory " << result.peak_memory_kib / 1024 << " MiB");
  CHECK(result.peak_memory_kib / 1024 < 128);  // about 35 MiB in a plain build
  REQUIRE(result.files().size() == 1);
  const auto report = checked(result.files()[0]);
  constexpr std::uint32_t delivered = ferret::runtime::max_open_regions - 1;  // "main" is one
  CHECK(count(report, "open") == delivered);
  CHECK(report.metadata.at("events-dropped-nested-too-deep") == 2'000'000 - delivered);
  CHECK(report.metadata.at("unfinished-regions") == delivered + 1);
}

TEST_CASE("a tiny buffer drains from the writing threads and loses nothing") {
  // 200,000 events in 256 KiB of buffers: the writing threads drain many times.
  const auto result = run("many-regions", {{"FERRET_BACKEND", "chrome"},
                                           {"FERRET_BUFFER_SIZE", "256K"},
                                           {"FERRET_FLUSH_INTERVAL", "0"}});
  REQUIRE(result.files().size() == 1);
  const auto report = checked(result.files()[0]);
  CHECK(count(report, "work") == 100000);
  CHECK(report.metadata.at("events-dropped") == 0);
}
