// Unit tests of the runtime's internal pieces: the settings parser, the
// data-object interval map and the clock conversion.
#include <doctest/doctest.h>
#include <time.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "clock.hpp"
#include "data_object_map.hpp"
#include "ferret/runtime/backend.hpp"
#include "ferret/runtime/text.hpp"
#include "settings.hpp"

using namespace ferret::runtime::internal;

namespace {

std::map<std::string, std::string> g_environment;
const char* fake_getenv(const char* name) {
  const auto it = g_environment.find(name);
  return it == g_environment.end() ? nullptr : it->second.c_str();
}

settings parse(std::map<std::string, std::string> environment) {
  g_environment = std::move(environment);
  return parse_settings(fake_getenv);
}

ferret::runtime::data_object_info object(std::uint64_t id, std::uintptr_t address,
                                         std::size_t bytes) {
  return {id, "object " + std::to_string(id), address, bytes, ferret::runtime::memory_kind::host, -1};
}

}  // namespace

TEST_CASE("settings: defaults") {
  const settings s = parse({});
  CHECK(s.backends.empty());
  CHECK(s.output == "ferret-%e-%p");
  CHECK(s.buffer_bytes == 8u << 20);
  CHECK(s.flush_interval_ms == 200);
  CHECK(s.signal_wait_ms == 4000);
  CHECK(s.clock == clock_choice::automatic);
  CHECK(s.verbose == 1);
}

TEST_CASE("settings: backend lists") {
  auto s = parse({{"FERRET_BACKEND", " chrome , memory,chrome "}});
  CHECK(s.backends == std::vector<std::string>{"chrome", "memory"});
  s = parse({{"FERRET_BACKEND", "none"}});
  CHECK(s.backends.empty());
  // Any case; commas, blanks and semicolons separate, empty entries ignored;
  // the words that turn tracing off name nothing; a name that is no backend
  // is kept here, for the session's start to say so (registry.hpp) while the
  // others run.
  const std::vector<std::pair<const char*, std::vector<std::string>>> lists{
      {"chrome,", {"chrome"}},           {"Chrome", {"chrome"}},
      {"CHROME,,Tau", {"chrome", "tau"}}, {",", {}},
      {"../evil", {"../evil"}},          {"chrome;otf2", {"chrome", "otf2"}},
      {"chrome otf2", {"chrome", "otf2"}}, {"\tchrome ;\totf2 ", {"chrome", "otf2"}},
      {"none,chrome", {"chrome"}},       {"off", {}},
      {"0", {}},                         {"False", {}},
      {"no", {}},                        {"offf", {"offf"}}};
  for (const auto& list : lists) {
    CAPTURE(list.first);
    s = parse({{"FERRET_BACKEND", list.first}});
    CHECK(s.backends == list.second);
  }
}

TEST_CASE("settings: a malformed value is the default, with a notice naming the variable, what it accepts and the default") {
  // Pairs, not a map: a variable has several bad values, each must be tried.
  const std::vector<std::pair<std::string, std::string>> bad_values{
      {"FERRET_BUFFER_SIZE", "lots"},     {"FERRET_BUFFER_SIZE", "1.5M"},
      {"FERRET_FLUSH_INTERVAL", "-5"},    {"FERRET_SIGNAL_WAIT", "soon"},
      {"FERRET_FLUSH_INTERVAL", "0.5s"},  {"FERRET_FLUSH_INTERVAL", "1m"},
      {"FERRET_CLOCK", "rdtsc"},          {"FERRET_VERBOSE", "3"},
      {"FERRET_VERBOSE", "yes"},          {"FERRET_OUTPUT", "  "}};
  const settings defaults = parse({});
  for (const auto& [variable, value] : bad_values) {
    CAPTURE(variable);
    CAPTURE(value);
    const settings s = parse({{variable, value}});
    REQUIRE(s.notices.size() == 1);
    CHECK(s.notices[0].rfind(variable + "=", 0) == 0);
    CHECK(s.notices[0].find("expected") != std::string::npos);
    CHECK(s.notices[0].find("; using ") != std::string::npos);
    CHECK(s.output == defaults.output);
    CHECK(s.buffer_bytes == defaults.buffer_bytes);
    CHECK(s.flush_interval_ms == defaults.flush_interval_ms);
    CHECK(s.signal_wait_ms == defaults.signal_wait_ms);
    CHECK(s.clock == defaults.clock);
    CHECK(s.verbose == defaults.verbose);
  }
  CHECK(parse({{"FERRET_CLOCK", "fast"}}).notices[0] ==
        "FERRET_CLOCK='fast' is not valid (expected auto, tsc or monotonic_raw); using auto");
}

