// gpu_trace_test: runs the GPU test programs (tests/gpu/*.cu and a PyTorch
// script) traced with the chrome and summary backends, and checks the traces
// and the summaries against work known exactly.
//
// Needs a GPU: without a usable one it prints "skipped: <reason>" and exits 77
// (CTest's SKIP_RETURN_CODE). The PyTorch case is left out, with its reason,
// when python3 has no torch that sees a GPU; the OpenMP offload case when its
// program was not built (no clang with LLVM's NVIDIA device runtime) or the
// LLVM offload runtime cannot be loaded (FERRET_GPU_TEST_LLVM_LIBS names its
// folder, tests/gpu/run.sh unpacks it there). The programs, ferret-run and the
// script are found beside this executable, so the build folder may be carried
// to a GPU machine at another path. Each case runs in its own folder under
// $FERRET_GPU_TEST_OUTPUT (kept) or under a temporary folder (removed when
// every case passes). Doctest's options apply (e.g. -tc="ops*").
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpu_test_support.hpp"
#include "support/run_program.hpp"
#include "tau_check.hpp"
#include "trace_check.hpp"
#if FERRET_HAVE_OTF2
#include "otf2_check.hpp"
#include "support/chrome_otf2_compare.hpp"
#endif

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr std::int64_t mebibyte = 1 << 20;
constexpr auto program_time_limit = std::chrono::minutes(2);  // PyTorch: ~30 s

// Facts main() establishes before any case runs.
struct test_setup {
  fs::path programs;        // the folder of this executable: bin/ of the build
  fs::path outputs;         // each case's folder goes here
  std::string device_name;  // of device 0, as the driver names it
  std::string llvm_libraries;  // FERRET_GPU_TEST_LLVM_LIBS: the LLVM offload runtime's folders
};
test_setup setup;

// ---------------------------------------------------------------------------
// Running a program in its own folder, with a controlled environment.

struct program_run : ferret::testing::program_result {
  fs::path directory;
  fs::path trace() const { return directory / "trace.json"; }

  /// What the program says the trace must show: its line "expected {json}".
  json expected() const {
    std::istringstream lines{out};
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("expected ", 0) == 0) return json::parse(line.substr(9));
    FAIL("no line \"expected {...}\" on the program's stdout");
    return {};
  }
};

fs::path program(const std::string& name) { return setup.programs / name; }

using ferret::testing::environment;

// Both outputs, into trace.json in the program's folder and on stderr.
environment traced() {
  return {{"FERRET_BACKEND", "chrome,summary"}, {"FERRET_OUTPUT", "trace.json"},
          {"FERRET_VERBOSE", "1"}};
}

program_run run_program(const std::string& case_name, const std::vector<std::string>& command,
                        const environment& variables) {
  program_run result;
  result.directory = setup.outputs / case_name;
  fs::remove_all(result.directory);
  fs::create_directories(result.directory);
  static_cast<ferret::testing::program_result&>(result) =
      ferret::testing::run_program(result.directory, command, variables, program_time_limit);
  REQUIRE(result.pid > 0);
  if (result.timed_out) FAIL_CHECK(command[0] << " ran longer than the limit and was killed");
  if (result.exit_code != 0) MESSAGE(command[0] << " failed; stderr:\n" << result.err);
  return result;
}

// ---------------------------------------------------------------------------
// Reading the trace.

json load_trace(const fs::path& path) {
  std::ifstream in{path};
  REQUIRE_MESSAGE(in.good(), "no trace at " << path);
  return json::parse(in);
}

std::uint64_t gpu_process_id(std::uint64_t device, pid_t host_pid) {
  return 0x80000000u | (device << 22) | (static_cast<std::uint64_t>(host_pid) & 0x3FFFFFu);
}

bool on_gpu(const json& event) { return (event.at("pid").get<std::uint64_t>() & 0x80000000u) != 0; }

// Chrome times are microseconds with three decimals: whole nanoseconds.
std::int64_t nanoseconds(const json& microseconds) {
  return std::llround(microseconds.get<double>() * 1000.0);
}

struct span {
  std::int64_t start, end;  // ns
  bool contains(const span& inner) const { return start <= inner.start && inner.end <= end; }
};
span span_of(const json& complete_event) {
  const std::int64_t start = nanoseconds(complete_event.at("ts"));
  return {start, start + nanoseconds(complete_event.at("dur"))};
}

template <typename Predicate>
std::vector<const json*> events_where(const json& trace, Predicate predicate) {
  std::vector<const json*> found;
  for (const json& event : trace.at("traceEvents"))
    if (predicate(event)) found.push_back(&event);
  std::stable_sort(found.begin(), found.end(), [](const json* a, const json* b) {
    return a->value("ts", 0.0) < b->value("ts", 0.0);
  });
  return found;
}

// Kernels, copies and memsets (X events on GPU processes) of one category.
std::vector<const json*> gpu_operations(const json& trace, const std::string& category) {
  return events_where(trace, [&](const json& e) {
    return e.value("ph", "") == "X" && on_gpu(e) && e.value("cat", "") == category;
  });
}

// Host regions (X events of the process) named `name`.
std::vector<const json*> host_regions(const json& trace, pid_t host_pid, const std::string& name) {
  return events_where(trace, [&](const json& e) {
    return e.value("ph", "") == "X" && e.at("pid") == host_pid && e.value("name", "") == name;
  });
}

const json& args_of(const json& event) { return event.at("args"); }

// The launching call named in "launch" starts with one of `prefixes` (the
// collector may report the runtime or the driver call, with or without a
// version suffix).
bool launched_by(const json& event, std::initializer_list<const char*> prefixes) {
  const json& args = args_of(event);
  if (!args.contains("launch")) return false;
  const std::string launch = args.at("launch").get<std::string>();
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const char* prefix) { return launch.rfind(prefix, 0) == 0; });
}

std::string describe(const json* event) { return event == nullptr ? "none" : event->dump(); }

// Keys that occur more than once in the trace's top-level "metadata" object
// (a JSON reader silently keeps one of them).
std::vector<std::string> duplicate_metadata_keys(const fs::path& path) {
  std::ifstream in{path};
  std::string root_key;
  std::set<std::string> seen;
  std::vector<std::string> duplicates;
  // Only the keys matter: everything below the root's members is dropped.
  const json skeleton = json::parse(in, [&](int depth, json::parse_event_t event, json& parsed) {
    if (event != json::parse_event_t::key) return depth < 2;
    if (depth == 1) root_key = parsed.get<std::string>();
    if (depth == 2 && root_key == "metadata" && !seen.insert(parsed.get<std::string>()).second)
      duplicates.push_back(parsed.get<std::string>());
    return true;
  });
  CHECK(skeleton.contains("metadata"));
  return duplicates;
}

// ---------------------------------------------------------------------------
// What every trace of a GPU program satisfies, whatever the program ran.
// Returns, for each GPU operation, the "s" event of its launch flow.

