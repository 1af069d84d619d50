// Tests of the TAU profile backend. The unit cases drive it directly (no
// runtime session) with synthesised records and GPU activities; the "process"
// suite runs support/known_tree_app with FERRET_BACKEND=tau. Every profile
// directory written is checked by ferret::tau_check before its values are read.
#include "tau_backend.hpp"
#include "tau_check.hpp"
#include "tau_names.hpp"
#include "tau_thread_profile.hpp"
#include "support/run_program.hpp"
#include "support/backend_test_support.hpp"
#include "ferret/runtime/runtime.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

namespace {

using ferret::testing::begin;
using ferret::testing::end;
using ferret::testing::make_session;
using ferret::testing::mark;
using ferret::testing::name_table;
using ferret::testing::sample;

namespace rt = ferret::runtime;
namespace tc = ferret::tau_check;
namespace fs = std::filesystem;
using rt::copy_kind;
using rt::gpu_activity;
using rt::gpu_operation;
using rt::record_kind;

constexpr std::uint32_t test_pid = 4242;
constexpr std::uint64_t worker_tid = 4243;

std::string all_errors(const tc::report& r) {
  std::string text;
  for (const std::string& line : r.errors) text += line + "\n";
  return text;
}

// The directory, checked strictly; the test fails on any error.
tc::report checked(const std::string& directory) {
  tc::report r = tc::check_directory(directory);
  CHECK_MESSAGE(r.ok(), "tau_check found " << r.error_count << " errors:\n" << all_errors(r));
  return r;
}

struct fixture {
  ferret::testing::temp_directory dir{"ferret-tau-test"};
  rt::session_info session = make_session(test_pid);
  name_table names;
  rt::metadata_list runtime_metadata{{"clock-ticks-per-second", 2.5e9}};
  rt::metadata_list user_metadata;
  rt::thread_info main_thread{test_pid, test_pid, {}, true};
  rt::thread_info worker{test_pid, worker_tid, "worker", false};
  std::unique_ptr<rt::backend> backend;

  explicit fixture(const std::vector<std::string>& counters = {}) {
    std::string error;
    backend = ferret::tau::make_backend_in(session, dir.path(), counters, error);
    REQUIRE_MESSAGE(backend != nullptr, error);
  }

  void feed(const rt::thread_info& thread, std::initializer_list<rt::record> records) {
    backend->thread_records(thread, records.begin(), records.size());
  }
  void activities(const std::vector<gpu_activity>& batch) { backend->gpu_activities(batch.data(), batch.size()); }
  void flush(bool final) {
    backend->flush(rt::session_status{&runtime_metadata, &user_metadata, 100, 0, final});
  }
  tc::report finish() {
    flush(true);
    return checked(dir.path());
  }
  std::set<std::string> files() const {
    std::set<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir.path())) found.insert(entry.path().filename().string());
    return found;
  }
};

// The entry `name` of a profile (fails the test when absent).
const tc::function_line& entry(const tc::profile* p, std::string_view name) {
  REQUIRE(p != nullptr);
  const tc::function_line* f = p->function(name);
  REQUIRE_MESSAGE(f != nullptr, "no entry " << name);
  return *f;
}

const tc::user_event_line& event(const tc::profile* p, std::string_view name) {
  REQUIRE(p != nullptr);
  const tc::user_event_line* e = p->user_event(name);
  REQUIRE_MESSAGE(e != nullptr, "no user event " << name);
  return *e;
}

std::string fmt_key(int i) { return "key " + std::to_string(i); }

void check_entry(const tc::function_line& f, std::uint64_t calls, std::uint64_t subroutines, double exclusive,
                 double inclusive) {
  INFO(f.name);
  CHECK(f.calls == calls);
  CHECK(f.subroutines == subroutines);
  CHECK(f.exclusive == doctest::Approx(exclusive));
  CHECK(f.inclusive == doctest::Approx(inclusive));
}

}  // namespace

TEST_CASE("host regions: flat and call-path entries in microseconds, one file per thread") {
  fixture run;
  const auto* solve = run.names.add("solve", {}, "heat.cpp", 42);
  const auto* step = run.names.add("step");
  const auto* work = run.names.add("work");
  run.feed(run.main_thread, {begin(1000, solve), begin(2000, step), end(5000, step), begin(6000, step)});
  run.feed(run.worker, {begin(3000, work)});  // open across drains
  run.flush(false);
  CHECK(run.files().empty());  // only the final flush writes
  run.feed(run.main_thread, {end(9500, step), end(10000, solve), begin(20000, solve), end(21000, solve)});
  run.feed(run.worker, {end(8000, work)});
  const tc::report r = run.finish();
  CHECK(run.files() == std::set<std::string>{"profile.0.0.0", "profile.0.0.1"});
  CHECK(r.metrics == std::vector<std::string>{"TIME"});

  const tc::profile* main_profile = r.find(0, 0);
  const std::string solve_name = "solve [{heat.cpp} {42,0}]";
  // The main thread spans the process: from 0 to its last event.
  check_entry(entry(main_profile, ".TAU application"), 1, 2, 11, 21);
  check_entry(entry(main_profile, solve_name), 2, 2, 3.5, 10);
  check_entry(entry(main_profile, "step"), 2, 0, 6.5, 6.5);
  check_entry(entry(main_profile, ".TAU application => " + solve_name), 2, 2, 3.5, 10);
  check_entry(entry(main_profile, ".TAU application => " + solve_name + " => step"), 2, 0, 6.5, 6.5);
  CHECK(entry(main_profile, solve_name).group == "TAU_USER");
  CHECK(entry(main_profile, ".TAU application => " + solve_name).group == "TAU_CALLPATH|TAU_USER");
  CHECK(entry(main_profile, ".TAU application").group == "TAU_DEFAULT");
  CHECK(main_profile->metadata.front().first == "Metric Name");
  CHECK(main_profile->attribute("Thread Name") == "main");
  CHECK(main_profile->attribute("Hostname") == "testhost");
  CHECK(main_profile->attribute("Command Line") == "app --size 3");
  CHECK(main_profile->attribute("clock-ticks-per-second") == "2500000000");
  CHECK(main_profile->attribute("events-dropped") == "0");

  const tc::profile* worker_profile = r.find(0, 1);
  // Other threads span from their first event to their last.
  check_entry(entry(worker_profile, ".TAU application"), 1, 1, 0, 5);
  check_entry(entry(worker_profile, "work"), 1, 0, 5, 5);
  CHECK(worker_profile->attribute("Thread Name") == "worker");
  CHECK(worker_profile->attribute("Thread ID") == "4243");
  CHECK(worker_profile->function("step") == nullptr);
}

TEST_CASE("recursion: the flat inclusive time counts the outermost call only") {
  fixture run;
  const auto* f = run.names.add("f");
  run.feed(run.main_thread, {begin(0, f), begin(10000, f), end(20000, f), end(40000, f)});
  const tc::report r = run.finish();
  const tc::profile* p = r.find(0, 0);
  check_entry(entry(p, "f"), 2, 1, 40, 40);
  check_entry(entry(p, ".TAU application => f"), 1, 1, 30, 40);
  check_entry(entry(p, ".TAU application => f => f"), 1, 0, 10, 10);
}

// The runtime matches ends to begins and ends what the program left open (see
// runtime::record); its counts reach the metadata with the runtime's.
TEST_CASE("regions the runtime ended count like the program's; its counts are metadata") {
  fixture run;
  const auto* a = run.names.add("a");
  const auto* b = run.names.add("b");
  const auto* d = run.names.add("d");
  using rt::region_close;
  // a's end ended b too; d was open at exit.
  run.feed(run.main_thread, {begin(0, a), begin(10000, b), end(30000, b, region_close::by_outer_end),
                             end(30000, a), begin(50000, d), end(100000, d, region_close::at_exit)});
  run.runtime_metadata = {{"unbalanced-region-ends", std::int64_t{1}},
                          {"unfinished-regions", std::int64_t{1}}};
  const tc::report r = run.finish();
  const tc::profile* p = r.find(0, 0);
  check_entry(entry(p, "a"), 1, 1, 10, 30);
  check_entry(entry(p, "b"), 1, 0, 20, 20);
  check_entry(entry(p, "d"), 1, 0, 50, 50);
  CHECK(p->attribute("unbalanced-region-ends") == "1");
  CHECK(p->attribute("unfinished-regions") == "1");
}

