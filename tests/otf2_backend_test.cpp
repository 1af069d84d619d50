// Tests of the OTF2 backend, driven directly (no runtime session): records go
// in through the backend interface, and every archive that comes out is read
// back with the OTF2 reader API (ferret::otf2_check), with Debian's python3-otf2
// (support/otf2_python_reader.py) and with otf2-print (no INVALID references,
// nothing on stderr).
#include "otf2_backend.hpp"
#include "otf2_check.hpp"
#include "otf2_text.hpp"
#include "support/backend_test_support.hpp"

#include <doctest/doctest.h>
#include <otf2/otf2.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace {

using ferret::testing::begin;
using ferret::testing::end;
using ferret::testing::make_session;
using ferret::testing::mark;
using ferret::testing::name_table;
using ferret::testing::sample;

namespace rt = ferret::runtime;
namespace check = ferret::otf2_check;
using rt::record_kind;

constexpr std::uint32_t test_pid = 4242;
constexpr std::uint64_t worker_tid = 4243;

std::string read_text(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// One backend writing <tempdir>/trace (anchor <tempdir>/trace/traces.otf2).
struct fixture {
  ferret::testing::temp_directory dir{"ferret-otf2-test"};
  rt::session_info session = make_session(test_pid);
  std::string output = dir.file("trace.otf2");
  std::string anchor = dir.file("trace/traces.otf2");
  rt::metadata_list runtime_metadata{{"clock-frequency-hz", std::int64_t{2'500'000'000}}};
  rt::metadata_list user_metadata{{"grid-size", std::int64_t{512}}, {"solver", std::string{"cg"}}};
  std::uint64_t recorded = 0;
  name_table names;
  rt::thread_info main_thread{test_pid, test_pid, {}, true};
  rt::thread_info worker{test_pid, worker_tid, "worker", false};
  std::unique_ptr<rt::backend> backend;

  fixture() {
    std::string error;
    backend = ferret::otf2::make_backend({&session, output, false}, error);
    REQUIRE_MESSAGE(backend != nullptr, error);
    CHECK(error.empty());
  }

  void feed(const rt::thread_info& thread, std::initializer_list<rt::record> records) {
    backend->thread_records(thread, records.begin(), records.size());
    recorded += records.size();
  }

  void flush(bool final) {
    const rt::session_status status{&runtime_metadata, &user_metadata, recorded, 7, final};
    backend->flush(status);
  }

  // Reads the archive back with the reader API and with python3-otf2; every
  // reader-level error fails the test.
  check::report checked() const {
    check::report report = check::check_archive(anchor);
    std::string errors;
    for (const std::string& line : report.errors) errors += line + "\n";
    CHECK_MESSAGE(report.ok(), "otf2_check found errors:\n" << errors);
    const std::string out = dir.file("python.out");
    const std::string command = std::string{FERRET_OTF2_PYTHON} + " '" + FERRET_OTF2_PYTHON_READER + "' '" +
                                anchor + "' > '" + out + "' 2>&1";
    CHECK_MESSAGE(std::system(command.c_str()) == 0, "python3-otf2: " << read_text(out));
    return report;
  }

  // otf2-print: exit 0, nothing on stderr, no INVALID reference.
  void printed() const {
    const std::string out = dir.file("print.out");
    const std::string err = dir.file("print.err");
    const std::string command = std::string{FERRET_OTF2_PRINT} + " -A '" + anchor + "' > '" +
                                out + "' 2> '" + err + "'";
    CHECK(std::system(command.c_str()) == 0);
    const std::string text = read_text(out);
    CHECK(text.find("INVALID") == std::string::npos);
    CHECK(text.find("UNDEFINED", text.find("=== Events")) == std::string::npos);
    CHECK_MESSAGE(read_text(err).empty(), "otf2-print stderr: " << read_text(err));
  }
};

}  // namespace

TEST_CASE("host threads: regions, counters, marks and metadata") {
  fixture f;
  const rt::name_info* solve = f.names.add("solve", {}, "solver.cpp", 42);
  const rt::name_info* step = f.names.add("step");
  const rt::name_info* launch = f.names.add("cudaLaunchKernel", "cuda");
  const rt::name_info* residual = f.names.add("residual");
  const rt::name_info* stop = f.names.add("stop");
  f.feed(f.main_thread, {begin(1'000, solve), begin(2'000, step), sample(2'500, residual, 0.5),
                         begin(2'600, launch), end(2'700, launch), end(3'000, step)});
  f.feed(f.worker, {begin(1'500, step), mark(1'700, stop), end(1'900, step)});
  const rt::data_object_info field{3, "field", 0xbeef00, 1024, rt::memory_kind::host, -1};
  f.backend->data_object({1'200, rt::data_object_change::registered, test_pid, &field});
  f.flush(false);
  f.backend->data_object({5'500, rt::data_object_change::unregistered, test_pid, &field});
  // Second drain: regions the runtime ended, as it delivers them: two by an
  // outer region's end, one at exit (see runtime::record).
  using rt::region_close;
  f.feed(f.main_thread, {begin(4'000, step), begin(4'100, step),
                         end(5'000, step, region_close::by_outer_end),
                         end(5'000, step, region_close::by_outer_end), end(5'000, solve),
                         sample(6'000, residual, 0.25), begin(7'000, step),
                         end(8'000, step, region_close::at_exit)});
  f.flush(true);

  const check::report report = f.checked();
  f.printed();
  CHECK(report.timer_resolution == 1'000'000'000U);
  REQUIRE(report.locations.size() == 2);
  for (const auto& [id, location] : report.locations) CHECK(location.type == 1);  // CPU thread
  CHECK(report.locations.at(0).name == "main");  // as chrome and TAU name it
  CHECK(report.locations.at(1).name == "worker");
  CHECK(report.location_group_types.at(0) == 1);  // process
  CHECK(report.regions.count("solve") == 1);
  CHECK(report.regions.count("step") == 1);
  CHECK(report.regions.count("cudaLaunchKernel") == 1);
  CHECK(report.region_paradigms.at("solve") == 1);             // USER
  CHECK(report.region_paradigms.at("cudaLaunchKernel") == 5);  // CUDA
  CHECK(report.metric_samples == 2);
  // The mark and the data object's lifetime, as markers.
  CHECK(report.markers == std::vector<std::string>{
                              "stop", "field registered: 1024 bytes of host memory at 0xbeef00",
                              "field unregistered"});
  CHECK(report.properties.at("FERRET::EVENTS_DROPPED") == "7");
  // The Leave of a region the runtime ended says why.
  CHECK(report.attribute_counts.at("ferret") == 3);
  CHECK(report.attribute_strings.at("ferret") ==
        std::set<std::string>{"closed at exit", "closed by unbalanced end"});
  CHECK(report.properties.at("FERRET::CLAMPED_TIMESTAMPS") == "0");
  CHECK(report.properties.at("FERRET::RUN::GRID_2DSIZE") == "512");
  CHECK(report.properties.at("FERRET::RUN::GRID_2DSIZE::KEY") == "grid-size");
  CHECK(report.properties.at("FERRET::RUN::SOLVER") == "cg");
  CHECK(report.properties.at("FERRET::RUNTIME::CLOCK_2DFREQUENCY_2DHZ") == "2500000000");
  CHECK(report.properties.at("FERRET::RUNTIME::CLOCK_2DFREQUENCY_2DHZ::KEY") == "clock-frequency-hz");
  CHECK(report.properties.at("FERRET::HOSTNAME") == "testhost");
  // Main: solve, step, launch, step, step, step; all left.
  CHECK(report.locations.at(0).enters == 6);
  CHECK(report.locations.at(0).leaves == 6);
}

namespace {

rt::gpu_activity operation(rt::gpu_operation kind, std::int64_t start_ns, std::int64_t end_ns,
                           std::uint32_t device, std::uint32_t stream, std::uint64_t tid) {
  rt::gpu_activity activity{};
  activity.operation = kind;
  activity.start_ns = start_ns;
  activity.end_ns = end_ns;
  activity.device = device;
  activity.stream = stream;
  activity.launch.tid = tid;
  activity.launch.time_ns = start_ns - 100;
  return activity;
}

rt::gpu_activity kernel(std::int64_t start_ns, std::int64_t end_ns, std::uint32_t stream,
                        const char* name) {
  rt::gpu_activity activity =
      operation(rt::gpu_operation::kernel, start_ns, end_ns, 0, stream, test_pid);
  activity.name = name;
  return activity;
}

rt::gpu_activity copy(std::int64_t start_ns, std::int64_t end_ns, std::uint32_t stream,
                      rt::copy_kind kind, std::uint64_t bytes, std::uint64_t tid) {
  rt::gpu_activity activity = operation(rt::gpu_operation::memcpy, start_ns, end_ns, 0, stream, tid);
  activity.copy = kind;
  activity.bytes = bytes;
  activity.source_device = kind == rt::copy_kind::host_to_device ? -1 : 0;
  activity.destination_device = kind == rt::copy_kind::device_to_host ? -1 : 0;
  return activity;
}

}  // namespace

rt::gpu_activity memory(rt::gpu_operation kind, std::int64_t ns, std::uint64_t bytes) {
  rt::gpu_activity activity = operation(kind, ns, ns, 0, 0, test_pid);
  activity.bytes = bytes;
  activity.memory = rt::memory_kind::device;
  return activity;
}

TEST_CASE("GPU: stream locations, kernels sorted per stream, copies as RMA") {
  fixture f;
  const char* saxpy = "_Z5saxpyifPKfPf";
  const char* scale = "scale";  // extern "C": not mangled
  const rt::name_info* work = f.names.add("work");
  const rt::name_info* launch_call = f.names.add("cudaLaunchKernel", "cuda");
  const rt::context_node root{0, 0, nullptr, nullptr};
  const rt::context_node in_work{1, 1, &root, work};
  const rt::context_node in_launch{2, 2, &in_work, launch_call};
  rt::data_object_info x{7, "x", 0x1000, 4096, rt::memory_kind::device, 0};
  rt::data_object_info y{8, "y", 0x2000, 2048, rt::memory_kind::device, 1};
  f.feed(f.main_thread, {begin(1'000, work)});
  f.feed(f.worker, {begin(1'100, work), end(1'200, work)});

  rt::gpu_device_info device{};
  device.id = 0;
  device.name = "NVIDIA H100 80GB HBM3";
  f.backend->gpu_device(device);
  rt::gpu_activity launched = kernel(9'000, 9'500, 7, saxpy);
  launched.launch.correlation = 77;
  launched.launch.context = &in_launch;
  launched.kernel = {{64, 2, 1}, {256, 1, 1}, 32, 1024, 0, 0, 0, 0.75, 0};
  rt::gpu_activity to_x = copy(2'000, 3'000, 7, rt::copy_kind::host_to_device, 4096, test_pid);
  to_x.destination_object = &x;
  // A peer copy from GPU 1 into GPU 0: a get from GPU 1's memory location.
  rt::gpu_activity from_y = copy(16'000, 16'500, 7, rt::copy_kind::peer_to_peer, 2048, test_pid);
  from_y.source_device = 1;
  from_y.source_object = &y;
  // Drain 1: out of order, two streams, one pair of overlapping kernels.
  const rt::gpu_activity first[] = {
      launched,
      to_x,
      kernel(5'000, 6'000, 8, scale),
      kernel(4'000, 7'000, 7, saxpy),
      kernel(6'500, 8'000, 7, scale),  // starts before the previous one ends
      copy(10'000, 11'000, 8, rt::copy_kind::device_to_host, 1024, worker_tid),
      memory(rt::gpu_operation::allocation, 1'500, 1 << 20),
      operation(rt::gpu_operation::synchronization, 9'600, 9'700, 0, 7, test_pid),
  };
  f.backend->gpu_activities(first, std::size(first));
  f.flush(false);
  // Drain 2: one kernel earlier than what stream 7 already has.
  const rt::gpu_activity second[] = {
      kernel(8'500, 8'800, 7, saxpy),
      kernel(12'000, 13'000, 8, saxpy),
      copy(14'000, 15'000, 7, rt::copy_kind::host_to_device, 100, 0),  // launch unknown
      from_y,
      memory(rt::gpu_operation::allocation, 12'500, 1 << 19),
      memory(rt::gpu_operation::release, 13'500, 1 << 20),
  };
  f.backend->gpu_activities(second, std::size(second));
  f.feed(f.main_thread, {end(20'000, work)});
  f.flush(true);

  const check::report report = f.checked();
  f.printed();
  std::size_t streams = 0;
  for (const auto& [id, location] : report.locations) {
    if (location.type != 2) continue;  // ACCELERATOR_STREAM
    ++streams;
    CHECK(report.location_group_types.at(location.group) == 2);  // ACCELERATOR
    CHECK(location.enters == location.leaves);
  }
  CHECK(streams == 2);
  // GPU 0 memory (allocations) and GPU 1 memory (the peer end): metric locations.
  std::size_t memory_locations = 0;
  for (const auto& [id, location] : report.locations)
    if (location.type == 3) {  // METRIC
      ++memory_locations;
      CHECK(report.location_group_types.at(location.group) == 2);
    }
  CHECK(memory_locations == 2);
  CHECK(report.last_metric_values.at("GPU 0 allocated device memory") == doctest::Approx(1 << 19));
  const std::string saxpy_name = rt::demangled_kernel_name(saxpy);
  CHECK(report.regions.count(saxpy_name) == 1);
  CHECK(report.regions.count("scale") == 1);
  CHECK(report.region_paradigms.at(saxpy_name) == 5);  // CUDA
  CHECK(report.rma_gets == 3);
  CHECK(report.rma_puts == 1);
  CHECK(report.rma_completions == 4);
  CHECK(report.get_bytes == 4196 + 2048);
  CHECK(report.put_bytes == 1024);
  // Kernel attributes, launch and calling context; objects on copies.
  CHECK(report.attribute_counts.at("registers per thread") == 6);
  CHECK(report.attribute_strings.at("grid") == std::set<std::string>{"0,0,0", "64,2,1"});
  CHECK(report.attribute_strings.at("calling context") == std::set<std::string>{"work"});
  CHECK(report.attribute_strings.at("launch") == std::set<std::string>{"cudaLaunchKernel"});
  CHECK(report.attribute_counts.at("correlation id") == 1);
  CHECK(report.attribute_counts.at("theoretical occupancy") == 6);
  CHECK(report.attribute_strings.at("destination object") == std::set<std::string>{"x"});
  CHECK(report.attribute_strings.at("source object") == std::set<std::string>{"y"});
  // The overlapping kernel and the one from the past are clamped.
  CHECK(report.properties.at("FERRET::CLAMPED_TIMESTAMPS") != "0");
  CHECK(report.properties.at("FERRET::GPU_SYNCHRONIZATIONS_NOT_WRITTEN") == "1");
}

TEST_CASE("metadata keys: one property each, the key kept beside it, the archive complete") {
  CHECK(ferret::otf2::property_key("grid-size") == "GRID_2DSIZE");
  CHECK(ferret::otf2::property_key("a_b") == "A_5FB");
  CHECK(ferret::otf2::property_key("a-b") == "A_2DB");
  CHECK(ferret::otf2::property_key("A") == "_41");
  CHECK(ferret::otf2::property_key("unicode-Gr\xC3\xB6\xC3\x9F" "e") == "UNICODE_2D_47R_C3_B6_C3_9FE");
  CHECK(ferret::otf2::property_key("") == "_");

  fixture run;
  const std::vector<std::string> keys{"a-b", "a_b", "A-B", "unicode-Gr\xC3\xB6\xC3\x9F" "e", "", " ", "a::b",
                                      std::string(64 * 1024, 'k')};
  run.user_metadata.clear();
  for (std::size_t i = 0; i < keys.size(); ++i) run.user_metadata.emplace_back(keys[i], std::int64_t(i));
  run.user_metadata.emplace_back("empty value", std::string{});
  run.user_metadata.emplace_back("big", std::int64_t{9007199254740993});  // 2^53 + 1
  run.feed(run.main_thread, {mark(10, run.names.add("x"))});
  run.flush(true);
  CHECK(run.backend->describe().find("incomplete") == std::string::npos);
  const check::report report = run.checked();
  run.printed();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string name = "FERRET::RUN::" + ferret::otf2::property_key(keys[i]);
    INFO(name.substr(0, 80));  // (long names and values: the start is enough)
    REQUIRE(report.properties.count(name) == 1);
    CHECK(report.properties.at(name) == std::to_string(i));
    if (!keys[i].empty())
      CHECK(report.properties.at(name + "::KEY") == ferret::otf2::archive_text(keys[i], ferret::otf2::longest_property_value));
  }
  CHECK(report.properties.at("FERRET::RUN::EMPTY_20VALUE") == "-");
  CHECK(report.properties.at("FERRET::RUN::BIG") == "9007199254740993");
}

TEST_CASE("a failing archive: OTF2's own error lines stay off stderr, describe() says it once") {
  fixture run;
  const rt::name_info* work = run.names.add("work");
  run.feed(run.main_thread, {begin(1'000, work), end(2'000, work)});
  std::filesystem::remove_all(run.dir.file("trace"));  // the archive's directory is gone
  const std::string captured = run.dir.file("stderr");
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int file = ::open(captured.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(file >= 0);
  ::dup2(file, 2);
  run.flush(true);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(file);
  ::close(saved);
  CHECK(read_text(captured).empty());  // at FERRET_VERBOSE=1 the exit line says it
  const std::string line = run.backend->describe();
  INFO(line);
  CHECK(line.find("incomplete: ") != std::string::npos);
  CHECK(line.find("errors from OTF2") != std::string::npos);
}

TEST_CASE("an existing archive is not overwritten") {
  fixture f;
  f.flush(true);
  std::string error;
  CHECK(ferret::otf2::make_backend({&f.session, f.output, false}, error) == nullptr);
  CHECK(error == "cannot write the OTF2 archive '" + f.dir.file("trace") +
                     "': an archive exists there already");
}

TEST_CASE("abandon() writes no archive") {
  fixture f;
  const rt::name_info* work = f.names.add("work");
  f.feed(f.main_thread, {begin(1'000, work), end(2'000, work)});
  f.backend->abandon();
  f.flush(true);  // ignored after abandon()
  CHECK(!std::filesystem::exists(f.anchor));
}

TEST_CASE("nothing recorded: the main thread's location without events, which every reader reads") {
  // A program that made no call ferret records (a CUDA sample that waived
  // itself): an archive without locations is one the readers reject.
  fixture f;
  f.flush(false);
  f.flush(true);
  const check::report report = f.checked();
  f.printed();
  REQUIRE(report.locations.size() == 1);
  CHECK(report.locations.at(0).name == "main");
  CHECK(report.locations.at(0).type == 1);  // CPU thread
  CHECK(report.locations.at(0).events_defined == 0);
  CHECK(report.locations.at(0).events_read == 0);
  CHECK(report.properties.at("FERRET::EVENTS_RECORDED") == "0");
  CHECK(f.backend->describe().find("(1 locations)") != std::string::npos);
}

TEST_CASE("the checker rejects an archive without locations, which no reader reads") {
  // As ferret wrote one for a run that recorded nothing: clock properties, no location.
  ferret::testing::temp_directory dir{"ferret-otf2-test"};
  OTF2_Archive* archive = OTF2_Archive_Open(dir.file("empty").c_str(), "traces", OTF2_FILEMODE_WRITE,
                                            OTF2_CHUNK_SIZE_MIN, OTF2_CHUNK_SIZE_MIN, OTF2_SUBSTRATE_POSIX,
                                            OTF2_COMPRESSION_NONE);
  REQUIRE(archive != nullptr);
  OTF2_FlushCallbacks flush{
      [](void*, OTF2_FileType, OTF2_LocationRef, void*, bool) -> OTF2_FlushType { return OTF2_FLUSH; },
      [](void*, OTF2_FileType, OTF2_LocationRef) -> OTF2_TimeStamp { return 0; }};
  CHECK(OTF2_Archive_SetFlushCallbacks(archive, &flush, nullptr) == OTF2_SUCCESS);
  CHECK(OTF2_Archive_SetSerialCollectiveCallbacks(archive) == OTF2_SUCCESS);
  CHECK(OTF2_Archive_OpenEvtFiles(archive) == OTF2_SUCCESS);
  CHECK(OTF2_Archive_CloseEvtFiles(archive) == OTF2_SUCCESS);
  OTF2_GlobalDefWriter* definitions = OTF2_Archive_GetGlobalDefWriter(archive);
  REQUIRE(definitions != nullptr);
  CHECK(OTF2_GlobalDefWriter_WriteClockProperties(definitions, 1'000'000'000, 0, 0, 0) == OTF2_SUCCESS);
  CHECK(OTF2_Archive_Close(archive) == OTF2_SUCCESS);
  const check::report report = check::check_archive(dir.file("empty/traces.otf2"));
  CHECK(report.errors == std::vector<std::string>{
                             "no locations: otf2-print and the OTF2 readers read no archive without one"});
}

TEST_CASE("markers beyond the limit: counted in the archive and said in describe()") {
  fixture f;
  const rt::name_info* tick = f.names.add("tick");
  constexpr std::int64_t marks = 100'003;
  std::vector<rt::record> records;
  for (std::int64_t i = 0; i < marks; ++i) records.push_back(mark(10 * i, tick));
  f.backend->thread_records(f.main_thread, records.data(), records.size());
  f.recorded += records.size();
  f.flush(true);
  const check::report report = f.checked();
  CHECK(report.markers.size() == 100'000);
  CHECK(report.properties.at("FERRET::MARKERS") == "100000");
  CHECK(report.properties.at("FERRET::MARKERS_NOT_WRITTEN") == "3");
  // The exit line names the loss (the runtime prints describe() at exit; at
  // FERRET_VERBOSE=0 the backend prints it itself: tests/otf2_outputs.cmake).
  CHECK(f.backend->describe().find("; 3 marks and data-object changes not written: OTF2 holds markers in "
                                   "memory until the end, ferret at most 100000 "
                                   "(FERRET::MARKERS_NOT_WRITTEN)") != std::string::npos);
}

TEST_CASE("memory stays bounded: full chunks reach the disk before the final flush") {
  fixture f;
  const rt::name_info* work = f.names.add("work");
  // 2 x 200'000 events of a few bytes each: several 1 MiB chunks.
  std::vector<rt::record> records;
  for (std::int64_t i = 0; i < 200'000; ++i) {
    records.push_back(begin(10 * i, work));
    records.push_back(end(10 * i + 5, work));
  }
  f.backend->thread_records(f.main_thread, records.data(), records.size());
  f.recorded += records.size();
  f.flush(false);
  const std::string events = f.dir.file("trace/traces/0.evt");
  REQUIRE(std::filesystem::exists(events));
  const auto before_final = std::filesystem::file_size(events);
  CHECK(before_final >= 1024 * 1024);
  f.flush(true);
  CHECK(std::filesystem::file_size(events) > before_final);
  const check::report report = f.checked();
  CHECK(report.locations.at(0).enters == 200'000);
  CHECK(report.locations.at(0).leaves == 200'000);
  CHECK(report.buffer_flushes >= 1);
  f.printed();
}

TEST_CASE("GPU instruction samples: GINST, its stall classes and GSAMP:EXP as totals at sampled kernels") {
  fixture f;
  const char* saxpy = "_Z5saxpyifPKfPf";
  rt::gpu_kernel_samples first{};
  first.samples = 100;
  first.by_stall[static_cast<std::size_t>(rt::gpu_stall::gmem)] = 62;
  first.by_stall[static_cast<std::size_t>(rt::gpu_stall::idep)] = 29;
  first.by_stall[static_cast<std::size_t>(rt::gpu_stall::none)] = 9;
  first.expected = 400;
  rt::gpu_kernel_samples second{};
  second.samples = 50.5;
  second.by_stall[static_cast<std::size_t>(rt::gpu_stall::gmem)] = 50.5;
  second.expected = 100;
  rt::gpu_kernel_samples other_stream{};
  other_stream.samples = 10;
  other_stream.by_stall[static_cast<std::size_t>(rt::gpu_stall::none)] = 10;
  rt::gpu_activity a = kernel(3'000, 4'000, 7, saxpy);
  a.samples = &first;
  rt::gpu_activity c = kernel(7'000, 8'000, 7, saxpy);
  c.samples = &second;
  rt::gpu_activity d = kernel(1'000, 2'000, 8, saxpy);
  d.samples = &other_stream;
  const rt::gpu_activity activities[] = {c, kernel(5'000, 6'000, 7, saxpy), a, d};
  f.backend->gpu_activities(activities, std::size(activities));
  f.flush(true);

  const check::report report = f.checked();
  f.printed();
  // Written just before the Enter and the Leave of each sampled kernel, for
  // the classes it has samples of; none at the unsampled one.
  CHECK(report.metric_sample_counts.at("GINST") == 6);
  CHECK(report.metric_sample_counts.at("GINST:STL_GMEM") == 4);
  CHECK(report.metric_sample_counts.at("GINST:STL_IDEP") == 2);
  CHECK(report.metric_sample_counts.at("GINST:STL_NONE") == 4);
  CHECK(report.metric_sample_counts.at("GSAMP:EXP") == 4);
  CHECK(report.metric_sample_counts.count("GINST:STL_SYNC") == 0);
  CHECK(report.metric_samples == 20);
  // Totals per stream since the start: the last ones read (stream 7's, at
  // 8 µs) add both of its kernels; stream 8's samples are its own.
  CHECK(report.last_metric_values.at("GINST") == doctest::Approx(150.5));
  CHECK(report.last_metric_values.at("GINST:STL_GMEM") == doctest::Approx(112.5));
  CHECK(report.last_metric_values.at("GINST:STL_IDEP") == doctest::Approx(29));
  CHECK(report.last_metric_values.at("GINST:STL_NONE") == doctest::Approx(9));
  CHECK(report.last_metric_values.at("GSAMP:EXP") == doctest::Approx(500));
  // The classes' metric members say they are accumulated, in samples.
  const std::string print = f.dir.file("print.out");
  CHECK(std::system(("'" + std::string{FERRET_OTF2_PRINT} + "' -G '" + f.anchor + "' > '" + print + "'").c_str()) ==
        0);
  const std::string definitions = read_text(print);
  CHECK(definitions.find("ACCUMULATED_START") != std::string::npos);
  CHECK(definitions.find("GPU instruction samples: global memory") != std::string::npos);
}

TEST_CASE("device-initiated traffic: bytes per memory reached and direction as totals at such kernels") {
  fixture f;
  const char* halo = "_Z4haloPf";
  rt::gpu_kernel_remote_traffic first{};
  first.target_count = 2;
  first.targets[0] = {1, 4096, 512};
  first.targets[1] = {rt::host_memory_device, 8, 0};
  rt::gpu_kernel_remote_traffic second{};
  second.target_count = 1;
  // Past what a double holds exactly: the totals are integers.
  second.targets[0] = {1, (std::uint64_t{1} << 53) + 1, 0};
  rt::gpu_kernel_remote_traffic other_stream{};
  other_stream.target_count = 1;
  other_stream.targets[0] = {1, 100, 0};
  rt::gpu_activity a = kernel(3'000, 4'000, 7, halo);
  a.remote = &first;
  rt::gpu_activity c = kernel(7'000, 8'000, 7, halo);
  c.remote = &second;
  rt::gpu_activity d = kernel(1'000, 2'000, 8, halo);
  d.remote = &other_stream;
  const rt::gpu_activity activities[] = {c, kernel(5'000, 6'000, 7, halo), a, d};
  f.backend->gpu_activities(activities, std::size(activities));
  f.flush(true);

  const check::report report = f.checked();
  f.printed();
  // Written just before the Enter and at the Leave of each kernel, for the
  // directions it moved bytes in; none at the kernel that reached no other memory.
  CHECK(report.metric_sample_counts.at("device-initiated bytes loaded from GPU 1") == 6);
  CHECK(report.metric_sample_counts.at("device-initiated bytes stored to GPU 1") == 2);
  CHECK(report.metric_sample_counts.at("device-initiated bytes loaded from host") == 2);
  CHECK(report.metric_sample_counts.count("device-initiated bytes stored to host") == 0);
  CHECK(report.metric_samples == 10);
  CHECK(report.last_metric_values.at("device-initiated bytes stored to GPU 1") == 512);
  CHECK(report.last_metric_values.at("device-initiated bytes loaded from host") == 8);
  // Totals per stream since the start, exact: otf2-print shows stream 7's
  // last one, both of its kernels added.
  const std::string events = read_text(f.dir.file("print.out"));
  CHECK(events.find("UINT64; 4096)") != std::string::npos);
  CHECK(events.find("UINT64; " + std::to_string((std::uint64_t{1} << 53) + 1 + 4096) + ")") !=
        std::string::npos);
  const std::string print = f.dir.file("definitions.out");
  CHECK(std::system(("'" + std::string{FERRET_OTF2_PRINT} + "' -G '" + f.anchor + "' > '" + print + "'").c_str()) ==
        0);
  const std::string definitions = read_text(print);
  CHECK(definitions.find("ACCUMULATED_START") != std::string::npos);
  CHECK(definitions.find("UINT64") != std::string::npos);
  CHECK(definitions.find("bytes the stream's kernels loaded from GPU 1's memory") != std::string::npos);
}

TEST_CASE("sampled counters: a metric location per GPU, counts as totals since the start, levels per interval") {
  fixture f;
  const std::vector<rt::gpu_metric> metrics = {
      {"nvltx__bytes.sum", "NVLink bytes sent", "bytes", true},
      {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "SM activity", "percent", false}};
  f.backend->gpu_sampled_metrics({0, metrics, 1'000'000});
  f.backend->gpu_sampled_metrics({1, metrics, 1'000'000});
  const double values[][2] = {{2048, 50}, {1024, 25}, {4096, 100}};
  const rt::gpu_metric_interval first[] = {{0, 1'000'000, 2'000'000, values[0]},
                                           {1, 1'000'000, 2'000'000, values[2]}};
  f.backend->gpu_metric_intervals(first, std::size(first));
  f.flush(false);
  const rt::gpu_metric_interval second[] = {{0, 2'000'000, 3'000'000, values[1]}};
  f.backend->gpu_metric_intervals(second, std::size(second));
  f.flush(true);

  const check::report report = f.checked();
  f.printed();
  // Per GPU: 0 at the first start, then the total at each end; a level at each end.
  CHECK(report.metric_sample_counts.at("NVLink bytes sent") == 5);
  CHECK(report.metric_sample_counts.at("SM activity") == 3);
  const std::string print = f.dir.file("definitions.out");
  CHECK(std::system(("'" + std::string{FERRET_OTF2_PRINT} + "' -G '" + f.anchor + "' > '" + print + "'").c_str()) ==
        0);
  const std::string definitions = read_text(print);
  CHECK(definitions.find("\"GPU 0 sampled counters\"") != std::string::npos);
  CHECK(definitions.find("\"GPU 1 sampled counters\"") != std::string::npos);
  CHECK(definitions.find("ACCUMULATED_START") != std::string::npos);
  CHECK(definitions.find("ABSOLUTE_LAST") != std::string::npos);
  CHECK(definitions.find("nvltx__bytes.sum") != std::string::npos);
  // GPU 0's running total: 2048, then 2048 + 1024.
  const std::string events = read_text(f.dir.file("print.out"));
  CHECK(events.find("DOUBLE; 3072") != std::string::npos);
  CHECK(events.find("DOUBLE; 4096") != std::string::npos);
}
