// gpu_cuda_api_test: the CUDA collector on real programs, checked against what
// the programs did and against an independent tracer.
//
//   event polling   gpu-test-event-polling (launch, then poll an event or the
//                   stream until done) through ferret-run: no operation
//                   without its call; each synchronisation record joined to
//                   the query that saw the work done.
//   api policy      the same program with FERRET_CUDA_API=all: the same GPU
//                   work; each call counted by default is there as regions.
//   pytorch         a loop of small tensor operations (ferret-torch-small-ops.py)
//                   under ferret-run, under ferret-run with FERRET_CUDA_API=all,
//                   and under torch.profiler: the same kernels in all three,
//                   at least 10x fewer API events by default than with all.
//
// Needs a GPU (else "skipped: <reason>", exit 77); the PyTorch case also a
// python3 with torch that sees it. Lines starting "cuda-api-test:" carry the
// numbers (tests/gpu/run.sh puts them in its summary). Each case runs in its
// own folder under $FERRET_GPU_TEST_OUTPUT (kept) or a temporary folder
// (removed when every case passes). Doctest's options apply.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gpu_test_support.hpp"
#include "trace_check.hpp"

namespace {

using namespace ferret::gpu_testing;

constexpr auto time_limit = std::chrono::minutes(3);  // PyTorch under a tracer: ~30 s

struct test_setup {
  fs::path programs;
  fs::path outputs;
  std::string device_name;
};
test_setup setup;

program_run run_case(const std::string& name, const std::vector<std::string>& command,
                     const environment& variables) {
  program_run run = run_in(setup.outputs / name, command, variables, time_limit);
  REQUIRE(run.pid > 0);
  if (run.timed_out) FAIL_CHECK(command[0] << " ran longer than the limit and was killed");
  if (run.exit_code != 0) MESSAGE(command[0] << " failed; stderr:\n" << run.err);
  return run;
}

// A traced run: the program under ferret-run with the chrome and summary
// backends and FERRET_CUDA_API=`recording` ("" for the default).
program_run traced_run(const std::string& name, const std::vector<std::string>& command,
                       const std::string& recording) {
  environment variables{{"FERRET_VERBOSE", "1"}};
  if (!recording.empty()) variables.emplace_back("FERRET_CUDA_API", recording);
  return run_case(name, through_ferret_run(command), variables);
}

// The trace of a run, checked against Perfetto's import rules, with nothing
// dropped and every GPU operation joined to its call.
json checked_trace(const program_run& run) {
  const auto report = ferret::trace_check::check_file(run.trace().string());
  for (const auto& error : report.errors) MESSAGE(error);
  CHECK(report.ok());
  const json trace = load_trace(run.trace());
  REQUIRE(trace.is_object());
  const json& metadata = trace.at("metadata");
  CHECK(metadata.value("events-dropped", -1) == 0);
  CHECK(metadata.value("gpu-operations", -1) > 0);
  CHECK(metadata.value("gpu-operations-without-launch", -1) == 0);
  return trace;
}

// Device operations (X events on a GPU) of a category: kernel, memcpy, memset.
std::vector<const json*> operations(const json& trace, const std::string& category) {
  return events_where(trace, [&](const json& e) {
    return e.value("ph", "") == "X" && on_gpu(e) && e.value("cat", "") == category;
  });
}

// Synchronisations (async "b" events on a GPU) by their name.
std::vector<const json*> synchronizations(const json& trace) {
  return events_where(trace, [&](const json& e) {
    return e.value("ph", "") == "b" && on_gpu(e) && e.value("cat", "") == "sync";
  });
}

std::string launch_of(const json& event) {
  return event.contains("args") ? event.at("args").value("launch", "") : "";
}

// CUDA API regions on the host, by name.
std::map<std::string, std::int64_t> api_regions(const json& trace) {
  std::map<std::string, std::int64_t> by_name;
  for (const json* event : events_where(trace, [](const json& e) {
         return e.value("ph", "") == "X" && !on_gpu(e) && e.value("cat", "") == "cuda";
       }))
    ++by_name[event->at("name").get<std::string>()];
  return by_name;
}

std::int64_t total(const std::map<std::string, std::int64_t>& counts) {
  std::int64_t sum = 0;
  for (const auto& [name, count] : counts) sum += count;
  return sum;
}

// "cuda-api-unrecorded:<call>" entries of the metadata, by call.
std::map<std::string, std::int64_t> unrecorded_calls(const json& trace) {
  const std::string prefix = "cuda-api-unrecorded:";
  std::map<std::string, std::int64_t> counted;
  for (const auto& [key, value] : trace.at("metadata").items())
    if (key.rfind(prefix, 0) == 0) counted[key.substr(prefix.size())] = value.get<std::int64_t>();
  return counted;
}

std::string listed(const std::map<std::string, std::int64_t>& counts) {
  std::vector<std::pair<std::int64_t, std::string>> sorted;
  for (const auto& [name, count] : counts) sorted.emplace_back(count, name);
  std::sort(sorted.rbegin(), sorted.rend());
  std::string text;
  for (const auto& [count, name] : sorted) text += fmt::format("{}{} {}", text.empty() ? "" : ", ", name, count);
  return text.empty() ? "none" : text;
}

struct gpu_work {
  std::size_t kernels = 0, copies = 0, memsets = 0;
  std::int64_t copy_bytes = 0, memset_bytes = 0;
  bool operator==(const gpu_work& other) const {
    return kernels == other.kernels && copies == other.copies && memsets == other.memsets &&
           copy_bytes == other.copy_bytes && memset_bytes == other.memset_bytes;
  }
};

gpu_work work_in(const json& trace) {
  gpu_work work;
  work.kernels = operations(trace, "kernel").size();
  for (const json* copy : operations(trace, "memcpy")) {
    ++work.copies;
    work.copy_bytes += copy->at("args").at("bytes").get<std::int64_t>();
  }
  for (const json* memset : operations(trace, "memset")) {
    ++work.memsets;
    work.memset_bytes += memset->at("args").at("bytes").get<std::int64_t>();
  }
  return work;
}

std::string describe(const gpu_work& work) {
  return fmt::format("{} kernels, {} copies ({} bytes), {} memsets ({} bytes)", work.kernels,
                     work.copies, work.copy_bytes, work.memsets, work.memset_bytes);
}

bool starts_with_any(const std::string& text, std::initializer_list<const char*> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const char* prefix) { return text.rfind(prefix, 0) == 0; });
}