TEST_CASE("counters and marks are user events, also per calling context") {
  fixture run;
  const auto* solve = run.names.add("solve");
  const auto* residual = run.names.add("residual");
  const auto* tick = run.names.add("tick");
  run.feed(run.main_thread, {sample(0, residual, 3), begin(10, solve), sample(20, residual, 1), mark(25, tick),
                             sample(30, residual, 2), sample(35, residual, NAN), end(40, solve), mark(50, tick)});
  const tc::report r = run.finish();
  const tc::profile* p = r.find(0, 0);
  const tc::user_event_line& all = event(p, "residual");
  CHECK(all.count == 3);
  CHECK(all.max == 3);
  CHECK(all.min == 1);
  CHECK(all.mean == doctest::Approx(2));
  CHECK(all.sum_of_squares == doctest::Approx(14));
  CHECK(event(p, "residual : .TAU application => solve").count == 2);
  CHECK(event(p, "residual : .TAU application").count == 1);
  CHECK(event(p, "tick").count == 2);
  CHECK(event(p, "tick : .TAU application => solve").count == 1);
  CHECK(p->attribute("nonfinite-counter-samples") == "1");
}

TEST_CASE("counter metrics: MULTI__ directories, each counter's change per region") {
  fixture run{{"flops", "bytes in/out"}};
  const auto* solve = run.names.add("solve");
  const auto* step = run.names.add("step");
  const auto* flops = run.names.add("flops");
  run.feed(run.main_thread, {sample(0, flops, 100), begin(10, solve), sample(20, flops, 150), begin(30, step),
                             sample(40, flops, 400), end(50, step), sample(60, flops, 500), end(70, solve)});
  const tc::report r = run.finish();
  CHECK(run.files() == std::set<std::string>{"MULTI__TIME", "MULTI__flops", "MULTI__bytes_in_out"});
  CHECK(r.metrics == std::vector<std::string>{"TIME", "bytes_in_out", "flops"});
  const tc::profile* p = r.find(0, 0, "flops");
  REQUIRE(p != nullptr);
  CHECK(p->metric == "flops");
  CHECK(p->attribute("Metric Name") == "flops");
  check_entry(entry(p, "solve"), 1, 1, 150, 400);
  check_entry(entry(p, "step"), 1, 0, 250, 250);
  check_entry(entry(p, ".TAU application"), 1, 1, 100, 500);
  // A counter never sampled: zero everywhere, same entries.
  check_entry(entry(r.find(0, 0, "bytes_in_out"), "solve"), 1, 1, 0, 0);
  check_entry(entry(r.find(0, 0, "TIME"), "step"), 1, 0, 0.02, 0.02);
}

namespace {

// A context tree like the runtime's: root → step → <API call>.
struct launch_contexts {
  rt::context_node root{0, 0, nullptr, nullptr};
  rt::context_node step;
  rt::context_node copy_call;
  rt::context_node launch_call;
  launch_contexts(const rt::name_info* step_name, const rt::name_info* copy_name, const rt::name_info* launch_name)
      : step{1, 1, &root, step_name}, copy_call{2, 2, &step, copy_name}, launch_call{3, 2, &step, launch_name} {}
};

gpu_activity device_operation(gpu_operation operation, std::uint32_t device, std::uint32_t stream,
                              std::int64_t start, std::int64_t end_ns, std::uint64_t tid,
                              const rt::context_node* context) {
  gpu_activity activity{};
  activity.operation = operation;
  activity.device = device;
  activity.stream = stream;
  activity.start_ns = start;
  activity.end_ns = end_ns;
  activity.launch = rt::gpu_launch{1, tid, start, context};
  return activity;
}

gpu_activity copy(copy_kind kind, std::uint64_t bytes, std::uint32_t stream, std::int64_t start,
                  std::uint64_t tid, const rt::context_node* context) {
  gpu_activity activity = device_operation(gpu_operation::memcpy, 0, stream, start, start + 1000, tid, context);
  activity.copy = kind;
  activity.bytes = bytes;
  return activity;
}

}  // namespace

TEST_CASE("GPU: one virtual thread per stream after the host threads, bytes as user events") {
  fixture run;
  const auto* step = run.names.add("step");
  const auto* memcpy_call = run.names.add("cudaMemcpyAsync", "cuda");
  const auto* launch_call = run.names.add("cudaLaunchKernel", "cuda");
  const launch_contexts contexts{step, memcpy_call, launch_call};
  const rt::data_object_info grid{7, "grid \"A\"", 0x1000, 4096, rt::memory_kind::device, 0};
  const rt::data_object_info mask{8, "mask", 0x9000, 256, rt::memory_kind::device, 1};

  run.backend->gpu_device(rt::gpu_device_info{0, "NVIDIA H100", 9, 0, 132, 80ull << 30, 1024, 64, 32, 65536, 65536,
                                              233472, 49152});
  run.feed(run.main_thread, {begin(0, step), begin(10, memcpy_call), end(20, memcpy_call), begin(30, launch_call),
                             end(40, launch_call), end(100000, step)});
  gpu_activity to_device = copy(copy_kind::host_to_device, 4096, 7, 1000, test_pid, &contexts.copy_call);
  to_device.destination_object = &grid;
  to_device.destination_object_id = grid.id;
  gpu_activity small_copy = copy(copy_kind::host_to_device, 1024, 7, 3000, test_pid, &contexts.copy_call);
  small_copy.destination_object = &grid;
  small_copy.destination_object_id = grid.id;
  gpu_activity back = copy(copy_kind::device_to_host, 2048, 7, 9000, test_pid, &contexts.copy_call);
  back.source_object = &grid;
  back.source_object_id = grid.id;
  gpu_activity kernel = device_operation(gpu_operation::kernel, 0, 7, 5000, 8000, test_pid, &contexts.launch_call);
  kernel.name = "_Z6kernelPfi";
  gpu_activity unseen = copy(copy_kind::device_to_device, 512, 9, 2000, 0, nullptr);
  gpu_activity set = device_operation(gpu_operation::memset, 1, 3, 4000, 4500, test_pid, &contexts.step);
  set.bytes = 256;
  set.destination_object = &mask;
  set.destination_object_id = mask.id;
  gpu_activity allocation = device_operation(gpu_operation::allocation, 0, 0, 500, 500, test_pid, &contexts.step);
  allocation.bytes = 1 << 20;
  allocation.memory = rt::memory_kind::device;
  const gpu_activity release = device_operation(gpu_operation::release, 0, 0, 9900, 9900, test_pid, &contexts.step);
  const gpu_activity sync =
      device_operation(gpu_operation::synchronization, 0, 7, 9000, 9500, test_pid, &contexts.step);
  run.activities({to_device, kernel, unseen});
  run.activities({small_copy, back, set, allocation, release, sync});
  const tc::report r = run.finish();
  CHECK(run.files() == std::set<std::string>{"profile.0.0.0", "profile.0.0.1", "profile.0.0.2", "profile.0.0.3"});

  // T=1: device 0, stream 7.
  const tc::profile* stream = r.find(0, 1);
  REQUIRE(stream != nullptr);
  CHECK(stream->attribute("CUDA Device") == "0");
  CHECK(stream->attribute("CUDA Stream") == "7");
  CHECK(stream->attribute("GPU Name") == "NVIDIA H100");
  check_entry(entry(stream, "Memory copy Host to Device"), 2, 0, 2, 2);
  check_entry(entry(stream, "Memory copy Device to Host"), 1, 0, 1, 1);
  check_entry(entry(stream, "kernel(float*, int)"), 1, 0, 3, 3);
  CHECK(entry(stream, "kernel(float*, int)").group == "TAU_GPU");
  CHECK(entry(stream, "Memory copy Host to Device").group == "TAU_GPU_MEMORY_COPY");
  check_entry(entry(stream, ".TAU application"), 1, 4, 3, 9);  // 1000 .. 10000 ns
  // The notes' example: 4096 and 1024 bytes.
  const tc::user_event_line& to_device_bytes = event(stream, "Bytes copied from Host to Device");
  CHECK(to_device_bytes.count == 2);
  CHECK(to_device_bytes.max == 4096);
  CHECK(to_device_bytes.min == 1024);
  CHECK(to_device_bytes.mean == 2560);
  CHECK(to_device_bytes.sum_of_squares == 17825792);
  CHECK(event(stream, "Bytes copied from Host to Device (object: grid 'A')").count == 2);
  CHECK(event(stream, "Bytes copied from Device to Host (object: grid 'A')").max == 2048);

  // T=2: device 0, stream 9: a copy whose launch was not seen.
  const tc::profile* unseen_stream = r.find(0, 2);
  REQUIRE(unseen_stream != nullptr);
  CHECK(unseen_stream->attribute("CUDA Stream") == "9");
  CHECK(event(unseen_stream, "Bytes copied from Device to Device").max == 512);

  // T=3: device 1, stream 3: the memset.
  const tc::profile* other_device = r.find(0, 3);
  REQUIRE(other_device != nullptr);
  CHECK(other_device->attribute("CUDA Device") == "1");
  CHECK(other_device->attribute("GPU Name").empty());
  check_entry(entry(other_device, "Memory set"), 1, 0, 0.5, 0.5);
  CHECK(event(other_device, "Bytes set (object: mask)").max == 256);

  // The launching thread: bytes per calling context of the launch.
  const tc::profile* host = r.find(0, 0);
  CHECK(entry(host, "cudaMemcpyAsync").group == "TAU_GPU_API");
  CHECK(event(host, "Bytes copied from Host to Device").count == 2);
  CHECK(event(host, "Bytes copied from Host to Device : .TAU application => step => cudaMemcpyAsync").count == 2);
  CHECK(event(host, "Bytes copied from Device to Host : .TAU application => step => cudaMemcpyAsync").max == 2048);
  CHECK(event(host, "Bytes set : .TAU application => step").max == 256);
  CHECK(event(host, "Bytes allocated (device memory) : .TAU application => step").max == 1 << 20);
  CHECK(host->user_event("Bytes copied from Device to Device") == nullptr);
  CHECK(host->attribute("gpu-operations-not-profiled") == "2");
}

