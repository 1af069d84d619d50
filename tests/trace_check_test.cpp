// Unit tests of the strict Chrome Trace Event Format checker
// (tools/ferret-trace-check). The main() comes from doctest_main.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "trace_check.hpp"

namespace tc = ferret::trace_check;

namespace {

// Wraps event objects (JSON text, comma separated) in a trace.
std::string trace(std::string_view events) {
  return "{\"traceEvents\":[" + std::string(events) + "]}";
}

// Number of error lines containing `needle`.
std::size_t errors_with(const tc::report& r, std::string_view needle) {
  std::size_t n = 0;
  for (const auto& e : r.errors) {
    if (e.find(needle) != std::string::npos) ++n;
  }
  return n;
}

std::string all_errors(const tc::report& r) {
  std::string s;
  for (const auto& e : r.errors) s += e + "\n";
  return s;
}

// Metadata naming pid 1 and its thread 2, used by several traces.
constexpr std::string_view names =
    R"({"ph":"M","pid":1,"name":"process_name","args":{"name":"proc"}},)"
    R"({"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"main"}})";

}  // namespace

TEST_CASE("a valid minimal trace passes") {
  const auto r = tc::check_text(trace(std::string(names) + R"(,
    {"ph":"X","pid":1,"tid":2,"ts":0,"dur":10,"name":"work","cat":"c","args":{"n":1}},
    {"ph":"i","pid":1,"tid":2,"ts":5,"name":"mark","s":"t"},
    {"ph":"C","pid":1,"ts":5,"name":"mem","args":{"bytes":1024,"ratio":0.5}})"));
  INFO(all_errors(r));
  CHECK(r.ok());
  CHECK(r.error_count == 0);
  CHECK(r.errors.empty());
  CHECK(r.event_count == 5);
}

TEST_CASE("the empty trace passes") {
  const auto r = tc::check_text(R"({"traceEvents":[]})");
  INFO(all_errors(r));
  CHECK(r.ok());
  CHECK(r.event_count == 0);
  CHECK(r.phase_counts.empty());
  CHECK(r.metadata.is_null());
}

TEST_CASE("the first bytes must be {\" or [{\"") {
  SUBCASE("leading space") {
    const auto r = tc::check_text(R"( {"traceEvents":[]})");
    CHECK_FALSE(r.ok());
    CHECK(errors_with(r, "leading whitespace") == 1);
  }
  SUBCASE("leading newline") {
    const auto r = tc::check_text("\n{\"traceEvents\":[]}");
    CHECK(errors_with(r, "leading whitespace") == 1);
  }
  SUBCASE("space after the brace") {
    const auto r = tc::check_text(R"({ "traceEvents":[]})");
    CHECK(errors_with(r, "must start with") == 1);
  }
  SUBCASE("empty bare array") {
    const auto r = tc::check_text("[]");
    CHECK(errors_with(r, "must start with") == 1);
  }
  SUBCASE("empty input") {
    const auto r = tc::check_text("");
    CHECK(r.error_count == 1);
    CHECK(errors_with(r, "empty input") == 1);
  }
}

TEST_CASE("a bare array of events is accepted") {
  const auto r = tc::check_text(
      R"([{"ph":"X","pid":1,"tid":2,"ts":0,"dur":1,"name":"a"},)"
      R"({"ph":"i","pid":1,"tid":2,"ts":0.5,"name":"b"}])");
  INFO(all_errors(r));
  CHECK(r.ok());
  CHECK(r.event_count == 2);
  CHECK(r.phase_counts.at("X") == 1);
  CHECK(r.metadata.is_null());
}

TEST_CASE("invalid UTF-8 inside a string is rejected") {
  const auto r = tc::check_text(
      trace("{\"ph\":\"i\",\"pid\":1,\"tid\":2,\"ts\":0,\"name\":\"bad\xff\"}"));
  CHECK_FALSE(r.ok());
  REQUIRE(r.errors.size() == 1);
  CHECK(errors_with(r, "JSON parse error at byte") == 1);
  CHECK(errors_with(r, "UTF-8") == 1);
  // The offending byte is escaped, so the error line itself is valid UTF-8.
  CHECK(errors_with(r, "\\xff") == 1);
  CHECK(r.errors[0].find('\xff') == std::string::npos);
}

TEST_CASE("a raw control character inside a string is rejected") {
  SUBCASE("SOH") {
    const auto r = tc::check_text(
        trace("{\"ph\":\"i\",\"pid\":1,\"tid\":2,\"ts\":0,\"name\":\"a\x01\"}"));
    CHECK(r.error_count == 1);
    CHECK(errors_with(r, "control character") == 1);
  }
  SUBCASE("unescaped newline") {
    const auto r = tc::check_text(
        trace("{\"ph\":\"i\",\"pid\":1,\"tid\":2,\"ts\":0,\"name\":\"a\nb\"}"));
    CHECK(errors_with(r, "control character") == 1);
  }
  SUBCASE("escaped control characters are fine") {
    const auto r = tc::check_text(
        trace(R"({"ph":"i","pid":1,"tid":2,"ts":0,"name":"a\nb\u0001"})"));
    INFO(all_errors(r));
    CHECK(r.ok());
  }
}

TEST_CASE("other JSON and top-level errors") {
  CHECK(errors_with(tc::check_text(R"({"traceEvents":[],})"), "parse error") == 1);
  CHECK(errors_with(tc::check_text(R"({"traceEvents":[]} x)"), "parse error") == 1);
  CHECK(errors_with(tc::check_text(R"({"traceEvents":[1e999]})"), "parse error") == 1);
  CHECK(errors_with(tc::check_text(R"({"other":1})"), "no \"traceEvents\"") == 1);
  CHECK(errors_with(tc::check_text(R"({"traceEvents":{}})"),
                    "\"traceEvents\" must be an array") == 1);
  CHECK(errors_with(tc::check_text(R"({"traceEvents":[],"metadata":[]})"),
                    "\"metadata\" must be an object") == 1);
  CHECK(errors_with(tc::check_text(R"({"traceEvents":[3]})"), "not a JSON object") == 1);
  // Unknown top-level keys are allowed.
  CHECK(tc::check_text(R"({"traceEvents":[],"ferret":{"x":[1]}})").ok());
}

TEST_CASE("unknown phases are errors") {
  const auto r = tc::check_text(trace(
      R"({"ph":"S","pid":1,"tid":2,"ts":0,"name":"a"},)"
      R"({"ph":"XX","pid":1,"tid":2,"ts":0,"dur":1,"name":"b"},)"
      R"({"pid":1,"tid":2,"ts":0,"name":"c"})"));
  CHECK(r.error_count == 3);
  CHECK(errors_with(r, "unknown phase \"S\"") == 1);
  CHECK(errors_with(r, "unknown phase \"XX\"") == 1);
  CHECK(errors_with(r, "missing \"ph\"") == 1);
  CHECK(r.phase_counts.at("S") == 1);
}

TEST_CASE("tid 0 and missing or malformed ids") {
  SUBCASE("tid 0") {
    const auto r = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":0,"ts":0,"dur":1,"name":"a"})"));
    CHECK(r.error_count == 1);
    CHECK(errors_with(r, "event 0 (pid 1 tid 0, ts 0): tid 0") == 1);
  }
  SUBCASE("missing tid on a thread event") {
    const auto r =
        tc::check_text(trace(R"({"ph":"B","pid":1,"ts":0,"name":"a"},)"
                             R"({"ph":"E","pid":1,"ts":1})"));
    CHECK(errors_with(r, "missing \"tid\"") == 2);
  }
  SUBCASE("tid is optional on counters and process-scoped instants") {
    const auto r = tc::check_text(
        trace(R"({"ph":"C","pid":1,"ts":0,"name":"a","args":{"v":1}},)"
              R"({"ph":"i","pid":1,"ts":0,"name":"b","s":"p"},)"
              R"({"ph":"i","pid":1,"ts":0,"name":"c","s":"g"})"));
    INFO(all_errors(r));
    CHECK(r.ok());
  }
  SUBCASE("pid missing, negative or too large") {
    const auto r = tc::check_text(
        trace(R"({"ph":"i","tid":2,"ts":0,"name":"a"},)"
              R"({"ph":"i","pid":-1,"tid":2,"ts":0,"name":"a"},)"
              R"({"ph":"i","pid":1.5,"tid":2,"ts":0,"name":"a"},)"
              R"({"ph":"i","pid":1,"tid":4294967296,"ts":0,"name":"a"})"));
    CHECK(r.error_count == 4);
    CHECK(errors_with(r, "missing \"pid\"") == 1);
    CHECK(errors_with(r, "\"pid\" must be an unsigned integer") == 2);
    CHECK(errors_with(r, "does not fit in 32 bits") == 1);
  }
}