std::map<const json*, const json*> check_common(const json& trace, const fs::path& path,
                                                pid_t host_pid) {
  const auto report = ferret::trace_check::check_file(path.string());
  for (const auto& error : report.errors) MESSAGE(error);
  CHECK(report.ok());
  const json& metadata = report.metadata;
  REQUIRE(metadata.is_object());
  for (const std::string& key : duplicate_metadata_keys(path))
    FAIL_CHECK("metadata key \"" << key << "\" occurs more than once");
  CHECK(metadata.value("events-dropped", -1) == 0);
  CHECK(metadata.value("gpu-operations", -1) > 0);
  CHECK(metadata.value("gpu-operations-without-launch", -1) == 0);

  // Device 0's process: its name and place.
  const std::uint64_t gpu0 = gpu_process_id(0, host_pid);
  REQUIRE(report.process_names.count(gpu0) == 1);
  CHECK(report.process_names.at(gpu0) == "GPU 0: " + setup.device_name);
  std::map<std::uint64_t, json> process_sort_index;
  std::map<std::pair<std::uint64_t, std::uint64_t>, json> thread_sort_index;
  for (const json& event : trace.at("traceEvents")) {
    if (event.value("ph", "") != "M") continue;
    const auto pid = event.at("pid").get<std::uint64_t>();
    if (event.value("name", "") == "process_sort_index")
      process_sort_index[pid] = event.at("args").at("sort_index");
    if (event.value("name", "") == "thread_sort_index")
      thread_sort_index[{pid, event.at("tid").get<std::uint64_t>()}] = event.at("args").at("sort_index");
  }
  CHECK(process_sort_index[gpu0] == 1000);

  // Every operation: on its device's process, on its stream's track.
  std::vector<const json*> operations;
  for (const char* category : {"kernel", "memcpy", "memset"})
    for (const json* op : gpu_operations(trace, category)) operations.push_back(op);
  CHECK(!operations.empty());
  for (const json* op : operations) {
    CAPTURE(describe(op));
    const json& args = args_of(*op);
    const auto device = args.at("device").get<std::uint64_t>();
    const auto stream = args.at("stream").get<std::uint64_t>();
    const auto pid = op->at("pid").get<std::uint64_t>();
    const auto tid = op->at("tid").get<std::uint64_t>();
    CHECK(pid == gpu_process_id(device, host_pid));
    CHECK(tid == stream + 1);
    const auto track = std::make_pair(pid, tid);
    CHECK(report.thread_names.count(track) == 1);
    if (report.thread_names.count(track) == 1)
      CHECK(report.thread_names.at(track) == fmt::format("stream {}", stream));
    CHECK(thread_sort_index[track] == stream);
    CHECK(args.at("correlation").get<std::uint64_t>() > 0);
    if (op->at("cat") == "memcpy") {
      CHECK(op->at("name") == "Memcpy " + args.at("kind").get<std::string>());
      // Small copies take too little time for a rate worth comparing.
      if (args.at("bytes").get<std::int64_t>() >= 64 * 1024) {
        const double bytes_per_ns = args.at("bytes").get<double>() /
                                    static_cast<double>(nanoseconds(op->at("dur")));
        CHECK(args.at("GB/s").get<double>() == doctest::Approx(bytes_per_ns).epsilon(0.01));
      }
    }
    if (op->at("cat") == "memset") CHECK(op->at("name") == "Memset");
  }

  // Launch flows: one "f" bound to the start of each operation, one "s" on
  // the host for each "f", ids unique.
  std::multimap<std::tuple<std::uint64_t, std::uint64_t, std::int64_t>, const json*> flow_ends;
  std::multimap<std::string, const json*> flow_starts;
  std::size_t flow_end_count = 0;
  for (const json& event : trace.at("traceEvents")) {
    const std::string phase = event.value("ph", "");
    if (phase == "f") {
      ++flow_end_count;
      flow_ends.emplace(std::make_tuple(event.at("pid").get<std::uint64_t>(),
                                        event.at("tid").get<std::uint64_t>(),
                                        nanoseconds(event.at("ts"))),
                        &event);
    } else if (phase == "s") {
      flow_starts.emplace(event.at("id").dump(), &event);
    }
  }
  CHECK(flow_end_count == operations.size());
  CHECK(flow_starts.size() == operations.size());
  std::map<const json*, const json*> launch_of;
  std::set<std::string> flow_ids;
  for (const json* op : operations) {
    CAPTURE(describe(op));
    const auto ends = flow_ends.equal_range(std::make_tuple(
        op->at("pid").get<std::uint64_t>(), op->at("tid").get<std::uint64_t>(),
        nanoseconds(op->at("ts"))));
    REQUIRE(std::distance(ends.first, ends.second) == 1);
    const json& end = *ends.first->second;
    CHECK(end.value("cat", "") == "launch");
    CHECK(end.value("name", "") == "launch");
    CHECK(end.value("bp", "") == "e");
    const std::string id = end.at("id").dump();
    CHECK(flow_ids.insert(id).second);
    const auto starts = flow_starts.equal_range(id);
    REQUIRE(std::distance(starts.first, starts.second) == 1);
    const json& start = *starts.first->second;
    CHECK(start.value("cat", "") == "launch");
    CHECK(start.value("name", "") == "launch");
    CHECK(start.at("pid") == host_pid);
    launch_of[op] = &start;
  }
  return launch_of;
}

// True when no two GPU operations share a correlation id: each API call of the
// test programs starts one operation.
bool correlations_distinct(const json& trace) {
  std::set<std::uint64_t> correlations;
  std::size_t operations = 0;
  for (const char* category : {"kernel", "memcpy", "memset"})
    for (const json* op : gpu_operations(trace, category)) {
      ++operations;
      correlations.insert(args_of(*op).at("correlation").get<std::uint64_t>());
    }
  return correlations.size() == operations;
}

// The values of the "allocated memory" counter of one memory kind, in time order.
std::vector<std::int64_t> allocated_memory(const json& trace, std::uint64_t gpu_pid,
                                           const std::string& memory) {
  std::vector<std::int64_t> values;
  for (const json* event : events_where(trace, [&](const json& e) {
         return e.value("ph", "") == "C" && e.at("pid") == gpu_pid &&
                e.value("name", "") == "allocated memory";
       })) {
    CAPTURE(describe(event));
    const json& args = args_of(*event);
    CHECK(args.size() == 1);
    if (args.contains(memory)) values.push_back(args.at(memory).get<std::int64_t>());
  }
  return values;
}

// ---------------------------------------------------------------------------
// The summary on stderr.

const std::vector<std::string> summary_headings{
    "GPU time by calling context", "Kernels", "Copies", "Device-to-device bytes",
    "Data objects", "Memory", "Host regions"};

struct summary_report {
  std::string first_line;
  std::map<std::string, std::vector<std::string>> sections;  // heading -> its lines
  std::vector<std::string> loss_lines;

  bool has(const std::string& heading) const { return sections.count(heading) == 1; }
  const std::vector<std::string>& rows(const std::string& heading) const {
    static const std::vector<std::string> none;
    const auto it = sections.find(heading);
    return it == sections.end() ? none : it->second;
  }
};

std::string trimmed_right(std::string line) {
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

summary_report parse_summary(const std::string& err) {
  std::vector<std::string> lines;
  std::istringstream in{err};
  for (std::string line; std::getline(in, line);) lines.push_back(trimmed_right(line));
  summary_report summary;
  const auto first = std::find_if(lines.begin(), lines.end(), [](const std::string& line) {
    return line.rfind("ferret summary: ", 0) == 0;
  });
  if (first == lines.end()) return summary;
  summary.first_line = *first;
  // Each heading at most once, in this order; a section ends at the next
  // heading, a loss line, a runtime message or the end.
  std::vector<std::pair<std::size_t, std::string>> starts;
  std::size_t from = static_cast<std::size_t>(first - lines.begin()) + 1;
  for (const std::string& heading : summary_headings)
    for (std::size_t i = from; i < lines.size(); ++i)
      if (lines[i].rfind(heading, 0) == 0) {
        starts.emplace_back(i, heading);
        from = i + 1;
        break;
      }
  for (std::size_t i = static_cast<std::size_t>(first - lines.begin()); i < lines.size(); ++i)
    if (lines[i].rfind("Losses:", 0) == 0) summary.loss_lines.push_back(lines[i]);
  for (std::size_t s = 0; s < starts.size(); ++s) {
    const std::size_t end = s + 1 < starts.size() ? starts[s + 1].first : lines.size();
    auto& rows = summary.sections[starts[s].second];
    for (std::size_t i = starts[s].first + 1; i < end; ++i) {
      if (lines[i].rfind("Losses:", 0) == 0 || lines[i].rfind("ferret: ", 0) == 0) break;
      if (!lines[i].empty()) rows.push_back(lines[i]);
    }
  }
  return summary;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in{line};
  std::vector<std::string> found;
  for (std::string word; in >> word;) found.push_back(word);
  return found;
}

std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

// Table rows whose last column (the name) is `name`. Columns are separated by
// at least two spaces; names may hold single ones.
std::vector<std::string> rows_named(const std::vector<std::string>& rows, const std::string& name) {
  const std::string column = "  " + name;
  std::vector<std::string> found;
  for (const std::string& row : rows)
    if (row.size() >= column.size() &&
        row.compare(row.size() - column.size(), column.size(), column) == 0)
      found.push_back(row);
  return found;
}

// The columns of a row before its name (the last column).
std::vector<std::string> columns_before(const std::string& row, const std::string& name) {
  return words(row.substr(0, row.size() - name.size()));
}

// The one row named `name` in `rows`, checked to be the only one; "" if none.
std::string row_named(const std::vector<std::string>& rows, const std::string& name) {
  const auto found = rows_named(rows, name);
  CHECK_MESSAGE(found.size() == 1, "rows named \"" << name << "\": " << found.size());
  return found.size() == 1 ? found[0] : std::string{};
}

// The row of the Copies table for one direction ("HtoD"), or "".
std::string copies_row(const summary_report& summary, const std::string& direction) {
  for (const std::string& row : summary.rows("Copies")) {
    const auto columns = words(row);
    if (!columns.empty() && columns[0] == direction) return row;
  }
  return {};
}

// The first line names the program and counts what the chrome trace counts;
// nothing was lost; every line ferret printed is one it prints on success.
summary_report check_summary_basics(const program_run& run, const std::string& executable_pattern,
                                    const json& trace, const std::vector<std::string>& sections) {
  const summary_report summary = parse_summary(run.err);
  CAPTURE(run.err);
  const std::regex first_line{"ferret summary: (" + executable_pattern +
                              R"() \(pid ([0-9]+)\), ([0-9.]+) s, ([0-9]+) GPU operations)"};
  std::smatch match;
  REQUIRE(std::regex_match(summary.first_line, match, first_line));
  CHECK(std::stol(match[2].str()) == run.pid);
  CHECK(std::stod(match[3].str()) > 0.0);
  CHECK(std::stoll(match[4].str()) == trace.at("metadata").value("gpu-operations", -1));
  CHECK(summary.loss_lines.empty());
  for (const std::string& heading : sections)
    CHECK_MESSAGE(summary.has(heading), "no section \"" << heading << "\"");
  std::istringstream lines{run.err};
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("ferret: ", 0) == 0)
      CHECK_MESSAGE((line.rfind("ferret: chrome trace: ", 0) == 0 ||
                     line.rfind("ferret: summary", 0) == 0),
                    "unexpected message: " << line);
  return summary;
}