TEST_CASE("names: one rule, applied where a reader needs it") {
  using ferret::tau::profile_name;
  CHECK(profile_name("say \"hi\"") == "say 'hi'");
  CHECK(profile_name("a[i] => b : c") == "a[i] -> b: c");
  CHECK(profile_name("a : : b") == "a:: b");  // no new " : " forms
  CHECK(profile_name("größe µs 🚀") == "größe µs 🚀");
  CHECK(profile_name("bad\xff" "byte") == "bad\xEF\xBF\xBD" "byte");
  CHECK(profile_name("two\nlines\t") == "two lines");
  CHECK(profile_name("  a   b  ") == "a b");
  CHECK(profile_name("") == "(unnamed)");
  CHECK(profile_name(" \t\n ") == "(unnamed)");
  // TAU's annotations lose their meaning
  CHECK(profile_name("x [{f.cpp} {abc,1}]") == "x [ {f.cpp} {abc,1}]");
  CHECK(profile_name("x [ <n> ]") == "x [<n> ]");
  CHECK(profile_name("a [@] b [@] c") == "a [at] b [at] c");
  CHECK(profile_name("OpenMP location: x") == "OpenMP location\xE2\x88\xB6 x");
  CHECK(profile_name("file: a line: b") == "file\xE2\x88\xB6 a line\xE2\x88\xB6 b");
  CHECK(profile_name("profile: deadline: x") == "pro" "file\xE2\x88\xB6 dead" "line\xE2\x88\xB6 x");
  CHECK(profile_name("profile: x") == "profile: x");  // not mpiP's form
  CHECK(profile_name("!$omp do @a:b:c") == "!$omp do @a\xE2\x88\xB6" "b\xE2\x88\xB6" "c");
  // Long names are cut, and stay apart.
  const std::string long_a = std::string(5000, 'x') + "a";
  const std::string long_b = std::string(5000, 'x') + "b";
  CHECK(profile_name(long_a).size() <= ferret::tau::longest_name);
  CHECK(profile_name(long_a) != profile_name(long_b));
  CHECK(profile_name(std::string(3000, '\xC3') ).size() <= ferret::tau::longest_name);
  const std::string cut = profile_name(std::string(2000, 'x') + std::string(1000, 'y'));
  CHECK(cut.rfind(std::string(1000, 'x'), 0) == 0);

  CHECK(ferret::tau::located_name("f{x}", "dir/my {file}.cpp", 7) == "f(x) [{dir/my__file_.cpp} {7,0}]");
  const std::string deep_file = std::string(400, 'd') + "/main.cpp";
  const std::string located = ferret::tau::located_name("f", deep_file, 1);
  CHECK(located.size() < ferret::tau::longest_file + 20);
  CHECK(located.find("/main.cpp} {1,0}]") != std::string::npos);
  CHECK(ferret::tau::domain_group("my lib|x") == "TAU_USER|my_lib_x");

  std::string xml;
  ferret::tau::append_xml_text(xml, "a<b>&c #1\n\x01\t" "é日\xff");
  CHECK(xml == "a&lt;b&gt;&amp;c &#x23;1&#xA;&#xFFFD;\t&#xE9;&#x65E5;&#xFFFD;");
  CHECK(ferret::tau::metric_file_name("a/b c:d\"e") == "a_b_c_d'e");

  fixture run;
  run.user_metadata.emplace_back("input", std::string{"<grid & \"mesh\">\n# 2"});
  run.user_metadata.emplace_back("unicode-Größe", std::string{"日本語 ✓"});
  run.user_metadata.emplace_back("", std::string{"empty key"});
  const auto* quoted = run.names.add("say \"hi\"");
  const auto* brackets = run.names.add("a[i] => b : c", {}, "dir/{x}.cpp", 7);
  const auto* unicode = run.names.add("größe µs");
  const auto* invalid = run.names.add("bad\xff");
  const auto* domain = run.names.add("factorize", "my \"lib\"");
  const auto* annotation = run.names.add("x [{f.cpp} {abc,1}]");
  const auto* empty = run.names.add("");
  const auto* blank = run.names.add("   ");
  const auto* huge = run.names.add(std::string(64 * 1024, 'h'));
  const auto* mpip = run.names.add("file: x", {}, "line:3.cpp", 4);
  run.feed(run.main_thread, {begin(0, quoted), begin(1, brackets), begin(2, unicode), begin(3, invalid),
                             begin(4, domain), end(5, domain), end(6, invalid), end(7, unicode), end(8, brackets),
                             end(9, quoted), mark(10, unicode), begin(11, annotation), end(12, annotation),
                             begin(13, empty), end(14, empty), begin(15, blank), end(16, blank), begin(17, huge),
                             mark(18, empty), end(19, huge), begin(20, mpip), end(21, mpip)});
  const tc::report r = run.finish();
  const tc::profile* p = r.find(0, 0);
  CHECK(entry(p, "say 'hi'").calls == 1);
  CHECK(entry(p, "a[i] -> b: c [{dir/_x_.cpp} {7,0}]").calls == 1);
  CHECK(entry(p, "größe µs").calls == 1);
  CHECK(entry(p, "bad\xEF\xBF\xBD").calls == 1);
  CHECK(entry(p, "factorize").group == "TAU_USER|my_'lib'");
  CHECK(entry(p, "x [ {f.cpp} {abc,1}]").calls == 1);
  CHECK(entry(p, "(unnamed)").calls == 2);  // the empty and the blank name
  CHECK(entry(p, profile_name(std::string(64 * 1024, 'h'))).calls == 1);
  CHECK(entry(p, "file\xE2\x88\xB6 x [{line\xE2\x88\xB6" "3.cpp} {4,0}]").calls == 1);
  CHECK(event(p, "größe µs").count == 1);
  CHECK(event(p, "(unnamed)").count == 1);
  CHECK(p->attribute("input") == "<grid & \"mesh\">\n# 2");
  CHECK(p->attribute("unicode-Größe") == "日本語 ✓");
  CHECK(p->attribute("(unnamed)") == "empty key");
}