TEST_CASE("settings: durations in milliseconds, with ms or s") {
  CHECK(parse({{"FERRET_FLUSH_INTERVAL", "500ms"}}).flush_interval_ms == 500);
  CHECK(parse({{"FERRET_FLUSH_INTERVAL", "2s"}}).flush_interval_ms == 2000);
  CHECK(parse({{"FERRET_FLUSH_INTERVAL", "2 S"}}).flush_interval_ms == 2000);
  CHECK(parse({{"FERRET_SIGNAL_WAIT", "10s"}}).signal_wait_ms == 10000);
  CHECK(parse_milliseconds("0") == 0u);
  CHECK_FALSE(parse_milliseconds("ms"));
  CHECK_FALSE(parse_milliseconds("1h"));
  CHECK_FALSE(parse_milliseconds(""));
}

TEST_CASE("settings: the bounds themselves are accepted") {
  auto s = parse({{"FERRET_BUFFER_SIZE", "256K"},
                  {"FERRET_FLUSH_INTERVAL", "60000"},
                  {"FERRET_SIGNAL_WAIT", "60000"}});
  CHECK(s.buffer_bytes == 256u << 10);
  CHECK(s.flush_interval_ms == 60000);
  CHECK(s.signal_wait_ms == 60000);
  s = parse({{"FERRET_FLUSH_INTERVAL", "0"}, {"FERRET_SIGNAL_WAIT", "0"}});
  CHECK(s.flush_interval_ms == 0);
  CHECK(s.signal_wait_ms == 0);
}

TEST_CASE("settings: a well-formed value out of range is taken to the nearest bound, with a notice") {
  struct out_of_range {
    const char* variable;
    const char* value;
    std::uint64_t used;  // bytes or milliseconds
    const char* notice;
  };
  const out_of_range cases[] = {
      {"FERRET_BUFFER_SIZE", "1024G", std::uint64_t{4} << 30,
       "FERRET_BUFFER_SIZE='1024G' is more than the largest, 4G; using 4G"},
      {"FERRET_BUFFER_SIZE", "64K", 256u << 10, "FERRET_BUFFER_SIZE='64K' is less than the smallest, 256K; using 256K"},
      {"FERRET_BUFFER_SIZE", "262143", 256u << 10,  // one byte under the smallest
       "FERRET_BUFFER_SIZE='262143' is less than the smallest, 256K; using 256K"},
      {"FERRET_FLUSH_INTERVAL", "60001", 60000, "FERRET_FLUSH_INTERVAL='60001' is more than the largest, 60s; using 60s"},
      {"FERRET_FLUSH_INTERVAL", "99999999", 60000,
       "FERRET_FLUSH_INTERVAL='99999999' is more than the largest, 60s; using 60s"},
      {"FERRET_SIGNAL_WAIT", "61s", 60000, "FERRET_SIGNAL_WAIT='61s' is more than the largest, 60s; using 60s"}};
  for (const out_of_range& c : cases) {
    CAPTURE(c.value);
    const settings s = parse({{c.variable, c.value}});
    REQUIRE(s.notices.size() == 1);
    CHECK(s.notices[0] == c.notice);
    const std::string variable = c.variable;
    const std::uint64_t used = variable == "FERRET_BUFFER_SIZE"      ? s.buffer_bytes
                               : variable == "FERRET_FLUSH_INTERVAL" ? s.flush_interval_ms
                                                                     : s.signal_wait_ms;
    CHECK(used == c.used);
  }
  CHECK(parse({{"FERRET_BUFFER_SIZE", "4G"}}).notices.empty());
}

