// The Level Zero collector from outside: an unmodified program (no ferret in
// it) on ferret's test driver behind Debian's loader, traced through
// ferret-run, its trace checked strictly (ferret::trace_check) and read with
// nlohmann::json; and the ways it must stay out of the program's way.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/run_program.hpp"
#include "trace_check.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path fresh_directory(const std::string& name) {
  return ferret::testing::fresh_directory("level-zero-test", name);
}

ferret::testing::environment driver_environment() {
  return {{"ZE_ENABLE_ALT_DRIVERS", FERRET_ZE_TEST_DRIVER}};
}

std::size_t count_events(const json& trace, const std::string& phase, const std::string& category,
                         const std::string& name) {
  std::size_t count = 0;
  for (const json& event : trace["traceEvents"])
    count += event.value("ph", "") == phase && event.value("cat", "") == category && event.value("name", "") == name;
  return count;
}

std::vector<std::string> ferret_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);)
    if (line.rfind("ferret", 0) == 0) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("ferret_run: an unmodified program traced through ferret-run (preload, tracing layer)") {
  const fs::path directory = fresh_directory("ferret-run");
  const fs::path trace_path = directory / "trace.json";
  const auto result = ferret::testing::run_program(
      directory, {FERRET_RUN, "--backend", "chrome", "--output", trace_path.string(), "--", FERRET_ZE_PLAIN_PROGRAM},
      driver_environment(), std::chrono::minutes{1});
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  const auto check = ferret::trace_check::check_file(trace_path.string());
  std::string errors;
  for (const std::string& error : check.errors) errors += error + "\n";
  CHECK_MESSAGE(check.ok(), errors);
  std::ifstream in{trace_path};
  const json trace = json::parse(in);

  // One saxpy on the immediate list and one per run of the regular list.
  CHECK(count_events(trace, "X", "kernel", "saxpy") == 3);
  CHECK(count_events(trace, "X", "memcpy", "Memcpy HtoD") == 2);
  CHECK(count_events(trace, "X", "memcpy", "Memcpy DtoH") == 3);
  CHECK(count_events(trace, "b", "sync", "stream wait synchronization") == 2);  // the barriers
  CHECK(count_events(trace, "X", "level_zero", "zeCommandListAppendLaunchKernel") == 2);
  CHECK(count_events(trace, "X", "level_zero", "zeCommandQueueExecuteCommandLists") == 2);
  CHECK(count_events(trace, "X", "level_zero", "zeMemAllocDevice") == 2);
  // Every kernel and copy has its launch: a flow from the call (barriers are
  // synchronisations, without flows).
  CHECK(count_events(trace, "f", "launch", "launch") == 8);
  const json& metadata = trace["metadata"];
  CHECK(metadata.at("level-zero-operations").get<std::int64_t>() == 10);
  CHECK(metadata.at("level-zero-operations-untimed").get<std::int64_t>() == 0);
  CHECK(metadata.at("level-zero-operations-without-submission").get<std::int64_t>() == 0);
  CHECK(metadata.at("level-zero-api-unrecorded:zeKernelSetArgumentValue").get<std::int64_t>() == 3);
  CHECK(metadata.at("gpu-operations-without-launch").get<std::int64_t>() == 0);
  for (const json& event : trace["traceEvents"])
    if (event.value("cat", "") == "kernel") {
      CHECK(event["args"]["SIMD width"] == 32);
      CHECK(event["args"]["grid"] == json::array({8, 1, 1}));
      CHECK(event["args"]["block"] == json::array({128, 1, 1}));
      CHECK(event["args"]["device"] == 64);
    }
}