TEST_CASE("ts is required except on M, and must be a finite number >= 0") {
  const auto r = tc::check_text(trace(std::string(names) + R"(,
    {"ph":"i","pid":1,"tid":2,"name":"no ts"},
    {"ph":"i","pid":1,"tid":2,"ts":"5","name":"string ts"},
    {"ph":"i","pid":1,"tid":2,"ts":-1,"name":"negative ts"})"));
  CHECK(r.error_count == 3);
  CHECK(errors_with(r, "event 2 (pid 1 tid 2): missing \"ts\"") == 1);
  CHECK(errors_with(r, "\"ts\" must be a number") == 1);
  CHECK(errors_with(r, "\"ts\" is negative") == 1);
}

TEST_CASE("X needs a non-negative dur") {
  const auto r = tc::check_text(
      trace(R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":-1,"name":"a"},)"
            R"({"ph":"X","pid":1,"tid":2,"ts":0,"name":"b"},)"
            R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":0,"name":"c"})"));
  CHECK(r.error_count == 2);
  CHECK(errors_with(r, "\"dur\" is negative (-1)") == 1);
  CHECK(errors_with(r, "without \"dur\"") == 1);
}

TEST_CASE("X events on one thread must nest") {
  SUBCASE("partial overlap is an error naming both events") {
    const auto r = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":10,"name":"parent"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":5,"dur":10,"name":"straddler"})"));
    REQUIRE(r.error_count == 1);
    CHECK(errors_with(r, "event 1 (pid 1 tid 2, ts 5): X \"straddler\" [5, 15] "
                         "partially overlaps X \"parent\" (event 0, [0, 10])") == 1);
  }
  SUBCASE("proper nesting passes in any file order, but the parent's first among equal ts") {
    const auto r = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":2,"ts":3,"dur":1,"name":"grandchild"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":2,"dur":3,"name":"child"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":10,"name":"parent"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":2,"name":"starts with parent"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":5,"dur":5,"name":"ends with parent"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":2,"name":"same span, inner"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":0,"name":"empty, inner"})"));
    INFO(all_errors(r));
    CHECK(r.ok());
  }
  SUBCASE("a child written before the parent it begins with is an error") {
    // Perfetto nests events of equal ts in file order (older importers always,
    // the current one when durations are equal too): the child is taken
    // first, and the parent, which ends later, "partially overlaps" it.
    const auto r = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":2,"ts":1,"dur":0.01,"name":"child"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":5,"dur":1,"name":"later child"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":1,"dur":10,"name":"parent"})"));
    REQUIRE(r.error_count == 1);
    CHECK(errors_with(r, "event 2 (pid 1 tid 2, ts 1): X \"parent\" [1, 11] begins with X "
                         "\"child\" (event 0, [1, 1.01]) and encloses it, but comes later in "
                         "the file") == 1);
  }
  SUBCASE("siblings sharing a boundary pass") {
    const auto r = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":10,"name":"a"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":10,"dur":10,"name":"b"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":20,"dur":0,"name":"c"})"));
    INFO(all_errors(r));
    CHECK(r.ok());
  }
  SUBCASE("decimal rounding is tolerated, real overlaps are not") {
    // 0.1 + 0.2 > 0.3 in doubles, but not in the ns Perfetto uses.
    const auto ok = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":0.3,"name":"a"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":0.1,"dur":0.2,"name":"b"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":1,"dur":1,"name":"c"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":1.5,"dur":0.501,"name":"1 ns over"})"));
    INFO(all_errors(ok));
    CHECK(ok.ok());
    const auto bad = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":2,"ts":1,"dur":1,"name":"c"},)"
              R"({"ph":"X","pid":1,"tid":2,"ts":1.5,"dur":0.502,"name":"2 ns over"})"));
    CHECK(errors_with(bad, "partially overlaps") == 1);
  }
  SUBCASE("different threads do not interact") {
    const auto r = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":10,"name":"a"},)"
              R"({"ph":"X","pid":1,"tid":3,"ts":5,"dur":10,"name":"b"})"));
    CHECK(r.ok());
  }
  SUBCASE("more than 512 levels are an error") {
    const auto nested = [](int levels) {
      std::string events;
      for (int i = 0; i < levels; ++i) {
        if (i != 0) events += ",";
        events += R"({"ph":"X","pid":1,"tid":2,"ts":)" + std::to_string(i) +
                  R"(,"dur":)" + std::to_string(2000 - 2 * i) + R"(,"name":"n"})";
      }
      return trace(events);
    };
    CHECK(tc::check_text(nested(512)).ok());
    const auto r = tc::check_text(nested(513));
    CHECK(r.error_count == 1);
    CHECK(errors_with(r, "deeper than 512") == 1);
    // Declared in the metadata with the exact count: said, not silent.
    const auto with_metadata = [&](int levels, const std::string& count) {
      std::string text = nested(levels);
      text.insert(text.size() - 1, R"(,"metadata":{"regions-deeper-than-perfetto-shows":)" +
                                       count + "}");
      return text;
    };
    CHECK(tc::check_text(with_metadata(515, "3")).ok());
    const auto wrong = tc::check_text(with_metadata(515, "2"));
    CHECK(errors_with(wrong, "is 2, but 3 slices are nested deeper") == 1);
    CHECK(errors_with(wrong, "deeper than 512 levels; Perfetto") == 3);
  }
}

