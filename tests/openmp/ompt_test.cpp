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
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
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

fs::path fresh_directory(const std::string& name) { return ferret::testing::fresh_directory("ompt-test", name); }

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

#if defined(FERRET_OMPT_CUDA_COLLECTOR_STAND_IN) && FERRET_OMPT_TEST_OTF2
TEST_CASE("cuda_collector_present: device names and copies are left to CUDA's collector") {
  // LD_PRELOAD puts a library named libferret_cupti.so in the process, as
  // CUDA loads the collector at cuInit, before libomptarget's CUDA plugin
  // initialises a device.
  ferret::testing::environment variables = llvm_environment();
  variables.emplace_back("LD_PRELOAD", FERRET_OMPT_CUDA_COLLECTOR_STAND_IN);
  // A device and no data operation: its name must not come from the OpenMP
  // collector, though no data operation ever asked whether CUDA's is there.
  // OTF2 defines every device it is told of (chrome only those with activity).
  const fs::path directory = fresh_directory("cuda-present-target-only");
  ferret::testing::environment with_otf2 = variables;
  with_otf2.emplace_back("FERRET_BACKEND", "otf2");
  with_otf2.emplace_back("FERRET_OUTPUT", "run");
  const ferret::testing::program_result only = ferret::testing::run_program(
      directory, {FERRET_OMPT_TARGET_ONLY_PROGRAM}, with_otf2, std::chrono::minutes{2});
  INFO("stderr: " << only.err);
  REQUIRE(only.exit_code == 0);
  std::ifstream definitions_file{directory / "run" / "traces.def", std::ios::binary};
  REQUIRE(definitions_file.good());
  const std::string definitions{std::istreambuf_iterator<char>{definitions_file}, {}};
  CHECK(definitions.find("target [device 0]") != std::string::npos);
  CHECK(definitions.find("OpenMP device") == std::string::npos);
  // Data operations: regions on the host, no copies of the OpenMP collector's.
  const traced_run mapped = run_traced("cuda-present-target", {FERRET_OMPT_TARGET_PROGRAM}, variables);
  CHECK(openmp_slices(mapped.trace, "transfer to device") == 1);
  CHECK(events(mapped.trace, "X", "Memcpy HtoD").empty());
  CHECK(metadata_count(mapped.trace, "gpu-operations") == 0);
  for (const auto& [pid, name] : mapped.check.process_names) {
    CAPTURE(name);
    CHECK(name.find("OpenMP device") == std::string::npos);
  }
}
#endif