std::vector<std::string> command_through_ferret_run(std::vector<std::string> command) {
  std::vector<std::string> full{program("ferret-run").string(), "--output", "trace.json", "--"};
  full.insert(full.end(), command.begin(), command.end());
  return full;
}

}  // namespace

// ---------------------------------------------------------------------------

// CUPTI reports the registers a thread is allocated; cudaFuncGetAttributes
// the registers the code uses. The hardware allocates them per warp in units
// of 256, i.e. 8 per thread (seen on an H100: 10 used, 16 reported).
static int allocated_registers(const json& expected) {
  const int used = expected.at("registers per thread").get<int>();
  return (used + 7) / 8 * 8;
}

TEST_CASE("ops: copies, memset, kernel, allocations and sync, exactly as the program did them") {
  // Doctest runs this body once per subcase: the program runs, and the common
  // checks report, only the first time.
  static const program_run run = run_program("ops", {program("gpu-test-ops").string()}, traced());
  REQUIRE(run.exit_code == 0);
  static const json expected = run.expected();
  static const json trace = load_trace(run.trace());
  static const auto launch_of = [] {
    CHECK(correlations_distinct(trace));
    return check_common(trace, run.trace(), run.pid);
  }();
  const std::uint64_t gpu0 = gpu_process_id(0, run.pid);

  std::map<std::string, span> regions;
  for (const char* name : {"setup", "compute", "readback"}) {
    const auto found = host_regions(trace, run.pid, name);
    REQUIRE_MESSAGE(found.size() == 1, "host region " << name);
    CHECK(found[0]->at("tid") == run.pid);  // the main thread
    regions[name] = span_of(*found[0]);
  }
  // The operation's launch happened on the main thread inside the region its
  // context names.
  const auto check_launch = [&](const json* op, const std::string& region) {
    CHECK(args_of(*op).value("context", "") == region);
    const json* launch = launch_of.at(op);
    CHECK(launch->at("tid") == run.pid);
    const std::int64_t launched = nanoseconds(launch->at("ts"));
    CHECK(regions.at(region).contains({launched, launched}));
  };

  const auto copies = gpu_operations(trace, "memcpy");
  const auto memsets = gpu_operations(trace, "memset");
  const auto kernels = gpu_operations(trace, "kernel");
  REQUIRE(copies.size() == 2);
  REQUIRE(memsets.size() == 1);
  REQUIRE(kernels.size() == 1);
  const json* to_device = copies[0];
  const json* to_host = copies[1];
  const json* memset = memsets[0];
  const json* kernel = kernels[0];
  // The default stream: one track for all four.
  for (const json* op : {to_host, memset, kernel}) CHECK(op->at("tid") == to_device->at("tid"));

  SUBCASE("host to device copy into A") {
    CAPTURE(describe(to_device));
    const json& args = args_of(*to_device);
    CHECK(to_device->at("name") == "Memcpy HtoD");
    CHECK(args.at("bytes") == mebibyte);
    CHECK(args.at("kind") == "HtoD");
    CHECK(args.at("source device") == "host");
    CHECK(args.at("destination device") == 0);
    CHECK(args.value("source object", "") == "host x");
    CHECK(args.value("destination object", "") == "A");
    CHECK(launched_by(*to_device, {"cudaMemcpy", "cuMemcpy"}));
    check_launch(to_device, "setup");
    // cudaMemcpy from pageable memory returns when the copy is done.
    CHECK(regions.at("setup").contains(span_of(*to_device)));
  }
  SUBCASE("memset of B, an anonymous allocation") {
    CAPTURE(describe(memset));
    const json& args = args_of(*memset);
    CHECK(args.at("bytes") == mebibyte);
    // A's allocation, alive beside it, came first: B's is the second of setup.
    CHECK(args.value("object", "") == "cudaMalloc@setup #2");
    CHECK(args.at("memory") == "device");
    CHECK(launched_by(*memset, {"cudaMemset", "cuMemset"}));
    check_launch(memset, "setup");
    CHECK(span_of(*memset).start > span_of(*to_device).end);
  }
  SUBCASE("kernel: name, geometry and the attributes the CUDA runtime reports") {
    CAPTURE(describe(kernel));
    CAPTURE(expected.dump());
    const json& args = args_of(*kernel);
    CHECK(kernel->at("name") == "saxpy(int, float, float const*, float*)");
    CHECK(args.at("grid") == json::array({512, 2, 1}));
    CHECK(args.at("block") == json::array({128, 2, 1}));
    for (const char* attribute :
         {"static shared memory", "dynamic shared memory", "local memory per thread"})
      CHECK_MESSAGE(args.at(attribute) == expected.at(attribute), attribute);
    CHECK(args.at("registers per thread") == allocated_registers(expected));
    CHECK(args.at("theoretical occupancy").get<double>() ==
          doctest::Approx(expected.at("theoretical occupancy").get<double>()).epsilon(0.001));
    CHECK(launched_by(*kernel, {"cudaLaunchKernel", "cuLaunchKernel"}));
    check_launch(kernel, "compute");
    CHECK(span_of(*kernel).start > span_of(*memset).start);
  }
  SUBCASE("device to host copy out of B") {
    CAPTURE(describe(to_host));
    const json& args = args_of(*to_host);
    CHECK(to_host->at("name") == "Memcpy DtoH");
    CHECK(args.at("bytes") == mebibyte);
    CHECK(args.at("kind") == "DtoH");
    CHECK(args.at("source device") == 0);
    CHECK(args.at("destination device") == "host");
    CHECK(args.value("source object", "") == "cudaMalloc@setup #2");
    CHECK(args.value("destination object", "") == "host y");
    CHECK(launched_by(*to_host, {"cudaMemcpy", "cuMemcpy"}));
    check_launch(to_host, "readback");
    CHECK(regions.at("readback").contains(span_of(*to_host)));
    CHECK(span_of(*to_host).start >= span_of(*kernel).end);
  }
  SUBCASE("allocated device memory: A, B, then both freed") {
    CHECK(allocated_memory(trace, gpu0, "device") ==
          std::vector<std::int64_t>{mebibyte, 2 * mebibyte, mebibyte, 0});
  }
  SUBCASE("cudaDeviceSynchronize: a context synchronization inside readback") {
    const auto begins = events_where(trace, [&](const json& e) {
      return e.value("ph", "") == "b" && e.at("pid") == gpu0 && e.value("cat", "") == "sync" &&
             e.value("name", "") == "context synchronization";
    });
    REQUIRE(begins.size() == 1);
    const json& begin = *begins[0];
    CAPTURE(describe(&begin));
    CHECK(args_of(begin).value("context", "") == "readback");
    CHECK(launched_by(begin, {"cudaDeviceSynchronize", "cuCtxSynchronize"}));
    const auto ends = events_where(trace, [&](const json& e) {
      return e.value("ph", "") == "e" && e.at("pid") == gpu0 && e.value("cat", "") == "sync" &&
             e.contains("id") && e.at("id") == begin.at("id");
    });
    REQUIRE(ends.size() == 1);
    CHECK(regions.at("readback").contains(
        {nanoseconds(begin.at("ts")), nanoseconds(ends[0]->at("ts"))}));
  }
  SUBCASE("summary") {
    const summary_report summary =
        check_summary_basics(run, "gpu-test-ops", trace, summary_headings);
    CAPTURE(run.err);
    // Per calling context: the kernel in compute, 1 MiB copied and 1 MiB set
    // in setup, 1 MiB copied in readback.
    const auto& contexts = summary.rows("GPU time by calling context");
    const std::string compute = row_named(contexts, "compute");
    REQUIRE(!compute.empty());
    CHECK(columns_before(compute, "compute").at(1) == "1");
    CHECK(occurrences(row_named(contexts, "setup"), "1.0 MiB") == 2);
    CHECK(occurrences(row_named(contexts, "readback"), "1.0 MiB") == 1);

    const std::string kernel_name = "saxpy(int, float, float const*, float*)";
    const std::string kernel_row = row_named(summary.rows("Kernels"), kernel_name);
    REQUIRE(!kernel_row.empty());
    const auto kernel_columns = columns_before(kernel_row, kernel_name);
    CHECK(kernel_columns.at(0) == "1");
    const std::string registers = std::to_string(allocated_registers(expected));
    CHECK(std::count(kernel_columns.begin(), kernel_columns.end(), registers) >= 1);

    for (const char* direction : {"HtoD", "DtoH"}) {
      const std::string row = copies_row(summary, direction);
      CAPTURE(direction);
      REQUIRE(!row.empty());
      CHECK(words(row).at(1) == "1");
      CHECK(occurrences(row, "1.0 MiB") == 1);
    }
    CHECK(copies_row(summary, "DtoD").empty());

    const auto& matrix = summary.rows("Device-to-device bytes");
    const auto host_row = std::find_if(matrix.begin(), matrix.end(), [](const std::string& row) {
      return !words(row).empty() && words(row)[0] == "host";
    });
    REQUIRE(host_row != matrix.end());
    CHECK(occurrences(*host_row, "1.0 MiB") == 1);

    const auto& objects = summary.rows("Data objects");
    // size, then bytes moved: A's copy in; B's copy out and memset; A's
    // allocation, whose bytes A names, its size only.
    CHECK(occurrences(row_named(objects, "A"), "1.0 MiB") == 2);
    CHECK(occurrences(row_named(objects, "cudaMalloc@setup #2 (auto)"), "1.0 MiB") == 3);
    CHECK(occurrences(row_named(objects, "cudaMalloc@setup (auto)"), "1.0 MiB") == 1);

    const auto& memory = summary.rows("Memory");
    const auto device_row = std::find_if(memory.begin(), memory.end(), [](const std::string& row) {
      const auto columns = words(row);
      return columns.size() > 3 && columns[0] == "GPU" && columns[1] == "0" && columns[2] == "device";
    });
    REQUIRE(device_row != memory.end());
    const auto memory_columns = words(*device_row);
    CHECK(memory_columns.at(3) == "2");                // allocations
    CHECK(occurrences(*device_row, "2.0 MiB") == 2);  // allocated, peak live

    const auto& host = summary.rows("Host regions");
    for (const std::string name : {"setup", "compute", "readback"}) {
      const std::string row = row_named(host, name);
      if (!row.empty()) CHECK(columns_before(row, name).at(0) == "1");
    }
  }
}