TEST_CASE("B/E pairing") {
  SUBCASE("matched and nested pairs pass") {
    const auto r = tc::check_text(
        trace(R"({"ph":"B","pid":1,"tid":2,"ts":0,"name":"outer"},)"
              R"({"ph":"B","pid":1,"tid":2,"ts":1,"name":"inner"},)"
              R"({"ph":"E","pid":1,"tid":2,"ts":2},)"
              R"({"ph":"E","pid":1,"tid":2,"ts":3,"name":"outer"},)"
              R"({"ph":"B","pid":1,"tid":2,"ts":3,"name":"next"},)"
              R"({"ph":"E","pid":1,"tid":2,"ts":4})"));
    INFO(all_errors(r));
    CHECK(r.ok());
  }
  SUBCASE("an E sorts before a B with the same ts") {
    // Perfetto orders E first among events with equal ts, so a zero-length
    // B/E pair never matches: the E finds nothing open and the B stays open.
    const auto r = tc::check_text(
        trace(R"({"ph":"B","pid":1,"tid":2,"ts":5,"name":"zero"},)"
              R"({"ph":"E","pid":1,"tid":2,"ts":5})"));
    CHECK(r.error_count == 2);
    CHECK(errors_with(r, "E has no matching open B") == 1);
    CHECK(errors_with(r, "B \"zero\" did not end") == 1);
  }
  SUBCASE("unmatched E") {
    const auto r = tc::check_text(trace(
        R"({"ph":"E","pid":1,"tid":2,"ts":2})"));
    CHECK(r.error_count == 1);
    CHECK(errors_with(r, "E has no matching open B") == 1);
  }
  SUBCASE("E whose name matches no open B") {
    const auto r = tc::check_text(
        trace(R"({"ph":"B","pid":1,"tid":2,"ts":0,"name":"a"},)"
              R"({"ph":"E","pid":1,"tid":2,"ts":1,"name":"b"})"));
    CHECK(errors_with(r, "E \"b\" has no matching open B") == 1);
    CHECK(errors_with(r, "B \"a\" did not end") == 1);
  }
  SUBCASE("unclosed B") {
    const auto r = tc::check_text(
        trace(R"({"ph":"B","pid":1,"tid":2,"ts":0,"name":"open"},)"
              R"({"ph":"B","pid":1,"tid":3,"ts":0,"name":"closed"},)"
              R"({"ph":"E","pid":1,"tid":3,"ts":1})"));
    CHECK(r.error_count == 1);
    CHECK(errors_with(r, "event 0 (pid 1 tid 2, ts 0): B \"open\" did not end") == 1);
  }
}