TEST_CASE("settings: sizes") {
  CHECK(parse_size("4096") == 4096u);
  CHECK(parse_size("256K") == 256u << 10);
  CHECK(parse_size("64M") == 64u << 20);
  CHECK(parse_size("64MiB") == 64u << 20);
  CHECK(parse_size("2g") == std::uint64_t{2} << 30);
  CHECK(parse_size("64 MiB") == 64u << 20);
  CHECK_FALSE(parse_size(""));
  CHECK_FALSE(parse_size("M"));
  CHECK_FALSE(parse_size("-1M"));
  CHECK_FALSE(parse_size("1.5M"));
  CHECK_FALSE(parse_size("99999999999999999999G"));
}

TEST_CASE("outputs: a backend's file and a directory backend's directory from FERRET_OUTPUT") {
  ferret::runtime::session_info session{};
  session.pid = 4242;
  session.executable = "app";
  const auto file = [&](const char* output, bool is_directory, std::string_view extension) {
    return ferret::runtime::output_file({&session, output, is_directory}, extension);
  };
  CHECK(file("run", false, ".json") == "run.json");
  CHECK(file("run.json", false, ".json") == "run.json");
  CHECK(file("run.JSON", false, ".json") == "run.JSON");  // the extension in any case
  CHECK(file("run.otf2", false, ".json") == "run.json");
  CHECK(file("out/", true, ".json") == "out/ferret-app-4242.json");
  // One directory for the OTF2 archive and the TAU profile, beside chrome's file.
  const auto directory = [&](const char* output, bool is_directory) {
    return ferret::runtime::output_directory({&session, output, is_directory});
  };
  CHECK(directory("run", false) == "run");
  CHECK(directory("run.otf2", false) == "run");
  CHECK(directory("run.json", false) == "run");
  CHECK(directory("results/run.JSON", false) == "results/run");
  CHECK(directory("run.v2", false) == "run");
  CHECK(directory("data.2024", false) == "data.2024");  // digits only: no extension
  CHECK(directory("v1.2/run", false) == "v1.2/run");
  CHECK(directory(".hidden", false) == ".hidden");
  CHECK(directory("run/", true) == "run/ferret-app-4242");
  session.executable = "a.out";
  CHECK(directory("out/", true) == "out/ferret-a.out-4242");
}

TEST_CASE("data objects: innermost containing object") {
  data_object_map map;
  REQUIRE(map.insert(object(1, 1000, 1000)) == data_object_map::insert_result::inserted);
  REQUIRE(map.insert(object(2, 1200, 100)) == data_object_map::insert_result::inserted);
  REQUIRE(map.insert(object(3, 1500, 200)) == data_object_map::insert_result::inserted);
  REQUIRE(map.insert(object(4, 1550, 10)) == data_object_map::insert_result::inserted);
  CHECK(map.find(999) == nullptr);
  CHECK(map.find(1000)->id == 1);
  CHECK(map.find(1250)->id == 2);
  CHECK(map.find(1300)->id == 1);  // after a child, back in the parent
  CHECK(map.find(1555)->id == 4);
  CHECK(map.find(1600)->id == 3);
  CHECK(map.find(1999)->id == 1);
  CHECK(map.find(2000) == nullptr);
  CHECK(map.size() == 4);
}

TEST_CASE("data objects: a container registered after its contents adopts them") {
  data_object_map map;
  REQUIRE(map.insert(object(1, 100, 10)) == data_object_map::insert_result::inserted);
  REQUIRE(map.insert(object(2, 200, 10)) == data_object_map::insert_result::inserted);
  REQUIRE(map.insert(object(3, 0, 1000)) == data_object_map::insert_result::inserted);
  CHECK(map.find(105)->id == 1);
  CHECK(map.find(150)->id == 3);
  REQUIRE(map.erase(1));
  CHECK(map.find(105)->id == 3);
  REQUIRE(map.erase(3));
  CHECK(map.find(150) == nullptr);
  CHECK(map.find(205)->id == 2);
}