TEST_CASE("ops as a TAU profile: a virtual thread for the stream, bytes as user events") {
  const program_run run = run_program("ops-tau", {program("gpu-test-ops").string()},
                                      {{"FERRET_BACKEND", "tau"}, {"FERRET_OUTPUT", "profile"}});
  REQUIRE(run.exit_code == 0);
  const ferret::tau_check::report report =
      ferret::tau_check::check_directory((run.directory / "profile").string());
  std::string errors;
  for (const std::string& line : report.errors) errors += line + "\n";
  REQUIRE_MESSAGE(report.ok(), "tau_check: " << report.error_count << " errors:\n" << errors);

  // The main thread first, then one virtual thread: the default stream.
  const ferret::tau_check::profile* host = report.find(0, 0);
  REQUIRE(host != nullptr);
  // Annotated regions carry their source location: "setup [{ops.cu} {73,0}]".
  const auto region_name = [&](const std::string& region) {
    for (const auto& entry : host->functions)
      if (entry.name.rfind(region + " [{", 0) == 0) return entry.name;
    return region;
  };
  for (const char* region : {"setup", "compute", "readback"}) {
    const auto* entry = host->function(".TAU application => " + region_name(region));
    REQUIRE_MESSAGE(entry != nullptr, region);
    CHECK(entry->calls == 1);
  }
  std::vector<const ferret::tau_check::profile*> streams;
  for (const auto& [file, profile] : report.profiles)
    if (!profile.attribute("CUDA Stream").empty()) streams.push_back(&profile);
  REQUIRE(streams.size() == 1);
  CHECK(streams[0] == report.find(0, report.profiles.size() - 1));
  const ferret::tau_check::profile& stream = *streams[0];
  CHECK(stream.attribute("CUDA Device") == "0");
  CHECK(stream.attribute("GPU Name") == setup.device_name);
  for (const char* operation : {"Memory copy Host to Device", "Memory copy Device to Host", "Memory set",
                                "saxpy(int, float, float const*, float*)"}) {
    const auto* entry = stream.function(operation);
    REQUIRE_MESSAGE(entry != nullptr, operation);
    CHECK(entry->calls == 1);
    CHECK(entry->inclusive > 0);
  }

  // Bytes the program moved: 1 MiB each way and 1 MiB set, per direction and
  // per data object on the stream, per calling context on the main thread.
  const auto check_bytes = [](const ferret::tau_check::profile& profile, const std::string& name) {
    const auto* event = profile.user_event(name);
    REQUIRE_MESSAGE(event != nullptr, name);
    CHECK(event->count == 1);
    CHECK(event->max == mebibyte);
    CHECK(event->min == mebibyte);
  };
  check_bytes(stream, "Bytes copied from Host to Device");
  check_bytes(stream, "Bytes copied from Host to Device (object: host x)");
  check_bytes(stream, "Bytes copied from Host to Device (object: A)");
  check_bytes(stream, "Bytes copied from Device to Host");
  check_bytes(stream, "Bytes copied from Device to Host (object: cudaMalloc@setup #2)");
  check_bytes(stream, "Bytes copied from Device to Host (object: host y)");
  check_bytes(stream, "Bytes set");
  check_bytes(stream, "Bytes set (object: cudaMalloc@setup #2)");
  check_bytes(*host, "Bytes copied from Host to Device");
  check_bytes(*host, "Bytes copied from Device to Host");
  check_bytes(*host, "Bytes set");
  // The context events name the launching call inside its region.
  const auto context_event = [&](const std::string& prefix) -> const ferret::tau_check::user_event_line* {
    for (const auto& event : host->user_events)
      if (event.name.rfind(prefix, 0) == 0) return &event;
    return nullptr;
  };
  for (const auto& [event, region] : std::vector<std::pair<std::string, std::string>>{
           {"Bytes copied from Host to Device", "setup"},
           {"Bytes set", "setup"},
           {"Bytes copied from Device to Host", "readback"}}) {
    const auto* found =
        context_event(event + " : .TAU application => " + region_name(region) + " => ");
    REQUIRE_MESSAGE(found != nullptr, event << " in " << region);
    CHECK(found->max == mebibyte);
  }
}

#if FERRET_HAVE_OTF2
// otf2-print beside the test programs (carried to the GPU machine), else the
// one the build found; "" when neither is there.
std::string otf2_print_program() {
  if (const fs::path beside = setup.programs / "otf2-print"; fs::exists(beside)) return beside;
  if (fs::exists(FERRET_OTF2_PRINT)) return FERRET_OTF2_PRINT;
  return {};
}