TEST_CASE("counter tracks: one per name, id and args key; threads do not share one") {
  SUBCASE("samples of two threads under one name and no id share a track: an error") {
    const auto r = tc::check_text(
        trace(R"({"ph":"C","pid":1,"tid":2,"ts":0,"name":"depth","args":{"value":1}},)"
              R"({"ph":"C","pid":1,"tid":2,"ts":1,"name":"depth","args":{"value":2}},)"
              R"({"ph":"C","pid":1,"tid":3,"ts":2,"name":"depth","args":{"value":9}},)"
              R"({"ph":"C","pid":1,"tid":3,"ts":3,"name":"depth","args":{"value":8}})"));
    CHECK(r.error_count == 1);
    CHECK(errors_with(r, "counter \"depth\" has samples of threads 2 and 3 on one track") == 1);
    using track = std::pair<std::uint64_t, std::string>;
    CHECK(r.counter_tracks == std::map<track, std::size_t>{{{1, "depth value"}, 4}});
  }
  SUBCASE("an id per thread gives each thread's series its own track") {
    const auto r = tc::check_text(
        trace(R"({"ph":"C","pid":1,"tid":2,"id":"2","ts":0,"name":"depth","args":{"value":1}},)"
              R"({"ph":"C","pid":1,"tid":3,"id":"3","ts":2,"name":"depth","args":{"value":9}},)"
              R"({"ph":"C","pid":1,"tid":3,"id":"3","ts":3,"name":"depth","args":{"value":8}},)"
              R"({"ph":"C","pid":1,"ts":4,"name":"total","args":{"a":1,"b":2}})"));
    INFO(all_errors(r));
    CHECK(r.ok());
    using track = std::pair<std::uint64_t, std::string>;
    CHECK(r.counter_tracks == std::map<track, std::size_t>{{{1, "depth id: 2 value"}, 1},
                                                           {{1, "depth id: 3 value"}, 2},
                                                           {{1, "total a"}, 1},
                                                           {{1, "total b"}, 1}});
  }
}

