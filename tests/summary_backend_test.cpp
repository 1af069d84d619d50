// Tests of the summary backend. The unit cases drive it directly (no runtime
// session) with synthesised records, GPU activities, data objects and devices,
// and read back the report it writes to a temporary file; the "process" suite
// runs support/test_app with FERRET_BACKEND=summary and reads its stderr.
#include "summary_backend.hpp"
#include "support/run_program.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

namespace rt = ferret::runtime;
using rt::copy_kind;
using rt::gpu_activity;
using rt::gpu_operation;
using rt::memory_kind;
using rt::record_kind;
using lines = std::vector<std::string>;

constexpr std::uint32_t test_pid = 4242;
constexpr std::uint64_t main_tid = 4242;
constexpr std::uint64_t worker_tid = 4243;
constexpr std::int64_t ms = 1'000'000;  // ns
constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
constexpr std::uint64_t GiB = 1024 * MiB;

std::int64_t monotonic_raw_now() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

// --- reading the report ---------------------------------------------------------

lines lines_of(const std::string& text) {
  lines result;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    result.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return result;
}

// The lines under `heading` (the table's header row first) up to the next
// blank line; empty when the section is absent.
lines section(const std::string& report, std::string_view heading) {
  const lines all = lines_of(report);
  const auto start = std::find(all.begin(), all.end(), heading);
  if (start == all.end()) return {};
  lines body;
  for (auto it = start + 1; it != all.end() && !it->empty(); ++it) body.push_back(*it);
  return body;
}

std::vector<std::string> headings(const std::string& report) {
  std::vector<std::string> found;
  const lines all = lines_of(report);
  for (std::size_t i = 1; i < all.size(); ++i)
    if (all[i - 1].empty() && !all[i].empty()) found.push_back(all[i]);
  return found;
}

std::size_t display_width(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U;
  }));
}

struct cell {
  std::string text;
  std::size_t start, end;  // display columns
};

// A table line's cells: separated by two or more spaces (a cell holds at most
// single spaces, as in "1.5 KiB").
std::vector<cell> cells_of(const std::string& line) {
  std::vector<cell> found;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i == line.size()) break;
    std::size_t end = i;
    while (end < line.size() &&
           !(line[end] == ' ' && (end + 1 == line.size() || line[end + 1] == ' ')))
      ++end;
    const std::string text = line.substr(i, end - i);
    const std::size_t start_column = display_width(std::string_view{line}.substr(0, i));
    found.push_back({text, start_column, start_column + display_width(text)});
    i = end;
  }
  return found;
}

std::vector<std::string> texts(const std::string& line) {
  std::vector<std::string> result;
  for (const cell& c : cells_of(line)) result.push_back(c.text);
  return result;
}

// The rows of a section as cell texts, header row excluded.
std::vector<std::vector<std::string>> rows(const lines& body) {
  std::vector<std::vector<std::string>> result;
  for (std::size_t i = 1; i < body.size(); ++i)
    if (body[i].rfind("  … ", 0) != 0) result.push_back(texts(body[i]));
  return result;
}

// A table laid out as text_table promises: every line indented by two, no
// trailing blanks; column i ends under its header's end where alignments[i]
// is 'r', starts under its header's start where it is 'l'; each column is as
// wide as its widest cell and two spaces apart from the next.
void check_aligned(const lines& body, std::string_view alignments) {
  REQUIRE(body.size() >= 2);
  const std::vector<cell> header = cells_of(body.front());
  REQUIRE(header.size() == alignments.size());
  std::vector<std::size_t> widths(header.size(), 0);
  for (const std::string& line : body) {
    if (line.rfind("  … ", 0) == 0) continue;
    INFO("line: '" << line << "'");
    CHECK(line.rfind("  ", 0) == 0);
    CHECK(line.back() != ' ');
    const std::vector<cell> row = cells_of(line);
    REQUIRE(row.size() == header.size());
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (alignments[i] == 'r')
        CHECK(row[i].end == header[i].end);
      else
        CHECK(row[i].start == header[i].start);
      widths[i] = std::max(widths[i], row[i].end - row[i].start);
    }
  }
  std::size_t column_start = 2;
  for (std::size_t i = 0; i < header.size(); ++i) {
    const std::size_t start = alignments[i] == 'r' ? header[i].end - widths[i] : header[i].start;
    CHECK_MESSAGE(start == column_start, "column " << i << " (" << header[i].text << ")");
    column_start = start + widths[i] + 2;
  }
}

// --- feeding the backend ----------------------------------------------------------

// Name records with stable addresses and dense ids, as the runtime hands out.
class name_table {
 public:
  const rt::name_info* add(std::string name, std::string domain = {}) {
    names_.push_back(rt::name_info{
        static_cast<std::uint32_t>(names_.size()), std::move(name), std::move(domain), {}, {}, 0});
    return &names_.back();
  }

 private:
  std::deque<rt::name_info> names_;
};

// A calling-context tree: user regions, with CUDA API calls as leaves.
class context_tree {
 public:
  context_tree() { nodes_.push_back(rt::context_node{0, 0, nullptr, nullptr}); }
  const rt::context_node* root() const { return &nodes_.front(); }
  const rt::context_node* child(const rt::context_node* parent, std::string name,
                                std::string domain = {}) {
    nodes_.push_back(rt::context_node{static_cast<std::uint32_t>(nodes_.size()), parent->depth + 1,
                                      parent, names_.add(std::move(name), std::move(domain))});
    return &nodes_.back();
  }
  const rt::context_node* api_call(const rt::context_node* parent, std::string name) {
    return child(parent, std::move(name), "cuda");
  }

 private:
  name_table names_;
  std::deque<rt::context_node> nodes_;
};

rt::gpu_launch launched_in(const rt::context_node* context) {
  static std::uint64_t correlation = 0;
  return rt::gpu_launch{++correlation, main_tid, 0, context};
}

constexpr rt::gpu_launch launch_not_seen{77, 0, 0, nullptr};

gpu_activity kernel(const char* name, std::int64_t start, std::int64_t end, rt::gpu_launch launch,
                    double occupancy = 0.5, std::uint32_t registers = 32) {
  gpu_activity activity{};
  activity.operation = gpu_operation::kernel;
  activity.start_ns = start;
  activity.end_ns = end;
  activity.name = name;
  activity.launch = launch;
  activity.kernel.occupancy = occupancy;
  activity.kernel.registers_per_thread = registers;
  return activity;
}

gpu_activity copy(copy_kind kind, std::uint64_t bytes, std::int64_t ns, std::int32_t source,
                  std::int32_t destination, rt::gpu_launch launch) {
  gpu_activity activity{};
  activity.operation = gpu_operation::memcpy;
  activity.start_ns = 1000;
  activity.end_ns = 1000 + ns;
  activity.copy = kind;
  activity.bytes = bytes;
  activity.source_device = source;
  activity.destination_device = destination;
  activity.device = static_cast<std::uint32_t>(std::max(source, destination));
  activity.launch = launch;
  return activity;
}

gpu_activity copy_between(copy_kind kind, std::uint64_t bytes, const rt::data_object_info* source,
                          const rt::data_object_info* destination) {
  gpu_activity activity = copy(kind, bytes, 1000, 0, 0, launch_not_seen);
  activity.source_object = source;
  activity.source_object_id = source != nullptr ? source->id : 0;
  activity.destination_object = destination;
  activity.destination_object_id = destination != nullptr ? destination->id : 0;
  return activity;
}

gpu_activity memset_of(std::uint64_t bytes, rt::gpu_launch launch,
                       const rt::data_object_info* object = nullptr) {
  gpu_activity activity{};
  activity.operation = gpu_operation::memset;
  activity.start_ns = 0;
  activity.end_ns = 500;
  activity.bytes = bytes;
  activity.memory = memory_kind::device;
  activity.launch = launch;
  activity.destination_object = object;
  activity.destination_object_id = object != nullptr ? object->id : 0;
  return activity;
}

gpu_activity synchronization(std::int64_t ns, rt::gpu_launch launch) {
  gpu_activity activity{};
  activity.operation = gpu_operation::synchronization;
  activity.start_ns = 0;
  activity.end_ns = ns;
  activity.detail = 3;
  activity.launch = launch;
  return activity;
}

gpu_activity memory_change(gpu_operation operation, std::uint32_t device, memory_kind memory,
                           std::uintptr_t address, std::uint64_t bytes, std::int64_t time) {
  gpu_activity activity{};
  activity.operation = operation;
  activity.start_ns = time;
  activity.end_ns = time;
  activity.device = device;
  activity.memory = memory;
  activity.address = address;
  activity.bytes = bytes;
  activity.launch = launch_not_seen;
  return activity;
}