TEST_CASE("call-path profiles say so as TAU does; .TAU application in whole microseconds") {
  fixture run;
  const auto* a = run.names.add("a");
  run.feed(run.main_thread, {begin(1500, a), end(2750, a)});
  run.feed(run.worker, {begin(100, a), end(1234, a)});
  const tc::report r = run.finish();
  const tc::profile* p = r.find(0, 0);
  CHECK(p->attribute("TAU_CALLPATH") == "on");
  CHECK(p->attribute("TAU_CALLPATH_DEPTH") == "32");
  // 0 .. 2750 ns: 3 µs (rounded up), of which a has 1.25.
  check_entry(entry(p, ".TAU application"), 1, 1, 2, 3);
  check_entry(entry(p, "a"), 1, 0, 1.25, 1.25);
  std::ifstream in{run.dir.path() + "/profile.0.0.0"};
  std::string line;
  for (int i = 0; i < 3; ++i) std::getline(in, line);
  CHECK(line == "\".TAU application\" 1 1 2 3 0 GROUP=\"TAU_DEFAULT\" ");
  check_entry(entry(r.find(0, 1), ".TAU application"), 1, 1, 1, 2);  // 100 .. 1234 ns, rounded up
}

TEST_CASE("nesting deeper than the call-path limit is folded, counted and costs no more memory") {
  fixture run;
  const auto* level = run.names.add("level");
  const auto* other = run.names.add("other");
  std::vector<rt::record> records;
  constexpr int depth = 100'000;
  for (int i = 0; i < depth; ++i) records.push_back(begin(i, i == depth - 1 ? other : level));
  for (int i = 0; i < depth; ++i) records.push_back(end(depth + i, i == 0 ? other : level));
  run.backend->thread_records(run.main_thread, records.data(), records.size());
  const tc::report r = run.finish();
  const tc::profile* p = r.find(0, 0);
  constexpr std::uint64_t written_levels = ferret::tau::callpath_depth - 1;
  CHECK(p->attribute("callpath-folded-calls") == std::to_string(depth - written_levels));
  CHECK(entry(p, "level").calls == depth - 1);
  CHECK(entry(p, "level").inclusive == doctest::Approx(2 * depth / 1000.0 - 1 / 1000.0));  // the outermost
  CHECK(entry(p, "other").calls == 1);
  std::size_t paths = 0;
  for (const tc::function_line& f : p->functions) paths += f.name.find(" => ") != std::string::npos;
  CHECK(paths == written_levels);
  const tc::function_line& limit = *std::find_if(p->functions.begin(), p->functions.end(), [](const auto& f) {
    return std::count(f.name.begin(), f.name.end(), '>') == ferret::tau::callpath_depth - 1;
  });
  CHECK(limit.calls == 1);
  CHECK(limit.subroutines == 1);  // its folded callee
  CHECK(run.backend->describe().find("99969 calls nested deeper than 31 levels") != std::string::npos);
}

namespace {

// OpenMP's recursive fibonacci as the OpenMP collector records it: each task
// waits in a taskwait for two child tasks of two task constructs, which its
// thread runs inside the wait. The counter "items" grows by one at each task's
// and each wait's begin.
struct task_tree {
  explicit task_tree(fixture& run)
      : task_sites{run.names.add("task", "openmp", "fib.cpp", 32),
                   run.names.add("task", "openmp", "fib.cpp", 34)},
        taskwait{run.names.add("taskwait", "openmp", "fib.cpp", 36)},
        wait{run.names.add("taskwait wait", "openmp", "fib.cpp", 36)},
        implicit_task{run.names.add("implicit task", "openmp")},
        items{run.names.add("items")} {}

  const rt::name_info* task_sites[2];
  const rt::name_info* taskwait;
  const rt::name_info* wait;
  const rt::name_info* implicit_task;
  const rt::name_info* items;
  std::vector<rt::record> records;
  std::int64_t now = 0;
  double counted = 0;
  std::uint64_t tasks[2] = {0, 0};
  std::uint64_t waits_in[2] = {0, 0};  // by the construct of the waiting task
  std::uint64_t waits = 0;
  std::int64_t wait_own_ns = 0;  // the waits' time without the tasks run inside them

  void count() { records.push_back(sample(now, items, ++counted)); }

  // A task of construct `site` with `depth` levels of tasks below it; its span.
  std::int64_t task(int site, int depth) {
    const std::int64_t start = now;
    records.push_back(begin(now, task_sites[site]));
    count();
    now += 10;
    ++tasks[site];
    if (depth > 0) {
      records.push_back(begin(now, taskwait));
      now += 10;
      const std::int64_t wait_start = now;
      records.push_back(begin(now, wait));
      count();
      ++waits;
      ++waits_in[site];
      now += 10;
      std::int64_t nested = task(0, depth - 1);
      now += 10;
      nested += task(1, depth - 1);
      now += 10;
      records.push_back(end(now, wait));
      wait_own_ns += now - wait_start - nested;
      now += 10;
      records.push_back(end(now, taskwait));
      now += 10;
    }
    records.push_back(end(now, task_sites[site]));
    const std::int64_t span = now - start;
    now += 10;
    return span;
  }
};

}  // namespace

TEST_CASE("OpenMP tasks: a call path of their own, not the waits their thread ran them in") {
  // 2^13 - 1 tasks: through the waits, their call paths followed the
  // scheduling and doubled with each level (the OpenMP example's profile: 117 MB
  // for 2 threads, 21,100 call paths each).
  std::vector<std::string> counters;
  SUBCASE("TIME only") {}
  SUBCASE("TIME and a counter metric") { counters = {"items"}; }
  fixture run{counters};
  task_tree tree{run};
  tree.records.push_back(begin(0, tree.implicit_task));
  tree.now = 10;
  tree.task(0, 12);
  tree.records.push_back(end(tree.now, tree.implicit_task));
  run.backend->thread_records(run.main_thread, tree.records.data(), tree.records.size());
  const tc::report r = run.finish();
  const tc::profile* time = r.find(0, 0, "TIME");
  REQUIRE(time != nullptr);

  std::set<std::string> paths;
  for (const tc::function_line& f : time->functions)
    if (f.name.find(" => ") != std::string::npos) paths.insert(f.name);
  const std::string a = ".TAU application => task [{fib.cpp} {32,0}]";
  const std::string b = ".TAU application => task [{fib.cpp} {34,0}]";
  const std::string waiting = " => taskwait [{fib.cpp} {36,0}] => taskwait wait [{fib.cpp} {36,0}]";
  const std::string taskwait = " => taskwait [{fib.cpp} {36,0}]";
  CHECK(paths == std::set<std::string>{".TAU application => implicit task", a, a + taskwait, a + waiting, b,
                                        b + taskwait, b + waiting});
  CHECK(time->attribute("callpath-folded-calls") == "0");
  CHECK(entry(time, "task [{fib.cpp} {32,0}]").calls == tree.tasks[0]);
  CHECK(entry(time, "task [{fib.cpp} {34,0}]").calls == tree.tasks[1]);
  // A wait's time is its own, not the tasks run in it; the root's children add
  // up to no more than the thread's time (tau_check: P4).
  const tc::function_line& wait_time = entry(time, "taskwait wait [{fib.cpp} {36,0}]");
  CHECK(wait_time.calls == tree.waits);
  CHECK(wait_time.subroutines == 0);
  CHECK(wait_time.inclusive == doctest::Approx(static_cast<double>(tree.wait_own_ns) / 1000.0));
  CHECK(wait_time.exclusive == doctest::Approx(wait_time.inclusive));
  if (counters.empty()) return;
  // The counter metric likewise: each wait counted one item itself.
  const tc::profile* items = r.find(0, 0, "items");
  REQUIRE(items != nullptr);
  CHECK(entry(items, "taskwait wait [{fib.cpp} {36,0}]").inclusive ==
        doctest::Approx(static_cast<double>(tree.waits)));
  CHECK(entry(items, "task [{fib.cpp} {32,0}]").inclusive ==
        doctest::Approx(static_cast<double>(tree.tasks[0] + tree.waits_in[0])));
  CHECK(entry(items, ".TAU application => implicit task").inclusive == doctest::Approx(0.0));
}