TEST_CASE("ops traced to OTF2 and chrome at once: streams, copies, bytes, attributes, same events") {
  const program_run run =
      run_program("ops-otf2", {program("gpu-test-ops").string()},
                  {{"FERRET_BACKEND", "chrome,otf2"}, {"FERRET_OUTPUT", "trace"}});
  REQUIRE(run.exit_code == 0);
  const json expected = run.expected();
  const fs::path anchor = run.directory / "trace" / "traces.otf2";
  const ferret::otf2_check::report report = ferret::otf2_check::check_archive(anchor);
  std::string errors;
  for (const std::string& line : report.errors) errors += line + "\n";
  CHECK_MESSAGE(report.ok(), "the OTF2 reader found:\n" << errors);

  std::size_t streams = 0;
  for (const auto& [id, location] : report.locations)
    if (location.type == 2) {  // ACCELERATOR_STREAM, in an ACCELERATOR group
      ++streams;
      CHECK(report.location_group_types.at(location.group) == 2);
    }
  CHECK(streams == 1);  // everything on the default stream
  CHECK(report.rma_gets == 1);
  CHECK(report.rma_puts == 1);
  CHECK(report.get_bytes == std::uint64_t{mebibyte});
  CHECK(report.put_bytes == std::uint64_t{mebibyte});
  const std::string kernel_name = "saxpy(int, float, float const*, float*)";
  const std::vector<std::string> region_names{"setup", "compute", "readback", kernel_name, "Memset"};
  for (const std::string& name : region_names)
    CHECK_MESSAGE(report.regions.count(name) == 1, name);
  CHECK(report.region_paradigms.at(kernel_name) == 5);  // CUDA
  CHECK(report.attribute_strings.at("grid") == std::set<std::string>{"512,2,1"});
  CHECK(report.attribute_strings.at("block") == std::set<std::string>{"128,2,1"});
  CHECK(report.attribute_strings.at("calling context") ==
        std::set<std::string>{"setup", "compute", "readback"});
  CHECK(report.attribute_strings.at("destination object") ==
        std::set<std::string>{"A", "host y"});
  CHECK(report.attribute_strings.at("source object") ==
        std::set<std::string>{"host x", "cudaMalloc@setup #2"});
  CHECK(report.attribute_counts.at("registers per thread") == 1);
  CHECK(report.last_metric_values.at("GPU 0 allocated device memory") == 0);
  CHECK(report.properties.at("FERRET::EVENTS_DROPPED") == "0");
  CHECK(report.properties.at("FERRET::CLAMPED_TIMESTAMPS") == "0");

  // The same run in the chrome file: the same regions, kernels, copies.
  const ferret::testing::comparison same =
      ferret::testing::compare_chrome_with_otf2(run.directory / "trace.json", anchor);
  for (const std::string& difference : same.differences) FAIL_CHECK(difference);
  CHECK(same.copies == 2);
  MESSAGE("otf2: " << same.regions << " region names, " << same.calls
                   << " calls, the same in chrome and otf2");

  const std::string print = otf2_print_program();
  if (print.empty()) {
    MESSAGE("otf2-print not found: the archive was read with the OTF2 reader API only");
    return;
  }
  const ferret::testing::program_result printed = ferret::testing::run_program(
      run.directory, {print, "-A", anchor.string()}, {}, program_time_limit);
  CHECK(printed.exit_code == 0);
  CHECK(printed.err.empty());
  CHECK(printed.out.find("INVALID") == std::string::npos);
}
#endif

TEST_CASE("overlap: kernels of two streams on two tracks, at the same time") {
  const program_run run = run_program("overlap", {program("gpu-test-overlap").string()}, traced());
  REQUIRE(run.exit_code == 0);
  const auto spin_ns = run.expected().at("spin ns").get<std::int64_t>();
  const json trace = load_trace(run.trace());
  check_common(trace, run.trace(), run.pid);
  CHECK(correlations_distinct(trace));
  check_summary_basics(run, "gpu-test-overlap", trace,
                       {"GPU time by calling context", "Kernels", "Host regions"});

  std::vector<const json*> spinning;
  for (const json* kernel : gpu_operations(trace, "kernel")) {
    CHECK(kernel->at("name") == "spin_for(unsigned long long)");
    if (args_of(*kernel).value("context", "") == "overlap") spinning.push_back(kernel);
  }
  REQUIRE(spinning.size() == 2);
  CHECK(spinning[0]->at("tid") != spinning[1]->at("tid"));
  const span first = span_of(*spinning[0]), second = span_of(*spinning[1]);
  for (const span& kernel : {first, second}) {
    CHECK(kernel.end - kernel.start >= spin_ns * 95 / 100);
    CHECK(kernel.end - kernel.start < spin_ns * 10);
  }
  const std::int64_t overlap = std::min(first.end, second.end) - std::max(first.start, second.start);
  CHECK(overlap >= spin_ns / 2);
  std::printf("overlap: kernels of %.3f and %.3f ms on two streams overlapped for %.3f ms\n",
              static_cast<double>(first.end - first.start) / 1e6,
              static_cast<double>(second.end - second.start) / 1e6,
              static_cast<double>(overlap) / 1e6);
}

TEST_CASE("CUDA graphs: every replayed operation joined to its cudaGraphLaunch and named after its arrays") {
  const program_run run = run_program("graphs", {program("gpu-test-graphs").string()}, traced());
  REQUIRE(run.exit_code == 0);
  const json expected = run.expected();
  const auto replays = expected.at("replays").get<std::size_t>();
  const auto bytes = expected.at("bytes").get<std::int64_t>();
  const json trace = load_trace(run.trace());
  const auto launch_of = check_common(trace, run.trace(), run.pid);
  check_summary_basics(run, "gpu-test-graphs", trace, {"GPU time by calling context", "Kernels"});

  REQUIRE(host_regions(trace, run.pid, "replay").size() == 1);
  REQUIRE(host_regions(trace, run.pid, "replay built").size() == 1);
  const auto graph_launches = host_regions(trace, run.pid, "cudaGraphLaunch");
  CHECK(graph_launches.size() == 2 * replays);
  // The graph built node by node: its nodes' calls are regions inside build.
  for (const char* call : {"cudaGraphAddMemsetNode", "cudaGraphAddMemcpyNode1D", "cudaGraphAddMemcpyNode"}) {
    CAPTURE(call);
    CHECK(host_regions(trace, run.pid, call).size() == 1);
  }
  // Capturing and building run nothing: the only operation outside the
  // replays is the memset before them. Each replayed operation: what it is,
  // with the arrays it touches ("source>destination", or the memset's object).
  std::map<std::string, std::map<std::string, std::size_t>> replayed;  // context -> operation -> count
  std::map<std::uint64_t, std::size_t> per_correlation;
  for (const char* category : {"kernel", "memcpy", "memset"})
    for (const json* op : gpu_operations(trace, category)) {
      CAPTURE(describe(op));
      const json& args = args_of(*op);
      const std::string context = args.value("context", "");
      if (context != "replay" && context != "replay built") {
        CHECK(op->at("cat") == "memset");
        CHECK(context == "");
        continue;
      }
      ++per_correlation[args.at("correlation").get<std::uint64_t>()];
      CHECK(launched_by(*op, {"cudaGraphLaunch"}));
      const std::int64_t launched = nanoseconds(launch_of.at(op)->at("ts"));
      CHECK(std::any_of(graph_launches.begin(), graph_launches.end(),
                        [&](const json* call) { return span_of(*call).contains({launched, launched}); }));
      std::string operation = op->at("name").get<std::string>();
      if (op->at("cat") == "memcpy") {
        CHECK(args.at("kind") == "DtoD");
        CHECK(args.at("bytes") == bytes);
        operation += " " + args.value("source object", "?") + ">" + args.value("destination object", "?");
      } else if (op->at("cat") == "memset") {
        CHECK(args.at("bytes") == bytes);
        operation += " " + args.value("object", "?");
      }
      ++replayed[context][operation];
    }
  const std::map<std::string, std::size_t> captured{{"scale(int, float*)", replays},
                                                    {"add(int, float const*, float*)", replays},
                                                    {"Memcpy DtoD B>C", replays},
                                                    {"Memset B", replays}};
  CHECK(replayed["replay"] == captured);
  const std::map<std::string, std::size_t> built{
      {"Memset D", replays}, {"Memcpy DtoD A>D", replays}, {"Memcpy DtoD D>E", replays}};
  CHECK(replayed["replay built"] == built);
  // CUPTI gives a replay's operations their cudaGraphLaunch's correlation id.
  CHECK(per_correlation.size() == 2 * replays);
  std::size_t four = 0, three = 0;
  for (const auto& [correlation, operations] : per_correlation) {
    four += operations == 4;
    three += operations == 3;
  }
  CHECK(four == replays);
  CHECK(three == replays);
  std::printf("graphs: %zu replays of a captured and of a built graph, %zu operations, each joined to "
              "its cudaGraphLaunch and named after its arrays\n",
              replays, replays * 7);
}

TEST_CASE("virtual memory management: mapped ranges are data objects, every allocation joined to its call") {
  const program_run run = run_program("vmm", {program("gpu-test-vmm").string()}, traced());
  REQUIRE(run.exit_code == 0);
  const json expected = run.expected();
  const auto bytes = expected.at("bytes").get<std::int64_t>();
  const json trace = load_trace(run.trace());
  check_common(trace, run.trace(), run.pid);  // gpu-operations-without-launch == 0 among them
  CAPTURE(run.err);
  check_summary_basics(run, "gpu-test-vmm", trace, {"GPU time by calling context"});
  for (const char* call : {"cuMemAddressReserve", "cuMemCreate", "cuMemMap", "cuMemSetAccess",
                           "cuMemRelease", "cuMemUnmap", "cuMemAddressFree"}) {
    CAPTURE(call);
    CHECK(host_regions(trace, run.pid, call).size() == 3);
  }
  // The copies name the mapped ranges, which nobody registered.
  const auto copies = gpu_operations(trace, "memcpy");
  REQUIRE(copies.size() == 3);
  for (const json* copy : copies) {
    CAPTURE(describe(copy));
    const json& args = args_of(*copy);
    CHECK(args.at("bytes") == bytes);
    CHECK(args.value("context", "") == "compute");
    const std::string object =
        args.value(args.at("kind") == "HtoD" ? "destination object" : "source object", "");
    CHECK(object.rfind("cuMemMap@allocate", 0) == 0);
  }
  std::printf("vmm: 3 mapped ranges named after their cuMemMap, %zu copies naming them, every "
              "allocation joined to its call\n",
              copies.size());
}