TEST_CASE("counters need numeric args") {
  SUBCASE("string value") {
    const auto r = tc::check_text(
        trace(R"({"ph":"C","pid":1,"ts":0,"name":"c","args":{"v":"3"}})"));
    CHECK(r.error_count == 1);
    CHECK(errors_with(r, "args.v must be a finite number, got \"3\"") == 1);
  }
  SUBCASE("null and bool values") {
    const auto r = tc::check_text(
        trace(R"({"ph":"C","pid":1,"ts":0,"name":"c","args":{"a":null,"b":true}})"));
    CHECK(r.error_count == 2);
  }
  SUBCASE("no args") {
    const auto r = tc::check_text(trace(R"({"ph":"C","pid":1,"ts":0,"name":"c"})"));
    CHECK(r.error_count == 1);
    CHECK(errors_with(r, "without \"args\"") == 1);
  }
  SUBCASE("empty args") {
    const auto r =
        tc::check_text(trace(R"({"ph":"C","pid":1,"ts":0,"name":"c","args":{}})"));
    CHECK(errors_with(r, "empty \"args\"") == 1);
  }
}

TEST_CASE("async b/e") {
  SUBCASE("matched pair passes") {
    const auto r = tc::check_text(
        trace(R"({"ph":"b","pid":1,"ts":0,"name":"req","cat":"net","id":7},)"
              R"({"ph":"n","pid":1,"ts":1,"name":"step","cat":"net","id":7},)"
              R"({"ph":"e","pid":1,"ts":2,"name":"req","cat":"net","id":7},)"
              R"({"ph":"b","pid":1,"ts":0,"name":"req","cat":"net","id2":{"local":"0x1"}},)"
              R"({"ph":"e","pid":1,"ts":2,"name":"req","cat":"net","id2":{"local":"0x1"}})"));
    INFO(all_errors(r));
    CHECK(r.ok());
  }
  SUBCASE("b without e") {
    const auto r = tc::check_text(
        trace(R"({"ph":"b","pid":1,"ts":0,"name":"req","cat":"net","id":7})"));
    CHECK(r.error_count == 1);
    CHECK(errors_with(r, "b \"req\" (cat \"net\", id 7) did not end") == 1);
  }
  SUBCASE("e without b") {
    const auto r = tc::check_text(
        trace(R"({"ph":"e","pid":1,"ts":2,"name":"req","cat":"net","id":7})"));
    CHECK(r.error_count == 1);
    CHECK(errors_with(r, "has no open b") == 1);
  }
  SUBCASE("e before its b") {
    const auto r = tc::check_text(
        trace(R"({"ph":"b","pid":1,"ts":5,"name":"req","cat":"net","id":7},)"
              R"({"ph":"e","pid":1,"ts":2,"name":"req","cat":"net","id":7})"));
    CHECK(errors_with(r, "its b (event 0) comes later") == 1);
  }
  SUBCASE("an e named differently from its b leaves the b open") {
    // Perfetto keys the track by cat + id but matches the end by name too.
    const auto r = tc::check_text(
        trace(R"({"ph":"b","pid":1,"ts":0,"name":"req","cat":"net","id":7},)"
              R"({"ph":"e","pid":1,"ts":2,"name":"other","cat":"net","id":7})"));
    CHECK(r.error_count == 2);
    CHECK(errors_with(r, "matches e to b by name too") == 1);
    CHECK(errors_with(r, "b \"req\" (cat \"net\", id 7) did not end") == 1);
  }
  SUBCASE("the key is cat + id") {
    const auto r = tc::check_text(
        trace(R"({"ph":"b","pid":1,"ts":0,"name":"req","cat":"net","id":7},)"
              R"({"ph":"e","pid":1,"ts":2,"name":"req","cat":"disk","id":7})"));
    CHECK(r.error_count == 2);
  }
  SUBCASE("missing id and cat") {
    const auto r = tc::check_text(trace(R"({"ph":"n","pid":1,"ts":0,"name":"x"})"));
    CHECK(errors_with(r, "without \"id\" or \"id2\"") == 1);
    CHECK(errors_with(r, "without \"cat\"") == 1);
  }
}