TEST_CASE("user events of huge finite samples: the sum of squares saturates, nothing is INF") {
  fixture run;
  const auto* big = run.names.add("big");
  run.feed(run.main_thread, {sample(0, big, 1e200), sample(1, big, -1e200), sample(2, big, 1.0)});
  const tc::report r = run.finish();
  const tc::profile* p = r.find(0, 0);
  const tc::user_event_line& e = event(p, "big");
  CHECK(e.count == 3);
  CHECK(e.max == 1e200);
  CHECK(e.min == -1e200);
  CHECK(e.mean == doctest::Approx(1.0 / 3));
  CHECK(e.sum_of_squares == DBL_MAX);
  CHECK(p->attribute("values-saturated") == "2");  // the event and its context event
}

TEST_CASE("the metadata line stays within pprof's 64 KiB line buffer") {
  fixture run;
  run.user_metadata.emplace_back("long", std::string(5000, 'x') + "é");
  run.user_metadata.emplace_back("cut inside a character", std::string(4095, 'x') + "é");
  for (int i = 0; i < 100; ++i) run.user_metadata.emplace_back(fmt_key(i), std::string(1000, 'y'));
  run.feed(run.main_thread, {mark(0, run.names.add("x"))});
  const tc::report r = run.finish();
  const tc::profile* p = r.find(0, 0);
  REQUIRE(p != nullptr);
  CHECK(p->attribute("long") == std::string(4096, 'x') + "…");
  CHECK(p->attribute("cut inside a character") == std::string(4095, 'x') + "…");
  const std::string omitted = p->attribute("metadata-omitted");
  REQUIRE_FALSE(omitted.empty());
  CHECK(std::stoi(omitted) > 0);
  CHECK(p->attribute(fmt_key(0)) == std::string(1000, 'y'));
  std::ifstream in{run.dir.path() + "/profile.0.0.0"};
  std::string line;
  std::getline(in, line);
  std::getline(in, line);
  CHECK(line.size() < 64 * 1024);
}

TEST_CASE("the run metadata's mpi-rank numbers the files") {
  fixture run;
  run.user_metadata.emplace_back("mpi-rank", std::int64_t{3});
  run.feed(run.main_thread, {mark(0, run.names.add("x"))});
  run.flush(true);
  CHECK(run.files() == std::set<std::string>{"profile.3.0.0"});
  // Alone, rank 3's profile is no job the readers open (pprof wants profile.0.0.0).
  CHECK(tc::check_directory(run.dir.path()).errors ==
        std::vector<std::string>{"profile.N.*: nodes are not 0..0 (1 nodes, the highest 3) (J1)"});
}

// One rank of a job whose rank 0 writes into `root_directory`: its broadcasts
// deliver what rank 0 would send.
class job_rank final : public rt::process_group {
 public:
  job_rank(std::uint32_t rank, std::uint32_t size, std::string root_directory)
      : rank_(rank), size_(size), root_directory_(std::move(root_directory)) {}
  std::string_view paradigm() const noexcept override { return "mpi"; }
  std::uint32_t rank() const noexcept override { return rank_; }
  std::uint32_t size() const noexcept override { return size_; }
  bool collectives_available() const noexcept override { return true; }
  bool barrier() override { return true; }
  bool broadcast(void* data, std::size_t bytes, std::uint32_t) override {
    if (rank_ == 0) return true;
    const std::uint64_t length = root_directory_.size();
    if (broadcasts_++ == 0 && bytes == sizeof length)
      std::memcpy(data, &length, sizeof length);
    else if (bytes == root_directory_.size())
      std::memcpy(data, root_directory_.data(), bytes);
    else
      return false;
    return true;
  }
  bool gather(const void*, std::size_t, void*, std::uint32_t) override { return false; }
  bool gatherv(const void*, std::size_t, void*, const std::size_t*, std::uint32_t) override { return false; }
  bool scatter(const void*, void*, std::size_t, std::uint32_t) override { return false; }
  bool scatterv(const void*, const std::size_t*, void*, std::size_t, std::uint32_t) override { return false; }

 private:
  std::uint32_t rank_, size_;
  std::string root_directory_;
  int broadcasts_ = 0;
};

TEST_CASE("the ranks of a job write into rank 0's directory, as TAU does") {
  fixture root, other;
  job_rank rank_0{0, 2, root.dir.path()}, rank_1{1, 2, root.dir.path()};
  const std::string own = other.dir.path() + "/rank-1";
  std::string error;
  other.backend = ferret::tau::make_backend_in(other.session, own, {}, error);
  REQUIRE(other.backend != nullptr);
  CHECK(fs::is_directory(own));
  // A rerun with fewer ranks: rank 2's and 3's files of the earlier run go.
  for (const char* stale : {"profile.2.0.0", "profile.3.0.0", "profile.3.0.1"})
    std::ofstream{root.dir.path() + "/" + stale} << "stale\n";
  root.backend->join_process_group(rank_0);
  other.backend->join_process_group(rank_1);
  CHECK_FALSE(fs::exists(own));  // made empty at start, gone again
  root.user_metadata = {{"mpi-rank", std::int64_t{0}}, {"mpi-size", std::int64_t{2}}};
  other.user_metadata = {{"mpi-rank", std::int64_t{1}}, {"mpi-size", std::int64_t{2}}};
  root.feed(root.main_thread, {mark(0, root.names.add("x"))});
  other.feed(other.main_thread, {mark(0, other.names.add("x"))});
  other.flush(true);
  const tc::report job = root.finish();
  CHECK(root.files() == std::set<std::string>{"profile.0.0.0", "profile.1.0.0"});
  CHECK(job.profiles.size() == 2);
}

TEST_CASE("profiles left by an earlier run with more threads are removed") {
  fixture run;
  for (const char* stale : {"profile.0.0.0", "profile.0.0.1", "profile.0.0.2"})
    std::ofstream{run.dir.path() + "/" + stale} << "stale\n";
  run.feed(run.main_thread, {mark(0, run.names.add("x"))});
  run.finish();
  CHECK(run.files() == std::set<std::string>{"profile.0.0.0"});
}