TEST_CASE("clock alignment: every kernel lies inside the host region around its launch and sync") {
  const program_run run =
      run_program("clock-alignment", {program("gpu-test-clock-alignment").string()}, traced());
  REQUIRE(run.exit_code == 0);
  const auto trials = run.expected().at("trials").get<std::size_t>();
  const json trace = load_trace(run.trace());
  const auto launch_of = check_common(trace, run.trace(), run.pid);
  CHECK(correlations_distinct(trace));
  check_summary_basics(run, "gpu-test-clock-alignment", trace,
                       {"GPU time by calling context", "Kernels", "Host regions"});

  const auto brackets = host_regions(trace, run.pid, "bracket");
  std::vector<const json*> kernels;
  for (const json* kernel : gpu_operations(trace, "kernel")) {
    CHECK(kernel->at("name") == "empty_kernel()");
    if (args_of(*kernel).value("context", "") == "bracket") kernels.push_back(kernel);
  }
  REQUIRE(brackets.size() == trials);
  REQUIRE(kernels.size() == trials);
  // Both in time order: the i-th kernel belongs to the i-th bracket.
  std::vector<double> start_margins_us, end_margins_us;
  std::size_t outside = 0;
  for (std::size_t i = 0; i < trials; ++i) {
    const span bracket = span_of(*brackets[i]);
    const span kernel = span_of(*kernels[i]);
    const std::int64_t launched = nanoseconds(launch_of.at(kernels[i])->at("ts"));
    CHECK(bracket.contains({launched, launched}));
    start_margins_us.push_back(static_cast<double>(kernel.start - bracket.start) / 1000.0);
    end_margins_us.push_back(static_cast<double>(bracket.end - kernel.end) / 1000.0);
    if (!bracket.contains(kernel)) {
      ++outside;
      MESSAGE("kernel " << i << " sticks out of its bracket: start margin "
                        << start_margins_us.back() << " us, end margin " << end_margins_us.back()
                        << " us");
    }
  }
  CHECK(outside == 0);
  const auto minimum_and_median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return std::make_pair(values.front(), values[values.size() / 2]);
  };
  const auto [start_min, start_median] = minimum_and_median(start_margins_us);
  const auto [end_min, end_median] = minimum_and_median(end_margins_us);
  std::printf(
      "clock alignment: %zu kernels, %zu outside their bracket; margin kernel start - bracket "
      "start: min %.3f us, median %.3f us; bracket end - kernel end: min %.3f us, median %.3f us\n",
      trials, outside, start_min, start_median, end_min, end_median);
}

TEST_CASE("unannotated program through ferret-run") {
  const program_run run = run_program(
      "unannotated", command_through_ferret_run({program("gpu-test-unannotated").string()}),
      {{"FERRET_VERBOSE", "1"}});
  REQUIRE(run.exit_code == 0);
  const json trace = load_trace(run.trace());
  check_common(trace, run.trace(), run.pid);
  CHECK(correlations_distinct(trace));

  const auto kernels = gpu_operations(trace, "kernel");
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0]->at("name") == "add(int, float const*, float*)");
  CHECK(!args_of(*kernels[0]).contains("context"));  // no regions
  CHECK(launched_by(*kernels[0], {"cudaLaunchKernel", "cuLaunchKernel"}));
  const auto copies = gpu_operations(trace, "memcpy");
  REQUIRE(copies.size() == 3);
  for (std::size_t i = 0; i < copies.size(); ++i) {
    CAPTURE(describe(copies[i]));
    const json& args = args_of(*copies[i]);
    const bool to_device = i < 2;
    CHECK(args.at("kind") == (to_device ? "HtoD" : "DtoH"));
    CHECK(args.at("bytes") == mebibyte);
    CHECK(!args.contains("context"));
    CHECK(launched_by(*copies[i], {"cudaMemcpy", "cuMemcpy"}));
    // Anonymous allocations outside any region are named after the call alone,
    // y, alive beside x, with a number; the host vectors are no data objects.
    CHECK(args.value(to_device ? "destination object" : "source object", "") ==
          (i == 0 ? "cudaMalloc" : "cudaMalloc #2"));
    CHECK(!args.contains(to_device ? "source object" : "destination object"));
  }
  CHECK(allocated_memory(trace, gpu_process_id(0, run.pid), "device") ==
        std::vector<std::int64_t>{mebibyte, 2 * mebibyte, mebibyte, 0});

  const summary_report summary = check_summary_basics(
      run, "gpu-test-unannotated", trace,
      {"GPU time by calling context", "Kernels", "Copies", "Device-to-device bytes",
       "Data objects", "Memory"});
  CAPTURE(run.err);
  row_named(summary.rows("GPU time by calling context"), "(no region)");
  const std::string to_device = copies_row(summary, "HtoD");
  REQUIRE(!to_device.empty());
  CHECK(words(to_device).at(1) == "2");
  CHECK(occurrences(to_device, "2.0 MiB") == 1);
  CHECK(rows_named(summary.rows("Data objects"), "cudaMalloc (auto)").size() == 1);
  CHECK(rows_named(summary.rows("Data objects"), "cudaMalloc #2 (auto)").size() == 1);
}

TEST_CASE("example cuda-streams: chunks through four streams, overlapping") {
  const program_run run = run_program("cuda-streams", {program("cuda-streams").string()}, traced());
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("results correct") != std::string::npos);
  const json trace = load_trace(run.trace());
  check_common(trace, run.trace(), run.pid);
  CHECK(correlations_distinct(trace));
  const std::uint64_t gpu0 = gpu_process_id(0, run.pid);
  // Defaults: 2^24 floats in 8 chunks of 8 MiB over 4 streams.
  constexpr std::int64_t chunk_bytes = 8 * mebibyte;
  const std::string chunk_context = "main/enqueue_chunks/enqueue chunk";

  std::vector<const json*> saxpy, sum;
  for (const json* kernel : gpu_operations(trace, "kernel")) {
    const std::string name = kernel->at("name").get<std::string>();
    const std::string context = args_of(*kernel).value("context", "");
    if (name == "(anonymous namespace)::saxpy_repeated(unsigned long, float, float const*, float*, int)" &&
        context == chunk_context)
      saxpy.push_back(kernel);
    else if (name == "(anonymous namespace)::sum(unsigned long, float const*, unsigned long long*)" &&
             context == "main/sum_when_done")
      sum.push_back(kernel);
    else
      FAIL_CHECK("unexpected kernel: " << describe(kernel));
  }
  REQUIRE(saxpy.size() == 8);
  CHECK(sum.size() == 1);
  std::map<std::uint64_t, int> kernels_per_track;
  for (const json* kernel : saxpy) ++kernels_per_track[kernel->at("tid").get<std::uint64_t>()];
  CHECK(kernels_per_track.size() == 4);
  for (const auto& [track, count] : kernels_per_track) CHECK_MESSAGE(count == 2, "track " << track);
  // The pipeline's point: one chunk's copies run while another stream's
  // kernel does. (Kernels overlap each other only where they outlast a
  // chunk's copy, which depends on the host's copy bandwidth: on an H100 at
  // 13:01 on 2026-11-26, kernels took 192 us and copies 220 us.)
  std::int64_t longest_overlap = 0;
  for (const json* copy : gpu_operations(trace, "memcpy"))
    for (const json* kernel : saxpy)
      if (copy->at("tid") != kernel->at("tid")) {
        const span a = span_of(*copy), b = span_of(*kernel);
        longest_overlap = std::max(longest_overlap, std::min(a.end, b.end) - std::max(a.start, b.start));
      }
  CHECK(longest_overlap > 0);

  std::size_t chunks_in = 0, chunks_out = 0, totals_out = 0;
  for (const json* copy : gpu_operations(trace, "memcpy")) {
    CAPTURE(describe(copy));
    const json& args = args_of(*copy);
    if (args.at("kind") == "HtoD") {
      ++chunks_in;
      CHECK(args.at("bytes") == chunk_bytes);
      CHECK(args.value("source object", "") == "host x");
      CHECK(args.value("destination object", "") == "x");
      CHECK(args.value("context", "") == chunk_context);
    } else if (args.at("bytes") == chunk_bytes) {
      ++chunks_out;
      CHECK(args.at("kind") == "DtoH");
      CHECK(args.value("source object", "") == "y");
      CHECK(args.value("destination object", "") == "host y");
      CHECK(args.value("context", "") == chunk_context);
    } else {
      ++totals_out;
      CHECK(args.at("kind") == "DtoH");
      CHECK(args.at("bytes") == 8);
      CHECK(args.value("context", "") == "main/sum_when_done");
    }
  }
  CHECK(chunks_in == 8);
  CHECK(chunks_out == 8);
  CHECK(totals_out == 1);
  std::size_t chunk_memsets = 0, total_memsets = 0;
  for (const json* memset : gpu_operations(trace, "memset")) {
    CAPTURE(describe(memset));
    const json& args = args_of(*memset);
    if (args.at("bytes") == chunk_bytes) {
      ++chunk_memsets;
      CHECK(args.value("object", "") == "y");
    } else {
      ++total_memsets;
      CHECK(args.at("bytes") == 8);
      // The total's device memory is no named object: the runtime named it,
      // the third allocation of main/allocate alive (after x's and y's).
      CHECK(args.value("object", "") == "cudaMalloc@main/allocate #3");
    }
  }
  CHECK(chunk_memsets == 8);
  CHECK(total_memsets == 1);

  const auto synchronizations = [&](const std::string& name) {
    return events_where(trace, [&](const json& e) {
      return e.value("ph", "") == "b" && e.at("pid") == gpu0 && e.value("cat", "") == "sync" &&
             e.value("name", "") == name && args_of(e).value("context", "") == "main/sum_when_done";
    });
  };
  CHECK(synchronizations("stream wait synchronization").size() == 3);
  CHECK(synchronizations("event synchronization").size() == 1);

  const summary_report summary =
      check_summary_basics(run, "cuda-streams", trace, summary_headings);
  CAPTURE(run.err);
  for (const std::string name : {"x", "y", "host x", "host y"}) row_named(summary.rows("Data objects"), name);
  const std::string to_device = copies_row(summary, "HtoD");
  REQUIRE(!to_device.empty());
  CHECK(words(to_device).at(1) == "8");
  CHECK(occurrences(to_device, "64.0 MiB") == 1);
}

