// What the OpenMP collector records, seen from outside: real OpenMP programs
// (LLVM's libomp and libomptarget, GNU's libgomp) run with the chrome
// backend, and their traces are checked strictly (ferret::trace_check) and
// read with nlohmann::json; one case writes a TAU profile (ferret::tau_check).
// Each case is its own CTest test (--test-case).
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/run_program.hpp"
#include "tau_check.hpp"
#include "trace_check.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct traced_run {
  ferret::testing::program_result result;
  json trace;
  ferret::trace_check::report check;
};

fs::path fresh_directory(const std::string& name) {
  const fs::path directory =
      fs::temp_directory_path() / ("ferret-ompt-test-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(directory);
  fs::create_directories(directory);
  return directory;
}

// Runs `command` with the chrome backend writing trace.json in a fresh directory.
traced_run run_traced(const std::string& name, const std::vector<std::string>& command,
                      ferret::testing::environment variables = {}) {
  const fs::path directory = fresh_directory(name);
  const fs::path trace = directory / "trace.json";
  variables.emplace_back("FERRET_BACKEND", "chrome");
  variables.emplace_back("FERRET_OUTPUT", trace.string());
  traced_run run;
  run.result = ferret::testing::run_program(directory, command, variables, std::chrono::minutes{2});
  INFO("stderr: " << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  run.check = ferret::trace_check::check_file(trace.string());
  std::string errors;
  for (const std::string& error : run.check.errors) errors += error + "\n";
  CHECK_MESSAGE(run.check.ok(), errors);
  std::ifstream in{trace};
  run.trace = json::parse(in);
  return run;
}

std::vector<json> events(const json& trace, const std::string& phase, const std::string& name) {
  std::vector<json> found;
  for (const json& event : trace["traceEvents"])
    if (event.value("ph", "") == phase && event.value("name", "") == name) found.push_back(event);
  return found;
}

std::size_t openmp_slices(const json& trace, const std::string& name) {
  std::size_t count = 0;
  for (const json& event : events(trace, "X", name)) count += event.value("cat", "") == "openmp";
  return count;
}

std::vector<double> counter_values(const json& trace, const std::string& name) {
  std::vector<double> values;
  for (const json& event : events(trace, "C", name)) values.push_back(event["args"]["value"]);
  std::sort(values.begin(), values.end());
  return values;
}

std::int64_t metadata_count(const json& trace, const std::string& key) {
  return trace["metadata"].at(key).get<std::int64_t>();
}

// The slice named `inner` lies within a slice named `outer` on the same thread.
bool nested_in(const json& trace, const std::string& inner, const std::string& outer) {
  for (const json& in : events(trace, "X", inner)) {
    bool inside = false;
    for (const json& out : events(trace, "X", outer))
      inside = inside || (out["tid"] == in["tid"] && out["ts"].get<double>() <= in["ts"].get<double>() &&
                          out["ts"].get<double>() + out["dur"].get<double>() >=
                              in["ts"].get<double>() + in["dur"].get<double>());
    if (!inside) return false;
  }
  return !events(trace, "X", inner).empty();
}

ferret::testing::environment llvm_environment() {
  // libomptarget connects to the tool interface with dlopen("libomp.so"),
  // which Debian installs only in LLVM's own directory.
  return {{"LD_LIBRARY_PATH", FERRET_LLVM_LIB_DIR}, {"OMP_NUM_THREADS", "2"}};
}

// Compiled by clang, every construct calls the runtime; compiled by g++ and
// run on libomp's GNU entry points, static loops have no runtime call (g++
// computes the bounds inline) and every barrier is the runtime's own.
void check_host_trace(const traced_run& run, bool gnu_entry_points) {
  const json& trace = run.trace;
  CHECK(trace["metadata"]["ompt-tool"] == "started");
  CHECK(openmp_slices(trace, "parallel") == 3);
  // One sample per team, from its primary thread: num_threads(3), (2), (2).
  CHECK(counter_values(trace, "team size") == std::vector<double>{2, 2, 3});
  CHECK(openmp_slices(trace, "loop (dynamic)") == 3);  // one per thread of the team of 3
  CHECK(openmp_slices(trace, "single") == 1);
  // fibonacci(10) creates two tasks in each of its 88 calls with n >= 2.
  CHECK(events(trace, "i", "task create").size() == 176);
  CHECK(openmp_slices(trace, "task") == 176);
  CHECK(openmp_slices(trace, "taskwait") == 88);
  CHECK(openmp_slices(trace, "critical") == 2);
  CHECK(openmp_slices(trace, "critical wait") == 2);
  CHECK(openmp_slices(trace, "implicit barrier wait") > 0);
  if (gnu_entry_points) {
    // Five explicit barriers on each of two threads, and the loops' ends.
    CHECK(openmp_slices(trace, "runtime barrier") >= 10);
    CHECK(nested_in(trace, "runtime barrier wait", "runtime barrier"));
  } else {
    CHECK(openmp_slices(trace, "loop (static)") == 3);
    CHECK(nested_in(trace, "loop (static)", "implicit task"));
    // Five explicit barriers on each of two threads, each with its wait.
    CHECK(openmp_slices(trace, "barrier") == 10);
    CHECK(openmp_slices(trace, "barrier wait") == 10);
    CHECK(nested_in(trace, "barrier wait", "barrier"));
  }
  // Nesting with the annotations, on the thread that opened them.
  CHECK(nested_in(trace, "parallel", "host program"));
  CHECK(nested_in(trace, "task", "implicit task"));
  // Source locations of the constructs, from their return addresses.
  // The metadata holds them once per name.
  CHECK_FALSE(events(trace, "X", "parallel").empty());
  const json& parallel_locations = trace["metadata"]["source-locations"]["parallel"];
  REQUIRE(parallel_locations.is_array());
  REQUIRE_FALSE(parallel_locations.empty());
  for (const json& location : parallel_locations) {
    CHECK(location.value("file", "").find("host_program.cpp") != std::string::npos);
    CHECK(location.value("line", 0) > 0);
    CHECK(location.value("function", "") == "main");
  }
  // Worker threads are named.
  bool worker_named = false;
  for (const auto& [thread, name] : run.check.thread_names) worker_named |= name == "OpenMP worker 1";
  CHECK(worker_named);
  CHECK(metadata_count(trace, "ompt-region-ends-unmatched") == 0);
  CHECK(metadata_count(trace, "ompt-regions-dropped-too-deep") == 0);
  CHECK(metadata_count(trace, "ompt-threads-without-state") == 0);
}

}  // namespace

#ifdef FERRET_OMPT_HOST_PROGRAM
TEST_CASE("host_clang: parallel regions, loops, tasks, barriers, critical") {
  check_host_trace(run_traced("host-clang", {FERRET_OMPT_HOST_PROGRAM}, llvm_environment()), false);
}
#endif

TEST_CASE("host_gnu: g++ on libomp's GNU entry points: the same constructs") {
  check_host_trace(run_traced("host-gnu", {FERRET_OMPT_HOST_PROGRAM_GNU_ABI}, llvm_environment()),
                   true);
}

#ifdef FERRET_OMPT_TARGET_PROGRAM
TEST_CASE("target: offload, regions, data operations, submissions") {
  const traced_run run = run_traced("target", {FERRET_OMPT_TARGET_PROGRAM}, llvm_environment());
  const json& trace = run.trace;
  CHECK(openmp_slices(trace, "target enter data [device 0]") == 1);
  CHECK(openmp_slices(trace, "target [device 0]") == 2);
  CHECK(openmp_slices(trace, "target exit data [device 0]") == 1);
  CHECK(openmp_slices(trace, "kernel submission") == 2);
  CHECK(counter_values(trace, "requested teams") == std::vector<double>{1, 2});
  CHECK(nested_in(trace, "transfer to device", "target enter data [device 0]"));
  CHECK(nested_in(trace, "kernel submission", "target [device 0]"));
  // Copies as device operations: the mapped bytes, both ends, the data object.
  const std::vector<json> to_device = events(trace, "X", "Memcpy HtoD");
  const std::vector<json> from_device = events(trace, "X", "Memcpy DtoH");
  REQUIRE(to_device.size() == 1);
  REQUIRE(from_device.size() == 1);
  const json& in = to_device.front()["args"];
  CHECK(in["bytes"] == 8000);
  CHECK(in["source device"] == "host");
  CHECK(in["destination device"] == 0);
  CHECK(in["source object"] == "values");
  CHECK(in["context"] == "target enter data [device 0]/transfer to device");
  const json& out = from_device.front()["args"];
  CHECK(out["bytes"] == 8000);
  CHECK(out["destination object"] == "values");
  // The device copy is an anonymous object named after its allocation.
  CHECK(out["source object"].get<std::string>().rfind("target alloc@", 0) == 0);
  CHECK(metadata_count(trace, "gpu-operations-without-launch") == 0);
  CHECK(metadata_count(trace, "ompt-region-ends-unmatched") == 0);
  // LLVM 19 has no device tracing interface: said once.
  CHECK(run.result.err.find("offers no device tracing interface") != std::string::npos);
}
#endif

TEST_CASE("ferret_run: unmodified binary through ferret-run (OMP_TOOL_LIBRARIES)") {
  const fs::path directory = fresh_directory("ferret-run");
  const fs::path trace = directory / "run.json";
  const ferret::testing::program_result ran = ferret::testing::run_program(
      directory,
      {FERRET_RUN, "--backend", "chrome", "--output", trace.string(), "--", FERRET_OMPT_PLAIN_PROGRAM},
      {{"OMP_NUM_THREADS", "2"}}, std::chrono::minutes{2});
  INFO("stderr: " << ran.err);
  REQUIRE(ran.exit_code == 0);
  const ferret::trace_check::report check = ferret::trace_check::check_file(trace.string());
  CHECK(check.ok());
  std::ifstream in{trace};
  const json parsed = json::parse(in);
  CHECK(openmp_slices(parsed, "parallel") == 1);
  CHECK(counter_values(parsed, "team size") == std::vector<double>{2});
}

#ifdef FERRET_OMPT_PLAIN_TARGET_PROGRAM
TEST_CASE("ferret_run_target: unmodified offload binary through ferret-run") {
  // No LD_LIBRARY_PATH given: ferret-run lets libomptarget find libomp.so.
  const fs::path directory = fresh_directory("ferret-run-target");
  const fs::path trace = directory / "run.json";
  const ferret::testing::program_result ran = ferret::testing::run_program(
      directory,
      {FERRET_RUN, "--backend", "chrome", "--output", trace.string(), "--",
       FERRET_OMPT_PLAIN_TARGET_PROGRAM},
      {{"OMP_NUM_THREADS", "2"}, {"LD_LIBRARY_PATH", ""}}, std::chrono::minutes{2});
  INFO("stderr: " << ran.err);
  REQUIRE(ran.exit_code == 0);
  CHECK(ferret::trace_check::check_file(trace.string()).ok());
  std::ifstream in{trace};
  const json parsed = json::parse(in);
  CHECK(openmp_slices(parsed, "target [device 0]") == 1);
  const std::vector<json> to_device = events(parsed, "X", "Memcpy HtoD");
  REQUIRE(to_device.size() == 1);
  CHECK(to_device.front()["args"]["bytes"] == 4000);
}
#endif

TEST_CASE("libgomp: one clear line, and the program runs on") {
  const fs::path directory = fresh_directory("libgomp");
  const ferret::testing::program_result ran = ferret::testing::run_program(
      directory, {FERRET_OMPT_GOMP_PROGRAM},
      {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", (directory / "trace.json").string()}},
      std::chrono::minutes{2});
  CHECK(ran.exit_code == 0);
  CHECK(ran.out == "499500\n");
  CHECK(ran.err.find("ferret: no OMPT support in this OpenMP runtime (GNU libgomp): OpenMP events "
                     "are not traced\n") != std::string::npos);
  // The annotation is traced all the same.
  const ferret::trace_check::report check = ferret::trace_check::check_file((directory / "trace.json").string());
  CHECK(check.ok());
  CHECK(check.name_counts.count("gomp program") == 1);
}

TEST_CASE("tau_tasks: in the TAU profile each task construct is a call path of its own") {
  // fibonacci(10)'s 176 tasks, run by two threads inside each other's waits:
  // with call paths through the waits, each thread had 230 to 250 of them, and
  // the OpenMP example (fibonacci(20)) 21,100 (tau_thread_profile.hpp).
  const fs::path directory = fresh_directory("tau-tasks");
  ferret::testing::environment variables = llvm_environment();
  variables.emplace_back("FERRET_BACKEND", "tau");
  variables.emplace_back("FERRET_OUTPUT", (directory / "profile").string());
  const ferret::testing::program_result ran = ferret::testing::run_program(
      directory, {FERRET_OMPT_HOST_PROGRAM_GNU_ABI}, variables, std::chrono::minutes{2});
  INFO("stderr: " << ran.err);
  REQUIRE(ran.exit_code == 0);
  const ferret::tau_check::report check = ferret::tau_check::check_directory((directory / "profile").string());
  for (const std::string& error : check.errors) INFO(error);
  CHECK(check.ok());
  std::uint64_t task_calls = 0;
  for (const auto& [file, profile] : check.profiles) {
    INFO(file);
    std::size_t paths = 0;
    for (const ferret::tau_check::function_line& f : profile.functions) {
      if (f.name.find(" => ") == std::string::npos) {
        if (f.name.rfind("task [", 0) == 0) task_calls += f.calls;
        continue;
      }
      ++paths;
      // A task is the root's child, wherever it ran.
      const std::size_t task = f.name.find(" => task [");
      if (task != std::string::npos) CHECK(task == std::string{".TAU application"}.size());
    }
    CHECK(paths <= 60);
  }
  CHECK(task_calls == 176);
}

TEST_CASE("off: without FERRET_BACKEND the tool stays out") {
  const fs::path directory = fresh_directory("off");
  const ferret::testing::program_result ran =
      ferret::testing::run_program(directory, {FERRET_OMPT_HOST_PROGRAM_GNU_ABI}, llvm_environment());
  CHECK(ran.exit_code == 0);
  CHECK(ran.err.empty());
}