TEST_CASE("flows") {
  SUBCASE("s/t/f inside slices pass") {
    const auto r = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":10,"name":"a"},)"
              R"({"ph":"X","pid":1,"tid":3,"ts":20,"dur":10,"name":"b"},)"
              R"({"ph":"s","pid":1,"tid":2,"ts":5,"name":"f","cat":"c","id":1},)"
              R"({"ph":"t","pid":1,"tid":3,"ts":22,"name":"f","cat":"c","id":"0x1"},)"
              R"({"ph":"f","pid":1,"tid":3,"ts":25,"name":"f","cat":"c","id":1,"bp":"e"})"));
    INFO(all_errors(r));
    CHECK(r.ok());
  }
  SUBCASE("t without s") {
    const auto r = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":10,"name":"a"},)"
              R"({"ph":"t","pid":1,"tid":2,"ts":5,"name":"f","cat":"c","id":1})"));
    CHECK(r.error_count == 1);
    CHECK(errors_with(r, "flow t \"f\" (cat \"c\", id 1) has no earlier start") == 1);
  }
  SUBCASE("the key includes the name") {
    const auto r = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":10,"name":"a"},)"
              R"({"ph":"s","pid":1,"tid":2,"ts":1,"name":"f","cat":"c","id":1},)"
              R"({"ph":"f","pid":1,"tid":2,"ts":5,"name":"g","cat":"c","id":1,"bp":"e"})"));
    CHECK(errors_with(r, "has no earlier start") == 1);
  }
  SUBCASE("reused flow id") {
    const auto r = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":10,"name":"a"},)"
              R"({"ph":"s","pid":1,"tid":2,"ts":1,"name":"f","id":1},)"
              R"({"ph":"s","pid":1,"tid":2,"ts":2,"name":"f","id":1})"));
    CHECK(errors_with(r, "reuses the key") == 1);
  }
  SUBCASE("s outside any slice") {
    const auto r = tc::check_text(
        trace(R"({"ph":"s","pid":1,"tid":2,"ts":1,"name":"f","id":1})"));
    CHECK(errors_with(r, "no enclosing slice") == 1);
  }
  SUBCASE("f without bp:e needs a next slice on its thread") {
    const std::string start =
        R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":10,"name":"a"},)"
        R"({"ph":"s","pid":1,"tid":2,"ts":5,"name":"f","id":1},)"
        R"({"ph":"f","pid":1,"tid":3,"ts":20,"name":"f","id":1})";
    const auto bad = tc::check_text(trace(start));
    CHECK(bad.error_count == 1);
    CHECK(errors_with(bad, "binds to the next slice") == 1);
    const auto ok = tc::check_text(
        trace(start + R"(,{"ph":"X","pid":1,"tid":3,"ts":25,"dur":1,"name":"b"})"));
    INFO(all_errors(ok));
    CHECK(ok.ok());
  }
  SUBCASE("non-hex string id") {
    const auto r = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":10,"name":"a"},)"
              R"({"ph":"s","pid":1,"tid":2,"ts":1,"name":"f","id":"zz"})"));
    CHECK(errors_with(r, "hexadecimal") == 1);
  }
  SUBCASE("v2 flows with bind_id") {
    const auto ok = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":1,"name":"a","bind_id":5,"flow_out":true},)"
              R"({"ph":"X","pid":1,"tid":3,"ts":2,"dur":1,"name":"b","bind_id":5,"flow_in":true})"));
    INFO(all_errors(ok));
    CHECK(ok.ok());
    const auto bad = tc::check_text(
        trace(R"({"ph":"X","pid":1,"tid":3,"ts":2,"dur":1,"name":"b","bind_id":5,"flow_in":true})"));
    CHECK(errors_with(bad, "has no earlier start") == 1);
  }
}