program_run& event_polling_run(const std::string& recording) {
  static std::map<std::string, program_run> runs;
  const auto found = runs.find(recording);
  if (found != runs.end()) return found->second;
  const std::string name = recording.empty() ? "event-polling" : "event-polling-" + recording;
  return runs
      .emplace(recording, traced_run(name, {(setup.programs / "gpu-test-event-polling").string()},
                                     recording))
      .first->second;
}

}  // namespace

TEST_CASE("event polling: every operation joined to its call, each wait to the query that saw it done") {
  const program_run& run = event_polling_run("");
  REQUIRE(run.exit_code == 0);
  const json expected = run.line("expected");
  REQUIRE(expected.is_object());
  const json trace = checked_trace(run);
  CHECK(trace.at("metadata").value("cuda-api", "") == "work");

  const auto kernels = operations(trace, "kernel");
  CHECK(kernels.size() == expected.at("kernels").get<std::size_t>());
  for (const json* kernel : kernels)
    CHECK_MESSAGE(starts_with_any(launch_of(*kernel), {"cudaLaunchKernel", "__cudaLaunchKernel", "cuLaunchKernel"}),
                  kernel->dump());
  CHECK(work_in(trace).copy_bytes == expected.at("copy bytes").get<std::int64_t>());
  CHECK(work_in(trace).memset_bytes == expected.at("memset bytes").get<std::int64_t>());

  // Every poll is a region; the queries that found the work done (one per
  // round) have the synchronisation records, joined to them.
  const auto regions = api_regions(trace);
  const auto regions_named = [&](const std::string& name) {
    const auto it = regions.find(name);
    return it == regions.end() ? std::int64_t{0} : it->second;
  };
  CHECK(regions_named("cudaEventQuery") == expected.at("event queries").get<std::int64_t>());
  CHECK(regions_named("cudaStreamQuery") == expected.at("stream queries").get<std::int64_t>());
  CHECK(regions_named("cudaEventRecord") == expected.at("event records").get<std::int64_t>());
  CHECK(regions_named("cudaEventSynchronize") == 1);
  std::map<std::string, std::int64_t> waits;  // "<synchronization> by <call>"
  for (const json* sync : synchronizations(trace)) {
    const std::string call = launch_of(*sync);
    CHECK_MESSAGE(!call.empty(), "a synchronisation without its call: " << sync->dump());
    ++waits[sync->at("name").get<std::string>() + " by " + call];
  }
  CHECK(waits["event synchronization by cudaEventQuery"] == expected.at("event rounds").get<std::int64_t>());
  CHECK(waits["event synchronization by cudaEventSynchronize"] == 1);
  CHECK(waits["stream synchronization by cudaStreamQuery"] == expected.at("stream rounds").get<std::int64_t>());
  std::int64_t waits_total = 0;
  for (const auto& [what, count] : waits) waits_total += count;
  CHECK(waits_total == expected.at("event rounds").get<std::int64_t>() +
                           expected.at("stream rounds").get<std::int64_t>() + 1);

  std::printf("cuda-api-test: event polling: %s; %lld event and %lld stream queries; waits: %s; "
              "operations without their call: %lld\n",
              describe(work_in(trace)).c_str(),
              static_cast<long long>(expected.at("event queries").get<std::int64_t>()),
              static_cast<long long>(expected.at("stream queries").get<std::int64_t>()),
              listed(waits).c_str(),
              static_cast<long long>(trace.at("metadata").value("gpu-operations-without-launch", -1)));
  std::printf("cuda-api-test: event polling: API regions %s; counted %s\n", listed(regions).c_str(),
              listed(unrecorded_calls(trace)).c_str());
}

