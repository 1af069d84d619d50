// Tests of the Chrome Trace Event JSON backend, driven directly (no runtime
// session): records go in through the backend interface, and every file that
// comes out is checked by ferret::trace_check and then read back with
// nlohmann::json to compare values.
#include "chrome_backend.hpp"
#include "gpu_device_initiated.hpp"
#include "trace_check.hpp"
#include "support/backend_test_support.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using ferret::testing::begin;
using ferret::testing::end;
using ferret::testing::make_session;
using ferret::testing::mark;
using ferret::testing::name_table;
using ferret::testing::sample;

namespace rt = ferret::runtime;
namespace check = ferret::trace_check;
using nlohmann::json;
using rt::record_kind;

constexpr std::uint32_t test_pid = 4242;
constexpr std::uint64_t worker_tid = 4243;

std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Checks the file strictly (every error is printed) and returns the report.
check::report checked(const std::string& path) {
  check::report report = check::check_file(path);
  std::string errors;
  for (const std::string& line : report.errors) errors += line + "\n";
  CHECK_MESSAGE(report.ok(), "trace_check found " << report.error_count << " errors:\n"
                                                  << errors);
  return report;
}

json parse_file(const std::string& path) { return json::parse(read_file(path)); }

std::vector<json> events_of(const json& doc, std::string_view phase) {
  std::vector<json> found;
  for (const json& event : doc.at("traceEvents"))
    if (event.at("ph") == phase) found.push_back(event);
  return found;
}

// The only event with this phase and name (fails the test otherwise).
json the_event(const json& doc, std::string_view phase, std::string_view name) {
  std::vector<json> found;
  for (const json& event : events_of(doc, phase))
    if (event.value("name", "") == name) found.push_back(event);
  REQUIRE_MESSAGE(found.size() == 1, found.size() << " " << phase << " events named " << name);
  return found.front();
}

// The source locations the metadata gives for `name` (each written once,
// not repeated in the events).
json locations(const json& doc, const std::string& name) {
  const json& table = doc.at("metadata").at("source-locations");
  REQUIRE_MESSAGE(table.contains(name), "no source location for " << name);
  return table.at(name);
}