TEST_CASE("profiles of an earlier run with other metrics are removed") {
  fixture plain;
  std::ofstream{plain.dir.path() + "/profile.0.0.0"} << "stale\n";
  fs::create_directory(plain.dir.path() + "/MULTI__TIME");
  std::ofstream{plain.dir.path() + "/MULTI__TIME/profile.0.0.0"} << "stale\n";
  std::ofstream{plain.dir.path() + "/MULTI__TIME/profile.1.0.0"} << "another rank's\n";
  plain.feed(plain.main_thread, {mark(0, plain.names.add("x"))});
  plain.flush(true);
  CHECK(fs::exists(plain.dir.path() + "/profile.0.0.0"));
  CHECK_FALSE(fs::exists(plain.dir.path() + "/MULTI__TIME/profile.0.0.0"));
  CHECK(fs::exists(plain.dir.path() + "/MULTI__TIME/profile.1.0.0"));

  fixture multi{{"flops"}};
  std::ofstream{multi.dir.path() + "/profile.0.0.0"} << "stale\n";
  multi.feed(multi.main_thread, {mark(0, multi.names.add("x"))});
  multi.finish();
  CHECK(multi.files() == std::set<std::string>{"MULTI__TIME", "MULTI__flops"});
}

TEST_CASE("a fork child (abandon) writes nothing; describe() names the directory") {
  fixture run;
  run.feed(run.main_thread, {mark(0, run.names.add("x"))});
  run.backend->abandon();
  run.flush(true);
  CHECK(run.files().empty());

  fixture written;
  written.feed(written.main_thread, {mark(0, written.names.add("x"))});
  written.feed(written.worker, {mark(0, written.names.add("y"))});
  written.finish();
  CHECK(written.backend->describe() == "tau profile: " + written.dir.path() + " (2 threads)");
}

TEST_CASE("nothing recorded, or only on other threads: the main thread's profile.0.0.0 is there") {
  // ParaProf, pprof and hatchet read a run from its profile.N.0.0; a run that
  // recorded nothing had no profile at all.
  fixture nothing;
  const tc::report empty = nothing.finish();
  CHECK(nothing.files() == std::set<std::string>{"profile.0.0.0"});
  check_entry(entry(empty.find(0, 0), ".TAU application"), 1, 0, 0, 0);
  CHECK(empty.find(0, 0)->functions.size() == 1);
  CHECK(nothing.backend->describe() == "tau profile: " + nothing.dir.path() + " (1 thread)");

  fixture worker_only;
  worker_only.feed(worker_only.worker, {mark(0, worker_only.names.add("x"))});
  const tc::report two = worker_only.finish();
  CHECK(two.find(0, 0)->attribute("Thread Name") == "main");
  CHECK(two.find(0, 1)->attribute("Thread Name") == "worker");
}

TEST_CASE("a directory gone by the end: nothing written, said once, describe() says why") {
  fixture run;
  run.feed(run.main_thread, {mark(0, run.names.add("x"))});
  fs::remove_all(run.dir.path());
  run.flush(true);
  CHECK(run.backend->describe() == "tau profile: " + run.dir.path() + ": not written: " + run.dir.path() +
                                       "/profile.0.0.0: No such file or directory");
}

TEST_CASE("factory: the directory from FERRET_OUTPUT, FERRET_TAU_METRICS, errors") {
  ferret::testing::temp_directory dir{"ferret-tau-test"};
  const rt::session_info session = make_session(test_pid);
  std::string error;
  unsetenv("FERRET_TAU_METRICS");

  SUBCASE("an extension of letters is dropped, so that chrome's run.json and the profile coexist") {
    auto backend = ferret::tau::make_backend(rt::backend_context{&session, dir.path() + "/run.json", false}, error);
    REQUIRE_MESSAGE(backend != nullptr, error);
    CHECK(fs::is_directory(dir.path() + "/run"));
    auto kept = ferret::tau::make_backend(rt::backend_context{&session, dir.path() + "/ferret-a.out-42", false}, error);
    REQUIRE_MESSAGE(kept != nullptr, error);
    CHECK(fs::is_directory(dir.path() + "/ferret-a.out-42"));
    auto inside = ferret::tau::make_backend(rt::backend_context{&session, dir.path(), true}, error);
    REQUIRE_MESSAGE(inside != nullptr, error);
    CHECK(fs::is_directory(dir.path() + "/ferret-app-4242"));
  }
  SUBCASE("a place that cannot be a directory: one error line, no backend") {
    std::ofstream{dir.path() + "/file"} << "x";
    auto backend = ferret::tau::make_backend(rt::backend_context{&session, dir.path() + "/file/run", false}, error);
    CHECK(backend == nullptr);
    CHECK(error == "cannot write the TAU profile to '" + dir.path() + "/file/run': Not a directory");
    auto taken = ferret::tau::make_backend(rt::backend_context{&session, dir.path() + "/file", false}, error);
    CHECK(taken == nullptr);
    CHECK(error.find("Not a directory") != std::string::npos);
  }
  SUBCASE("FERRET_TAU_METRICS") {
    CHECK(ferret::tau::parse_metrics("") == std::vector<std::string>{});
    CHECK(ferret::tau::parse_metrics(" none ") == std::vector<std::string>{});
    CHECK(ferret::tau::parse_metrics(" flops , TIME,max change,flops") ==
          std::vector<std::string>{"flops", "max change"});
    CHECK_FALSE(ferret::tau::parse_metrics("a,,b").has_value());
    CHECK_FALSE(ferret::tau::parse_metrics("a,").has_value());

    setenv("FERRET_TAU_METRICS", "a,,b", 1);
    auto rejected = ferret::tau::make_backend(rt::backend_context{&session, dir.path() + "/run", false}, error);
    CHECK(rejected == nullptr);
    CHECK(error == "FERRET_TAU_METRICS='a,,b' is not valid (expected comma-separated counter names)");
    setenv("FERRET_TAU_METRICS", "a b,a/b", 1);
    auto clashing = ferret::tau::make_backend(rt::backend_context{&session, dir.path() + "/run", false}, error);
    CHECK(clashing == nullptr);
    CHECK(error == "FERRET_TAU_METRICS: 'a/b' would be written as MULTI__a_b twice");
    unsetenv("FERRET_TAU_METRICS");
  }
}

// --- real runs ------------------------------------------------------------------

namespace {

struct profiled_run {
  ferret::testing::temp_directory dir{"ferret-tau-test"};
  ferret::testing::program_result result;
  tc::report report;
};

// Runs the known-tree program in a fresh directory with FERRET_BACKEND=tau
// (FERRET_OUTPUT=profile) and the extra `variables`.
void run_known_tree(profiled_run& run, ferret::testing::environment variables) {
  variables.emplace_back("FERRET_BACKEND", "tau");
  variables.emplace_back("FERRET_OUTPUT", "profile");
  run.result = ferret::testing::run_program(run.dir.path(), {FERRET_KNOWN_TREE_APP}, variables);
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
}

// What the known-tree program measured inside and around its regions, summed
// per "<thread> <path>", in microseconds (see known_tree_app.cpp).
struct span {
  double inside_us = 0, around_us = 0;
};
std::map<std::string, span> spans_printed(const std::string& out) {
  std::map<std::string, span> spans;
  std::istringstream lines{out};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words{line};
    std::string tag, thread, path;
    double inside_ns = 0, around_ns = 0;
    if (words >> tag >> thread >> path >> inside_ns >> around_ns && tag == "span")
      spans[thread + " " + path] = {inside_ns / 1000, around_ns / 1000};
  }
  return spans;
}

// A profile's time (microseconds) lies between the program's own readings
// inside and around the regions: nesting, which holds however loaded the
// machine is. The slack is the conversion's from counter ticks (as in
// runtime_unit_test's clock cases).
void check_between(const std::string& what, double us, double at_least_us, double at_most_us) {
  const double slack = at_most_us / 1000 + 20;
  INFO(what << ": " << us << " us, measured between " << at_least_us << " and " << at_most_us);
  CHECK(us >= at_least_us - slack);
  CHECK(us <= at_most_us + slack);
}