rt::data_object_info object_info(std::uint64_t id, std::string name, bool automatic = false) {
  static const rt::context_node allocating_context{0, 0, nullptr, nullptr};
  rt::data_object_info info{id, std::move(name), 0x1000 * id, 64, memory_kind::device, 0};
  if (automatic) info.allocated_in = &allocating_context;
  return info;
}

rt::record begin(std::int64_t ns, const rt::name_info* name) {
  return {ns, record_kind::region_begin, rt::region_close::by_program, name, 0.0};
}
// The end of the innermost open region (the runtime delivers nested records).
rt::record end(std::int64_t ns, const rt::name_info* name,
               rt::region_close closed = rt::region_close::by_program) {
  return {ns, record_kind::region_end, closed, name, 0.0};
}

// One backend writing into a temporary file, as it would on stderr.
class summary_run {
 public:
  summary_run() : file_(std::tmpfile()) {
    REQUIRE(file_ != nullptr);
    session_.pid = test_pid;
    session_.executable = "solver";
    session_.start_monotonic_raw_ns = monotonic_raw_now() - 2'000'000'000;  // 2 s ago
    backend_ = ferret::summary::make_backend_writing_to(session_, fileno(file_));
  }
  ~summary_run() { std::fclose(file_); }
  summary_run(const summary_run&) = delete;
  summary_run& operator=(const summary_run&) = delete;

  rt::backend& backend() { return *backend_; }
  std::int64_t start_ns() const { return session_.start_monotonic_raw_ns; }

  void records(std::uint64_t tid, const std::vector<rt::record>& batch) {
    const rt::thread_info thread{test_pid, tid, {}, tid == main_tid};
    backend_->thread_records(thread, batch.data(), batch.size());
  }
  void activities(const std::vector<gpu_activity>& batch) {
    backend_->gpu_activities(batch.data(), batch.size());
  }

  void flush(bool final, std::uint64_t dropped = 0, const rt::metadata_list& metadata = {}) {
    const rt::metadata_list user;
    backend_->flush(rt::session_status{&metadata, &user, 1000, dropped, final});
  }

  // The final flush, then everything written.
  std::string finish(std::uint64_t dropped = 0, const rt::metadata_list& metadata = {}) {
    flush(true, dropped, metadata);
    return written();
  }

  std::string written() const {
    std::string text;
    char chunk[4096];
    off_t offset = 0;
    for (;;) {
      const ssize_t got = ::pread(fileno(file_), chunk, sizeof chunk, offset);
      REQUIRE(got >= 0);
      if (got == 0) break;
      text.append(chunk, static_cast<std::size_t>(got));
      offset += got;
    }
    return text;
  }

 private:
  std::FILE* file_;
  rt::session_info session_{};
  std::unique_ptr<rt::backend> backend_;
};

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

struct first_line_facts {
  double seconds;
  std::string operations;
};

// "ferret summary: <executable> (pid <pid>), <s.mmm> s, <n> GPU operation[s]",
// or nothing when the line has another form.
std::optional<first_line_facts> read_first_line(std::string_view line,
                                                std::string_view executable = "solver",
                                                std::string_view pid = "4242") {
  const std::string head =
      "ferret summary: " + std::string{executable} + " (pid " + std::string{pid} + "), ";
  if (line.substr(0, head.size()) != head) return std::nullopt;
  line.remove_prefix(head.size());
  const std::size_t seconds_end = line.find(" s, ");
  if (seconds_end == std::string_view::npos) return std::nullopt;
  const std::string_view seconds = line.substr(0, seconds_end);
  const std::size_t point = seconds.find('.');
  if (point == std::string_view::npos || !all_digits(seconds.substr(0, point)) ||
      seconds.size() - point != 4 || !all_digits(seconds.substr(point + 1)))
    return std::nullopt;
  line.remove_prefix(seconds_end + 4);
  const std::size_t count_end = line.find(' ');
  const std::string_view count = line.substr(0, count_end);
  const std::string_view noun = count_end == std::string_view::npos ? "" : line.substr(count_end);
  if (!all_digits(count) || noun != (count == "1" ? " GPU operation" : " GPU operations"))
    return std::nullopt;
  return first_line_facts{std::stod(std::string{seconds}), std::string{count}};
}

}  // namespace

TEST_CASE("an empty run reports the first line only, with the wall time since the start") {
  summary_run run;
  const std::string report = run.finish();
  const std::int64_t finished_by = monotonic_raw_now();
  const lines all = lines_of(report);
  REQUIRE(all.size() == 1);
  CHECK(report.back() == '\n');
  const auto first = read_first_line(all.front());
  REQUIRE(first.has_value());
  // Between the start (2 s before the backend was made) and now, to the
  // millisecond it is written with: an order, not a speed.
  const double seconds = first->seconds;
  CHECK(seconds >= 2.0);
  CHECK(seconds <= static_cast<double>(finished_by - run.start_ns()) / 1e9 + 0.0005);
  CHECK(first->operations == "0");
}