TEST_CASE("layer_disabled: ZE_ENABLE_TRACING_LAYER=0 gives one line and the program runs on") {
  const fs::path directory = fresh_directory("layer-disabled");
  auto environment = driver_environment();
  environment.emplace_back("ZE_ENABLE_TRACING_LAYER", "0");
  const auto result = ferret::testing::run_program(
      directory, {FERRET_RUN, "--backend", "chrome", "--output", (directory / "trace.json").string(), "--",
                  FERRET_ZE_PLAIN_PROGRAM},
      environment, std::chrono::minutes{1});
  CHECK(result.exit_code == 0);
  // One line about Level Zero; the other is the exit summary naming the (host-only) trace.
  const auto lines = ferret_lines(result.err);
  INFO("stderr: " << result.err);
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].find("ferret: chrome trace:") == 0);
  CHECK(lines[0].find("Level Zero tracing layer is not available") != std::string::npos);
  CHECK(lines[0].find("ZE_ENABLE_TRACING_LAYER=0") != std::string::npos);
}

TEST_CASE("off: preloaded without FERRET_BACKEND, the collector stays out") {
  const fs::path directory = fresh_directory("off");
  auto environment = driver_environment();
  environment.emplace_back("LD_PRELOAD", FERRET_ZE_COLLECTOR);
  const auto result = ferret::testing::run_program(directory, {FERRET_ZE_PLAIN_PROGRAM}, environment,
                                                   std::chrono::minutes{1});
  CHECK(result.exit_code == 0);
  CHECK(result.err.empty());
  // Nothing written beside the program's own stdout and stderr.
  for (const auto& entry : fs::directory_iterator{directory})
    CHECK((entry.path().filename() == "stdout" || entry.path().filename() == "stderr"));
}

namespace {

// The plain program through ferret-run with FERRET_LEVEL_ZERO_API=`recording`.
json traced_with(const std::string& name, const std::string& recording) {
  const fs::path directory = fresh_directory(name);
  const fs::path trace_path = directory / "trace.json";
  auto environment = driver_environment();
  environment.emplace_back("FERRET_LEVEL_ZERO_API", recording);
  const auto result = ferret::testing::run_program(
      directory, {FERRET_RUN, "--backend", "chrome", "--output", trace_path.string(), "--", FERRET_ZE_PLAIN_PROGRAM},
      environment, std::chrono::minutes{1});
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(ferret_lines(result.err).size() == 1);  // the exit line only
  std::ifstream in{trace_path};
  return json::parse(in);
}

}  // namespace

TEST_CASE("api_policy: FERRET_LEVEL_ZERO_API=all records every call, work-uncounted counts none") {
  const json all = traced_with("api-all", "all");
  CHECK(count_events(all, "X", "level_zero", "zeKernelSetArgumentValue") == 3);
  CHECK(count_events(all, "X", "level_zero", "zeContextCreate") == 1);
  CHECK(count_events(all, "X", "kernel", "saxpy") == 3);
  CHECK(all["metadata"].at("level-zero-api") == "all");
  CHECK_FALSE(all["metadata"].contains("level-zero-api-unrecorded:zeKernelSetArgumentValue"));

  const json uncounted = traced_with("api-uncounted", "work-uncounted");
  CHECK(count_events(uncounted, "X", "level_zero", "zeKernelSetArgumentValue") == 0);
  CHECK(count_events(uncounted, "X", "kernel", "saxpy") == 3);
  for (const auto& [key, value] : uncounted["metadata"].items()) CHECK(key.find("api-unrecorded") == std::string::npos);
}

TEST_CASE("api_invalid: a bad FERRET_LEVEL_ZERO_API gives one line and the program runs on") {
  const fs::path directory = fresh_directory("api-invalid");
  auto environment = driver_environment();
  environment.emplace_back("FERRET_LEVEL_ZERO_API", "some");
  const auto result = ferret::testing::run_program(
      directory, {FERRET_RUN, "--backend", "chrome", "--output", (directory / "trace.json").string(), "--",
                  FERRET_ZE_PLAIN_PROGRAM},
      environment, std::chrono::minutes{1});
  CHECK(result.exit_code == 0);
  const auto lines = ferret_lines(result.err);
  INFO("stderr: " << result.err);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "ferret: FERRET_LEVEL_ZERO_API='some' is not valid (expected work, work-uncounted or all); "
                    "running without Level Zero data");
}