// A region's inclusive time, and its exclusive time when it has `child`.
void check_times(const tc::function_line& f, const span& measured, const span* child = nullptr) {
  check_between(f.name + " inclusive", f.inclusive, measured.inside_us, measured.around_us);
  if (child != nullptr)
    check_between(f.name + " exclusive", f.exclusive, measured.inside_us - child->around_us,
                  measured.around_us - child->inside_us);
}

}  // namespace

TEST_SUITE_BEGIN("process");

TEST_CASE("known answer: two threads of sleeps give the calls, the call tree and the times") {
  profiled_run run;
  run_known_tree(run, {{"FERRET_VERBOSE", "1"}});
  CHECK(run.result.err.find("ferret: tau profile: profile (2 threads)") != std::string::npos);
  run.report = checked(run.dir.path() + "/profile");
  REQUIRE(run.report.profiles.size() == 2);

  const tc::profile* main_profile = run.report.find(0, 0);
  REQUIRE(main_profile != nullptr);
  CHECK(main_profile->attribute("Thread Name") == "main");
  std::set<std::string> main_names;
  for (const tc::function_line& f : main_profile->functions) main_names.insert(f.name);
  CHECK(main_names == std::set<std::string>{".TAU application", "phase", "inner", ".TAU application => phase",
                                            ".TAU application => phase => inner"});
  const tc::function_line& phase = entry(main_profile, ".TAU application => phase");
  const tc::function_line& main_inner = entry(main_profile, ".TAU application => phase => inner");
  CHECK(phase.calls == 2);
  CHECK(phase.subroutines == 2);
  CHECK(main_inner.calls == 2);
  const std::map<std::string, span> spans = spans_printed(run.result.out);
  REQUIRE(spans.size() == 4);
  check_times(phase, spans.at("main phase"), &spans.at("main phase/inner"));
  check_times(main_inner, spans.at("main phase/inner"));

  const tc::profile* worker_profile = run.report.find(0, 1);
  REQUIRE(worker_profile != nullptr);
  CHECK(worker_profile->attribute("Thread Name") == "worker");
  const tc::function_line& work = entry(worker_profile, ".TAU application => work");
  const tc::function_line& worker_inner = entry(worker_profile, ".TAU application => work => inner");
  CHECK(work.calls == 1);
  CHECK(worker_inner.calls == 1);
  CHECK(worker_profile->function(".TAU application => phase") == nullptr);
  check_times(work, spans.at("worker work"), &spans.at("worker work/inner"));
  check_times(worker_inner, spans.at("worker work/inner"));
  const tc::user_event_line& items = event(worker_profile, "items");
  CHECK(items.count == 3);
  CHECK(items.sum_of_squares == 14);
  CHECK(event(worker_profile, "items : .TAU application => work => inner").max == 2);
}

TEST_CASE("FERRET_TAU_METRICS=items: the counter's change per region, beside TIME") {
  profiled_run run;
  run_known_tree(run, {{"FERRET_TAU_METRICS", "items"}});
  run.report = checked(run.dir.path() + "/profile");
  CHECK(run.report.metrics == std::vector<std::string>{"TIME", "items"});
  const tc::profile* worker_items = run.report.find(0, 1, "items");
  check_entry(entry(worker_items, ".TAU application => work"), 1, 1, 2, 3);
  check_entry(entry(worker_items, ".TAU application => work => inner"), 1, 0, 1, 1);
  check_entry(entry(run.report.find(0, 0, "items"), "phase"), 2, 2, 0, 0);
}

