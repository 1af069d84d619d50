// The runtime delivers nested region records (see record in ferret/runtime/backend.hpp):
// ends matched to begins by name, unmatched ends left out, the regions an outer
// end leaves open ended with it, those open at a thread's exit ended then, and
// regions past max_open_regions left out — each counted in the runtime metadata.
// In process, with FERRET_BACKEND=memory (see CMakeLists.txt).
#include <doctest/doctest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "ferret/ferret.hpp"
#include "ferret/runtime/backend.hpp"
#include "support/memory_backend.hpp"

using ferret::runtime::record_kind;
using ferret::runtime::region_close;
using ferret::testing::captured_record;
using ferret::testing::memory_backend;

namespace {

struct other_domain {
  static constexpr const char* name = "other";
};

std::uint64_t this_tid() { return static_cast<std::uint64_t>(syscall(SYS_gettid)); }

// Drains; returns (then forgets) the records of thread `tid`.
std::vector<captured_record> take_records(std::uint64_t tid = this_tid()) {
  ferret::flush();
  auto captured = memory_backend::snapshot();
  memory_backend::clear();
  return captured.threads[tid].records;
}

// A count from the runtime metadata of the latest flush.
std::int64_t runtime_count(const char* key) {
  ferret::flush();
  for (const auto& [name, value] : memory_backend::snapshot().runtime_metadata)
    if (name == key) return std::get<std::int64_t>(value);
  FAIL("no runtime metadata " << key);
  return -1;
}

struct expected_record {
  record_kind kind;
  std::string name;
  region_close closed = region_close::by_program;
};

void check_records(const std::vector<captured_record>& records,
                   const std::vector<expected_record>& expected) {
  REQUIRE(records.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(records[i].kind == expected[i].kind);
    CHECK(records[i].name == expected[i].name);
    CHECK(records[i].closed == expected[i].closed);
    if (i > 0) CHECK(records[i].time_ns >= records[i - 1].time_ns);
  }
}

}  // namespace

TEST_CASE("an outer region's end ends the regions opened inside it; unmatched ends are left out") {
  take_records();
  const std::int64_t unmatched = runtime_count("unmatched-region-ends");
  const std::int64_t unbalanced = runtime_count("unbalanced-region-ends");
  ferret::begin("a");
  ferret::begin("b");
  ferret::begin("c");
  ferret::end("a");  // ends c and b first
  ferret::end("z");  // nothing of that name open
  ferret::end("a");  // already ended
  const auto records = take_records();
  check_records(records, {{record_kind::region_begin, "a"},
                          {record_kind::region_begin, "b"},
                          {record_kind::region_begin, "c"},
                          {record_kind::region_end, "c", region_close::by_outer_end},
                          {record_kind::region_end, "b", region_close::by_outer_end},
                          {record_kind::region_end, "a"}});
  CHECK(records[3].time_ns == records[5].time_ns);  // at a's end
  CHECK(runtime_count("unmatched-region-ends") == unmatched + 2);
  CHECK(runtime_count("unbalanced-region-ends") == unbalanced + 1);
}

TEST_CASE("an end matches its begin by name and domain, whichever site wrote it") {
  take_records();
  const std::int64_t unmatched = runtime_count("unmatched-region-ends");
  // Two sites of one region: a run-time name and a literal with the same text.
  const ferret::name registered = ferret::register_name(std::string{"phase"});
  ferret::begin(registered);
  ferret::begin("step");
  ferret::end("step");
  ferret::end("phase");
  // Another domain's "phase" is another region: unmatched.
  ferret::begin("phase");
  ferret::end<other_domain>("phase");
  ferret::end("phase");
  check_records(take_records(), {{record_kind::region_begin, "phase"},
                                 {record_kind::region_begin, "step"},
                                 {record_kind::region_end, "step"},
                                 {record_kind::region_end, "phase"},
                                 {record_kind::region_begin, "phase"},
                                 {record_kind::region_end, "phase"}});
  CHECK(runtime_count("unmatched-region-ends") == unmatched + 1);
}

TEST_CASE("regions open when their thread exits end at its exit, marked closed at exit") {
  take_records();
  const std::int64_t unfinished = runtime_count("unfinished-regions");
  std::uint64_t tid = 0;
  std::thread worker{[&tid] {
    tid = this_tid();
    ferret::begin("outer");
    ferret::begin("inner");
    ferret::mark("last");
  }};
  worker.join();
  const auto records = take_records(tid);
  check_records(records, {{record_kind::region_begin, "outer"},
                          {record_kind::region_begin, "inner"},
                          {record_kind::mark, "last"},
                          {record_kind::region_end, "inner", region_close::at_exit},
                          {record_kind::region_end, "outer", region_close::at_exit}});
  CHECK(records[3].time_ns == records[4].time_ns);
  CHECK(runtime_count("unfinished-regions") == unfinished + 2);
}

TEST_CASE("regions nested deeper than max_open_regions are left out with their ends, and counted") {
  take_records();
  constexpr std::uint32_t limit = ferret::runtime::max_open_regions;
  constexpr std::uint32_t beyond = 5;
  const std::int64_t dropped = runtime_count("events-dropped-nested-too-deep");
  for (std::uint32_t i = 0; i < limit + beyond; ++i) ferret::begin("deep");
  ferret::mark("deepest");
  for (std::uint32_t i = 0; i < limit + beyond; ++i) ferret::end("deep");
  const auto records = take_records();
  REQUIRE(records.size() == 2 * std::size_t{limit} + 1);
  CHECK(std::count_if(records.begin(), records.begin() + limit, [](const captured_record& r) {
          return r.kind == record_kind::region_begin;
        }) == limit);
  CHECK(records[limit].kind == record_kind::mark);
  CHECK(std::count_if(records.begin() + limit + 1, records.end(), [](const captured_record& r) {
          return r.kind == record_kind::region_end && r.closed == region_close::by_program;
        }) == limit);
  CHECK(runtime_count("events-dropped-nested-too-deep") == dropped + 2 * beyond);
}

// Work per end must not grow with the depth: ends that match no open region
// under thousands of open ones once cost a walk up the open regions each
// (10 000 open, 40 000 such ends: 4e8 steps). Compared with as many balanced
// events, in the same run, with a generous margin.
TEST_CASE("ends that match no open region cost no more than balanced ones") {
  take_records();
  constexpr int open = 10'000;
  constexpr int stray_ends = 40'000;
  constexpr int events = 2 * open + stray_ends;
  const auto seconds = [](auto&& record_events) {
    double best = 1e9;
    for (int round = 0; round < 3; ++round) {
      const auto start = std::chrono::steady_clock::now();
      record_events();
      take_records();  // the drain is the work measured
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      best = std::min(best, took.count());
    }
    return best;
  };
  const double balanced = seconds([] {
    for (int i = 0; i < events / 2; ++i) {
      ferret::begin("pair");
      ferret::end("pair");
    }
  });
  const double stray = seconds([] {
    for (int i = 0; i < open; ++i) ferret::begin("open");
    for (int i = 0; i < stray_ends; ++i) ferret::end("stray");
    for (int i = 0; i < open; ++i) ferret::end("open");
  });
  MESSAGE("balanced: " << balanced << " s; stray ends under " << open << " open regions: " << stray
                       << " s");
  CHECK(stray < 10 * balanced);
}