TEST_CASE("metadata events") {
  SUBCASE("unknown M name") {
    const auto r = tc::check_text(
        trace(R"({"ph":"M","pid":1,"name":"process_uptime","args":{"v":1}})"));
    CHECK(r.error_count == 1);
    CHECK(errors_with(r, "unknown metadata name \"process_uptime\"") == 1);
  }
  SUBCASE("missing or mistyped args") {
    const auto r = tc::check_text(
        trace(R"({"ph":"M","pid":1,"tid":2,"name":"thread_name"},)"
              R"({"ph":"M","pid":1,"name":"process_name","args":{"name":7}},)"
              R"({"ph":"M","pid":1,"name":"process_sort_index","args":{"sort_index":"1"}},)"
              R"({"ph":"M","pid":1,"tid":2,"name":"thread_sort_index","args":{"sort_index":-3}},)"
              R"({"ph":"M","pid":1,"name":"thread_name","args":{"name":"x"}})"));
    CHECK(r.error_count == 4);
    CHECK(errors_with(r, "M thread_name needs a non-empty string args.name") == 1);
    CHECK(errors_with(r, "M process_name needs") == 1);
    CHECK(errors_with(r, "M process_sort_index needs an integer") == 1);
    CHECK(errors_with(r, "missing \"tid\"") == 1);
  }
}