TEST_CASE("data objects: equal ranges, the newer is inner") {
  data_object_map map;
  REQUIRE(map.insert(object(1, 0, 100)) == data_object_map::insert_result::inserted);
  REQUIRE(map.insert(object(2, 0, 100)) == data_object_map::insert_result::inserted);
  REQUIRE(map.insert(object(3, 0, 10)) == data_object_map::insert_result::inserted);
  CHECK(map.find(50)->id == 2);
  CHECK(map.find(5)->id == 3);
  REQUIRE(map.erase(2));
  CHECK(map.find(50)->id == 1);
  CHECK(map.find(5)->id == 3);
  const auto removed = map.erase_at(0);
  REQUIRE(removed);
  CHECK(removed->id == 3);  // the innermost object starting there
  CHECK(map.find(5)->id == 1);
}

TEST_CASE("data objects: partial overlaps and empty ranges are refused") {
  data_object_map map;
  REQUIRE(map.insert(object(1, 100, 100)) == data_object_map::insert_result::inserted);
  CHECK(map.insert(object(2, 150, 100)) == data_object_map::insert_result::partial_overlap);
  CHECK(map.insert(object(3, 50, 100)) == data_object_map::insert_result::partial_overlap);
  CHECK(map.insert(object(4, 100, 0)) == data_object_map::insert_result::empty_range);
  REQUIRE(map.insert(object(5, 120, 10)) == data_object_map::insert_result::inserted);
  // Contains 5 but cuts 1: still a partial overlap.
  CHECK(map.insert(object(6, 110, 200)) == data_object_map::insert_result::partial_overlap);
  CHECK(map.size() == 2);
  CHECK_FALSE(map.erase(2));
  CHECK_FALSE(map.erase_at(121));
}