TEST_CASE("openmp offload: target regions on the host, their kernel and copies on GPU 0") {
  // The LLVM offload runtime comes from the build machine (tests/gpu/run.sh
  // unpacks it and names its folder); only this program gets it.
  std::string library_path = setup.llvm_libraries;
  if (const char* inherited = std::getenv("LD_LIBRARY_PATH"); inherited != nullptr && *inherited != '\0')
    library_path += (library_path.empty() ? "" : ":") + std::string{inherited};
  // Mandatory offload: a silent fallback to the host would leave no GPU work
  // to check. Every backend at once: chrome (trace.json), summary, TAU
  // (trace/profile.*) and OTF2 (trace/traces.otf2).
  std::string backends = "chrome,summary,tau";
#if FERRET_HAVE_OTF2
  backends += ",otf2";
#endif
  const program_run run = run_program(
      "openmp-offload",
      {program("ferret-run").string(), "--output", "trace", "--", program("gpu-test-openmp-offload").string()},
      {{"FERRET_BACKEND", backends}, {"FERRET_VERBOSE", "1"}, {"LD_LIBRARY_PATH", library_path},
       {"OMP_TARGET_OFFLOAD", "MANDATORY"}});
  // Exit status 127 is the dynamic loader's: libomp or libomptarget (or what
  // they need) cannot be loaded. Without the archive of
  // tests/gpu/pack-llvm-offload.sh that is this machine's lack; with it, a failure.
  if (run.exit_code == 127 && setup.llvm_libraries.empty()) {
    const std::string reason = run.err.substr(0, run.err.find('\n'));
    std::printf("skipped: the openmp offload case: no LLVM offload runtime here (%s)\n", reason.c_str());
    MESSAGE("skipped: no LLVM offload runtime (FERRET_GPU_TEST_LLVM_LIBS unset): " << run.err);
    return;
  }
  CAPTURE(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("results correct") != std::string::npos);
  const json expected = run.expected();
  const auto mapped_bytes = expected.at("mapped bytes").get<std::int64_t>();
  const auto teams = expected.at("teams").get<std::int64_t>();
  const json trace = load_trace(run.trace());
  const auto launch_of = check_common(trace, run.trace(), run.pid);
  CHECK(correlations_distinct(trace));
  CHECK(trace.at("metadata").value("ompt-region-ends-unmatched", -1) == 0);
  // libomptarget 22 has no device tracing interface (docs/openmp.md): said once.
  CHECK(occurrences(run.err, "offers no device tracing interface") == 1);

  // The OpenMP collector's regions, each once, on the main thread. The
  // structured `target data` is reported as its two halves, enter and exit.
  std::map<std::string, span> regions;
  for (const char* name : {"offload", "target enter data [device 0]", "target [device 0]",
                           "kernel submission", "target update [device 0]",
                           "target exit data [device 0]"}) {
    const auto found = host_regions(trace, run.pid, name);
    REQUIRE_MESSAGE(found.size() == 1, "host region " << name);
    CHECK(found[0]->at("tid") == run.pid);
    if (std::string{name} != "offload") CHECK(found[0]->value("cat", "") == "openmp");
    regions[name] = span_of(*found[0]);
  }
  for (const char* name : {"target enter data [device 0]", "target [device 0]",
                           "target update [device 0]", "target exit data [device 0]"})
    CHECK(regions.at("offload").contains(regions.at(name)));
  CHECK(regions.at("target [device 0]").contains(regions.at("kernel submission")));
  const auto requested_teams = events_where(trace, [&](const json& e) {
    return e.value("ph", "") == "C" && e.value("name", "") == "requested teams";
  });
  REQUIRE(requested_teams.size() == 1);
  CHECK(args_of(*requested_teams[0]).at("value") == teams);

  // Each construct, and the data operations it made, located at the
  // program's line for it (LLVM 22's clang records them; docs/openmp.md).
  const json& lines = expected.at("lines");
  const std::map<std::string, int> construct_line{
      {"target enter data [device 0]", lines.at("target data").get<int>()},
      {"alloc", lines.at("target data").get<int>()},
      {"transfer to device", lines.at("target data").get<int>()},
      {"target [device 0]", lines.at("target").get<int>()},
      {"target update [device 0]", lines.at("target update").get<int>()},
      {"transfer from device", lines.at("target update").get<int>()}};
  for (const auto& [name, line] : construct_line) {
    CAPTURE(name);
    const json& locations = trace.at("metadata").at("source-locations").at(name);
    REQUIRE(locations.size() == 1);
    CHECK(fs::path{locations[0].value("file", "")}.filename() == "openmp_offload.cpp");
    CHECK(locations[0].value("line", 0) == line);
    CHECK(locations[0].value("function", "") == "main");
  }

  // CUPTI's kernel, launched inside the kernel submission, attributed to it.
  const std::uint64_t gpu0 = gpu_process_id(0, run.pid);
  const auto kernels = gpu_operations(trace, "kernel");
  REQUIRE(kernels.size() == 1);
  const json* kernel = kernels[0];
  CAPTURE(describe(kernel));
  const std::string kernel_name = kernel->at("name").get<std::string>();
  CHECK(kernel_name.rfind("__omp_offloading_", 0) == 0);
  CHECK(kernel->at("pid") == gpu0);
  CHECK(args_of(*kernel).value("context", "") == "offload/target [device 0]/kernel submission");
  CHECK(args_of(*kernel).at("grid").at(0) == teams);
  CHECK(launched_by(*kernel, {"cuLaunchKernel"}));
  const json* kernel_launch = launch_of.at(kernel);
  CHECK(kernel_launch->at("tid") == run.pid);
  const std::int64_t launched = nanoseconds(kernel_launch->at("ts"));
  CHECK(regions.at("kernel submission").contains({launched, launched}));

  // Every copy is CUPTI's (a driver call launched it): the OpenMP collector
  // defers to CUPTI and delivers none of its own. The mapped array crosses
  // once each way; the runtime's own small copies (the device environment,
  // the RPC client when it loads the image) may come on top.
  std::vector<const json*> to_device, from_device;
  for (const json* copy : gpu_operations(trace, "memcpy")) {
    CAPTURE(describe(copy));
    CHECK(copy->at("pid") == gpu0);
    CHECK(launched_by(*copy, {"cuMemcpy"}));
    const json& args = args_of(*copy);
    if (args.at("bytes") != mapped_bytes) {
      MESSAGE("another copy: " << describe(copy));
      CHECK(args.at("bytes").get<std::int64_t>() < 4096);
      continue;
    }
    (args.at("kind") == "HtoD" ? to_device : from_device).push_back(copy);
  }
  REQUIRE(to_device.size() == 1);
  REQUIRE(from_device.size() == 1);
  const auto check_copy = [&](const json* copy, const std::string& kind,
                              const std::string& construct, const std::string& operation) {
    CAPTURE(describe(copy));
    const json& args = args_of(*copy);
    CHECK(args.at("kind") == kind);
    CHECK(args.at("bytes") == mapped_bytes);
    // "transfer to device" or its "… async" form, as the runtime reports it.
    const std::string context = args.value("context", "");
    CHECK(context.rfind("offload/" + construct + "/" + operation, 0) == 0);
    const json* launch = launch_of.at(copy);
    CHECK(launch->at("tid") == run.pid);
    const std::int64_t at = nanoseconds(launch->at("ts"));
    CHECK(regions.at(construct).contains({at, at}));
  };
  check_copy(to_device[0], "HtoD", "target enter data [device 0]", "transfer to device");
  CHECK(args_of(*to_device[0]).value("source object", "") == "values");
  CHECK(args_of(*to_device[0]).at("destination device") == 0);
  check_copy(from_device[0], "DtoH", "target update [device 0]", "transfer from device");
  CHECK(args_of(*from_device[0]).value("destination object", "") == "values");
  CHECK(args_of(*from_device[0]).at("source device") == 0);
  CHECK(span_of(*to_device[0]).end <= span_of(*kernel).start);
  CHECK(span_of(*kernel).end <= span_of(*from_device[0]).start);

  // The summary: the kernel's GPU time under its submission, both copies.
  const summary_report summary = parse_summary(run.err);
  REQUIRE(!summary.first_line.empty());
  CHECK(summary.loss_lines.empty());
  const std::string kernel_context = "offload/target [device 0]/kernel submission";
  const std::string context_row = row_named(summary.rows("GPU time by calling context"), kernel_context);
  if (!context_row.empty()) CHECK(columns_before(context_row, kernel_context).at(1) == "1");
  CHECK(!copies_row(summary, "HtoD").empty());
  CHECK(!copies_row(summary, "DtoH").empty());

  // TAU: the kernel on the stream's virtual thread, called once, and the
  // target region on the main thread under "offload".
  const ferret::tau_check::report profile =
      ferret::tau_check::check_directory((run.directory / "trace").string());
  std::string tau_errors;
  for (const std::string& line : profile.errors) tau_errors += line + "\n";
  CHECK_MESSAGE(profile.ok(), "tau_check: " << profile.error_count << " errors:\n" << tau_errors);
  const ferret::tau_check::profile* host = profile.find(0, 0);
  REQUIRE(host != nullptr);
  bool target_under_offload = false;
  for (const auto& entry : host->functions) {
    const auto target = entry.name.find(" => target [device 0] [{");
    target_under_offload |= target != std::string::npos && entry.name.rfind("=> offload", target) != std::string::npos;
  }
  CHECK(target_under_offload);
  bool kernel_on_stream = false;
  for (const auto& [file, thread] : profile.profiles)
    if (const auto* entry = thread.function(kernel_name); entry != nullptr && !thread.attribute("CUDA Stream").empty())
      kernel_on_stream = entry->calls == 1;
  CHECK(kernel_on_stream);

#if FERRET_HAVE_OTF2
  // OTF2: a valid archive with the same regions, kernel and copies as chrome.
  const fs::path anchor = run.directory / "trace" / "traces.otf2";
  const ferret::otf2_check::report archive = ferret::otf2_check::check_archive(anchor);
  std::string otf2_errors;
  for (const std::string& line : archive.errors) otf2_errors += line + "\n";
  CHECK_MESSAGE(archive.ok(), "the OTF2 reader found:\n" << otf2_errors);
  for (const char* name : {"offload", "target [device 0]", "kernel submission", "transfer to device"})
    CHECK_MESSAGE(archive.regions.count(name) == 1, name);
  const ferret::testing::comparison same =
      ferret::testing::compare_chrome_with_otf2(run.trace(), anchor);
  for (const std::string& difference : same.differences) FAIL_CHECK(difference);
#endif
  std::printf("openmp offload: kernel %s, grid %s, block %s, %.3f ms; copies of %lld bytes each way\n",
              kernel_name.c_str(), args_of(*kernel).at("grid").dump().c_str(),
              args_of(*kernel).at("block").dump().c_str(),
              static_cast<double>(span_of(*kernel).end - span_of(*kernel).start) / 1e6,
              static_cast<long long>(mapped_bytes));
}