TEST_CASE("api policy: FERRET_CUDA_API=all records the same GPU work, and each counted call as regions") {
  const program_run& work_run = event_polling_run("");
  const program_run& all_run = event_polling_run("all");
  REQUIRE(work_run.exit_code == 0);
  REQUIRE(all_run.exit_code == 0);
  const json work_trace = checked_trace(work_run);
  const json all_trace = checked_trace(all_run);
  CHECK(all_trace.at("metadata").value("cuda-api", "") == "all");

  const gpu_work by_default = work_in(work_trace);
  const gpu_work with_all = work_in(all_trace);
  CHECK_MESSAGE(by_default == with_all, describe(by_default) << " vs " << describe(with_all));

  // The program makes the same calls in both runs but for the number of polls:
  // what the default counted, `all` has as regions.
  const auto counted = unrecorded_calls(work_trace);
  const auto all_regions = api_regions(all_trace);
  CHECK(!counted.empty());
  for (const auto& [call, count] : counted) {
    CAPTURE(call);
    const auto it = all_regions.find(call);
    CHECK(it != all_regions.end());
    if (it != all_regions.end()) CHECK(it->second == count);
  }
  CHECK(unrecorded_calls(all_trace).empty());
  std::printf("cuda-api-test: api policy (event polling): %s either way; API regions %lld by "
              "default (+%lld calls counted), %lld with all\n",
              describe(by_default).c_str(), static_cast<long long>(total(api_regions(work_trace))),
              static_cast<long long>(total(counted)), static_cast<long long>(total(all_regions)));
}