TEST_CASE("other event-level rules") {
  const auto r = tc::check_text(trace(
      R"({"ph":"i","pid":1,"tid":2,"ts":0,"name":"a","s":"x"},)"
      R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":1,"name":"b","args":[1]},)"
      R"({"ph":"X","pid":1,"tid":2,"ts":2,"dur":1,"name":""},)"
      R"({"ph":"B","pid":1,"tid":2,"ts":4},)"
      R"({"ph":"E","pid":1,"tid":2,"ts":5})"));
  CHECK(r.error_count == 4);
  CHECK(errors_with(r, "instant scope") == 1);
  CHECK(errors_with(r, "\"args\" must be an object") == 1);
  CHECK(errors_with(r, "empty \"name\"") == 1);
  CHECK(errors_with(r, "B event without \"name\"") == 1);
}

TEST_CASE("statistics are filled") {
  const auto r = tc::check_text(
      R"({"traceEvents":[)" + std::string(names) + R"(,)"
      R"({"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"worker"}},)"
      R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":10,"name":"work"},)"
      R"({"ph":"X","pid":1,"tid":3,"ts":0,"dur":10,"name":"work"},)"
      R"({"ph":"i","pid":1,"tid":2,"ts":1,"name":"mark"},)"
      R"({"ph":"i","pid":1,"ts":1,"name":"global","s":"g"},)"
      R"({"ph":"B","pid":1,"tid":4,"ts":0,"name":"scope"},)"
      R"({"ph":"E","pid":1,"tid":4,"ts":1},)"
      R"({"ph":"C","pid":1,"ts":0,"name":"mem","args":{"v":1}},)"
      R"({"ph":"b","pid":1,"ts":0,"name":"req","cat":"c","id":1},)"
      R"({"ph":"e","pid":1,"ts":1,"name":"req","cat":"c","id":1}],)"
      R"("metadata":{"ferret-version":"0.1","clock":"steady"},"displayTimeUnit":"ns"})");
  INFO(all_errors(r));
  REQUIRE(r.ok());
  CHECK(r.event_count == 12);
  CHECK(r.phase_counts == std::map<std::string, std::size_t>{
                              {"B", 1}, {"C", 1}, {"E", 1}, {"M", 3}, {"X", 2},
                              {"b", 1}, {"e", 1}, {"i", 2}});
  CHECK(r.name_counts == std::map<std::string, std::size_t>{
                             {"work", 2}, {"mark", 1}, {"global", 1},
                             {"mem", 1}, {"req", 1}});
  CHECK(r.threads == std::set<std::pair<std::uint64_t, std::uint64_t>>{
                         {1, 2}, {1, 3}, {1, 4}});
  CHECK(r.thread_names.size() == 2);
  CHECK(r.thread_names.at({1, 2}) == "main");
  CHECK(r.thread_names.at({1, 3}) == "worker");
  CHECK(r.process_names == std::map<std::uint64_t, std::string>{{1, "proc"}});
  REQUIRE(r.metadata.is_object());
  CHECK(r.metadata.at("ferret-version") == "0.1");
  CHECK(r.metadata.size() == 2);
}

TEST_CASE("errors are capped at 100 lines but all are counted") {
  std::string events;
  for (int i = 0; i < 150; ++i) {
    if (i != 0) events += ",";
    events += R"({"ph":"Q","pid":1,"tid":2,"ts":0,"name":"q"})";
  }
  const auto r = tc::check_text(trace(events));
  CHECK(r.error_count == 150);
  CHECK(r.errors.size() == tc::max_stored_errors);
  CHECK(r.event_count == 150);
}

TEST_CASE("check_file reads files and throws on unreadable ones") {
  CHECK_THROWS_AS(tc::check_file("/nonexistent/ferret/trace.json"), std::runtime_error);
  const std::string path = "trace_check_test.tmp.json";
  {
    std::ofstream out(path, std::ios::binary);
    out << trace(R"({"ph":"X","pid":1,"tid":2,"ts":0,"dur":1,"name":"a"})");
  }
  const auto r = tc::check_file(path);
  std::remove(path.c_str());
  INFO(all_errors(r));
  CHECK(r.ok());
  CHECK(r.event_count == 1);
}