TEST_CASE("pytorch: bf16 matrix products through ferret-run") {
  const program_run run = run_program(
      "pytorch",
      command_through_ferret_run({"python3", program("gpu-test-torch-matmul.py").string()}),
      {{"FERRET_VERBOSE", "1"}});
  REQUIRE(run.exit_code == 0);
  const json expected = run.expected();
  const json trace = load_trace(run.trace());
  check_common(trace, run.trace(), run.pid);

  // The products all run one kernel (the same shapes); random numbers come first.
  const auto kernels = gpu_operations(trace, "kernel");
  const auto products = expected.at("products").get<std::size_t>();
  CHECK(kernels.size() >= products + 2);
  std::map<std::string, std::size_t> calls;
  for (const json* kernel : kernels) {
    CHECK(args_of(*kernel).contains("launch"));
    ++calls[kernel->at("name").get<std::string>()];
  }
  const auto most_called = std::max_element(
      calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  CAPTURE(most_called->first);
  CHECK(most_called->second >= products);
  std::size_t result_copies = 0;
  for (const json* copy : gpu_operations(trace, "memcpy"))
    if (args_of(*copy).at("kind") == "DtoH" && args_of(*copy).at("bytes") == expected.at("result bytes"))
      ++result_copies;
  CHECK(result_copies == 1);

  const summary_report summary = check_summary_basics(
      run, "python[0-9.]*", trace, {"GPU time by calling context", "Kernels", "Copies", "Memory"});
  CAPTURE(run.err);
  // The products' kernels under the Python line that made them (tests/gpu/torch_matmul.py:14).
  const std::string products_line = "gpu-test-torch-matmul.py:14 <module>";
  const std::string row = row_named(summary.rows("GPU time by calling context"), products_line);
  const auto columns = columns_before(row, products_line);
  REQUIRE(columns.size() >= 2);
  CHECK(std::stoul(columns[1]) >= products);
  CHECK(!copies_row(summary, "DtoH").empty());
}

int main(int argc, char** argv) {
  std::error_code error;
  setup.programs = fs::read_symlink("/proc/self/exe", error).parent_path();
  if (error) {
    std::printf("gpu_trace_test: cannot read /proc/self/exe: %s\n", error.message().c_str());
    return 1;
  }
  if (const auto reason = ferret::gpu_testing::gpu_unusable_reason(setup.device_name)) {
    std::printf("skipped: %s\n", reason->c_str());
    return 77;
  }
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  if (!fs::exists(program("cuda-streams"))) {
    std::printf("skipped: the cuda-streams case: the example was not built (FERRET_BUILD_EXAMPLES)\n");
    context.addFilter("test-case-exclude", "example cuda-streams*");
  }
  if (!fs::exists(program("gpu-test-openmp-offload"))) {
    std::printf("skipped: the openmp offload case: the program was not built (clang with LLVM's "
                "NVIDIA device runtime and the OpenMP collector are needed)\n");
    context.addFilter("test-case-exclude", "openmp offload*");
  }
  if (const char* folders = std::getenv("FERRET_GPU_TEST_LLVM_LIBS")) setup.llvm_libraries = folders;
  if (const auto reason = ferret::gpu_testing::torch_unusable_reason()) {
    std::printf("skipped: the pytorch case: %s\n", reason->c_str());
    context.addFilter("test-case-exclude", "pytorch*");
  }
  const char* kept = std::getenv("FERRET_GPU_TEST_OUTPUT");
  setup.outputs = kept != nullptr && *kept != '\0'
                      ? fs::absolute(kept)
                      : fs::temp_directory_path() / fmt::format("ferret-gpu-test-{}", getpid());
  std::printf("gpu_trace_test: GPU 0 is %s; programs in %s; outputs in %s\n",
              setup.device_name.c_str(), setup.programs.c_str(), setup.outputs.c_str());
  std::fflush(stdout);
  const int failures = context.run();
  if (context.shouldExit() || kept != nullptr) return failures;
  if (failures == 0)
    fs::remove_all(setup.outputs, error);
  else
    std::printf("gpu_trace_test: traces and output kept in %s\n", setup.outputs.c_str());
  return failures;
}