TEST_CASE("host regions: inclusive time per name over all threads") {
  summary_run run;
  name_table names;
  const rt::name_info* main_region = names.add("main");
  const rt::name_info* outer = names.add("outer");
  const rt::name_info* inner = names.add("inner");
  const rt::name_info* inner_again = names.add("inner");  // the same text from another TU
  const rt::name_info* recursive = names.add("recursive");
  const rt::name_info* factor = names.add("factor", "mylib");
  const rt::name_info* cut_short = names.add("cut short");

  run.records(main_tid, {begin(0, main_region), begin(1 * ms, outer), begin(2 * ms, inner),
                         end(4 * ms, inner), end(11 * ms, outer)});
  run.records(worker_tid,
              {begin(0, inner_again), end(5 * ms, inner_again),
               // recursion counts its time once: 4 ms, 2 calls
               begin(5 * ms, recursive), begin(6 * ms, recursive), end(7 * ms, recursive),
               end(9 * ms, recursive),
               // an end that skips an open region: the runtime ends it too
               begin(9 * ms, factor), begin(9 * ms + 500'000, cut_short),
               end(10 * ms, cut_short, rt::region_close::by_outer_end), end(10 * ms, factor)});
  run.records(worker_tid, {begin(12 * ms, cut_short), end(12 * ms, cut_short)});
  // `main` never ends: the runtime ends it at exit.
  run.records(main_tid, {end(12 * ms, main_region, rt::region_close::at_exit)});

  const std::string report = run.finish();
  INFO(report);
  const auto first = read_first_line(lines_of(report).front());
  REQUIRE(first.has_value());
  CHECK(first->operations == "0");
  CHECK(report.find("HPCToolkit") == std::string::npos);  // no GPU data, no legend
  CHECK(headings(report) == std::vector<std::string>{"Host regions"});

  const lines body = section(report, "Host regions");
  CHECK(texts(body.front()) == std::vector<std::string>{"calls", "total ms", "region"});
  check_aligned(body, "rrl");
  CHECK(rows(body) == std::vector<std::vector<std::string>>{
                          {"1", "12.000", "main"},
                          {"1", "10.000", "outer"},
                          {"2", "7.000", "inner"},
                          {"2", "4.000", "recursive"},
                          {"1", "1.000", "factor [mylib]"},
                          {"2", "0.500", "cut short"},
                      });
}

TEST_CASE("host regions: the top 10 by time, then how many more") {
  summary_run run;
  name_table names;
  std::vector<rt::record> batch;
  for (int i = 1; i <= 13; ++i) {
    const rt::name_info* name = names.add("region " + std::to_string(i));
    batch.push_back(begin(0, name));
    batch.push_back(end(i * ms, name));
  }
  run.records(main_tid, batch);
  const lines body = section(run.finish(), "Host regions");
  const auto table = rows(body);
  REQUIRE(table.size() == 10);
  CHECK(table.front() == std::vector<std::string>{"1", "13.000", "region 13"});
  CHECK(table.back() == std::vector<std::string>{"1", "4.000", "region 4"});
  CHECK(body.back() == "  … 3 more regions");
}

TEST_CASE("GPU time by calling context, with HPCToolkit's metric names") {
  summary_run run;
  context_tree tree;
  const rt::context_node* solve = tree.child(tree.root(), "solve");
  const rt::context_node* step = tree.child(solve, "step");
  // Two API calls under the same regions share one row.
  const rt::context_node* step_launch = tree.api_call(step, "cudaLaunchKernel");
  const rt::context_node* step_copy = tree.api_call(step, "cudaMemcpyAsync");
  const rt::context_node* top_launch = tree.api_call(tree.root(), "cudaLaunchKernel");
  const rt::context_node* solve_sync = tree.api_call(solve, "cudaStreamSynchronize");

  run.activities({kernel("k", 0, 2 * ms, launched_in(step_launch)),
                  copy(copy_kind::host_to_device, MiB, 1 * ms, -1, 0, launched_in(step_copy)),
                  kernel("k", 0, 5 * ms, launched_in(top_launch)),
                  kernel("k", 10 * ms, 11 * ms, launch_not_seen),
                  synchronization(ms / 2, launched_in(solve_sync))});
  run.activities(
      {memset_of(4 * KiB, launched_in(solve)), kernel("k", 0, 1 * ms, launched_in(step_launch))});

  const std::string report = run.finish();
  INFO(report);
  const auto first = read_first_line(lines_of(report).front());
  REQUIRE(first.has_value());
  CHECK(first->operations == "7");
  CHECK(lines_of(report).at(1) ==
        "metrics (HPCToolkit's names): GKER kernel time, GXCOPY copy time and bytes, GMSET bytes "
        "set, GMEM bytes allocated, GSYNC synchronization time");

  const lines body = section(report, "GPU time by calling context");
  CHECK(texts(body.front()) == std::vector<std::string>{"GKER ms", "kernels", "GXCOPY ms",
                                                        "GXCOPY bytes", "GMSET bytes", "GMEM bytes",
                                                        "GSYNC ms", "context"});
  check_aligned(body, "rrrrrrrl");
  CHECK(rows(body) == std::vector<std::vector<std::string>>{
                          {"5.000", "1", "0.000", "-", "-", "-", "0.000", "(no region)"},
                          {"3.000", "2", "1.000", "1.0 MiB", "-", "-", "0.000", "solve/step"},
                          {"1.000", "1", "0.000", "-", "-", "-", "0.000", "(launch not seen)"},
                          {"0.000", "0", "0.000", "-", "4.0 KiB", "-", "0.500", "solve"},
                      });
}

TEST_CASE("calling contexts: the top 10 by kernel and copy time") {
  summary_run run;
  context_tree tree;
  std::vector<gpu_activity> batch;
  for (int i = 1; i <= 12; ++i) {
    const rt::context_node* region = tree.child(tree.root(), "phase " + std::to_string(i));
    // Copy time counts like kernel time: phase i has i ms in all.
    batch.push_back(kernel("k", 0, (i - 1) * ms, launched_in(region)));
    batch.push_back(copy(copy_kind::device_to_host, 8, 1 * ms, 0, -1, launched_in(region)));
  }
  run.activities(batch);
  const lines body = section(run.finish(), "GPU time by calling context");
  const auto table = rows(body);
  REQUIRE(table.size() == 10);
  CHECK(table.front() ==
        std::vector<std::string>{"11.000", "1", "1.000", "8 B", "-", "-", "0.000", "phase 12"});
  CHECK(table.back() ==
        std::vector<std::string>{"2.000", "1", "1.000", "8 B", "-", "-", "0.000", "phase 3"});
  CHECK(body.back() == "  … 2 more contexts");
}

TEST_CASE("kernels: demangled names, times, occupancy and registers") {
  summary_run run;
  const std::string long_name(150, 'x');
  const auto anywhere = launch_not_seen;
  run.activities({
      kernel("_Z5saxpyifPKfPf", 0, 1 * ms, anywhere, 0.5, 32),
      kernel("_Z5saxpyifPKfPf", 0, 2 * ms, anywhere, 0.75, 40),
      kernel("_Z5saxpyifPKfPf", 0, 3 * ms, anywhere, -1.0, 24),  // occupancy unknown
      kernel("plain_c_kernel", 0, 10 * ms, anywhere, -1.0, 16),
      kernel(long_name.c_str(), 0, 1600, anywhere, 1.0, 8),
      kernel(nullptr, 0, 1000, anywhere, 0.25, 64),
  });
  const std::string report = run.finish();
  INFO(report);
  const lines body = section(report, "Kernels");
  CHECK(texts(body.front()) == std::vector<std::string>{"calls", "total ms", "mean µs", "occupancy",
                                                        "registers", "kernel"});
  check_aligned(body, "rrrrrl");
  const std::string cut_name = std::string(99, 'x') + "…";
  CHECK(rows(body) ==
        std::vector<std::vector<std::string>>{
            {"1", "10.000", "10000.000", "-", "16", "plain_c_kernel"},
            {"3", "6.000", "2000.000", "62.5%", "40", "saxpy(int, float, float const*, float*)"},
            {"1", "0.002", "1.600", "100.0%", "8", cut_name},
            {"1", "0.001", "1.000", "25.0%", "64", "(unnamed kernel)"},
        });
  CHECK(display_width(cut_name) == 100);
}

namespace {

// --- GPU instruction samples (PC sampling) -------------------------------------------

// Stall reasons as a collector names them, with their classes; they live as long as the session.
const rt::gpu_stall_reason long_scoreboard{0, "long_scoreboard", rt::gpu_stall::gmem};
const rt::gpu_stall_reason selected{1, "selected", rt::gpu_stall::none};
const rt::gpu_stall_reason math_pipe_throttle{2, "math_pipe_throttle", rt::gpu_stall::pipe};
const rt::gpu_stall_reason wait{3, "wait", rt::gpu_stall::idep};

rt::gpu_instruction_sample at(const rt::context_node* context, const char* function,
                              std::uint64_t pc, const char* file, std::uint32_t line,
                              const rt::gpu_stall_reason& reason, double samples) {
  return rt::gpu_instruction_sample{context, 0, function, pc, file, line, &reason, samples};
}

void deliver(summary_run& run, const std::vector<rt::gpu_instruction_sample>& drain) {
  run.backend().gpu_instruction_samples(drain.data(), drain.size());
}

// A stencil kernel (with line information) launched from solve/step and
// from outside any region, and a library kernel without line information
// whose launch the runtime did not find (its samples come with the root).
// Two drains: the second adds shares (fractions) to keys of the first.
struct sampled_run {
  context_tree tree;
  const rt::context_node* step_launch =
      tree.api_call(tree.child(tree.child(tree.root(), "solve"), "step"), "cudaLaunchKernel");
  const rt::context_node* top_launch = tree.api_call(tree.root(), "cudaLaunchKernel");
  static constexpr const char* stencil = "_Z7stencilPKdPdi";
  static constexpr const char* library = "_Z10cublasGemmv";

  void feed(summary_run& run) const {
    deliver(run, {at(step_launch, stencil, 0x10, "/src/stencil.cu", 42, long_scoreboard, 60),
                  at(step_launch, stencil, 0x18, "/src/stencil.cu", 42, selected, 10),
                  at(step_launch, stencil, 0x20, "/src/stencil.cu", 43, math_pipe_throttle, 20.5),
                  at(top_launch, stencil, 0x10, "/src/stencil.cu", 42, long_scoreboard, 30),
                  at(tree.root(), library, 0x1a0, nullptr, 0, wait, 5)});
    // The same line from another pointer to the same text: one line.
    static const std::string same_file = "/src/stencil.cu";
    deliver(run, {at(step_launch, stencil, 0x20, same_file.c_str(), 43, math_pipe_throttle, 2.2),
                  at(step_launch, stencil, 0x10, "/src/stencil.cu", 42, long_scoreboard, 0.3)});
  }
};

}  // namespace

TEST_CASE("GPU instructions by source line: the most sampled first, their share and dominant reasons") {
  summary_run run;
  const sampled_run sampled;
  sampled.feed(run);
  const std::string report = run.finish();
  INFO(report);
  const lines body = section(report, "GPU instructions by source line");
  REQUIRE(!body.empty());
  CHECK(texts(body.front()) ==
        std::vector<std::string>{"samples", "share", "stall reasons", "line", "kernel"});
  check_aligned(body, "rrlll");
  // Line 42: 60 + 10 + 30 (another context) + 0.3 (a later drain) of 128 samples.
  CHECK(rows(body) ==
        std::vector<std::vector<std::string>>{
            {"100.3", "78.4%", "long_scoreboard 90%, selected 10%", "/src/stencil.cu:42",
             "stencil(double const*, double*, int)"},
            {"22.7", "17.7%", "math_pipe_throttle 100%", "/src/stencil.cu:43",
             "stencil(double const*, double*, int)"},
            {"5", "3.9%", "wait 100%", "+0x1a0", "cublasGemm()"},
        });
}

TEST_CASE("GPU stalls by calling context: per region path and kernel, the busiest classes") {
  summary_run run;
  const sampled_run sampled;
  sampled.feed(run);
  const std::string report = run.finish();
  INFO(report);
  const lines body = section(report, "GPU stalls by calling context");
  REQUIRE(!body.empty());
  // Classes by their samples over all rows: GMEM 90.3, PIPE 22.7, IDEP 5 (issued: STL_ANY's complement).
  CHECK(texts(body.front()) == std::vector<std::string>{"GINST", "STL_ANY", "STL_GMEM", "STL_PIPE",
                                                        "STL_IDEP", "kernel", "context"});
  check_aligned(body, "rrrrrll");
  CHECK(rows(body) == std::vector<std::vector<std::string>>{
                          {"93", "89.2%", "64.8%", "24.4%", "-",
                           "stencil(double const*, double*, int)", "solve/step"},
                          {"30", "100.0%", "100.0%", "-", "-",
                           "stencil(double const*, double*, int)", "(no region)"},
                          {"5", "100.0%", "-", "-", "100.0%", "cublasGemm()", "(launch not seen)"},
                      });
}

TEST_CASE("GPU instruction sampling: counts, period, GSAMP:UTIL, and the samples dropped") {
  summary_run run;
  const sampled_run sampled;
  gpu_activity launch = kernel(sampled_run::stencil, 0, 2 * ms, launched_in(sampled.step_launch));
  rt::gpu_kernel_samples kernel_samples{};
  kernel_samples.samples = 93;
  kernel_samples.by_stall[static_cast<std::size_t>(rt::gpu_stall::gmem)] = 93;
  kernel_samples.expected = 186;
  kernel_samples.period_cycles = 4096;
  launch.samples = &kernel_samples;
  run.activities({launch});
  sampled.feed(run);
  const rt::metadata_list metadata{{"gpu-pc-sampling-period-cycles", std::int64_t{2048}},
                                   {"gpu-pc-samples", std::int64_t{140}},
                                   {"gpu-pc-samples-dropped", std::int64_t{7}},
                                   {"gpu-pc-samples-non-user", std::int64_t{5}},
                                   {"gpu-instruction-samples-without-launch", std::int64_t{5}}};
  const std::string report = run.finish(0, metadata);
  INFO(report);
  CHECK(section(report, "GPU instruction sampling") ==
        lines{"  128 samples attributed (GINST) of 140 taken (GSAMP:TOT), 7 dropped (GSAMP:DRP), 5 "
              "outside the program's kernels",
              "  period 2048 cycles (GSAMP:PER), GSAMP:UTIL 50.0% (the kernels' 93 samples of the 186 "
              "their time allowed)",
              "  7 samples were dropped (5.0% of those taken): the shares below are of the samples kept",
              "  metrics (HPCToolkit's names): GINST instruction samples, STL_ANY share stalled, STL_* "
              "share per stall class; +0x…: an instruction of a kernel without line information"});
  CHECK(lines_of(report).back() ==
        "Losses: 7 gpu-pc-samples-dropped, 5 gpu-instruction-samples-without-launch");
  // The sections come after the kernels, in this order.
  CHECK(headings(report) == std::vector<std::string>{"GPU time by calling context", "Kernels",
                                                     "GPU instruction sampling",
                                                     "GPU instructions by source line",
                                                     "GPU stalls by calling context",
                                                     "Losses: 7 gpu-pc-samples-dropped, 5 "
                                                     "gpu-instruction-samples-without-launch"});
}

TEST_CASE("GPU instructions: the top 20 lines, then how many more") {
  summary_run run;
  context_tree tree;
  const rt::context_node* launch_call = tree.api_call(tree.root(), "cudaLaunchKernel");
  std::vector<rt::gpu_instruction_sample> drain;
  for (std::uint32_t line = 1; line <= 23; ++line)
    drain.push_back(at(launch_call, "k", line * 16, "k.cu", line, selected, line));
  deliver(run, drain);
  const lines body = section(run.finish(), "GPU instructions by source line");
  const auto table = rows(body);
  REQUIRE(table.size() == 20);
  CHECK(table.front()[3] == "k.cu:23");
  CHECK(table.back()[3] == "k.cu:4");
  CHECK(body.back() == "  … 3 more lines");
}

TEST_CASE("without instruction samples the summary is what it was: the sampling sections only add") {
  const auto write = [](bool with_samples) {
    summary_run run;
    const sampled_run sampled;
    run.activities({kernel(sampled_run::stencil, 0, 2 * ms, launched_in(sampled.step_launch)),
                    copy(copy_kind::host_to_device, MiB, 1 * ms, -1, 0, launched_in(sampled.top_launch))});
    if (with_samples) sampled.feed(run);
    lines all = lines_of(run.finish());
    all.erase(all.begin());  // the first line has the wall time
    return all;
  };
  const lines without = write(false);
  lines with = write(true);
  for (const char* heading : {"GPU instruction sampling", "GPU instructions by source line",
                              "GPU stalls by calling context"}) {
    const auto start = std::find(with.begin(), with.end(), std::string{heading});
    REQUIRE(start != with.end());
    REQUIRE(start != with.begin());
    const auto stop = std::find(start, with.end(), std::string{});
    with.erase(start - 1, stop);  // the blank line before the heading, and the section
  }
  CHECK(with == without);
  CHECK(std::find(without.begin(), without.end(), "Kernels") != without.end());
}

namespace {

// --- device-initiated traffic (FERRET_CUDA_PEER_ACCESSES) ------------------------------

rt::gpu_remote_access access_of(const rt::context_node* context, std::uint32_t device,
                                std::int32_t target, rt::memory_access access, const char* function,
                                std::uint64_t pc, const char* file, std::uint32_t line,
                                const rt::data_object_info* object, std::uint64_t bytes) {
  return rt::gpu_remote_access{context, device, target, access, function, pc, file, line,
                               object != nullptr ? object->id : 0, object, bytes / 4, bytes};
}

void deliver(summary_run& run, const std::vector<rt::gpu_remote_access>& drain) {
  run.backend().gpu_remote_accesses(drain.data(), drain.size());
}

// A stencil on GPU 0 that loads a halo on GPU 1 (two instructions of line 21,
// from solve/step and from outside any region; a second drain adds to line
// 21) and stores and atomically updates it (line 22); a reduction on GPU 1
// without line information that loads and stores host memory; and traffic
// whose launch the runtime did not find (the root).
struct remote_run {
  context_tree tree;
  const rt::context_node* step_launch =
      tree.api_call(tree.child(tree.child(tree.root(), "solve"), "step"), "cudaLaunchKernel");
  const rt::context_node* top_launch = tree.api_call(tree.root(), "cudaLaunchKernel");
  rt::data_object_info halo = object_info(5, "halo");
  static constexpr const char* stencil = "_Z7stencilPKdPdi";
  static constexpr const char* reduce = "_Z6reducePf";
  static constexpr std::int32_t host = rt::host_memory_device;

  void feed(summary_run& run) const {
    using rt::memory_access;
    deliver(run, {access_of(step_launch, 0, 1, memory_access::load, stencil, 0x80, "/src/s.cu", 21, &halo, 4096),
                  access_of(step_launch, 0, 1, memory_access::load, stencil, 0x88, "/src/s.cu", 21, &halo, 512),
                  access_of(top_launch, 0, 1, memory_access::load, stencil, 0x80, "/src/s.cu", 21, &halo, 2048),
                  access_of(step_launch, 0, 1, memory_access::store, stencil, 0x90, "/src/s.cu", 22, &halo, 1024),
                  access_of(step_launch, 0, 1, memory_access::atomic, stencil, 0x98, "/src/s.cu", 22, &halo, 64),
                  access_of(step_launch, 1, host, memory_access::load, reduce, 0x1a0, nullptr, 0, nullptr, 100),
                  access_of(step_launch, 1, host, memory_access::store, reduce, 0x1a0, nullptr, 0, nullptr, 200),
                  access_of(tree.root(), 0, host, memory_access::load, stencil, 0xa0, nullptr, 0, nullptr, 8)});
    deliver(run, {access_of(step_launch, 0, 1, memory_access::load, stencil, 0x80, "/src/s.cu", 21, &halo, 1024)});
  }
};

}  // namespace

TEST_CASE("device-initiated traffic: by kernel, line, object and device pair; by calling context") {
  summary_run run;
  const remote_run remote;
  remote.feed(run);
  const std::string report =
      run.finish(0, {{"gpu-device-initiated-bytes", std::int64_t{9076}},
                     {"gpu-device-initiated-bytes-without-launch", std::int64_t{8}}});
  INFO(report);
  lines body = section(report, "Device-initiated traffic");
  REQUIRE(body.size() > 2);
  // 4096 + 512 + 2048 + 1024 + 100 + 8 loaded; 1024 + 64 + 200 stored.
  CHECK(body[0] == "  7.6 KiB loaded, 1.3 KiB stored (64 B of it by atomics), 2269 accesses; 8 B from "
                   "launches not seen");
  CHECK(body[1] == "  ← loads (bytes from the memory's device to the kernel's), → stores and atomics; "
                   "+0x…: an instruction of a kernel without line information");
  body.erase(body.begin(), body.begin() + 2);
  CHECK(texts(body.front()) == std::vector<std::string>{"loaded", "stored", "accesses", "devices",
                                                        "line", "object", "kernel"});
  check_aligned(body, "rrrllll");
  const std::string stencil_name = "stencil(double const*, double*, int)";
  CHECK(rows(body) == std::vector<std::vector<std::string>>{
                          {"7.5 KiB", "-", "1920", "GPU 0 ← GPU 1", "/src/s.cu:21", "halo", stencil_name},
                          {"-", "1.1 KiB", "272", "GPU 0 → GPU 1", "/src/s.cu:22", "halo", stencil_name},
                          {"100 B", "200 B", "75", "GPU 1 ↔ host", "+0x1a0", "-", "reduce(float*)"},
                          {"8 B", "-", "2", "GPU 0 ← host", "+0xa0", "-", stencil_name},
                      });

  const lines contexts = section(report, "Device-initiated traffic by calling context");
  REQUIRE(!contexts.empty());
  CHECK(texts(contexts.front()) ==
        std::vector<std::string>{"loaded", "stored", "accesses", "kernel", "context"});
  check_aligned(contexts, "rrrll");
  CHECK(rows(contexts) == std::vector<std::vector<std::string>>{
                              {"5.5 KiB", "1.1 KiB", "1680", stencil_name, "solve/step"},
                              {"2.0 KiB", "-", "512", stencil_name, "(no region)"},
                              {"100 B", "200 B", "75", "reduce(float*)", "solve/step"},
                              {"8 B", "-", "2", stencil_name, "(launch not seen)"},
                          });

  // Beside the copies' matrix, over the same ends: a load counts from the
  // memory's device to the kernel's, a store or an atomic the other way.
  const lines matrix = section(report, "Device-initiated bytes (kernels' loads and stores)");
  REQUIRE(!matrix.empty());
  CHECK(texts(matrix.front()) == std::vector<std::string>{"from \\ to", "host", "GPU 0", "GPU 1"});
  check_aligned(matrix, "lrrr");
  CHECK(rows(matrix) == std::vector<std::vector<std::string>>{
                            {"host", "-", "8 B", "100 B"},
                            {"GPU 0", "-", "-", "1.1 KiB"},
                            {"GPU 1", "200 B", "7.5 KiB", "-"},
                        });
  CHECK(headings(report) ==
        std::vector<std::string>{"Device-initiated bytes (kernels' loads and stores)",
                                 "Device-initiated traffic", "Device-initiated traffic by calling context",
                                 "Data objects", "Losses: 8 gpu-device-initiated-bytes-without-launch"});
}

TEST_CASE("device-initiated traffic: the top 20 rows, the rest summed in one line") {
  summary_run run;
  context_tree tree;
  const rt::context_node* launch_call = tree.api_call(tree.root(), "cudaLaunchKernel");
  std::vector<rt::gpu_remote_access> drain;
  for (std::uint32_t line = 1; line <= 23; ++line)
    drain.push_back(access_of(launch_call, 0, 1, rt::memory_access::load, "k", line * 16, "k.cu", line,
                              nullptr, 4 * line));
  deliver(run, drain);
  const lines body = section(run.finish(), "Device-initiated traffic");
  const auto table = rows(lines(body.begin() + 2, body.end()));
  REQUIRE(table.size() == 20);
  CHECK(table.front()[4] == "k.cu:23");
  CHECK(table.back()[4] == "k.cu:4");
  // Lines 1 to 3: 4 + 8 + 12 bytes, one access each per 4 bytes.
  CHECK(body.back() == "  … 3 more rows: 24 B loaded, 0 B stored, 6 accesses");
}

TEST_CASE("copies per direction, and the bytes between host and devices") {
  summary_run run;
  const auto anywhere = launch_not_seen;
  run.backend().gpu_device(rt::gpu_device_info{2, "spare GPU", 9, 0, 132, 80 * GiB, 1024, 64, 32,
                                               65536, 65536, 233472, 232448});
  run.activities({
      copy(copy_kind::host_to_device, MiB, 100'000, -1, 0, anywhere),
      copy(copy_kind::host_to_device, MiB, 100'000, -1, 0, anywhere),
      copy(copy_kind::device_to_host, 512, 1000, 0, -1, anywhere),
      copy(copy_kind::peer_to_peer, 3 * GiB, 1000 * ms, 0, 1, anywhere),
  });
  run.activities({copy(copy_kind::device_to_device, 1536, 0, 1, 1, anywhere)});
  const std::string report = run.finish();
  INFO(report);

  const lines copies = section(report, "Copies");
  CHECK(texts(copies.front()) ==
        std::vector<std::string>{"direction", "count", "bytes", "total ms", "mean GB/s"});
  check_aligned(copies, "lrrrr");
  CHECK(rows(copies) == std::vector<std::vector<std::string>>{
                            {"HtoD", "2", "2.0 MiB", "0.200", "10.49"},
                            {"DtoH", "1", "512 B", "0.001", "0.51"},
                            {"DtoD", "1", "1.5 KiB", "0.000", "-"},
                            {"PtoP", "1", "3.0 GiB", "1000.000", "3.22"},
                        });

  const lines matrix = section(report, "Device-to-device bytes");
  CHECK(texts(matrix.front()) ==
        std::vector<std::string>{"from \\ to", "host", "GPU 0", "GPU 1", "GPU 2"});
  check_aligned(matrix, "lrrrr");
  CHECK(rows(matrix) == std::vector<std::vector<std::string>>{
                            {"host", "-", "2.0 MiB", "-", "-"},
                            {"GPU 0", "512 B", "-", "3.0 GiB", "-"},
                            {"GPU 1", "-", "-", "1.5 KiB", "-"},
                            {"GPU 2", "-", "-", "-", "-"},
                        });
  CHECK(headings(report) == std::vector<std::string>{"GPU time by calling context", "Copies",
                                                     "Device-to-device bytes"});
}

TEST_CASE("data objects by bytes moved, names copied during the call") {
  summary_run run;
  rt::data_object_info host_grid = object_info(1, "grid (host)");
  rt::data_object_info grid = object_info(2, "grid");
  rt::data_object_info scratch = object_info(3, "cudaMalloc@solve/setup", true);
  rt::data_object_info reused = object_info(4, "halo");
  run.activities({
      copy_between(copy_kind::host_to_device, MiB, &host_grid, &grid),
      copy_between(copy_kind::device_to_host, 2 * MiB, &scratch, nullptr),
      memset_of(4 * KiB, launch_not_seen, &scratch),
      // Within one object: its bytes count once.
      copy_between(copy_kind::device_to_device, 512 * KiB, &reused, &reused),
  });
  // The runtime's record is valid for the call only: what it says later does not matter.
  reused.name = "overwritten";
  gpu_activity unnamed = copy(copy_kind::peer_to_peer, 100, 1000, 0, 1, launch_not_seen);
  unnamed.destination_object_id = 99;  // known by id only
  run.activities({unnamed});

  const std::string report = run.finish();
  INFO(report);
  const lines body = section(report, "Data objects");
  CHECK(texts(body.front()) ==
        std::vector<std::string>{"size", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "memset", "object"});
  check_aligned(body, "rrrrrrrl");
  CHECK(rows(body) ==
        std::vector<std::vector<std::string>>{
            {"64 B", "-", "2.0 MiB", "-", "-", "-", "4.0 KiB", "cudaMalloc@solve/setup (auto)"},
            {"64 B", "1.0 MiB", "-", "-", "-", "-", "-", "grid (host)"},
            {"64 B", "1.0 MiB", "-", "-", "-", "-", "-", "grid"},
            {"64 B", "-", "-", "512.0 KiB", "-", "-", "-", "halo"},
            {"-", "-", "-", "-", "-", "100 B", "-", "data object 99"},
        });
}

TEST_CASE("data objects nothing moved are listed too, the largest first: host arrays") {
  summary_run run;
  const rt::data_object_info small{1, "grid A", 0x10000, 4 * KiB, memory_kind::host, -1};
  const rt::data_object_info large{2, "grid B", 0x20000, 2 * MiB, memory_kind::host, -1};
  const rt::data_object_info moved = object_info(3, "halo");
  for (const rt::data_object_info* object : {&small, &large, &moved})
    run.backend().data_object({10, rt::data_object_change::registered, main_tid, object});
  run.activities({copy_between(copy_kind::host_to_device, 100, nullptr, &moved)});
  const std::string report = run.finish();
  INFO(report);
  CHECK(rows(section(report, "Data objects")) ==
        std::vector<std::vector<std::string>>{
            {"64 B", "100 B", "-", "-", "-", "-", "-", "halo"},
            {"2.0 MiB", "-", "-", "-", "-", "-", "-", "grid B"},
            {"4.0 KiB", "-", "-", "-", "-", "-", "-", "grid A"},
        });
}

TEST_CASE("counters: samples, min, mean, max and the latest value; marks counted") {
  summary_run run;
  name_table names;
  const rt::name_info* residual = names.add("residual");
  const rt::name_info* energy = names.add("energy", "physics");
  const rt::name_info* checkpoint = names.add("checkpoint");
  const rt::name_info* converged = names.add("converged");
  const auto sample = [](std::int64_t ns, const rt::name_info* name, double value) {
    return rt::record{ns, record_kind::counter, rt::region_close::by_program, name, value};
  };
  const auto mark = [](std::int64_t ns, const rt::name_info* name) {
    return rt::record{ns, record_kind::mark, rt::region_close::by_program, name, 0.0};
  };
  // The worker's records arrive after the main thread's, its last sample is earlier.
  run.records(main_tid, {sample(1 * ms, residual, 1.0), mark(2 * ms, checkpoint),
                         sample(9 * ms, residual, 0.25), mark(9 * ms, converged)});
  run.records(worker_tid, {sample(3 * ms, residual, 0.5), sample(5 * ms, residual, 0.125),
                           sample(6 * ms, energy, -2.5e6), mark(7 * ms, checkpoint)});
  const std::string report = run.finish();
  INFO(report);
  const lines counters = section(report, "Counters");
  CHECK(texts(counters.front()) ==
        std::vector<std::string>{"samples", "min", "mean", "max", "last", "counter"});
  check_aligned(counters, "rrrrrl");
  CHECK(rows(counters) == std::vector<std::vector<std::string>>{
                              {"4", "0.125", "0.46875", "1", "0.25", "residual"},
                              {"1", "-2.5e+06", "-2.5e+06", "-2.5e+06", "-2.5e+06", "energy [physics]"},
                          });
  const lines marks = section(report, "Marks");
  CHECK(texts(marks.front()) == std::vector<std::string>{"count", "mark"});
  CHECK(rows(marks) == std::vector<std::vector<std::string>>{{"2", "checkpoint"}, {"1", "converged"}});
}

TEST_CASE("data objects: the top 10, then how many more") {
  summary_run run;
  std::vector<rt::data_object_info> objects;
  for (std::uint64_t id = 1; id <= 11; ++id)
    objects.push_back(object_info(id, "array " + std::to_string(id)));
  std::vector<gpu_activity> batch;
  for (const rt::data_object_info& object : objects)
    batch.push_back(copy_between(copy_kind::host_to_device, object.id * KiB, nullptr, &object));
  run.activities(batch);
  const lines body = section(run.finish(), "Data objects");
  const auto table = rows(body);
  REQUIRE(table.size() == 10);
  CHECK(table.front().back() == "array 11");
  CHECK(table.back().back() == "array 2");
  CHECK(body.back() == "  … 1 more data object");
}

TEST_CASE("memory per device and kind: peak live bytes in time order") {
  summary_run run;
  constexpr auto allocation = gpu_operation::allocation;
  constexpr auto release = gpu_operation::release;
  // One drain, out of order. In time: +1 MiB (A), +2 MiB (B), -A and +1 MiB
  // (C) at the same instant, -B: the peak is 3 MiB, not 4.
  run.activities({
      memory_change(release, 0, memory_kind::device, 0xB000, 2 * MiB, 40),
      memory_change(allocation, 0, memory_kind::device, 0xC000, MiB, 30),
      memory_change(release, 0, memory_kind::device, 0xA000, 0, 30),  // size from its allocation
      memory_change(allocation, 0, memory_kind::device, 0xB000, 2 * MiB, 20),
      memory_change(allocation, 0, memory_kind::device, 0xA000, MiB, 10),
      memory_change(allocation, 0, memory_kind::pinned, 0xD000, 64 * KiB, 5),
  });
  // A later drain: a release whose allocation was never seen changes nothing live.
  run.activities({memory_change(allocation, 1, memory_kind::managed, 0xE000, 5 * GiB, 50),
                  memory_change(release, 1, memory_kind::managed, 0xF000, 0, 60),
                  memory_change(release, 0, memory_kind::device, 0xC000, MiB, 70)});
  const std::string report = run.finish();
  INFO(report);
  const lines body = section(report, "Memory");
  CHECK(texts(body.front()) == std::vector<std::string>{"device", "memory", "allocations",
                                                        "allocated", "releases", "peak live"});
  check_aligned(body, "llrrrr");
  CHECK(rows(body) == std::vector<std::vector<std::string>>{
                          {"GPU 0", "pinned", "1", "64.0 KiB", "0", "64.0 KiB"},
                          {"GPU 0", "device", "3", "4.0 MiB", "3", "3.0 MiB"},
                          {"GPU 1", "managed", "1", "5.0 GiB", "1", "5.0 GiB"},
                      });
  // Allocations count as GMEM in their calling context.
  CHECK(rows(section(report, "GPU time by calling context")) ==
        std::vector<std::vector<std::string>>{
            {"0.000", "0", "0.000", "-", "-", "5.0 GiB", "0.000", "(launch not seen)"}});
  const auto first = read_first_line(lines_of(report).front());
  REQUIRE(first.has_value());
  CHECK(first->operations == "9");
}

TEST_CASE("losses: dropped events and the runtime's loss counts, in one line") {
  const rt::metadata_list metadata{
      {"buffer-bytes", std::int64_t{67108864}},
      {"events-dropped-buffer-full", std::int64_t{5}},  // part of the 5 events dropped
      {"gpu-operations", std::int64_t{10}},
      {"gpu-operations-without-launch", std::int64_t{2}},
      {"cupti-records-dropped", std::int64_t{3}},
      {"cupti-buffers-dropped", std::int64_t{0}},
      {"data-objects-refused", std::int64_t{1}},
  };
  SUBCASE("with losses") {
    summary_run run;
    const lines all = lines_of(run.finish(5, metadata));
    REQUIRE(all.size() == 3);
    CHECK(all[1].empty());
    CHECK(all[2] ==
          "Losses: 5 events dropped, 2 gpu-operations-without-launch, "
          "3 cupti-records-dropped");
  }
  SUBCASE("a collector's losses without dropped events") {
    summary_run run;
    const lines all = lines_of(run.finish(0, {{"cupti-records-dropped", std::int64_t{3}}}));
    REQUIRE(all.size() == 3);
    CHECK(all[2] == "Losses: 3 cupti-records-dropped");
  }
  SUBCASE("nothing lost") {
    summary_run run;
    const rt::metadata_list nothing{{"events-dropped-buffer-full", std::int64_t{0}},
                                    {"gpu-operations-without-launch", std::int64_t{0}},
                                    {"cupti-records-dropped", std::int64_t{0}}};
    CHECK(lines_of(run.finish(0, nothing)).size() == 1);
  }
}

TEST_CASE("names are escaped and cut: no control bytes reach the terminal") {
  summary_run run;
  name_table names;
  const std::string huge(100'000, 'n');
  const rt::name_info* escape = names.add("red\x1b[31m\ttab\nline\x7f");
  const rt::name_info* invalid = names.add("bad \xff\xfe utf8 \xe2\x82");
  const rt::name_info* c1_and_bidi = names.add("csi \xc2\x9b and \xe2\x80\xae""drowkcab");
  const rt::name_info* long_name = names.add(huge);
  const rt::name_info* fine = names.add("größe µs");
  std::vector<rt::record> batch;
  for (const rt::name_info* name : {escape, invalid, c1_and_bidi, long_name, fine}) {
    batch.push_back(begin(0, name));
    batch.push_back(end(ms, name));
  }
  run.records(main_tid, batch);
  rt::data_object_info object = object_info(1, "obj\r\x01" + huge);
  run.activities({copy_between(copy_kind::host_to_device, KiB, nullptr, &object)});
  const std::string report = run.finish();
  for (const char byte : report) {
    const auto c = static_cast<unsigned char>(byte);
    CHECK_MESSAGE((c >= 0x20 || c == '\n'), "control byte " << int{c});
    CHECK(c != 0x7f);
  }
  CHECK(report.size() < 10'000);
  std::map<std::string, std::string> calls;
  for (const auto& row : rows(section(report, "Host regions"))) calls[row.back()] = row.front();
  const std::string cut_huge = std::string(99, 'n') + "…";
  CHECK(calls == std::map<std::string, std::string>{
                     {"red\\x1b[31m\\ttab\\nline\\x7f", "1"},
                     {"bad \\xff\\xfe utf8 \\xe2\\x82", "1"},
                     {"csi \\u009b and \\u202edrowkcab", "1"},
                     {cut_huge, "1"},
                     {"größe µs", "1"},
                 });
  const auto objects = rows(section(report, "Data objects"));
  REQUIRE(objects.size() == 1);
  CHECK(objects.front().back() == "obj\\r\\x01" + std::string(90, 'n') + "…");
}

TEST_CASE("API calls the collectors counted without recording them") {
  const rt::metadata_list metadata{
      {"cuda-api-unrecorded:cudaGetDevice", std::int64_t{1200}},
      {"cuda-api-unrecorded:cudaPeekAtLastError", std::int64_t{7}},
      {"level-zero-api-unrecorded:zeDeviceGet", std::int64_t{3}},
      {"cuda-api-unrecorded:cudaSetDevice", std::int64_t{0}},  // nothing to say
      {"gpu-operations", std::int64_t{10}},
  };
  summary_run run;
  const std::string report = run.finish(0, metadata);
  INFO(report);
  CHECK(headings(report) == std::vector<std::string>{"API calls counted, not recorded"});
  const lines body = section(report, "API calls counted, not recorded");
  CHECK(texts(body.front()) == std::vector<std::string>{"calls", "collector", "call"});
  check_aligned(body, "rll");
  CHECK(rows(body) == std::vector<std::vector<std::string>>{
                          {"1200", "cuda", "cudaGetDevice"},
                          {"7", "cuda", "cudaPeekAtLastError"},
                          {"3", "level-zero", "zeDeviceGet"},
                      });
}

TEST_CASE("only the final flush prints, once; a fork child prints nothing") {
  name_table names;
  const rt::name_info* work = names.add("work");
  SUBCASE("final flush") {
    summary_run run;
    run.records(main_tid, {begin(0, work), end(ms, work)});
    run.flush(false);
    CHECK(run.written().empty());
    run.flush(true);
    const std::string report = run.written();
    CHECK(section(report, "Host regions").size() == 2);
    run.flush(true);
    CHECK(run.written() == report);
  }
  SUBCASE("abandon") {
    summary_run run;
    run.records(main_tid, {begin(0, work), end(ms, work)});
    run.backend().abandon();
    run.flush(true);
    CHECK(run.written().empty());
  }
}

TEST_CASE("factory: stderr by default, an error without a session; describe()") {
  std::string error;
  rt::backend_context context{nullptr, "out", false};
  CHECK(ferret::summary::make_backend(context, error) == nullptr);
  CHECK(error == "cannot print the summary: no session");

  rt::session_info session{};
  session.executable = "solver";
  context.session = &session;
  error.clear();
  const auto backend = ferret::summary::make_backend(context, error);
  REQUIRE(backend != nullptr);
  CHECK(error.empty());
  CHECK(backend->describe() == "summary: printed on stderr");
}

// --- the backend in a real run ------------------------------------------------------------

namespace {

struct app_result {
  int exit_code = -1;
  std::string out, err;
  int pid = 0;                     // as the app prints it
  std::vector<std::string> files;  // what it left in its directory, besides stdout and stderr
};

// Runs support/test_app in a fresh directory, removed afterwards, with
// `backends` as FERRET_BACKEND.
app_result run_app(const std::string& mode, const std::string& backends) {
  static int counter = 0;
  app_result result;
  const std::filesystem::path directory =
      std::filesystem::temp_directory_path() /
      ("ferret-summary-test-" + std::to_string(getpid()) + "-" + std::to_string(++counter));
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  const ferret::testing::program_result ran = ferret::testing::run_program(
      directory, {FERRET_TEST_APP, mode}, {{"FERRET_BACKEND", backends}});
  result.exit_code = ran.exit_code;
  result.out = ran.out;
  result.err = ran.err;
  std::sscanf(result.out.c_str(), "pid %d", &result.pid);
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    if (name != "stdout" && name != "stderr") result.files.push_back(name);
  }
  std::filesystem::remove_all(directory);
  return result;
}

// The report printed by process `pid` in `err`: from its first line up to the
// runtime's exit lines ("ferret: ...") that follow it.
std::string report_of(const std::string& err, int pid) {
  const std::string start = "ferret summary: ferret-test-app (pid " + std::to_string(pid) + ")";
  const std::size_t at = err.find(start);
  if (at == std::string::npos) return {};
  const std::size_t end = err.find("\nferret: ", at);  // the runtime's exit lines follow
  return err.substr(at, end == std::string::npos ? std::string::npos : end + 1 - at);
}

}  // namespace

TEST_SUITE_BEGIN("process");

TEST_CASE("FERRET_BACKEND=summary prints the host regions of a run at exit") {
  const app_result result = run_app("regions", "summary");
  INFO(result.err);
  CHECK(result.exit_code == 0);
  REQUIRE(result.pid > 0);
  const std::string report = report_of(result.err, result.pid);
  REQUIRE(!report.empty());
  const auto first =
      read_first_line(lines_of(report).front(), "ferret-test-app", std::to_string(result.pid));
  REQUIRE(first.has_value());
  CHECK(first->operations == "0");
  CHECK(headings(report) == std::vector<std::string>{"Host regions", "Marks"});
  std::map<std::string, std::string> calls;
  for (const auto& row : rows(section(report, "Host regions"))) calls[row.back()] = row.front();
  CHECK(calls == std::map<std::string, std::string>{{"main", "1"}, {"work", "200"}});
  CHECK(rows(section(report, "Marks")) == std::vector<std::vector<std::string>>{{"200", "tick"}});
  CHECK(result.err.find("ferret: summary: printed on stderr") != std::string::npos);
}

TEST_CASE("beside chrome: both outputs") {
  const app_result result = run_app("regions", "chrome,summary");
  INFO(result.err);
  CHECK(result.exit_code == 0);
  CHECK(!report_of(result.err, result.pid).empty());
  CHECK(result.files ==
        std::vector<std::string>{"ferret-ferret-test-app-" + std::to_string(result.pid) + ".json"});
}

TEST_CASE("fork: the parent's report once, never with the child's regions") {
  const app_result result = run_app("fork", "summary");
  INFO(result.err);
  CHECK(result.exit_code == 0);
  const std::string marker =
      "ferret summary: ferret-test-app (pid " + std::to_string(result.pid) + ")";
  const std::size_t first = result.err.find(marker);
  REQUIRE(first != std::string::npos);
  CHECK(result.err.find(marker, first + 1) == std::string::npos);
  std::map<std::string, std::string> calls;
  for (const auto& row : rows(section(report_of(result.err, result.pid), "Host regions")))
    calls[row.back()] = row.front();
  CHECK(calls == std::map<std::string, std::string>{
                     {"main", "1"}, {"parent before fork", "1"}, {"parent after fork", "1"}});
}

TEST_SUITE_END();

TEST_CASE("API calls counted, not recorded: the collectors' counts, most first") {
  const rt::metadata_list metadata{
      {"cuda-api", std::string{"work"}},
      {"cuda-api-unrecorded:cudaGetLastError", std::int64_t{41286}},
      {"cuda-api-unrecorded:cudaGetDevice", std::int64_t{252648}},
      {"level-zero-api-unrecorded:zeDeviceGet", std::int64_t{3}},
      {"cuda-api-unrecorded:cudaSetDevice", std::int64_t{0}},  // nothing to say
      {"-api-unrecorded:nameless", std::int64_t{9}},           // no collector: not such an entry
  };
  summary_run run;
  const std::string report = run.finish(0, metadata);
  CHECK(section(report, "API calls counted, not recorded") ==
        lines{"   calls  collector   call", "  252648  cuda        cudaGetDevice",
              "   41286  cuda        cudaGetLastError", "       3  level-zero  zeDeviceGet"});
  CHECK(lines_of(report).back().rfind("Losses", 0) != 0);
}

namespace {

// --- sampled counters (FERRET_CUDA_METRICS_SAMPLING) ---------------------------------

const std::vector<rt::gpu_metric> link_metrics = {
    {"nvltx__bytes.sum", "NVLink bytes sent", "bytes", true},
    {"nvlrx__bytes.sum", "NVLink bytes received", "bytes", true},
    {"pcie__read_bytes.sum", "PCIe bytes read", "bytes", true},
    {"pcie__write_bytes.sum", "PCIe bytes written", "bytes", true},
    {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "SM activity", "percent", false},
};

// Intervals of GPU 0, 1 ms each from `first` on, one row of values each.
void deliver_intervals(rt::backend& backend, std::int64_t first,
                       const std::vector<std::array<double, 5>>& values) {
  std::vector<rt::gpu_metric_interval> intervals;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::int64_t begin = (first + static_cast<std::int64_t>(i)) * ms;
    intervals.push_back({0, begin, begin + ms, values[i].data()});
  }
  backend.gpu_metric_intervals(intervals.data(), intervals.size());
}

}  // namespace

TEST_CASE("link traffic by kernel: exact when one kernel ran, shared by overlap, no kernel; any arrival order") {
  summary_run run;
  constexpr double MiB = 1024.0 * 1024.0;
  run.backend().gpu_sampled_metrics(rt::gpu_metric_set{0, link_metrics, ms});
  // Drain 1: the first intervals come before their kernels.
  deliver_intervals(run.backend(), 0,
                    {{{4 * MiB, MiB, 1024, 0, 50}},     // kernel_a alone
                     {{4 * MiB, MiB, 1024, 0, 50}},     // kernel_a alone (it spans two intervals)
                     {{10 * MiB, MiB, 1024, 0, 100}},   // kernel_b 0.5 ms, kernel_c 0.75 ms
                     {{MiB, MiB, 1024, 0, 0}}});        // no kernel
  run.flush(false);
  // Drain 2: those kernels.
  run.activities({kernel("kernel_a", 0, 2 * ms, launch_not_seen),
                  kernel("kernel_b", 2 * ms, 2 * ms + ms / 2, launch_not_seen),
                  kernel("kernel_c", 2 * ms + ms / 4, 3 * ms, launch_not_seen)});
  run.flush(false);
  // Drain 3: a kernel before its intervals.
  run.activities({kernel("kernel_d", 5 * ms, 6 * ms, launch_not_seen)});
  deliver_intervals(run.backend(), 4, {{{2 * MiB, MiB, 1024, 0, 0}}, {{8 * MiB, MiB, 1024, 0, 100}}});
  const std::string report = run.finish();
  INFO(report);

  const lines kernels = section(report, "Link traffic by kernel (PM sampling)");
  REQUIRE(kernels.size() > 2);
  // Exact: 4+1 MiB + 2 × 1 KiB, twice (kernel_a), 8+1 MiB + 1 KiB (kernel_d);
  // shared: 10+1 MiB + 1 KiB; no kernel: 1+1 MiB + 1 KiB, 2+1 MiB + 1 KiB.
  CHECK(kernels[0] == "  link bytes (NVLink and PCIe): 19.0 MiB while one kernel ran (exact), 11.0 MiB "
                      "shared among several kernels by their overlap, 5.0 MiB while no kernel ran (idle "
                      "or copies)");
  const lines table(kernels.begin() + 2, kernels.end());
  CHECK(texts(table.front()) == std::vector<std::string>{"NVLink sent", "NVLink received", "PCIe read",
                                                         "PCIe write", "exact", "launches", "GPU",
                                                         "kernel"});
  check_aligned(table, "rrrrrrrl");
  // kernel_c overlapped 0.75 of the 1.25 ms both ran in interval 2: 6 MiB,
  // 0.6 MiB, 614 B; kernel_b the rest.
  CHECK(rows(table) == std::vector<std::vector<std::string>>{
                           {"8.0 MiB", "2.0 MiB", "2.0 KiB", "-", "100%", "1", "0", "kernel_a"},
                           {"8.0 MiB", "1.0 MiB", "1.0 KiB", "-", "100%", "1", "0", "kernel_d"},
                           {"6.0 MiB", "614.4 KiB", "614 B", "-", "0%", "1", "0", "kernel_c"},
                           {"4.0 MiB", "409.6 KiB", "410 B", "-", "0%", "1", "0", "kernel_b"},
                       });

  const lines counters = section(report, "Sampled counters per GPU (PM sampling)");
  REQUIRE(!counters.empty());
  CHECK(texts(counters.front()) ==
        std::vector<std::string>{"GPU", "counter", "total", "mean", "peak", "sampled"});
  // 29 MiB in 6 ms; at most 10 MiB in 1 ms. SM activity: a level, its time-weighted mean.
  CHECK(rows(counters) == std::vector<std::vector<std::string>>{
                              {"GPU 0", "NVLink bytes sent", "29.0 MiB", "5.07 GB/s", "10.49 GB/s", "0.006 s"},
                              {"GPU 0", "NVLink bytes received", "6.0 MiB", "1.05 GB/s", "1.05 GB/s", "0.006 s"},
                              {"GPU 0", "PCIe bytes read", "6.0 KiB", "1.02 MB/s", "1.02 MB/s", "0.006 s"},
                              {"GPU 0", "PCIe bytes written", "0 B", "0 B/s", "0 B/s", "0.006 s"},
                              {"GPU 0", "SM activity", "-", "50 percent", "100 percent", "0.006 s"},
                          });
}

TEST_CASE("a sampled level is given to three digits, as the rates beside it") {
  summary_run run;
  run.backend().gpu_sampled_metrics(rt::gpu_metric_set{0, link_metrics, ms});
  // An empty-kernel storm keeps the SMs active 0.02 % of the time (H200, 2026-11-29).
  deliver_intervals(run.backend(), 0, {{{0, 0, 0, 0, 0.0243199}}, {{0, 0, 0, 0, 0.0279381}}});
  const std::string report = run.finish();
  INFO(report);
  const lines counters = section(report, "Sampled counters per GPU (PM sampling)");
  REQUIRE(counters.size() == 6);
  CHECK(rows(counters).back() ==
        std::vector<std::string>{"GPU 0", "SM activity", "-", "0.0261 percent", "0.0279 percent", "0.002 s"});
}

TEST_CASE("link traffic by kernel: the top 10 kernels, the rest summed per link") {
  summary_run run;
  run.backend().gpu_sampled_metrics(rt::gpu_metric_set{0, link_metrics, ms});
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i) names.push_back("k" + std::to_string(i));
  std::vector<gpu_activity> kernels;
  std::vector<std::array<double, 5>> values;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto begin = static_cast<std::int64_t>(i) * ms;
    kernels.push_back(kernel(names[i].c_str(), begin, begin + ms, launch_not_seen));
    values.push_back({{1000.0 * static_cast<double>(i + 1), 0, 0, 10, 0}});
  }
  run.activities(kernels);
  deliver_intervals(run.backend(), 0, values);
  const lines body = section(run.finish(), "Link traffic by kernel (PM sampling)");
  const auto table = rows(lines(body.begin() + 2, body.end()));
  REQUIRE(table.size() == 10);
  CHECK(table.front().back() == "k11");
  CHECK(table.back().back() == "k2");
  CHECK(body.back() == "  … 2 more kernels: NVLink sent 2.9 KiB, NVLink received 0 B, PCIe read 0 B, "
                       "PCIe write 20 B");
}

TEST_CASE("without sampled counters the summary has no PM sampling section") {
  summary_run run;
  run.activities({kernel("k", 0, ms, launch_not_seen)});
  const std::string report = run.finish();
  CHECK(section(report, "Link traffic by kernel (PM sampling)").empty());
  CHECK(section(report, "Sampled counters per GPU (PM sampling)").empty());
}