// One backend writing <tempdir>/trace.json, with the runtime's side faked.
struct fixture {
  ferret::testing::temp_directory dir{"ferret-chrome-test"};
  rt::session_info session = make_session(test_pid);
  std::string path = dir.file("trace.json");
  rt::metadata_list runtime_metadata{{"clock-frequency-hz", std::int64_t{2'500'000'000}}};
  rt::metadata_list user_metadata;
  std::uint64_t recorded = 0;
  name_table names;
  rt::thread_info main_thread{test_pid, test_pid, {}, true};
  rt::thread_info worker{test_pid, worker_tid, "worker", false};
  std::unique_ptr<rt::backend> backend;

  fixture() {
    std::string error;
    const rt::backend_context context{&session, path, false};
    backend = ferret::chrome::make_backend(context, error);
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
};

std::string escaped(std::string_view bytes) {
  std::string out;
  ferret::chrome::append_json_string(out, bytes);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------

TEST_CASE("append_json_string escapes what JSON requires and nothing else") {
  CHECK(escaped("plain text") == R"("plain text")");
  CHECK(escaped("") == R"("")");
  CHECK(escaped("say \"hi\" \\o/") == R"("say \"hi\" \\o/")");
  CHECK(escaped("\n\t\r\b\f") == R"("\n\t\r\b\f")");
  CHECK(escaped("a\x01z\x1f") == R"("a\u0001z\u001f")");
  CHECK(escaped(std::string_view{"a\0b", 3}) == R"("a\u0000b")");
  CHECK(escaped("/\x7f") == "\"/\x7f\"");  // DEL and '/' need no escape

  std::string out = "prefix:";
  ferret::chrome::append_json_string(out, "x");
  CHECK(out == "prefix:\"x\"");  // appends, keeps what was there
}

TEST_CASE("append_json_string keeps valid UTF-8 and replaces each invalid byte") {
  // Valid, including the boundaries of each sequence length.
  for (const char* valid : {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xc2\x80",
                            "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xee\x80\x80",
                            "\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf"}) {
    CAPTURE(valid);
    CHECK(escaped(valid) == "\"" + std::string{valid} + "\"");
  }
  const std::string r = "\\ufffd";
  CHECK(escaped("a\xff" "b") == "\"a" + r + "b\"");
  CHECK(escaped("\xe2\x82") == "\"" + r + r + "\"");               // truncated at the end
  CHECK(escaped("\xe2\x82z") == "\"" + r + r + "z\"");             // truncated by ASCII
  // Truncated by the end of the view, though the bytes after it would complete it.
  CHECK(escaped(std::string_view{"\xe2\x82\xac", 2}) == "\"" + r + r + "\"");
  CHECK(escaped(std::string_view{"\xf0\x9f\x98\x80", 3}) == "\"" + r + r + r + "\"");
  CHECK(escaped("\xc0\xaf") == "\"" + r + r + "\"");               // overlong '/'
  CHECK(escaped("\xc1\xbf") == "\"" + r + r + "\"");               // overlong
  CHECK(escaped("\xe0\x9f\xbf") == "\"" + r + r + r + "\"");       // overlong 3-byte
  CHECK(escaped("\xf0\x8f\xbf\xbf") == "\"" + r + r + r + r + "\"");  // overlong 4-byte
  CHECK(escaped("\xed\xa0\x80") == "\"" + r + r + r + "\"");       // surrogate U+D800
  CHECK(escaped("\xed\xbf\xbf") == "\"" + r + r + r + "\"");       // surrogate U+DFFF
  CHECK(escaped("\xf4\x90\x80\x80") == "\"" + r + r + r + r + "\"");  // U+110000
  CHECK(escaped("\xf5\x80\x80\x80") == "\"" + r + r + r + r + "\"");
  CHECK(escaped("\x80") == "\"" + r + "\"");                       // stray continuation
  CHECK(escaped("\xc3\xa9\xa9") == "\"\xc3\xa9" + r + "\"");       // one too many
  // A valid character right after an invalid lead byte survives.
  CHECK(escaped("\xe2\xc3\xa9") == "\"" + r + "\xc3\xa9\"");
}

TEST_CASE("regions nest on two threads with exact times and durations") {
  fixture f;
  const auto* outer = f.names.add("outer", "solver", "solver.cpp", 12, "void solve()");
  const auto* inner = f.names.add("inner");
  const auto* task = f.names.add("task");
  f.feed(f.main_thread, {begin(1'000, outer), begin(2'000, inner), end(3'500, inner)});
  // The worker's region spans two batches, the main thread's outer too.
  f.feed(f.worker, {begin(500, task)});
  f.feed(f.worker, {end(1'501, task), begin(1'600, task), end(1'600, task)});
  f.feed(f.main_thread, {end(10'000, outer)});
  f.flush(true);

  const check::report report = checked(f.path);
  CHECK(report.phase_counts.at("X") == 4);
  CHECK(report.name_counts.at("task") == 2);
  CHECK(report.threads.count({test_pid, test_pid}) == 1);
  CHECK(report.threads.count({test_pid, worker_tid}) == 1);
  CHECK(report.process_names.at(test_pid) == "app");
  CHECK(report.thread_names.at({test_pid, test_pid}) == "main");
  CHECK(report.thread_names.at({test_pid, worker_tid}) == "worker");

  const std::string text = read_file(f.path);
  CHECK(text.find(R"("ts":1.000,"dur":9.000)") != std::string::npos);
  CHECK(text.find(R"("ts":2.000,"dur":1.500)") != std::string::npos);
  CHECK(text.find(R"("ts":0.500,"dur":1.001)") != std::string::npos);
  CHECK(text.find(R"("ts":1.600,"dur":0.000)") != std::string::npos);

  const json doc = json::parse(text);
  const json x_outer = the_event(doc, "X", "outer");
  CHECK(x_outer.at("tid") == test_pid);
  CHECK(x_outer.at("pid") == test_pid);
  CHECK(x_outer.at("cat") == "solver");
  CHECK(x_outer.at("ts").get<double>() == 1.0);
  CHECK(x_outer.at("dur").get<double>() == 9.0);
  CHECK_FALSE(x_outer.contains("args"));  // the location is in the metadata, once
  CHECK(locations(doc, "outer") ==
        json::array({{{"file", "solver.cpp"}, {"line", 12}, {"function", "void solve()"},
                      {"cat", "solver"}}}));
  const json x_inner = the_event(doc, "X", "inner");
  CHECK(x_inner.at("tid") == test_pid);
  CHECK_FALSE(x_inner.contains("cat"));  // default domain
  CHECK_FALSE(x_inner.contains("args"));
  CHECK_FALSE(doc.at("metadata").at("source-locations").contains("inner"));  // none known
  CHECK(x_inner.at("dur").get<double>() == 1.5);
  for (const json& x : events_of(doc, "X"))
    if (x.at("name") == "task") CHECK(x.at("tid") == worker_tid);
}

// The events of `doc` in file order: their index in traceEvents.
std::size_t index_of(const json& doc, std::string_view phase, std::string_view name) {
  const json& events = doc.at("traceEvents");
  for (std::size_t i = 0; i < events.size(); ++i)
    if (events[i].at("ph") == phase && events[i].value("name", "") == name) return i;
  FAIL("no " << phase << " event named " << name);
  return 0;
}

// Perfetto nests complete events that begin together in file order (older
// importers always, the current one when durations are equal too), and this
// writer learns of a region at its end, before its parent's: a region that
// begins with its parent waits for it. Within one clock tick (10 ns on some
// VMs) a region and its first child often begin together.
TEST_CASE("a region and a child that begin together are written parent first") {
  fixture f;
  const auto* outer = f.names.add("outer");
  const auto* first = f.names.add("first");
  const auto* same = f.names.add("same");
  const auto* empty = f.names.add("empty");
  const auto* sibling = f.names.add("sibling");
  const auto* later = f.names.add("later");
  const auto* grandchild = f.names.add("grandchild");
  const auto* its_child = f.names.add("its child");
  // outer [1000, 9000] > first [1000, 5000] > same [1000, 5000] (equal durations
  // too) > grandchild [2000, 3000] > its child [2000, 2500], which waits for
  // grandchild only; then empty [6000, 6000] and sibling [6000, 7000] begin
  // together inside later [6000, 8000].
  f.feed(f.main_thread, {begin(1'000, outer), begin(1'000, first), begin(1'000, same),
                         begin(2'000, grandchild), begin(2'000, its_child), end(2'500, its_child),
                         end(3'000, grandchild)});
  f.flush(false);  // across drains: what waits stays out of the file until its parent ends
  f.feed(f.main_thread, {end(5'000, same), end(5'000, first), begin(6'000, later),
                         begin(6'000, empty), end(6'000, empty), begin(6'000, sibling),
                         end(7'000, sibling), end(8'000, later), end(9'000, outer)});
  f.flush(true);

  const check::report report = checked(f.path);
  CHECK(report.phase_counts.at("X") == 8);
  const json doc = parse_file(f.path);
  CHECK(index_of(doc, "X", "outer") < index_of(doc, "X", "first"));
  CHECK(index_of(doc, "X", "first") < index_of(doc, "X", "same"));
  CHECK(index_of(doc, "X", "later") < index_of(doc, "X", "empty"));
  CHECK(index_of(doc, "X", "empty") < index_of(doc, "X", "sibling"));
  CHECK(the_event(doc, "X", "same").at("dur").get<double>() == 4.0);
  CHECK(the_event(doc, "X", "empty").at("dur").get<double>() == 0.0);
  // A child that begins after its parent is written at its end, as always, and
  // what waits for it right after it.
  CHECK(index_of(doc, "X", "grandchild") < index_of(doc, "X", "its child"));
  CHECK(index_of(doc, "X", "its child") < index_of(doc, "X", "outer"));
}

TEST_CASE("timestamps are microseconds with exactly three decimals") {
  fixture f;
  const auto* tick = f.names.add("tick");
  const auto* span = f.names.add("span");
  f.feed(f.main_thread, {mark(0, tick), mark(5, tick), mark(999, tick), mark(1'000, tick),
                         mark(1'234'567, tick), mark(1'234'567'890'123'456'789, tick),
                         begin(2'000'001, span), end(2'000'002, span)});
  f.flush(true);
  checked(f.path);
  const std::string text = read_file(f.path);
  for (const char* ts : {R"("ts":0.000})", R"("ts":0.005})", R"("ts":0.999})",
                         R"("ts":1.000})", R"("ts":1234.567})",
                         R"("ts":1234567890123456.789})", R"("ts":2000.001,"dur":0.001)"}) {
    CAPTURE(ts);
    CHECK(text.find(ts) != std::string::npos);
  }
}

TEST_CASE("negative times are formatted exactly too") {
  // The checker rejects negative ts (Perfetto would), so only the text is
  // checked here: times before the session start must not come out garbled.
  fixture f;
  const auto* tick = f.names.add("tick");
  f.feed(f.main_thread, {mark(-5, tick), mark(-1'500, tick), mark(-1'234'567, tick),
                         mark(std::numeric_limits<std::int64_t>::min(), tick)});
  f.flush(true);
  const std::string text = read_file(f.path);
  CHECK(json::accept(text));
  for (const char* ts : {R"("ts":-0.005})", R"("ts":-1.500})", R"("ts":-1234.567})",
                         R"("ts":-9223372036854775.808})"}) {
    CAPTURE(ts);
    CHECK(text.find(ts) != std::string::npos);
  }
}

TEST_CASE("marks are instants on their thread") {
  fixture f;
  const auto* converged = f.names.add("converged", "solver", "solver.cpp", 40);
  const auto* step = f.names.add("step");
  f.feed(f.worker, {mark(2'500, converged)});
  f.feed(f.main_thread, {mark(3'000, step), mark(4'000, step)});
  f.flush(true);

  const check::report report = checked(f.path);
  CHECK(report.phase_counts.at("i") == 3);
  CHECK(report.name_counts.at("step") == 2);
  const json doc = parse_file(f.path);
  const json i = the_event(doc, "i", "converged");
  CHECK(i.at("s") == "t");
  CHECK(i.at("tid") == worker_tid);
  CHECK(i.at("pid") == test_pid);
  CHECK(i.at("cat") == "solver");
  CHECK(i.at("ts").get<double>() == 2.5);
  CHECK_FALSE(i.contains("args"));
  CHECK(locations(doc, "converged").at(0).at("file") == "solver.cpp");
  CHECK(locations(doc, "converged").at(0).at("line") == 40);
  for (const json& e : events_of(doc, "i"))
    if (e.at("name") == "step") CHECK(e.at("tid") == test_pid);
}

// A counter recorded on a thread is that thread's series: Perfetto puts C events
// of one name on one process-wide track, so each thread's samples carry an id
// (the thread's), which gives them a track of their own.
TEST_CASE("counters are C events, one track per thread; non-finite samples are skipped and counted") {
  fixture f;
  const auto* residual = f.names.add("residual", "solver");
  const auto* depth = f.names.add("queue depth");
  f.feed(f.main_thread, {sample(1'000, residual, 0.5), sample(2'000, residual, std::nan("")),
                         sample(3'000, residual, 1e-300), sample(3'500, depth, 3.0)});
  f.feed(f.worker, {sample(4'000, residual, std::numeric_limits<double>::infinity()),
                    sample(5'000, depth, -2.0),
                    sample(6'000, depth, -std::numeric_limits<double>::infinity())});
  f.flush(true);

  const check::report report = checked(f.path);
  CHECK(report.phase_counts.at("C") == 4);
  CHECK(report.name_counts.at("residual") == 2);
  CHECK(report.metadata.at("nonfinite-counter-samples") == 3);

  using track = std::pair<std::uint64_t, std::string>;
  CHECK(report.counter_tracks ==
        std::map<track, std::size_t>{{{test_pid, "residual id: 4242 value"}, 2},
                                     {{test_pid, "queue depth id: 4242 value"}, 1},
                                     {{test_pid, "queue depth id: 4243 value"}, 1}});

  const json doc = parse_file(f.path);
  std::vector<double> residuals;
  for (const json& c : events_of(doc, "C")) {
    CHECK(c.at("pid") == test_pid);
    CHECK(c.at("id") == std::to_string(c.at("tid").get<std::uint64_t>()));
    if (c.at("name") == "residual") {
      CHECK(c.at("cat") == "solver");
      residuals.push_back(c.at("args").at("value").get<double>());
    } else {
      CHECK_FALSE(c.contains("cat"));
    }
  }
  CHECK(residuals == std::vector<double>{0.5, 1e-300});
}

TEST_CASE("data objects are async b/e pairs; live ones end at the final flush") {
  fixture f;
  const rt::data_object_info a{1, "A", 0x1000, 4096, rt::memory_kind::device, 0};
  const rt::data_object_info b{0x2a, "B \"pool\"", 0x7f0000001000, 1 << 20,
                               rt::memory_kind::host, -1};
  const auto* work = f.names.add("work");
  f.backend->data_object({100, rt::data_object_change::registered, test_pid, &a});
  f.backend->data_object({200, rt::data_object_change::registered, worker_tid, &b});
  f.feed(f.main_thread, {begin(250, work), end(1'000, work)});
  f.backend->data_object({300, rt::data_object_change::unregistered, test_pid, &a});
  // The latest time seen comes from a data-object event: it ends the session.
  const rt::data_object_info c{3, "C", 0x9000, 8, rt::memory_kind::managed, 1};
  f.backend->data_object({5'000, rt::data_object_change::registered, test_pid, &c});
  // Unknown ids have no b to pair with: nothing is written for them.
  const rt::data_object_info ghost{99, "ghost", 0x1, 1, rt::memory_kind::host, -1};
  f.backend->data_object({400, rt::data_object_change::unregistered, test_pid, &ghost});
  f.flush(true);

  const check::report report = checked(f.path);
  CHECK(report.phase_counts.at("b") == 3);
  CHECK(report.phase_counts.at("e") == 3);
  const json doc = parse_file(f.path);
  const json b_a = the_event(doc, "b", "A");
  CHECK(b_a.at("cat") == "data_object");
  CHECK(b_a.at("id") == "0x1");
  CHECK(b_a.at("pid") == test_pid);
  CHECK(b_a.at("ts").get<double>() == 0.1);
  CHECK(b_a.at("args") == json({{"address", "0x1000"},
                                {"bytes", 4096},
                                {"memory", std::string{rt::to_string(rt::memory_kind::device)}},
                                {"device", 0}}));
  const json e_a = the_event(doc, "e", "A");
  CHECK(e_a.at("id") == "0x1");
  CHECK(e_a.at("cat") == "data_object");
  CHECK(e_a.at("ts").get<double>() == 0.3);

  const json b_b = the_event(doc, "b", "B \"pool\"");
  CHECK(b_b.at("id") == "0x2a");
  CHECK(b_b.at("args").at("address") == "0x7f0000001000");
  CHECK(b_b.at("args").at("bytes") == 1 << 20);
  CHECK(b_b.at("args").at("memory") == std::string{rt::to_string(rt::memory_kind::host)});
  CHECK(b_b.at("args").at("device") == -1);
  // B and C were never unregistered: closed at the session end (5 µs).
  CHECK(the_event(doc, "e", "B \"pool\"").at("ts").get<double>() == 5.0);
  CHECK(the_event(doc, "e", "C").at("ts").get<double>() == 5.0);
  CHECK(the_event(doc, "e", "C").at("id") == "0x3");
}

// The runtime matches ends to begins and ends what the program left open
// (see runtime::record); a slice whose end it supplied says why.
TEST_CASE("slices whose end the runtime supplied say why in args.ferret") {
  fixture f;
  const auto* a = f.names.add("a", {}, "a.cpp", 1);
  const auto* b = f.names.add("b");
  const auto* c = f.names.add("c");
  const auto* run = f.names.add("run", {}, "main.cpp", 3);
  const auto* phase = f.names.add("phase");
  using rt::region_close;
  f.feed(f.main_thread, {begin(0, a), begin(10, b), begin(20, c),
                         end(30, c, region_close::by_outer_end),
                         end(30, b, region_close::by_outer_end), end(30, a)});
  f.feed(f.main_thread, {begin(100, run), begin(200, phase)});
  f.flush(false);
  // Not final: nothing is closed yet, and the file is valid without them.
  CHECK(checked(f.path).phase_counts.at("X") == 3);
  f.feed(f.main_thread, {end(9'000, phase, region_close::at_exit),
                         end(9'000, run, region_close::at_exit)});
  f.flush(true);

  const check::report report = checked(f.path);
  CHECK(report.phase_counts.at("X") == 5);
  const std::string text = read_file(f.path);
  // Nested in their parent, not cut to nothing at its end.
  CHECK(text.find(R"("ts":0.100,"dur":8.900,"args":{"ferret":"closed at exit"})") != std::string::npos);
  CHECK(text.find(R"("ts":0.200,"dur":8.800,"args":{"ferret":"closed at exit"})") != std::string::npos);
  const json doc = json::parse(text);
  for (const char* name : {"b", "c"}) {
    const json x = the_event(doc, "X", name);
    CHECK(x.at("args").at("ferret") == "closed by unbalanced end");
    CHECK(x.at("ts").get<double>() + x.at("dur").get<double>() == doctest::Approx(0.030));
  }
  CHECK_FALSE(the_event(doc, "X", "a").contains("args"));
  CHECK(locations(doc, "run").at(0).at("file") == "main.cpp");
}

TEST_CASE("an end with no region open is ignored (a backend driven without the runtime)") {
  fixture f;
  const auto* a = f.names.add("a");
  f.feed(f.main_thread, {end(5, a), begin(10, a), end(20, a), end(30, a)});
  f.flush(true);
  CHECK(checked(f.path).phase_counts.at("X") == 1);
}

TEST_CASE("names with quotes, control bytes and invalid UTF-8 come out valid") {
  fixture f;
  const std::string tricky = "say \"hi\" C:\\dir\nnext\x01";
  const std::string invalid = "bad\xff" "cut\xe2\x82" "over\xc0\xaf" "end";
  const std::string invalid_decoded =
      "bad\xef\xbf\xbd" "cut\xef\xbf\xbd\xef\xbf\xbd" "over\xef\xbf\xbd\xef\xbf\xbd" "end";
  const auto* n_tricky = f.names.add(tricky, "dom\"ain", "dir\\file\x01.cpp", 9, "f\n()");
  const auto* n_invalid = f.names.add(invalid, "\xe2\x82", {}, 0, {});
  const rt::thread_info odd{test_pid, 77, "thr\xc0\xaf\"ead\"", false};
  f.feed(odd, {begin(10, n_tricky), mark(15, n_invalid), sample(16, n_invalid, 1.0),
               end(20, n_tricky)});
  const rt::data_object_info object{5, invalid, 0x10, 1, rt::memory_kind::host, -1};
  f.backend->data_object({30, rt::data_object_change::registered, 77, &object});
  f.user_metadata = {{tricky, invalid}, {invalid, std::int64_t{1}}};
  f.runtime_metadata.emplace_back("note\x1f", tricky);
  f.flush(true);

  const check::report report = checked(f.path);
  CHECK(report.name_counts.at(tricky) == 1);
  CHECK(report.name_counts.at(invalid_decoded) == 3);  // i, C, b
  CHECK(report.thread_names.at({test_pid, 77}) ==
        "thr\xef\xbf\xbd\xef\xbf\xbd\"ead\"");
  const json doc = parse_file(f.path);
  const json x = the_event(doc, "X", tricky);
  CHECK(x.at("cat") == "dom\"ain");
  CHECK(locations(doc, tricky).at(0).at("file") == "dir\\file\x01.cpp");
  CHECK(locations(doc, tricky).at(0).at("function") == "f\n()");
  CHECK(the_event(doc, "i", invalid_decoded).at("cat") == "\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(the_event(doc, "b", invalid_decoded).at("id") == "0x5");
  const json& metadata = doc.at("metadata");
  CHECK(metadata.at("note\x1f") == tricky);
  CHECK(metadata.at("run").at(tricky) == invalid_decoded);
  CHECK(metadata.at("run").at(invalid_decoded) == 1);

  // Only escapes and ASCII/valid UTF-8 reach the file: no raw control bytes.
  const std::string text = read_file(f.path);
  std::size_t raw_controls = 0;
  for (const char c : text)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n') ++raw_controls;
  CHECK(raw_controls == 0);
}

TEST_CASE("the executable name is escaped in process_name and metadata") {
  ferret::testing::temp_directory dir{"ferret-chrome-test"};
  rt::session_info session = make_session(test_pid);
  session.executable = "a\"pp\xff";
  session.hostname = "host\n";
  const std::string path = dir.file("odd.json");
  std::string error;
  auto backend = ferret::chrome::make_backend({&session, path, false}, error);
  REQUIRE(backend != nullptr);
  backend->flush({nullptr, nullptr, 0, 0, true});  // null lists are allowed
  const check::report report = checked(path);
  CHECK(report.process_names.at(test_pid) == "a\"pp\xef\xbf\xbd");
  CHECK(report.metadata.at("hostname") == "host\n");
  CHECK(report.metadata.at("run") == json::object());
}

TEST_CASE("the file is a complete trace after every flush") {
  fixture f;
  const auto* outer = f.names.add("outer");
  const auto* step = f.names.add("step");
  const auto* tick = f.names.add("tick");
  REQUIRE(checked(f.path).event_count == 1);  // valid before any flush: process_name only

  // A long first trailer, so that the shorter second one must cut it off.
  f.user_metadata = {{"padding", std::string(10'000, 'x')}};
  f.feed(f.main_thread, {begin(0, outer), begin(10, step), end(20, step), mark(25, tick)});
  f.feed(f.worker, {mark(30, tick)});
  f.flush(false);
  {
    const check::report report = checked(f.path);
    CHECK(report.phase_counts.at("X") == 1);  // outer is still open
    CHECK(report.phase_counts.at("i") == 2);
    CHECK(report.metadata.at("events-recorded") == 5);
    CHECK(report.metadata.at("events-dropped") == 7);
    CHECK(report.metadata.at("run").at("padding").get<std::string>().size() == 10'000);
  }
  const auto first_size = std::filesystem::file_size(f.path);

  f.user_metadata = {{"size", std::int64_t{3}}};
  f.feed(f.main_thread, {begin(40, step), end(50, step), end(60, outer)});
  f.flush(false);
  {
    const check::report report = checked(f.path);
    CHECK(report.phase_counts.at("X") == 3);
    CHECK(report.metadata.at("events-recorded") == 8);
    CHECK(report.metadata.at("run") == json({{"size", 3}}));
  }
  CHECK(std::filesystem::file_size(f.path) < first_size);

  f.feed(f.worker, {mark(70, tick)});
  f.flush(true);
  const check::report report = checked(f.path);
  CHECK(report.phase_counts.at("X") == 3);
  CHECK(report.phase_counts.at("i") == 3);
  CHECK(report.name_counts.at("step") == 2);
  CHECK(report.metadata.at("events-recorded") == 9);
  const std::string text = read_file(f.path);
  CHECK(text.rfind("{\"traceEvents\":[\n", 0) == 0);
  CHECK(text.substr(text.size() - 4) == "}}}\n");

  // After the final flush the backend is closed: later calls change nothing.
  f.feed(f.main_thread, {mark(80, tick)});
  f.flush(true);
  CHECK(read_file(f.path) == text);
}

// Bytes this process has handed to write(2) and its kin: /proc/self/io's wchar.
std::uint64_t bytes_written() {
  std::ifstream in{"/proc/self/io"};
  REQUIRE_MESSAGE(in.good(), "cannot read /proc/self/io (the kernel's per-process I/O accounting)");
  std::string key;
  std::uint64_t value = 0;
  while (in >> key >> value)
    if (key == "wchar:") return value;
  FAIL("no wchar in /proc/self/io");
  return 0;
}

// Every write closes the document with the trailer, which holds the run
// metadata: a 16 MiB value once made 9.28 GB of writes for a 168 MB trace.
TEST_CASE("a large metadata value is not rewritten with every batch: writes stay near the file's size") {
  fixture f;
  f.user_metadata = {{"big", std::string(std::size_t{4} << 20, 'x')}};
  const auto* step = f.names.add("step");
  const std::uint64_t before = bytes_written();
  constexpr int drains = 40;
  constexpr int regions_per_drain = 2'000;  // with 40 drains about 5.6 MB of events
  std::int64_t now = 0;
  for (int drain = 0; drain < drains; ++drain) {
    std::vector<rt::record> records;
    for (int k = 0; k < regions_per_drain; ++k, now += 10) {
      records.push_back(begin(now, step));
      records.push_back(end(now + 5, step));
    }
    f.backend->thread_records(f.main_thread, records.data(), records.size());
    f.flush(false);
    if (drain == drains / 2) {  // a complete document between flushes too
      const check::report report = checked(f.path);
      CHECK(report.metadata.at("run").at("big").get<std::string>().size() == std::size_t{4} << 20);
    }
  }
  f.flush(true);
  const std::uint64_t written = bytes_written() - before;
  const auto size = std::filesystem::file_size(f.path);
  CHECK(checked(f.path).phase_counts.at("X") == drains * regions_per_drain);
  MESSAGE(written << " bytes written for a file of " << size);
  CHECK(written < 3 * size);
}

TEST_CASE("the file stays a complete trace when the buffer fills between flushes") {
  fixture f;
  const auto* step = f.names.add("a step with a fairly long name to fill the buffer sooner",
                                 "domain", "some/long/path/to/a/source/file.cpp", 1234,
                                 "void some_namespace::some_function(int, double)");
  constexpr int regions = 5'000;  // about 600 KiB of JSON: two batches spill
  std::vector<rt::record> records;
  for (int k = 0; k < regions; ++k) {
    records.push_back(begin(std::int64_t{k} * 100, step));
    records.push_back(end(std::int64_t{k} * 100 + 50, step));
  }
  f.backend->thread_records(f.main_thread, records.data(), records.size());
  {
    // No flush yet, but the spilled events are already in a valid document.
    const check::report report = checked(f.path);
    CHECK(report.phase_counts.at("X") > 0);
    CHECK(report.phase_counts.at("X") < regions);
  }
  f.flush(true);
  const check::report report = checked(f.path);
  CHECK(report.phase_counts.at("X") == regions);
  CHECK(std::filesystem::file_size(f.path) > (std::uintmax_t{512} << 10));
}

TEST_CASE("abandon leaves the file exactly as the last flush wrote it") {
  fixture f;
  const auto* work = f.names.add("work");
  f.feed(f.main_thread, {begin(0, work), end(10, work)});
  f.flush(false);
  const std::string after_flush = read_file(f.path);

  f.feed(f.main_thread, {begin(20, work), end(30, work), begin(40, work)});
  const rt::data_object_info object{1, "A", 0x10, 8, rt::memory_kind::host, -1};
  f.backend->data_object({50, rt::data_object_change::registered, test_pid, &object});
  f.backend->abandon();
  CHECK(read_file(f.path) == after_flush);
  // Nothing is written afterwards either, not even by the destructor.
  f.flush(true);
  f.backend.reset();
  CHECK(read_file(f.path) == after_flush);
  CHECK(checked(f.path).phase_counts.at("X") == 1);
}

TEST_CASE("an unwritable output path is reported in one line") {
  const rt::session_info session = make_session(test_pid);
  std::string error;
  const std::string path = "/proc/nonexistent/x.json";
  auto backend = ferret::chrome::make_backend({&session, path, false}, error);
  CHECK(backend == nullptr);
  CHECK(error == "cannot write the chrome trace to '/proc/nonexistent/x.json': " +
                     std::string{std::strerror(ENOENT)});
  CHECK(error.find('\n') == std::string::npos);
}

TEST_CASE("a file that cannot take the head is reported like one that cannot be opened") {
  ferret::testing::temp_directory dir{"ferret-chrome-test"};
  const std::string path = dir.file("small.json");
  // Opens fine, every write fails: files may not grow past 16 bytes for a
  // moment (EFBIG instead of SIGXFSZ).
  struct sigaction ignore {};
  struct sigaction previous {};
  ignore.sa_handler = SIG_IGN;
  REQUIRE(sigaction(SIGXFSZ, &ignore, &previous) == 0);
  rlimit old_limit{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  rlimit tiny = old_limit;
  tiny.rlim_cur = 16;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &tiny) == 0);
  const rt::session_info session = make_session(test_pid);
  std::string error;
  const bool refused = ferret::chrome::make_backend({&session, path, false}, error) == nullptr;
  setrlimit(RLIMIT_FSIZE, &old_limit);
  sigaction(SIGXFSZ, &previous, nullptr);
  CHECK(refused);
  CHECK(error == "cannot write the chrome trace to '" + path + "': " + std::string{std::strerror(EFBIG)});
  CHECK_FALSE(std::filesystem::exists(path));  // untraced leaves nothing behind
}

TEST_CASE("a FIFO or a device is refused without blocking, and left as it was") {
  ferret::testing::temp_directory dir{"ferret-chrome-test"};
  const rt::session_info session = make_session(test_pid);
  const std::string fifo = dir.file("fifo.json");
  REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);  // no reader: opening it for writing would wait
  const std::string device = dir.file("full.json");
  REQUIRE(symlink("/dev/full", device.c_str()) == 0);
  for (const auto& [path, kind] : {std::pair{fifo, "a FIFO"}, std::pair{device, "a device"}}) {
    std::string error;
    CHECK(ferret::chrome::make_backend({&session, path, false}, error) == nullptr);
    CHECK(error == "cannot write the chrome trace to '" + path + "': " + kind + ", not a regular file");
  }
  CHECK(std::filesystem::is_fifo(fifo));
  CHECK(std::filesystem::is_symlink(device));
}

TEST_CASE("a write that fails later closes the document, counts the loss and says so") {
  fixture f;
  const auto* step = f.names.add("step");
  // Files may not grow past 64 KiB for a moment; EFBIG instead of SIGXFSZ.
  struct sigaction ignore {};
  struct sigaction previous {};
  ignore.sa_handler = SIG_IGN;
  REQUIRE(sigaction(SIGXFSZ, &ignore, &previous) == 0);
  rlimit old_limit{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  rlimit small = old_limit;
  small.rlim_cur = 64 * 1024;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  const auto* first = f.names.add("first");
  f.feed(f.main_thread, {begin(0, first), end(1, first)});
  f.flush(false);  // written before the limit
  std::vector<rt::record> records;
  for (int k = 0; k < 20'000; ++k) {  // over 256 KiB: spills while the limit holds
    records.push_back(begin(std::int64_t{k} * 10, step));
    records.push_back(end(std::int64_t{k} * 10 + 5, step));
  }
  f.backend->thread_records(f.main_thread, records.data(), records.size());
  f.flush(false);
  setrlimit(RLIMIT_FSIZE, &old_limit);
  sigaction(SIGXFSZ, &previous, nullptr);

  const std::string line = f.backend->describe();
  CHECK(line.rfind("chrome trace: " + f.path + " (", 0) == 0);
  CHECK(line.find("incomplete: write: " + std::string{std::strerror(EFBIG)} +
                  "; 20000 events not written") != std::string::npos);
  // The events written before the failure, in a closed document that says
  // what was lost.
  CHECK(std::filesystem::file_size(f.path) <= 64 * 1024);
  {
    const check::report report = checked(f.path);
    CHECK(report.name_counts.at("first") == 1);
    CHECK(report.name_counts.count("step") == 0);
    CHECK(report.metadata.at("events-not-written") == 20'000);
  }
  // Events after the failure are counted, not written; the count stays current.
  f.feed(f.main_thread, {begin(1'000'000, step), end(1'000'001, step)});
  f.flush(true);
  const check::report report = checked(f.path);
  CHECK(report.name_counts.count("step") == 0);
  CHECK(report.metadata.at("events-not-written") == 20'001);
  const json doc = parse_file(f.path);
  CHECK(doc.at("metadata").at("write-error") ==
        "write: " + std::string{std::strerror(EFBIG)});
}

TEST_CASE("metadata holds the session facts, runtime metadata, counts and run metadata") {
  fixture f;
  f.runtime_metadata.emplace_back("timer-overhead-ns", 12.5);
  f.user_metadata = {{"input", std::string{"grid.h5"}},
                     {"size", std::int64_t{-3}},
                     {"ratio", 0.25},
                     {"bad", std::nan("")},
                     {"big", std::numeric_limits<double>::infinity()},
                     {"small", -std::numeric_limits<double>::infinity()}};
  f.flush(true);
  const check::report report = checked(f.path);
  const json& m = report.metadata;
  CHECK(m.at("ferret-version") == "0.1.0-test");
  CHECK(m.at("hostname") == "testhost");
  CHECK(m.at("pid") == test_pid);
  CHECK(m.at("executable") == "app");
  CHECK(m.at("command-line") == "app --size 3");
  CHECK(m.at("clock-source") == "tsc");
  CHECK(m.at("start-time") == "2023-11-14T22:13:20.123456Z");
  CHECK(m.at("start-monotonic-raw-ns") == 987654321);
  CHECK(m.at("clock-frequency-hz") == 2'500'000'000);
  CHECK(m.at("timer-overhead-ns") == 12.5);
  CHECK(m.at("events-recorded") == 0);
  CHECK(m.at("events-dropped") == 7);
  CHECK(m.at("nonfinite-counter-samples") == 0);
  CHECK(m.at("run") == json({{"input", "grid.h5"},
                             {"size", -3},
                             {"ratio", 0.25},
                             {"bad", "nan"},
                             {"big", "inf"},
                             {"small", "-inf"}}));

  // Keys come in the documented order: session facts, runtime, counts, run.
  const std::string text = read_file(f.path);
  const auto at = [&](const char* key) { return text.find(std::string{"\""} + key + "\":"); };
  CHECK(at("ferret-version") < at("start-monotonic-raw-ns"));
  CHECK(at("start-monotonic-raw-ns") < at("clock-frequency-hz"));
  CHECK(at("timer-overhead-ns") < at("events-recorded"));
  CHECK(at("events-dropped") < at("nonfinite-counter-samples"));
  CHECK(at("nonfinite-counter-samples") < at("run"));
}

TEST_CASE("start-time is ISO-8601 UTC with microseconds, also before 1970") {
  ferret::testing::temp_directory dir{"ferret-chrome-test"};
  rt::session_info session = make_session(test_pid);
  session.start_realtime_ns = -1;  // 1969-12-31T23:59:59.999999Z (floor, not truncation)
  const std::string path = dir.file("early.json");
  std::string error;
  auto backend = ferret::chrome::make_backend({&session, path, false}, error);
  REQUIRE(backend != nullptr);
  backend->flush({nullptr, nullptr, 0, 0, true});
  CHECK(checked(path).metadata.at("start-time") == "1969-12-31T23:59:59.999999Z");
}

TEST_CASE("threads are named once, renamed when the name changes, main sorts first") {
  fixture f;
  const auto* tick = f.names.add("tick");
  const rt::thread_info unnamed{test_pid, 99, {}, false};
  f.feed(f.main_thread, {mark(1, tick)});
  f.feed(f.main_thread, {mark(2, tick)});
  f.feed(unnamed, {mark(3, tick)});
  f.feed(f.worker, {mark(4, tick)});
  const rt::thread_info renamed{test_pid, worker_tid, "io worker", false};
  f.feed(renamed, {mark(5, tick)});
  f.flush(true);

  const check::report report = checked(f.path);
  CHECK(report.thread_names.at({test_pid, test_pid}) == "main");
  CHECK(report.thread_names.at({test_pid, 99}) == "thread 99");
  CHECK(report.thread_names.at({test_pid, worker_tid}) == "io worker");
  const json doc = parse_file(f.path);
  std::vector<std::string> names;
  int main_sort = -100;
  int other_sort = -100;
  for (const json& m : events_of(doc, "M")) {
    if (m.at("name") == "thread_name") names.push_back(m.at("args").at("name").get<std::string>());
    if (m.at("name") == "thread_sort_index") {
      (m.at("tid") == test_pid ? main_sort : other_sort) = m.at("args").at("sort_index").get<int>();
    }
  }
  CHECK(names == std::vector<std::string>{"main", "thread 99", "worker", "io worker"});
  CHECK(main_sort < other_sort);
}

TEST_CASE("describe names the file and the number of events") {
  fixture f;
  const auto* tick = f.names.add("tick");
  f.feed(f.main_thread, {mark(1, tick), mark(2, tick)});
  f.flush(true);
  // process_name, thread_sort_index, thread_name and two instants.
  CHECK(f.backend->describe() == "chrome trace: " + f.path + " (5 events)");
  CHECK(checked(f.path).event_count == 5);
}

// ---------------------------------------------------------------------------
// GPU activity

namespace {

// The GPU process of `device` in a trace written by process test_pid.
std::uint64_t gpu_pid(std::uint32_t device) {
  return 0x8000'0000U | (device << 22U) | (test_pid & 0x3F'FFFFU);
}

rt::gpu_device_info make_device(std::uint32_t id, std::string name) {
  rt::gpu_device_info device{};
  device.id = id;
  device.name = std::move(name);
  device.compute_major = 9;
  device.multiprocessors = 132;
  return device;
}

// A calling-context tree as the runtime builds it: solve / step / the API call.
struct context_chain {
  name_table names;
  const rt::name_info* solve_name = names.add("solve", "solver");
  const rt::name_info* step_name = names.add("step");
  const rt::name_info* launch_name = names.add("cudaLaunchKernel", "cuda");
  const rt::name_info* memcpy_name = names.add("cudaMemcpyAsync", "cuda");
  rt::context_node root{0, 0, nullptr, nullptr};
  rt::context_node solve{1, 1, &root, solve_name};
  rt::context_node step{2, 2, &solve, step_name};
  rt::context_node launch{3, 3, &step, launch_name};  // an API call: a leaf in "cuda"
  rt::context_node copy{4, 3, &step, memcpy_name};
};

rt::gpu_launch launched(std::uint64_t correlation, std::uint64_t tid, std::int64_t time_ns,
                        const rt::context_node* context) {
  return {correlation, tid, time_ns, context};
}

rt::gpu_activity operation(rt::gpu_operation kind, std::int64_t start_ns, std::int64_t end_ns,
                           std::uint32_t device, std::uint32_t stream, rt::gpu_launch launch) {
  rt::gpu_activity activity{};
  activity.operation = kind;
  activity.start_ns = start_ns;
  activity.end_ns = end_ns;
  activity.device = device;
  activity.stream = stream;
  activity.launch = launch;
  return activity;
}

rt::gpu_activity kernel(std::int64_t start_ns, std::int64_t end_ns, std::uint32_t device,
                        std::uint32_t stream, const char* name, rt::gpu_launch launch) {
  rt::gpu_activity activity =
      operation(rt::gpu_operation::kernel, start_ns, end_ns, device, stream, launch);
  activity.name = name;
  activity.kernel = {{4, 2, 1}, {256, 1, 1}, 32, 48, 1024, 16, 0, 0.75, 0};  // no SIMD width (CUDA)
  return activity;
}

// The events of one phase and category.
std::vector<json> events_in(const json& doc, std::string_view phase, std::string_view category) {
  std::vector<json> found;
  for (const json& event : events_of(doc, phase))
    if (event.value("cat", "") == category) found.push_back(event);
  return found;
}

// M events of this name on this process (and thread, when given).
std::vector<json> metadata_events(const json& doc, std::string_view name, std::uint64_t pid,
                                  std::uint64_t tid = 0) {
  std::vector<json> found;
  for (const json& event : events_of(doc, "M"))
    if (event.at("name") == name && event.at("pid") == pid &&
        (tid == 0 || event.value("tid", std::uint64_t{0}) == tid))
      found.push_back(event);
  return found;
}

}  // namespace

TEST_CASE("a kernel is an X event on its stream's track with exact args and a launch flow") {
  fixture f;
  context_chain context;
  f.backend->gpu_device(make_device(0, "NVIDIA H100 80GB HBM3"));
  // The host side: the API call as a region inside "solve", which the flow starts in.
  f.feed(f.main_thread, {begin(1'000, context.solve_name), begin(2'000, context.launch_name),
                         end(3'000, context.launch_name), end(20'000, context.solve_name)});
  static const char saxpy[] = "_Z5saxpyifPKfPf";
  const rt::gpu_activity activities[] = {
      kernel(5'000, 9'000, 0, 7, saxpy, launched(11, test_pid, 2'500, &context.launch))};
  f.backend->gpu_activities(activities, std::size(activities));
  f.flush(true);

  const check::report report = checked(f.path);
  const std::uint64_t gpu = gpu_pid(0);
  CHECK(gpu == 0x8000'1092U);  // 4242 in the low bits, device 0
  CHECK(report.process_names.at(gpu) == "GPU 0: NVIDIA H100 80GB HBM3");
  CHECK(report.thread_names.at({gpu, 8}) == "stream 7");
  CHECK(report.threads.count({gpu, 8}) == 1);

  const json doc = parse_file(f.path);
  const std::vector<json> process_sort = metadata_events(doc, "process_sort_index", gpu);
  REQUIRE(process_sort.size() == 1);
  CHECK(process_sort.front().at("args").at("sort_index") == 1000);
  const std::vector<json> thread_sort = metadata_events(doc, "thread_sort_index", gpu, 8);
  REQUIRE(thread_sort.size() == 1);
  CHECK(thread_sort.front().at("args").at("sort_index") == 7);

  const json x = the_event(doc, "X", "saxpy(int, float, float const*, float*)");
  CHECK(x.at("cat") == "kernel");
  CHECK(x.at("pid") == gpu);
  CHECK(x.at("tid") == 8);
  CHECK(x.at("ts").get<double>() == 5.0);
  CHECK(x.at("dur").get<double>() == 4.0);
  CHECK(x.at("args") == json({{"correlation", 11},
                              {"context", "solve/step"},
                              {"launch", "cudaLaunchKernel"},
                              {"device", 0},
                              {"stream", 7},
                              {"grid", {4, 2, 1}},
                              {"block", {256, 1, 1}},
                              {"registers per thread", 32},
                              {"static shared memory", 48},
                              {"dynamic shared memory", 1024},
                              {"local memory per thread", 16},
                              {"theoretical occupancy", 0.75}}));

  const std::vector<json> starts = events_in(doc, "s", "launch");
  const std::vector<json> finishes = events_in(doc, "f", "launch");
  REQUIRE(starts.size() == 1);
  REQUIRE(finishes.size() == 1);
  CHECK(starts.front() == json({{"ph", "s"}, {"cat", "launch"}, {"name", "launch"},
                                {"id", starts.front().at("id")}, {"pid", test_pid},
                                {"tid", test_pid}, {"ts", 2.5}}));
  CHECK(finishes.front() == json({{"ph", "f"}, {"bp", "e"}, {"cat", "launch"},
                                  {"name", "launch"}, {"id", starts.front().at("id")},
                                  {"pid", gpu}, {"tid", 8}, {"ts", 5.0}}));
  CHECK(starts.front().at("id") != 11);  // a sequence number, not the correlation id

  CHECK(report.metadata.at("gpu-operations-written") == 1);
  CHECK(report.metadata.at("gpu-operations-written-without-launch") == 0);
}

TEST_CASE("memcpys and memsets carry their bytes, kinds, devices, objects and rate") {
  fixture f;
  context_chain context;
  f.feed(f.main_thread, {begin(1'000, context.memcpy_name), end(2'000, context.memcpy_name)});
  const rt::data_object_info host_x{1, "h_x", 0x1000, 1 << 20, rt::memory_kind::pinned, -1};
  const rt::data_object_info device_x{2, "d_x \"gpu\"", 0xd000, 1 << 20,
                                      rt::memory_kind::device, 1};
  rt::gpu_activity to_device = operation(rt::gpu_operation::memcpy, 10'000, 12'000, 1, 3,
                                         launched(21, test_pid, 1'500, &context.copy));
  to_device.bytes = 1 << 20;
  to_device.copy = rt::copy_kind::host_to_device;
  to_device.source_device = -1;
  to_device.destination_device = 1;
  to_device.source_object_id = 1;
  to_device.destination_object_id = 2;
  to_device.source_object = &host_x;
  to_device.destination_object = &device_x;
  // Between two devices, no objects known, no duration: no rate.
  rt::gpu_activity peer = operation(rt::gpu_operation::memcpy, 13'000, 13'000, 1, 3,
                                    launched(22, test_pid, 1'600, &context.copy));
  peer.bytes = 64;
  peer.copy = rt::copy_kind::peer_to_peer;
  peer.source_device = 0;
  peer.destination_device = 1;
  rt::gpu_activity clear = operation(rt::gpu_operation::memset, 14'000, 14'500, 1, 0,
                                     launched(23, test_pid, 1'700, &context.copy));
  clear.bytes = 4096;
  clear.memory = rt::memory_kind::device;
  clear.address = 0xd000;
  clear.destination_object_id = 2;
  clear.destination_object = &device_x;
  const rt::gpu_activity activities[] = {clear, peer, to_device};  // out of order
  f.backend->gpu_activities(activities, std::size(activities));
  f.flush(true);

  const check::report report = checked(f.path);
  const std::uint64_t gpu = gpu_pid(1);
  CHECK(report.process_names.at(gpu) == "GPU 1");  // never announced
  CHECK(report.thread_names.at({gpu, 4}) == "stream 3");
  CHECK(report.thread_names.at({gpu, 1}) == "stream 0");
  const json doc = parse_file(f.path);
  CHECK(metadata_events(doc, "process_sort_index", gpu).front().at("args").at("sort_index") ==
        1001);

  const json h_to_d = the_event(doc, "X", "Memcpy HtoD");
  CHECK(h_to_d.at("cat") == "memcpy");
  CHECK(h_to_d.at("pid") == gpu);
  CHECK(h_to_d.at("tid") == 4);
  CHECK(h_to_d.at("ts").get<double>() == 10.0);
  CHECK(h_to_d.at("dur").get<double>() == 2.0);
  CHECK(h_to_d.at("args") == json({{"correlation", 21},
                                   {"context", "solve/step"},
                                   {"launch", "cudaMemcpyAsync"},
                                   {"device", 1},
                                   {"stream", 3},
                                   {"bytes", 1 << 20},
                                   {"kind", "HtoD"},
                                   {"source device", "host"},
                                   {"destination device", 1},
                                   {"source object", "h_x"},
                                   {"destination object", "d_x \"gpu\""},
                                   {"GB/s", 524.288}}));
  const json p_to_p = the_event(doc, "X", "Memcpy PtoP");
  CHECK(p_to_p.at("args") == json({{"correlation", 22},
                                   {"context", "solve/step"},
                                   {"launch", "cudaMemcpyAsync"},
                                   {"device", 1},
                                   {"stream", 3},
                                   {"bytes", 64},
                                   {"kind", "PtoP"},
                                   {"source device", 0},
                                   {"destination device", 1}}));
  const json memset = the_event(doc, "X", "Memset");
  CHECK(memset.at("cat") == "memset");
  CHECK(memset.at("tid") == 1);
  CHECK(memset.at("dur").get<double>() == 0.5);
  CHECK(memset.at("args") == json({{"correlation", 23},
                                   {"context", "solve/step"},
                                   {"launch", "cudaMemcpyAsync"},
                                   {"device", 1},
                                   {"stream", 0},
                                   {"bytes", 4096},
                                   {"object", "d_x \"gpu\""},
                                   {"memory", "device"}}));
  // One flow per operation, each with its own id; the checker binds both ends.
  CHECK(events_in(doc, "s", "launch").size() == 3);
  CHECK(events_in(doc, "f", "launch").size() == 3);
  CHECK(report.metadata.at("gpu-operations-written") == 3);
}

TEST_CASE("operations without a launch get no flow, no context and are counted") {
  fixture f;
  context_chain context;
  f.feed(f.main_thread, {begin(1'000, context.launch_name), end(2'000, context.launch_name)});
  static const char plain[] = "plain_c_kernel";  // extern "C": nothing to demangle
  static const char templated[] = "_Z5scaleIfEvPT_S0_";
  // One call launching two kernels (a graph): two flows with distinct ids.
  const rt::gpu_launch graph = launched(31, test_pid, 1'500, &context.root);
  const rt::gpu_activity activities[] = {
      kernel(3'000, 4'000, 0, 1, templated, graph),
      kernel(4'000, 5'000, 0, 1, templated, graph),
      kernel(6'000, 7'000, 0, 1, plain, launched(32, 0, 0, nullptr)),
      kernel(7'000, 8'000, 0, 2, nullptr, launched(33, 0, 0, nullptr))};
  f.backend->gpu_activities(activities, std::size(activities));
  f.flush(true);

  const check::report report = checked(f.path);
  CHECK(report.metadata.at("gpu-operations-written") == 4);
  CHECK(report.metadata.at("gpu-operations-written-without-launch") == 2);
  const json doc = parse_file(f.path);
  CHECK(report.name_counts.at("void scale<float>(float*, float)") == 2);
  const std::vector<json> starts = events_in(doc, "s", "launch");
  REQUIRE(starts.size() == 2);
  CHECK(starts[0].at("id") != starts[1].at("id"));
  CHECK(events_in(doc, "f", "launch").size() == 2);
  for (const json& x : events_in(doc, "X", "kernel")) {
    if (x.at("name") == "void scale<float>(float*, float)") {
      // The root context has no path and no API call.
      CHECK_FALSE(x.at("args").contains("context"));
      CHECK_FALSE(x.at("args").contains("launch"));
      CHECK(x.at("args").at("correlation") == 31);
    }
  }
  const json unlaunched = the_event(doc, "X", "plain_c_kernel");
  CHECK(unlaunched.at("args").at("correlation") == 32);
  CHECK_FALSE(unlaunched.at("args").contains("context"));
  CHECK_FALSE(unlaunched.at("args").contains("launch"));
  for (const json& flow_end : events_in(doc, "f", "launch"))
    CHECK(flow_end.at("ts").get<double>() < 6.0);  // only the launched kernels have flows
  const json unnamed = the_event(doc, "X", "kernel");
  CHECK(unnamed.at("tid") == 3);
  // Unknown occupancy (negative) is left out rather than written as a number.
  rt::gpu_activity unknown = kernel(9'000, 9'500, 0, 1, plain, launched(34, 0, 0, nullptr));
  unknown.kernel.occupancy = -1.0;
  fixture g;
  g.backend->gpu_activities(&unknown, 1);
  g.flush(true);
  checked(g.path);
  const json x = the_event(parse_file(g.path), "X", "plain_c_kernel");
  CHECK_FALSE(x.at("args").contains("theoretical occupancy"));
  CHECK(x.at("args").at("registers per thread") == 32);
}

TEST_CASE("allocations and releases make a running total per device and memory kind") {
  fixture f;
  f.backend->gpu_device(make_device(0, "GPU zero"));
  const auto change = [](rt::gpu_operation kind, std::int64_t time, std::uint32_t device,
                         rt::memory_kind memory, std::uint64_t bytes) {
    rt::gpu_activity activity =
        operation(kind, time, time, device, 0, launched(1, test_pid, time - 10, nullptr));
    activity.memory = memory;
    activity.bytes = bytes;
    return activity;
  };
  using op = rt::gpu_operation;
  // Handed over out of order, as a collector may; the totals follow time order.
  const rt::gpu_activity first[] = {
      change(op::release, 3'000, 0, rt::memory_kind::device, 100),
      change(op::allocation, 1'000, 0, rt::memory_kind::device, 100),
      change(op::allocation, 1'500, 0, rt::memory_kind::pinned, 30),
      change(op::allocation, 2'000, 0, rt::memory_kind::device, 50),
      change(op::allocation, 2'500, 1, rt::memory_kind::device, 7)};
  f.backend->gpu_activities(first, std::size(first));
  f.flush(false);
  checked(f.path);
  const rt::gpu_activity second[] = {change(op::release, 4'000, 0, rt::memory_kind::device, 50),
                                     change(op::release, 4'500, 0, rt::memory_kind::pinned, 30)};
  f.backend->gpu_activities(second, std::size(second));
  f.flush(true);

  const check::report report = checked(f.path);
  CHECK(report.process_names.at(gpu_pid(0)) == "GPU 0: GPU zero");
  CHECK(report.process_names.at(gpu_pid(1)) == "GPU 1");
  CHECK(report.metadata.at("gpu-operations-written") == 7);
  CHECK(report.metadata.at("gpu-operations-written-without-launch") == 0);
  const json doc = parse_file(f.path);
  std::vector<std::pair<double, std::int64_t>> device0;
  std::vector<std::pair<double, std::int64_t>> pinned0;
  std::vector<std::int64_t> device1;
  for (const json& c : events_of(doc, "C")) {
    CHECK(c.at("name") == "allocated memory");
    REQUIRE(c.at("args").size() == 1);
    const double ts = c.at("ts").get<double>();
    if (c.at("pid") == gpu_pid(0) && c.at("args").contains("device"))
      device0.emplace_back(ts, c.at("args").at("device").get<std::int64_t>());
    else if (c.at("pid") == gpu_pid(0))
      pinned0.emplace_back(ts, c.at("args").at("pinned").get<std::int64_t>());
    else
      device1.push_back(c.at("args").at("device").get<std::int64_t>());
  }
  CHECK(device0 == std::vector<std::pair<double, std::int64_t>>{
                       {1.0, 100}, {2.0, 150}, {3.0, 50}, {4.0, 0}});
  CHECK(pinned0 == std::vector<std::pair<double, std::int64_t>>{{1.5, 30}, {4.5, 0}});
  CHECK(device1 == std::vector<std::int64_t>{7});
  // Allocations are device work without a slice: no flows.
  CHECK(events_of(doc, "s").empty());
}

TEST_CASE("synchronizations are async b/e pairs on the GPU process") {
  fixture f;
  context_chain context;
  const auto sync = [](std::uint32_t detail, std::int64_t start, std::int64_t end,
                       rt::gpu_launch launch) {
    rt::gpu_activity activity =
        operation(rt::gpu_operation::synchronization, start, end, 0, 0, launch);
    activity.detail = detail;
    return activity;
  };
  const rt::gpu_activity activities[] = {
      sync(3, 4'000, 6'000, launched(41, test_pid, 3'900, &context.launch)),
      sync(1, 5'000, 5'500, launched(42, 0, 0, nullptr)),
      sync(2, 7'000, 7'100, launched(43, 0, 0, nullptr)),
      sync(4, 8'000, 8'100, launched(44, 0, 0, nullptr))};
  f.backend->gpu_activities(activities, std::size(activities));
  f.flush(true);

  const check::report report = checked(f.path);  // pairs b with e
  CHECK(report.metadata.at("gpu-operations-written") == 4);
  CHECK(report.metadata.at("gpu-operations-written-without-launch") == 3);
  const json doc = parse_file(f.path);
  CHECK(events_in(doc, "b", "sync").size() == 4);
  CHECK(events_in(doc, "e", "sync").size() == 4);
  const json b = the_event(doc, "b", "stream synchronization");
  const json e = the_event(doc, "e", "stream synchronization");
  CHECK(b.at("cat") == "sync");
  CHECK(b.at("pid") == gpu_pid(0));
  CHECK(b.at("ts").get<double>() == 4.0);
  CHECK(e.at("ts").get<double>() == 6.0);
  CHECK(e.at("id") == b.at("id"));
  CHECK(b.at("args") ==
        json({{"correlation", 41}, {"context", "solve/step"}, {"launch", "cudaLaunchKernel"}}));
  const json event_sync = the_event(doc, "b", "event synchronization");
  CHECK(event_sync.at("id") != b.at("id"));
  CHECK(event_sync.at("args") == json({{"correlation", 42}}));
  the_event(doc, "b", "stream wait synchronization");
  the_event(doc, "b", "context synchronization");
  CHECK(events_in(doc, "s", "launch").empty());  // no slice to bind a flow to
  CHECK(report.process_names.at(gpu_pid(0)) == "GPU 0");
}

// CUPTI reports operations of one stream that overlap (JAX on an H100: a
// host-to-host copy beside the stream's kernel); Perfetto drops an X event
// that partially overlaps another on its track, so each goes on the stream's
// first track where it overlaps nothing, with its launch flow.
TEST_CASE("overlapping operations of one stream go on its next track, none dropped") {
  fixture f;
  context_chain context;
  f.feed(f.main_thread, {begin(1'000, context.launch_name), end(2'000, context.launch_name)});
  static const char name[] = "_Z4stepv";
  const auto launch = [&](std::uint64_t correlation) {
    return launched(correlation, test_pid, 1'500, &context.launch);
  };
  rt::gpu_activity copy = operation(rt::gpu_operation::memcpy, 15'000, 30'000, 0, 14, launch(2));
  copy.copy = rt::copy_kind::host_to_host;
  copy.bytes = 8;
  const rt::gpu_activity first[] = {kernel(10'000, 20'000, 0, 14, name, launch(1)), copy,
                                    kernel(18'000, 19'000, 0, 14, name, launch(3)),
                                    kernel(20'000, 25'000, 0, 14, name, launch(4))};
  f.backend->gpu_activities(first, std::size(first));
  f.flush(false);
  // A later batch: the stream's first track is free again from 25 us.
  const rt::gpu_activity second[] = {kernel(26'000, 27'000, 0, 14, name, launch(5))};
  f.backend->gpu_activities(second, std::size(second));
  f.flush(true);

  const check::report report = checked(f.path);  // no partial overlap on any track
  const std::uint64_t gpu = gpu_pid(0);
  const std::uint64_t own = 15, second_track = 0x8000'0000U | (1U << 26U) | 15U,
                      third_track = 0x8000'0000U | (2U << 26U) | 15U;
  CHECK(report.thread_names.at({gpu, own}) == "stream 14");
  CHECK(report.thread_names.at({gpu, second_track}) == "stream 14 (overlapping 1)");
  CHECK(report.thread_names.at({gpu, third_track}) == "stream 14 (overlapping 2)");
  const json doc = parse_file(f.path);
  CHECK(metadata_events(doc, "thread_sort_index", gpu, second_track).front().at("args").at("sort_index") ==
        14);
  std::map<std::uint64_t, std::uint64_t> track_of;  // correlation -> tid
  for (const json& x : events_of(doc, "X"))
    if (x.at("pid") == gpu) track_of[x.at("args").at("correlation").get<std::uint64_t>()] = x.at("tid");
  CHECK(track_of == std::map<std::uint64_t, std::uint64_t>{
                        {1, own}, {2, second_track}, {3, third_track}, {4, own}, {5, own}});
  // Each flow ends on its operation's track.
  for (const json& finish : events_in(doc, "f", "launch")) {
    const double ts = finish.at("ts").get<double>();
    CHECK((ts == 15.0 ? finish.at("tid") == second_track
                      : ts == 18.0 ? finish.at("tid") == third_track : finish.at("tid") == own));
  }
  CHECK(report.metadata.at("gpu-operations-written") == 5);
  CHECK(report.metadata.count("gpu-operations-overlapping-on-track") == 0);

  // Past 16 tracks an operation stays on its stream's own, and is counted.
  fixture g;
  std::vector<rt::gpu_activity> crowd;
  for (int i = 0; i < 17; ++i)
    crowd.push_back(kernel(1'000 + i, 2'000 + i, 0, 3, name, launched(0, 0, 0, nullptr)));
  g.backend->gpu_activities(crowd.data(), crowd.size());
  g.flush(true);
  const check::report crowded = check::check_file(g.path);
  CHECK(crowded.error_count == 1);  // the 17th, which Perfetto drops
  CHECK(crowded.metadata.at("gpu-operations-overlapping-on-track") == 1);
}

TEST_CASE("GPU processes and stream tracks are named once; a late announcement renames") {
  fixture f;
  static const char name[] = "_Z4stepv";
  const auto batch = [&](std::int64_t start) {
    const rt::gpu_activity activities[] = {
        kernel(start, start + 100, 0, 5, name, launched(1, 0, 0, nullptr)),
        kernel(start + 200, start + 300, 0, 6, name, launched(2, 0, 0, nullptr))};
    f.backend->gpu_activities(activities, std::size(activities));
  };
  batch(1'000);
  f.flush(false);
  checked(f.path);  // complete after a flush that is not the last
  batch(2'000);
  f.backend->gpu_device(make_device(0, "Late GPU"));
  f.backend->gpu_device(make_device(0, "Late GPU"));  // the same again: nothing new
  batch(3'000);
  f.flush(true);

  const check::report report = checked(f.path);
  const std::uint64_t gpu = gpu_pid(0);
  CHECK(report.process_names.at(gpu) == "GPU 0: Late GPU");  // the last one wins
  CHECK(report.name_counts.at("step()") == 6);
  const json doc = parse_file(f.path);
  std::vector<std::string> process_names;
  for (const json& m : metadata_events(doc, "process_name", gpu))
    process_names.push_back(m.at("args").at("name").get<std::string>());
  CHECK(process_names == std::vector<std::string>{"GPU 0", "GPU 0: Late GPU"});
  CHECK(metadata_events(doc, "process_sort_index", gpu).size() == 1);
  CHECK(metadata_events(doc, "thread_name", gpu, 6).size() == 1);
  CHECK(metadata_events(doc, "thread_name", gpu, 7).size() == 1);
  CHECK(metadata_events(doc, "thread_sort_index", gpu, 7).size() == 1);
  // Named before any activity: the first process_name already has the name.
  fixture g;
  g.backend->gpu_device(make_device(2, "Early GPU"));
  const rt::gpu_activity one = kernel(10, 20, 2, 0, name, launched(1, 0, 0, nullptr));
  g.backend->gpu_activities(&one, 1);
  g.flush(true);
  checked(g.path);
  const json early = parse_file(g.path);
  REQUIRE(metadata_events(early, "process_name", gpu_pid(2)).size() == 1);
  CHECK(metadata_events(early, "process_name", gpu_pid(2)).front().at("args").at("name") ==
        "GPU 2: Early GPU");
  // An announced device without activity gets no process.
  fixture h;
  h.backend->gpu_device(make_device(3, "Idle GPU"));
  h.flush(true);
  CHECK(checked(h.path).process_names.count(gpu_pid(3)) == 0);
}

TEST_CASE("regions nested deeper than Perfetto shows are counted and named in describe()") {
  fixture f;
  const auto* level = f.names.add("level");
  constexpr int depth = 600;  // Perfetto keeps 512 nested slices per track
  std::vector<rt::record> records;
  for (int k = 0; k < depth; ++k) records.push_back(begin(k, level));
  for (int k = depth; k > 0; --k) records.push_back(end(2 * depth - k, level));
  f.backend->thread_records(f.main_thread, records.data(), records.size());
  f.flush(true);
  const check::report report = checked(f.path);
  CHECK(report.phase_counts.at("X") == depth);  // all written, for readers without the limit
  CHECK(report.metadata.at("regions-deeper-than-perfetto-shows") == depth - 512);
  CHECK(f.backend->describe().find(
            "; 88 regions nested deeper than 512 levels, which Perfetto does not show") !=
        std::string::npos);
}

TEST_CASE("a trace within Perfetto's depth says nothing about depth") {
  fixture f;
  const auto* level = f.names.add("level");
  std::vector<rt::record> records;
  for (int k = 0; k < 512; ++k) records.push_back(begin(k, level));
  for (int k = 512; k > 0; --k) records.push_back(end(1024 - k, level));
  f.backend->thread_records(f.main_thread, records.data(), records.size());
  f.flush(true);
  const check::report report = checked(f.path);
  CHECK(report.phase_counts.at("X") == 512);
  CHECK_FALSE(report.metadata.contains("regions-deeper-than-perfetto-shows"));
  CHECK(f.backend->describe().find("deeper") == std::string::npos);
}

// ---------------------------------------------------------------------------
// Instruction samples (FERRET_CUDA_PC_SAMPLING)

namespace {

// CUPTI's names, in HPCToolkit's classes; ids dense as the runtime gives them.
const rt::gpu_stall_reason long_scoreboard{0, "long_scoreboard", rt::gpu_stall::gmem};
const rt::gpu_stall_reason selected{1, "selected", rt::gpu_stall::none};
const rt::gpu_stall_reason wait{2, "wait", rt::gpu_stall::idep};
const rt::gpu_stall_reason barrier{3, "barrier", rt::gpu_stall::sync};

// 100 samples: 62 long_scoreboard, 20 wait, 9 selected, 9 barrier; 400 expected.
rt::gpu_kernel_samples kernel_samples() {
  rt::gpu_kernel_samples samples{};
  samples.samples = 100;
  samples.by_stall[static_cast<std::size_t>(rt::gpu_stall::gmem)] = 62;
  samples.by_stall[static_cast<std::size_t>(rt::gpu_stall::idep)] = 20;
  samples.by_stall[static_cast<std::size_t>(rt::gpu_stall::none)] = 9;
  samples.by_stall[static_cast<std::size_t>(rt::gpu_stall::sync)] = 9;
  samples.expected = 400;
  samples.period_cycles = 4096;
  samples.top_reasons[0] = &long_scoreboard;
  samples.top_reasons[1] = &wait;
  samples.top_reasons[2] = &barrier;
  samples.top_reason_samples[0] = 62;
  samples.top_reason_samples[1] = 20;
  samples.top_reason_samples[2] = 9;
  return samples;
}

rt::gpu_instruction_sample instruction(const char* function, std::uint64_t pc_offset,
                                       const char* file, std::uint32_t line,
                                       const rt::gpu_stall_reason& reason, double samples) {
  return {nullptr, 0, function, pc_offset, file, line, &reason, samples};
}

}  // namespace

TEST_CASE("a sampled kernel's event carries GINST, its stall classes, top stalls and GSAMP") {
  fixture f;
  static const char saxpy[] = "_Z5saxpyifPKfPf";
  const rt::gpu_kernel_samples samples = kernel_samples();
  rt::gpu_activity sampled = kernel(5'000, 9'000, 0, 7, saxpy, launched(11, 0, 0, nullptr));
  sampled.samples = &samples;
  const rt::gpu_activity plain = kernel(10'000, 12'000, 0, 7, saxpy, launched(12, 0, 0, nullptr));
  const rt::gpu_activity activities[] = {sampled, plain};
  f.backend->gpu_activities(activities, std::size(activities));
  f.flush(true);

  checked(f.path);
  const json doc = parse_file(f.path);
  const std::vector<json> kernels = events_in(doc, "X", "kernel");
  REQUIRE(kernels.size() == 2);
  const json& args = kernels[0].at("args");
  CHECK(args.at("samples") == 100);
  CHECK(args.at("GINST:STL_ANY") == 91);
  CHECK(args.at("GINST:STL_GMEM") == 62);
  CHECK(args.at("GINST:STL_IDEP") == 20);
  CHECK(args.at("GINST:STL_NONE") == 9);
  CHECK(args.at("GINST:STL_SYNC") == 9);
  CHECK_FALSE(args.contains("GINST:STL_PIPE"));  // zero classes are left out
  CHECK(args.at("top stalls") == "long_scoreboard 62%, wait 20%, barrier 9%");
  CHECK(args.at("expected samples") == 400);
  CHECK(args.at("utilization") == 0.25);
  CHECK(args.at("sampling period cycles") == 4096);
  // The unsampled kernel's args are what they were: nothing about samples.
  const json& plain_args = kernels[1].at("args");
  CHECK(plain_args.size() == 10);  // correlation, device, stream and the launch attributes
  for (const auto& [key, value] : plain_args.items()) {
    CHECK(key.find("GINST") == std::string::npos);
    CHECK(key.find("sampl") == std::string::npos);
  }
  CHECK_FALSE(doc.at("metadata").contains("gpu-source-lines"));
}

TEST_CASE("a kernel's shared samples are written to two decimals") {
  fixture f;
  static const char name[] = "_Z4stepv";
  rt::gpu_kernel_samples samples{};
  samples.samples = 10.0 / 3.0;
  samples.by_stall[static_cast<std::size_t>(rt::gpu_stall::gmem)] = 10.0 / 3.0;
  samples.top_reasons[0] = &long_scoreboard;
  samples.top_reason_samples[0] = 10.0 / 3.0;
  rt::gpu_activity sampled = kernel(1'000, 2'000, 0, 1, name, launched(1, 0, 0, nullptr));
  sampled.samples = &samples;
  f.backend->gpu_activities(&sampled, 1);
  f.flush(true);
  checked(f.path);
  const json args = the_event(parse_file(f.path), "X", "step()").at("args");
  CHECK(args.at("samples") == 3.33);
  CHECK(args.at("GINST:STL_GMEM") == 3.33);
  CHECK(args.at("top stalls") == "long_scoreboard 100%");
  CHECK_FALSE(args.contains("expected samples"));  // unknown: no utilization either
  CHECK_FALSE(args.contains("utilization"));
  CHECK_FALSE(args.contains("sampling period cycles"));
}

TEST_CASE("instruction samples make the metadata's bounded table of GPU source lines") {
  fixture f;
  rt::context_node root{0, 0, nullptr, nullptr};
  static const char stream[] = "_Z6streamPfPKfi";
  static const char gemm[] = "cutlass_gemm";  // no line information: instructions by offset
  static const char file[] = "stream.cu";
  std::vector<rt::gpu_instruction_sample> first = {
      instruction(stream, 0x10, file, 42, long_scoreboard, 30),
      instruction(stream, 0x20, file, 42, selected, 10),  // a second instruction of line 42
      instruction(stream, 0x30, file, 43, wait, 5),
      instruction(gemm, 0x1a0, nullptr, 0, wait, 100),
  };
  for (auto& sample : first) sample.context = &root;
  f.backend->gpu_instruction_samples(first.data(), first.size());
  f.flush(false);
  checked(f.path);
  // A later drain adds to the same line, and brings a function with more
  // lines than the table keeps.
  static const char many[] = "_Z4manyv";
  std::vector<rt::gpu_instruction_sample> second = {
      instruction(stream, 0x10, file, 42, long_scoreboard, 20.5)};
  for (std::uint32_t line = 1; line <= 12; ++line)
    second.push_back(instruction(many, line * 16U, file, 100 + line, wait, line));
  f.backend->gpu_instruction_samples(second.data(), second.size());
  f.flush(true);

  checked(f.path);
  const json table = parse_file(f.path).at("metadata").at("gpu-source-lines");
  REQUIRE(table.size() == 3);
  // Functions most sampled first: gemm 100, many 78, stream 65.5.
  CHECK(table[0].at("function") == "cutlass_gemm");
  CHECK(table[0].at("samples") == 100);
  CHECK(table[0].at("lines") ==
        json::parse(R"([{"pc offset":"0x1a0","samples":100,"stalls":"wait 100%"}])"));
  CHECK(table[1].at("function") == "many()");
  CHECK(table[1].at("samples") == 78);
  REQUIRE(table[1].at("lines").size() == 10);
  CHECK(table[1].at("lines")[0].at("line") == 112);
  CHECK(table[1].at("lines")[9].at("line") == 103);
  CHECK(table[1].at("lines left out") == 2);
  CHECK(table[2].at("function") == "stream(float*, float const*, int)");
  CHECK(table[2].at("samples") == 65.5);
  CHECK(table[2].at("lines") ==
        json::parse(R"([{"file":"stream.cu","line":42,"samples":60.5,
                         "stalls":"long_scoreboard 83%, selected 17%"},
                        {"file":"stream.cu","line":43,"samples":5,"stalls":"wait 100%"}])"));
}

// ---------------------------------------------------------------------------
// Device-initiated traffic (FERRET_CUDA_PEER_ACCESSES)

namespace {

rt::gpu_remote_access remote_access(const char* function, std::uint64_t pc_offset,
                                    const char* file, std::uint32_t line, std::uint32_t device,
                                    std::int32_t target, rt::memory_access access,
                                    const rt::data_object_info* object, std::uint64_t accesses,
                                    std::uint64_t bytes) {
  return {nullptr, device, target, access,  function, pc_offset, file,
          line,    object != nullptr ? object->id : 0, object, accesses, bytes};
}

}  // namespace

TEST_CASE("a kernel's device-initiated bytes are arguments per memory it reached and direction") {
  fixture f;
  static const char halo[] = "_Z4haloPf";
  rt::gpu_kernel_remote_traffic traffic{};
  traffic.target_count = 3;
  traffic.targets[0] = {1, 4096, 512};
  traffic.targets[1] = {rt::host_memory_device, 8, 0};
  traffic.targets[2] = {3, 0, 64};
  rt::gpu_activity remote = kernel(5'000, 9'000, 0, 7, halo, launched(11, 0, 0, nullptr));
  remote.remote = &traffic;
  const rt::gpu_activity local = kernel(10'000, 12'000, 0, 7, halo, launched(12, 0, 0, nullptr));
  const rt::gpu_activity activities[] = {remote, local};
  f.backend->gpu_activities(activities, std::size(activities));
  f.flush(true);

  checked(f.path);
  const json doc = parse_file(f.path);
  const std::vector<json> kernels = events_in(doc, "X", "kernel");
  REQUIRE(kernels.size() == 2);
  const json& args = kernels[0].at("args");
  CHECK(args.at("loaded from GPU 1") == 4096);
  CHECK(args.at("stored to GPU 1") == 512);
  CHECK(args.at("loaded from host") == 8);
  CHECK_FALSE(args.contains("stored to host"));  // no bytes that way: left out
  CHECK_FALSE(args.contains("loaded from GPU 3"));
  CHECK(args.at("stored to GPU 3") == 64);
  CHECK(args.size() == 10 + 4);
  // A kernel that reached no other memory has the arguments it had.
  const json& local_args = kernels[1].at("args");
  CHECK(local_args.size() == 10);
  for (const auto& [key, value] : local_args.items()) {
    CHECK(key.find("loaded") == std::string::npos);
    CHECK(key.find("stored") == std::string::npos);
  }
  CHECK_FALSE(doc.at("metadata").contains("gpu-device-initiated"));
}

TEST_CASE("device-initiated accesses make the metadata's bounded table by kernel, line, object and device pair") {
  fixture f;
  static const char halo[] = "_Z4haloPf";
  static const char nccl[] = "ncclDevKernel_AllReduce";  // no line information
  static const char file[] = "halo.cu";
  const rt::data_object_info peer{7, "peer halo", 0x1000, 4096, rt::memory_kind::device, 1};
  const rt::data_object_info pinned{8, "pinned", 0x9000, 64, rt::memory_kind::pinned, -1};
  rt::context_node root{0, 0, nullptr, nullptr};
  rt::context_node other{1, 1, &root, nullptr};
  std::vector<rt::gpu_remote_access> first = {
      remote_access(halo, 0x10, file, 21, 0, 1, rt::memory_access::load, &peer, 1024, 4096),
      remote_access(halo, 0x20, file, 21, 0, 1, rt::memory_access::load, &peer, 16, 64),  // line 21 again
      remote_access(halo, 0x30, file, 22, 0, 1, rt::memory_access::store, &peer, 128, 512),
      remote_access(halo, 0x40, file, 23, 0, rt::host_memory_device, rt::memory_access::atomic,
                    &pinned, 2, 8),
      remote_access(nccl, 0x1a0, nullptr, 0, 1, 0, rt::memory_access::store, nullptr, 500, 8000),
  };
  for (auto& access : first) access.context = &root;
  f.backend->gpu_remote_accesses(first.data(), first.size());
  f.flush(false);
  checked(f.path);
  // A later drain adds to the same row from another calling context, and
  // brings more rows than the table keeps.
  rt::gpu_remote_access again =
      remote_access(halo, 0x10, file, 21, 0, 1, rt::memory_access::load, &peer, 1024, 4096);
  again.context = &other;
  std::vector<rt::gpu_remote_access> second = {again};
  static const char many[] = "_Z4manyv";
  for (std::uint32_t line = 1; line <= ferret::chrome::max_device_initiated_rows; ++line)
    second.push_back(
        remote_access(many, line * 16U, file, 100 + line, 0, 2, rt::memory_access::load, nullptr, 1, 4));
  for (auto& access : second)
    if (access.context == nullptr) access.context = &root;
  f.backend->gpu_remote_accesses(second.data(), second.size());
  f.flush(true);

  const check::report report = checked(f.path);
  const json metadata = parse_file(f.path).at("metadata");
  const json& table = metadata.at("gpu-device-initiated");
  REQUIRE(table.size() == ferret::chrome::max_device_initiated_rows);
  // Most bytes first: both drains and both instructions of line 21 summed.
  CHECK(table[0] == json::parse(R"j({"kernel":"halo(float*)","file":"halo.cu","line":21,
      "object":"peer halo","access":"load","source device":1,"destination device":0,
      "bytes":8256,"accesses":2064})j"));
  CHECK(table[1] == json::parse(R"j({"kernel":"ncclDevKernel_AllReduce","pc offset":"0x1a0",
      "access":"store","source device":1,"destination device":0,"bytes":8000,"accesses":500})j"));
  CHECK(table[2] == json::parse(R"j({"kernel":"halo(float*)","file":"halo.cu","line":22,
      "object":"peer halo","access":"store","source device":0,"destination device":1,
      "bytes":512,"accesses":128})j"));
  CHECK(table[3] == json::parse(R"j({"kernel":"halo(float*)","file":"halo.cu","line":23,
      "object":"pinned","access":"atomic","source device":0,"destination device":"host",
      "bytes":8,"accesses":2})j"));
  CHECK(table[4].at("kernel") == "many()");
  CHECK(table[4].at("source device") == 2);
  // 4 + 100 rows: the last 4 are left out, 4 bytes each.
  CHECK(metadata.at("gpu-device-initiated-rows-left-out") == 4);
  CHECK(metadata.at("gpu-device-initiated-bytes-left-out") == 16);
  CHECK(report.metadata.at("gpu-device-initiated-rows-left-out") == 4);
}

namespace {

// Sampled counters of one device (FERRET_CUDA_METRICS_SAMPLING).
rt::gpu_metric_set link_metric_set(std::uint32_t device) {
  return {device,
          {{"nvltx__bytes.sum", "NVLink bytes sent", "bytes", true},
           {"nvlrx__bytes.sum", "NVLink bytes received", "bytes", true},
           {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "SM activity", "percent", false}},
          1'000'000};
}

// The C events of the named counter on `pid`, as (ts, value of `key`).
std::vector<std::pair<double, double>> counter_samples(const json& doc, std::string_view name,
                                                       std::uint64_t pid, const std::string& key) {
  std::vector<std::pair<double, double>> found;
  for (const json& event : events_of(doc, "C"))
    if (event.at("name") == name && event.at("pid") == pid)
      found.emplace_back(event.at("ts").get<double>(), event.at("args").at(key).get<double>());
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

TEST_CASE("sampled counters are counter tracks in the GPU's process: rates in GB/s, levels as values") {
  fixture f;
  f.backend->gpu_device(make_device(0, "NVIDIA H200"));
  f.backend->gpu_sampled_metrics(link_metric_set(0));
  // 1 ms intervals: 2 MB and 0.5 MB sent, then a gap, then 3 MB.
  const double values[][3] = {{2e6, 1e6, 50}, {5e5, 0, 25}, {3e6, 0, 100}};
  const rt::gpu_metric_interval intervals[] = {{0, 1'000'000, 2'000'000, values[0]},
                                               {0, 2'000'000, 3'000'000, values[1]},
                                               {0, 5'000'000, 6'000'000, values[2]}};
  f.backend->gpu_metric_intervals(intervals, 2);
  f.flush(false);
  f.backend->gpu_metric_intervals(intervals + 2, 1);
  f.flush(true);

  const check::report report = checked(f.path);
  const std::uint64_t gpu = gpu_pid(0);
  // Perfetto's track names: "<name> <key>".
  CHECK(report.counter_tracks.at({gpu, "NVLink bytes sent (GB/s)"}) == 5);
  CHECK(report.counter_tracks.at({gpu, "NVLink bytes received (GB/s)"}) == 5);
  CHECK(report.counter_tracks.at({gpu, "SM activity (%)"}) == 5);
  CHECK(report.process_names.at(gpu) == "GPU 0: NVIDIA H200");
  const json doc = parse_file(f.path);
  // A rate per interval at its start; 0 where the series pauses and at its end.
  CHECK(counter_samples(doc, "NVLink bytes sent", gpu, "(GB/s)") ==
        std::vector<std::pair<double, double>>{{1000.0, 2.0}, {2000.0, 0.5}, {3000.0, 0.0},
                                               {5000.0, 3.0}, {6000.0, 0.0}});
  CHECK(counter_samples(doc, "SM activity", gpu, "(%)") ==
        std::vector<std::pair<double, double>>{{1000.0, 50.0}, {2000.0, 25.0}, {3000.0, 0.0},
                                               {5000.0, 100.0}, {6000.0, 0.0}});
  CHECK(doc.at("metadata").at("gpu-metric-intervals-written") == 3);
}

TEST_CASE("a kernel's slice carries its sampled link bytes: exact, shared, across drains in either order") {
  fixture f;
  f.backend->gpu_device(make_device(0, "NVIDIA H200"));
  f.backend->gpu_device(make_device(1, "NVIDIA H200"));
  f.backend->gpu_sampled_metrics(link_metric_set(0));
  // Drain 1: the intervals of GPU 0 before its kernels.
  const double values[][3] = {{4000, 100, 0}, {4000, 100, 0}, {9000, 0, 0}, {70, 0, 0}};
  const rt::gpu_metric_interval intervals[] = {{0, 0, 1'000'000, values[0]},
                                               {0, 1'000'000, 2'000'000, values[1]},
                                               {0, 2'000'000, 3'000'000, values[2]},
                                               {0, 3'000'000, 4'000'000, values[3]}};
  f.backend->gpu_metric_intervals(intervals, 3);
  f.flush(false);
  // Drain 2: "alone" spans intervals 0 and 1; "first" and "second" share
  // interval 2 (1 and 2 parts of overlap); "unsampled" ran on GPU 1.
  const rt::gpu_activity kernels[] = {
      kernel(0, 2'000'000, 0, 7, "alone", launched(1, 0, 0, nullptr)),
      kernel(2'000'000, 2'500'000, 0, 7, "first", launched(2, 0, 0, nullptr)),
      kernel(2'000'000, 3'000'000, 0, 8, "second", launched(3, 0, 0, nullptr)),
      kernel(0, 1'000'000, 1, 7, "unsampled", launched(4, 0, 0, nullptr))};
  f.backend->gpu_activities(kernels, std::size(kernels));
  f.flush(false);
  // Written by now: the intervals of drain 1 were settled at the end of drain 2.
  {
    const json doc = parse_file(f.path);
    CHECK(the_event(doc, "X", "alone").at("args").at("NVLink sent bytes") == 8000);
    CHECK_FALSE(the_event(doc, "X", "unsampled").at("args").contains("NVLink sent bytes"));
  }
  // Drain 3: a kernel, then the interval it ran in.
  const rt::gpu_activity late[] = {kernel(3'000'000, 3'500'000, 0, 7, "last", launched(5, 0, 0, nullptr))};
  f.backend->gpu_activities(late, 1);
  f.backend->gpu_metric_intervals(intervals + 3, 1);
  f.flush(true);

  checked(f.path);
  const json doc = parse_file(f.path);
  const json alone = the_event(doc, "X", "alone").at("args");
  CHECK(alone.at("NVLink sent bytes") == 8000);
  CHECK(alone.at("NVLink received bytes") == 200);
  CHECK(alone.at("PCIe read bytes") == 0);
  CHECK(alone.at("link bytes") == "exact");
  CHECK(alone.at("sampled intervals") == 2);
  const json first = the_event(doc, "X", "first").at("args");
  CHECK(first.at("NVLink sent bytes") == 3000);
  CHECK(first.at("link bytes") == "shared");
  const json second = the_event(doc, "X", "second").at("args");
  CHECK(second.at("NVLink sent bytes") == 6000);
  CHECK(second.at("link bytes") == "shared");
  CHECK(the_event(doc, "X", "last").at("args").at("NVLink sent bytes") == 70);
  CHECK_FALSE(the_event(doc, "X", "unsampled").at("args").contains("link bytes"));
  CHECK(doc.at("metadata").at("kernels-with-link-bytes") == 4);
  CHECK(doc.at("metadata").at("gpu-operations-written") == 5);
}