#ifdef FERRET_OMPT_TARGET_LOCATIONS_SOURCE
namespace {

// The line of each "// construct: <name>" comment in the program's source.
std::map<std::string, int> construct_lines() {
  std::ifstream source{FERRET_OMPT_TARGET_LOCATIONS_SOURCE};
  REQUIRE(source.good());
  std::map<std::string, int> lines;
  const std::string marker = "// construct: ";
  int number = 0;
  for (std::string line; std::getline(source, line);) {
    ++number;
    if (const auto at = line.find(marker); at != std::string::npos) lines[line.substr(at + marker.size())] = number;
  }
  return lines;
}

// Every output locates the target constructs and their data operations at
// the program's file, in the function they are written in (inlined into
// main), at the construct's line. `exact`: the compiler recorded the lines
// (LLVM 22); else (clang 19) the runtime calls of `target data` and `target`
// have none, and the location must say so (line 0) rather than name another.
void check_target_locations(const std::string& name, const std::string& program,
                            const std::string& library_path, bool exact) {
  const std::map<std::string, int> line = construct_lines();
  const std::set<int> target_data{line.at("target data"), line.at("target enter data")};
  // The end of `target data` is left out: even LLVM 22's clang gives its
  // runtime call the line of the last statement inside the region.
  const std::map<std::string, std::set<int>> expected{
      {"target [device 0]", {line.at("target")}},
      {"target enter data [device 0]", target_data},
      {"alloc", target_data},
      {"transfer to device", target_data},
      {"target update [device 0]", {line.at("target update")}},
      {"transfer from device", {line.at("target update"), line.at("target exit data")}}};
  const fs::path directory = fresh_directory(name);
  const fs::path trace = directory / "run.json";
  const ferret::testing::program_result ran = ferret::testing::run_program(
      directory, {program},
      {{"FERRET_BACKEND", "chrome,tau"}, {"FERRET_OUTPUT", "run"}, {"LD_LIBRARY_PATH", library_path}},
      std::chrono::minutes{2});
  INFO("stderr: " << ran.err);
  REQUIRE(ran.exit_code == 0);
  std::ifstream in{trace};
  const json parsed = json::parse(in);
  std::ifstream profile_file{directory / "run" / "profile.0.0.0"};
  REQUIRE(profile_file.good());
  const std::string profile{std::istreambuf_iterator<char>{profile_file}, {}};
  const std::string source_name = fs::path{FERRET_OMPT_TARGET_LOCATIONS_SOURCE}.filename();
  for (const auto& [label, lines] : expected) {
    CAPTURE(label);
    const json& locations = parsed["metadata"]["source-locations"][label];
    REQUIRE(locations.is_array());
    std::set<int> seen;
    for (const json& location : locations) {
      CAPTURE(location.dump());
      const std::string file = location.value("file", "");
      CHECK(fs::path{file}.filename() == source_name);
      CHECK(location.value("function", "").rfind("(anonymous namespace)::offload_phase(", 0) == 0);
      const int at = location.value("line", -1);
      CHECK((lines.count(at) == 1 || (!exact && at == 0)));
      seen.insert(at);
      // TAU's name of the region carries the same file and line.
      CHECK(profile.find(fmt::format("\n\"{} [{{{}}} {{{},0}}]", label, file, at)) != std::string::npos);
    }
    if (exact) CHECK(seen == lines);
  }
}

}  // namespace

TEST_CASE("target_locations: target constructs at the user's file and line (clang 19)") {
  check_target_locations("target-locations", FERRET_OMPT_TARGET_LOCATIONS_PROGRAM, FERRET_LLVM_LIB_DIR,
                         false);
}

#ifdef FERRET_OMPT_TARGET_LOCATIONS_PROGRAM_LLVM22
TEST_CASE("target_locations_llvm22: target constructs at the user's file and line (LLVM 22)") {
  check_target_locations("target-locations-llvm22", FERRET_OMPT_TARGET_LOCATIONS_PROGRAM_LLVM22,
                         FERRET_OMPT_LLVM22_LIB_DIR, true);
}
#endif
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
  CHECK(openmp_slices(parsed, "parallel") == 2);
  CHECK(counter_values(parsed, "team size") == std::vector<double>{2, 2});
  // The worker's implicit tasks, barriers and waits lie within the parallel
  // regions of the primary thread: libomp reports the end of a worker's join
  // barrier only at the next region (here 50 ms of serial code later) or at
  // its shutdown, after ferret's exit; they end when the primary thread left
  // the barrier, and none is left open at exit.
  const auto parallels = events(parsed, "X", "parallel");
  REQUIRE(parallels.size() == 2);
  std::size_t worker_slices = 0;
  for (const char* name : {"implicit task", "implicit barrier", "implicit barrier wait"})
    for (const json& slice : events(parsed, "X", name)) {
      if (slice["tid"] == parallels[0]["tid"]) continue;
      ++worker_slices;
      const double begin = slice["ts"].get<double>(), end = begin + slice["dur"].get<double>();
      const bool within = std::any_of(parallels.begin(), parallels.end(), [&](const json& parallel) {
        const double from = parallel["ts"].get<double>(), to = from + parallel["dur"].get<double>();
        return from <= begin && end <= to + 0.001;
      });
      CHECK_MESSAGE(within, name << " of the worker at " << begin << "-" << end << " us");
    }
  CHECK(worker_slices == 6);
  CHECK(metadata_count(parsed, "unfinished-regions") == 0);
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