TEST_CASE("clock: raw readings convert to CLOCK_MONOTONIC_RAW nanoseconds") {
  for (const bool hardware : {true, false}) {
    CAPTURE(hardware);
    host_clock clock;
    const std::int64_t origin = monotonic_raw_ns() - 5'000'000;  // "process start", 5 ms ago
    clock.start(hardware, origin);
    // Each raw reading is bracketed by two CLOCK_MONOTONIC_RAW readings, so a
    // preemption between them widens the bracket instead of failing the test.
    const std::int64_t first_before = monotonic_raw_ns();
    const std::uint64_t first_raw = clock.read();
    const std::int64_t first_after = monotonic_raw_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds{30});
    const std::int64_t second_before = monotonic_raw_ns();
    const std::uint64_t second_raw = clock.read();
    const std::int64_t second_after = monotonic_raw_ns();
    clock.add_sync_point();
    const std::int64_t converted = clock.to_ns(second_raw) - clock.to_ns(first_raw);
    // Within 0.1% plus a few microseconds of the clock's own sampling jitter.
    const std::int64_t tolerance = (second_after - first_before) / 1000 + 20'000;
    CHECK(converted >= second_before - first_after - tolerance);
    CHECK(converted <= second_after - first_before + tolerance);
    // Time zero is the origin, not the clock's start.
    CHECK(clock.to_ns(first_raw) >= 5'000'000);
    CHECK(clock.to_ns(first_raw) >= first_before - origin - 20'000);
    CHECK(clock.to_ns(first_raw) <= first_after - origin + 20'000);
    CHECK(clock.to_ns(second_raw) > clock.to_ns(first_raw));
    if (hardware && clock.source() != clock_source::monotonic_raw)
      CHECK(clock.ticks_per_second() > 1e6);
  }
}

TEST_CASE("clock: a value once given never changes, so times never go back across drains") {
  host_clock clock;
  clock.start(true, monotonic_raw_ns());
  if (clock.source() == clock_source::monotonic_raw) {
    MESSAGE("skipped: no hardware counter on this architecture, so no conversion to check");
    return;
  }
  clock.add_sync_point();
  // Each round converts raw values past the newest pair (extrapolated, as
  // drains more often than the pairs' spacing do) and then adds a pair, which
  // must leave those values as given and carry on from them.
  std::uint64_t previous_raw = 0;
  std::int64_t previous_ns = 0;
  for (int round = 0; round < 6; ++round) {
    CAPTURE(round);
    const auto past_pair_until = std::chrono::steady_clock::now() + std::chrono::milliseconds{11};
    std::vector<std::pair<std::uint64_t, std::int64_t>> given;
    while (std::chrono::steady_clock::now() < past_pair_until) {
      const std::uint64_t raw = clock.read();
      given.emplace_back(raw, clock.to_ns(raw));
      std::this_thread::sleep_for(std::chrono::microseconds{500});
    }
    // The drain's loop converts with the newest segment and reports how far.
    const std::uint64_t loop_raw = clock.read();
    const auto newest = clock.newest_segment();
    REQUIRE(newest.covers(loop_raw));
    given.emplace_back(loop_raw, newest.to_ns(loop_raw));
    clock.note_converted(loop_raw);
    clock.add_sync_point();
    for (const auto& [raw, ns] : given) CHECK(clock.to_ns(raw) == ns);
    // Monotonic from the last value given onwards, tick by tick.
    for (std::uint64_t step = 1; step <= 64; ++step) CHECK(clock.to_ns(loop_raw + step) >= clock.to_ns(loop_raw));
    CHECK(given.front().first > previous_raw);
    CHECK(given.front().second >= previous_ns);
    previous_raw = given.back().first;
    previous_ns = given.back().second;
  }
}

TEST_CASE("text: UTF-8 sequences, as RFC 3629 bounds them") {
  using ferret::runtime::utf8_sequence_length;
  CHECK(utf8_sequence_length("a", 0) == 1);
  CHECK(utf8_sequence_length("\xc3\xa4", 0) == 2);          // ä
  CHECK(utf8_sequence_length("\xe2\x80\xa8", 0) == 3);      // U+2028
  CHECK(utf8_sequence_length("\xf4\x8f\xbf\xbf", 0) == 4);  // U+10FFFF
  CHECK(utf8_sequence_length("\xc1\xbf", 0) == 0);          // overlong
  CHECK(utf8_sequence_length("\xe0\x9f\xbf", 0) == 0);      // overlong below U+0800
  CHECK(utf8_sequence_length("\xed\xa0\x80", 0) == 0);      // a surrogate
  CHECK(utf8_sequence_length("\xf4\x90\x80\x80", 0) == 0);  // above U+10FFFF
  CHECK(utf8_sequence_length("\xe2\x80", 0) == 0);          // cut by the end
  CHECK(utf8_sequence_length("\x80", 0) == 0);              // a stray continuation
  CHECK(utf8_sequence_length("a\xe2\x82\xac", 1) == 3);     // from an offset: €
  CHECK(ferret::runtime::utf8_code_point("\xe2\x82\xac") == 0x20AC);
  CHECK(ferret::runtime::valid_utf8("gr\xc3\xb6\xc3\x9f" "e"));
  CHECK(!ferret::runtime::valid_utf8("bad \xff"));
  std::string written;
  for (const std::uint32_t point : {0x41U, 0xE4U, 0x20ACU, 0x1F600U})
    ferret::runtime::append_utf8(written, point);
  CHECK(written == "A\xc3\xa4\xe2\x82\xac\xf0\x9f\x98\x80");
}

TEST_CASE("text: FNV-1a, 32 and 64 bits (the published test values)") {
  CHECK(ferret::runtime::fnv1a_32("") == 0x811c9dc5U);
  CHECK(ferret::runtime::fnv1a_32("a") == 0xe40c292cU);
  CHECK(ferret::runtime::fnv1a_64("") == 0xcbf29ce484222325ULL);
  CHECK(ferret::runtime::fnv1a_64("a") == 0xaf63dc4c8601ec8cULL);
}