TEST_CASE("120,000 nested regions: memory and output stay small, the folded calls are counted") {
  // Before, call paths cost memory with the square of the depth: 10,000 nested
  // regions took 1.4 GB, 100,000 were killed at 24 GB.
  profiled_run run;
  run.result = ferret::testing::run_program(run.dir.path(), {FERRET_DEEP_NESTING_APP},
                                            {{"FERRET_BACKEND", "tau"}, {"FERRET_OUTPUT", "profile"}});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  rusage children{};
  getrusage(RUSAGE_CHILDREN, &children);  // the largest child so far: this one
  const long peak_mib = children.ru_maxrss / 1024;
  INFO("peak resident memory " << peak_mib << " MiB");
  CHECK(peak_mib < 256);  // a few tens of MiB in a plain build; the sanitizers add their share
  run.report = checked(run.dir.path() + "/profile");
  const tc::profile* p = run.report.find(0, 0);
  REQUIRE(p != nullptr);
  CHECK(entry(p, "recursion").calls == 100'000);
  CHECK(entry(p, "level 0").calls == 1);
  CHECK(entry(p, "level 19999").calls == 1);
  CHECK(p->attribute("callpath-folded-calls") == std::to_string(120'000 - (ferret::tau::callpath_depth - 1)));
  CHECK(fs::file_size(run.dir.path() + "/profile/profile.0.0.0") < 4 * 1024 * 1024);
}

TEST_CASE("FERRET_TAU_METRICS naming a counter that never has a sample: one line naming it") {
  profiled_run run;
  run_known_tree(run, {{"FERRET_TAU_METRICS", "items,no such counter"}, {"FERRET_VERBOSE", "0"}});
  CHECK(run.result.err ==
        "ferret: FERRET_TAU_METRICS: no counter named 'no such counter' was recorded; its metric is 0 in the "
        "profile\n");
  run.report = checked(run.dir.path() + "/profile");
  CHECK(run.report.metrics == std::vector<std::string>{"TIME", "items", "no_such_counter"});
}

TEST_CASE("an output that cannot be a directory: one line on stderr, the program runs on") {
  profiled_run run;
  std::ofstream{run.dir.path() + "/profile"} << "a file";
  run_known_tree(run, {});
  CHECK(run.result.err == "ferret: cannot write the TAU profile to 'profile': Not a directory; running untraced\n");
}

TEST_SUITE_END();

TEST_CASE("GPU instruction samples: per kernel on its stream and launching context, per line as user events") {
  fixture run;
  const auto* step = run.names.add("step");
  const auto* memcpy_call = run.names.add("cudaMemcpyAsync", "cuda");
  const auto* launch_call = run.names.add("cudaLaunchKernel", "cuda");
  const launch_contexts contexts{step, memcpy_call, launch_call};
  run.feed(run.main_thread, {begin(0, step), begin(30, launch_call), end(40, launch_call), end(100000, step)});
  const rt::gpu_stall_reason long_scoreboard{0, "long_scoreboard", rt::gpu_stall::gmem};
  const rt::gpu_stall_reason selected{1, "selected", rt::gpu_stall::none};
  rt::gpu_kernel_samples first{};
  first.samples = 100;
  first.by_stall[static_cast<std::size_t>(rt::gpu_stall::gmem)] = 80;
  first.by_stall[static_cast<std::size_t>(rt::gpu_stall::none)] = 20;
  first.expected = 400;
  rt::gpu_kernel_samples second = first;
  second.samples = 50;
  second.by_stall[static_cast<std::size_t>(rt::gpu_stall::gmem)] = 50;
  second.by_stall[static_cast<std::size_t>(rt::gpu_stall::none)] = 0;
  second.expected = 0;  // unknown: no utilization
  gpu_activity sampled = device_operation(gpu_operation::kernel, 0, 7, 5000, 8000, test_pid, &contexts.launch_call);
  sampled.name = "_Z6kernelPfi";
  sampled.samples = &first;
  gpu_activity again = sampled;
  again.start_ns = 9000;
  again.end_ns = 9500;
  again.samples = &second;
  gpu_activity plain = sampled;  // sampling off for this one: no events
  plain.name = "_Z5plainv";
  plain.start_ns = 9600;
  plain.end_ns = 9700;
  plain.samples = nullptr;
  run.activities({sampled, again, plain});
  const char* file = "stream.cu";
  const rt::gpu_instruction_sample drain1[] = {
      {&contexts.launch_call, 0, "_Z6kernelPfi", 0x10, file, 42, &long_scoreboard, 100},
      {&contexts.launch_call, 0, "_Z6kernelPfi", 0x20, file, 42, &selected, 20},
      {&contexts.launch_call, 0, "cutlass_gemm", 0x1a0, nullptr, 0, &selected, 3.5},
      {&contexts.root, 0, "_Z6kernelPfi", 0x30, file, 43, &long_scoreboard, 2}};  // launch unknown
  run.backend->gpu_instruction_samples(drain1, std::size(drain1));
  const rt::gpu_instruction_sample drain2[] = {
      {&contexts.launch_call, 0, "_Z6kernelPfi", 0x10, file, 42, &long_scoreboard, 30}};
  run.backend->gpu_instruction_samples(drain2, std::size(drain2));
  const tc::report r = run.finish();

  // The stream: per launch of the kernel, under the kernel.
  const tc::profile* stream = r.find(0, 1);
  const tc::user_event_line& samples = event(stream, "GINST : .TAU application => kernel(float*, int)");
  CHECK(samples.count == 2);
  CHECK(samples.max == 100);
  CHECK(samples.mean == 75);
  CHECK(event(stream, "GINST:STL_GMEM : .TAU application => kernel(float*, int)").mean == 65);
  CHECK(event(stream, "GINST:STL_NONE : .TAU application => kernel(float*, int)").count == 1);
  const tc::user_event_line& utilization = event(stream, "GSAMP:UTIL : .TAU application => kernel(float*, int)");
  CHECK(utilization.count == 1);
  CHECK(utilization.max == 0.25);
  CHECK(stream->user_event("GINST:STL_SYNC") == nullptr);  // no samples of that class
  CHECK(stream->user_event("GINST : .TAU application => plain()") == nullptr);
  // The launching thread: the same per calling context of the launch, and the
  // source lines summed over the drains, one sample each.
  const tc::profile* host = r.find(0, 0);
  CHECK(event(host, "GINST : .TAU application => step => cudaLaunchKernel").mean == 75);
  const std::string line = "[GPU line] stream.cu:42 (kernel(float*, int))";
  const tc::user_event_line& line_samples =
      event(host, line + " GINST : .TAU application => step => cudaLaunchKernel");
  CHECK(line_samples.count == 1);
  CHECK(line_samples.max == 150);
  CHECK(event(host, line + " GINST:STL_GMEM : .TAU application => step => cudaLaunchKernel").max == 130);
  CHECK(event(host, line + " GINST:STL_NONE : .TAU application => step => cudaLaunchKernel").max == 20);
  CHECK(event(host, "[GPU instruction] 0x1a0 (cutlass_gemm) GINST : .TAU application => step => cudaLaunchKernel")
            .max == 3.5);
  // Samples without a known launch: the main thread, outside any region.
  CHECK(event(host, "[GPU line] stream.cu:43 (kernel(float*, int)) GINST").max == 2);
}

TEST_CASE("device-initiated traffic: per kernel on its stream and launching context, per line as user events") {
  fixture run;
  const auto* step = run.names.add("step");
  const auto* memcpy_call = run.names.add("cudaMemcpyAsync", "cuda");
  const auto* launch_call = run.names.add("cudaLaunchKernel", "cuda");
  const launch_contexts contexts{step, memcpy_call, launch_call};
  run.feed(run.main_thread, {begin(0, step), begin(30, launch_call), end(40, launch_call), end(100000, step)});
  rt::gpu_kernel_remote_traffic first{};
  first.target_count = 2;
  first.targets[0] = {1, 4096, 512};
  first.targets[1] = {rt::host_memory_device, 8, 0};
  rt::gpu_kernel_remote_traffic second{};
  second.target_count = 1;
  second.targets[0] = {1, 1024, 0};
  gpu_activity remote = device_operation(gpu_operation::kernel, 0, 7, 5000, 8000, test_pid, &contexts.launch_call);
  remote.name = "_Z4haloPf";
  remote.remote = &first;
  gpu_activity again = remote;
  again.start_ns = 9000;
  again.end_ns = 9500;
  again.remote = &second;
  gpu_activity local = remote;  // reached no other memory: no events
  local.name = "_Z5localv";
  local.start_ns = 9600;
  local.end_ns = 9700;
  local.remote = nullptr;
  run.activities({remote, again, local});
  const char* file = "halo.cu";
  const rt::data_object_info peer{7, "peer halo", 0x1000, 4096, rt::memory_kind::device, 1};
  using rt::memory_access;
  const rt::gpu_remote_access drain1[] = {
      {&contexts.launch_call, 0, 1, memory_access::load, "_Z4haloPf", 0x10, file, 21, 7, &peer, 1024, 4096},
      {&contexts.launch_call, 0, 1, memory_access::load, "_Z4haloPf", 0x20, file, 21, 7, &peer, 16, 64},
      {&contexts.launch_call, 0, 1, memory_access::store, "_Z4haloPf", 0x30, file, 22, 7, &peer, 100, 400},
      {&contexts.launch_call, 0, 1, memory_access::atomic, "_Z4haloPf", 0x40, file, 22, 7, &peer, 28, 112},
      {&contexts.launch_call, 0, rt::host_memory_device, memory_access::load, "nccl_kernel", 0x1a0,
       nullptr, 0, 0, nullptr, 2, 8},
      {&contexts.root, 0, 1, memory_access::load, "_Z4haloPf", 0x50, file, 23, 0, nullptr, 1, 4}};  // launch unknown
  run.backend->gpu_remote_accesses(drain1, std::size(drain1));
  const rt::gpu_remote_access drain2[] = {
      {&contexts.launch_call, 0, 1, memory_access::load, "_Z4haloPf", 0x10, file, 21, 7, &peer, 256, 1024}};
  run.backend->gpu_remote_accesses(drain2, std::size(drain2));
  const tc::report r = run.finish();

  // The stream: per launch of the kernel, under the kernel.
  const tc::profile* stream = r.find(0, 1);
  const tc::user_event_line& loaded =
      event(stream, "device-initiated bytes loaded from GPU 1 : .TAU application => halo(float*)");
  CHECK(loaded.count == 2);
  CHECK(loaded.max == 4096);
  CHECK(loaded.mean == 2560);
  const tc::user_event_line& stored =
      event(stream, "device-initiated bytes stored to GPU 1 : .TAU application => halo(float*)");
  CHECK(stored.count == 1);  // the second launch stored nothing
  CHECK(stored.max == 512);
  CHECK(event(stream, "device-initiated bytes loaded from host : .TAU application => halo(float*)").max == 8);
  CHECK(stream->user_event("device-initiated bytes stored to host : .TAU application => halo(float*)") == nullptr);
  CHECK(stream->user_event("device-initiated bytes loaded from GPU 1 : .TAU application => local()") == nullptr);
  // The launching thread: the same per calling context of the launch, and the
  // source lines per object and direction summed over the drains and the
  // line's instructions, stores and atomics together, one sample each.
  const tc::profile* host = r.find(0, 0);
  const std::string context = " : .TAU application => step => cudaLaunchKernel";
  CHECK(event(host, "device-initiated bytes loaded from GPU 1" + context).mean == 2560);
  const std::string line = "[GPU line] halo.cu:21 (halo(float*)) device-initiated bytes loaded from GPU 1 (object: peer halo)";
  const tc::user_event_line& line_bytes = event(host, line + context);
  CHECK(line_bytes.count == 1);
  CHECK(line_bytes.max == 4096 + 64 + 1024);
  CHECK(event(host, "[GPU line] halo.cu:22 (halo(float*)) device-initiated bytes stored to GPU 1 (object: peer halo)" +
                        context)
            .max == 512);
  CHECK(event(host, "[GPU instruction] 0x1a0 (nccl_kernel) device-initiated bytes loaded from host" + context).max ==
        8);
  // Accesses without a known launch: the main thread, outside any region.
  CHECK(event(host, "[GPU line] halo.cu:23 (halo(float*)) device-initiated bytes loaded from GPU 1").max == 4);
}