// A small-op loop launches one kernel per op, and the launch is a region by
// default: the default trace holds one API event per kernel and a few more, so
// the reduction is bounded by the calls PyTorch makes per launch (8x on the
// H100/H200 with PyTorch 2.x: six cudaGetDevice and one cudaGetLastError).
TEST_CASE("pytorch: the kernels torch.profiler counts; FERRET_CUDA_API=all: the same work, every non-work call counted only by default") {
  const std::vector<std::string> script{"python3", (setup.programs / "ferret-torch-small-ops.py").string(),
                                        "--ops", "4000", "--warmup", "50"};
  const program_run work_run = traced_run("pytorch-small-ops", script, "");
  const program_run all_run = traced_run("pytorch-small-ops-all", script, "all");
  std::vector<std::string> profiled = script;
  profiled.push_back("--profiler");
  const program_run profiler_run = run_case("pytorch-small-ops-profiler", profiled, {});
  REQUIRE(work_run.exit_code == 0);
  REQUIRE(all_run.exit_code == 0);
  REQUIRE(profiler_run.exit_code == 0);
  const json expected = work_run.line("expected");
  const json profiler = profiler_run.line("torch-profiler");
  REQUIRE(expected.is_object());
  REQUIRE(profiler.is_object());

  const json work_trace = checked_trace(work_run);
  const json all_trace = checked_trace(all_run);
  const gpu_work by_default = work_in(work_trace);
  const gpu_work with_all = work_in(all_trace);
  CHECK(by_default.kernels >= expected.at("step kernels").get<std::size_t>());
  CHECK(by_default.kernels == profiler.at("kernels").get<std::size_t>());
  CHECK_MESSAGE(by_default == with_all, describe(by_default) << " vs " << describe(with_all));

  const auto default_regions = api_regions(work_trace);
  const auto all_regions = api_regions(all_trace);
  const double ratio = static_cast<double>(total(all_regions)) /
                       static_cast<double>(std::max<std::int64_t>(total(default_regions), 1));
  const auto kernels = static_cast<std::int64_t>(by_default.kernels);
  CHECK_MESSAGE(total(default_regions) <= kernels + kernels / 100 + 16,
                "API regions by default beyond one per launch: " << total(default_regions) - kernels);
  CHECK(ratio >= 5.0);
  for (const auto& [call, count] : unrecorded_calls(work_trace)) {
    CAPTURE(call);
    CHECK(all_regions.count(call) == 1);
  }
  std::printf("cuda-api-test: pytorch small ops: kernels %zu by ferret, %zu by ferret with all, "
              "%lld by torch.profiler; API events %lld by default, %lld with all (%.1fx)\n",
              by_default.kernels, with_all.kernels,
              static_cast<long long>(profiler.at("kernels").get<std::int64_t>()),
              static_cast<long long>(total(default_regions)),
              static_cast<long long>(total(all_regions)), ratio);
  std::printf("cuda-api-test: pytorch small ops: API regions by default %s\n",
              listed(default_regions).c_str());
  std::printf("cuda-api-test: pytorch small ops: counted by default %s\n",
              listed(unrecorded_calls(work_trace)).c_str());
}

int main(int argc, char** argv) {
  setup.programs = programs_folder();
  if (const auto reason = gpu_unusable_reason(setup.device_name)) {
    std::printf("skipped: %s\n", reason->c_str());
    return 77;
  }
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  if (const auto reason = torch_unusable_reason()) {
    std::printf("skipped: the pytorch case: %s\n", reason->c_str());
    context.addFilter("test-case-exclude", "pytorch*");
  }
  const char* kept = std::getenv("FERRET_GPU_TEST_OUTPUT");
  setup.outputs = kept != nullptr && *kept != '\0'
                      ? fs::absolute(kept)
                      : fs::temp_directory_path() / fmt::format("ferret-gpu-cuda-api-test-{}", getpid());
  std::printf("gpu_cuda_api_test: GPU 0 is %s; programs in %s; outputs in %s\n",
              setup.device_name.c_str(), setup.programs.c_str(), setup.outputs.c_str());
  std::fflush(stdout);
  const int failures = context.run();
  if (context.shouldExit() || kept != nullptr) return failures;
  std::error_code error;
  if (failures == 0)
    fs::remove_all(setup.outputs, error);
  else
    std::printf("gpu_cuda_api_test: traces and output kept in %s\n", setup.outputs.c_str());
  return failures;
}
