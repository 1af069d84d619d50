// The annotation API end to end through the runtime, in process: every macro
// and function, domains, names, counters, thread names, metadata, data
// objects, pause/resume. Runs with FERRET_BACKEND=memory (see CMakeLists.txt).
#include <doctest/doctest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <thread>
#include <variant>

#include "ferret/ferret.hpp"
#include "ferret/runtime/runtime.hpp"
#include "support/memory_backend.hpp"

using ferret::runtime::record_kind;
using ferret::testing::captured_record;
using ferret::testing::memory_backend;

namespace {

std::uint64_t this_tid() { return static_cast<std::uint64_t>(syscall(SYS_gettid)); }

// The clock the runtime's timestamps are in.
std::int64_t monotonic_raw_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

// Drains and returns (then forgets) what this thread recorded.
std::vector<captured_record> take_records() {
  ferret::flush();
  auto captured = memory_backend::snapshot();
  memory_backend::clear();
  return captured.threads[this_tid()].records;
}

struct solver_domain {
  static constexpr const char* name = "solver";
};
struct silent_domain {
  static constexpr const char* name = "silent";
  static constexpr bool enabled = false;
};

int annotated_function() {
  FERRET_FUNCTION();
  return 42;
}
int annotated_function_in_domain() {
  FERRET_FUNCTION_IN(solver_domain);
  return 7;
}

}  // namespace

TEST_CASE("regions from macros, literals and registered names nest in order") {
  take_records();
  const ferret::name registered = ferret::register_name(std::string{"run-time name"});
  REQUIRE(registered);
  {
    FERRET_REGION("outer");
    ferret::region literal{"literal"};
    ferret::region named{registered};
    CHECK(annotated_function() == 42);
  }
  const auto records = take_records();
  REQUIRE(records.size() == 8);
  const std::vector<std::pair<record_kind, std::string>> expected{
      {record_kind::region_begin, "outer"},          {record_kind::region_begin, "literal"},
      {record_kind::region_begin, "run-time name"},  {record_kind::region_begin, "annotated_function"},
      {record_kind::region_end, "annotated_function"}, {record_kind::region_end, "run-time name"},
      {record_kind::region_end, "literal"},          {record_kind::region_end, "outer"}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(records[i].kind == expected[i].first);
    CHECK(records[i].name == expected[i].second);
    if (i > 0) CHECK(records[i].time_ns >= records[i - 1].time_ns);
  }
  // Macro sites carry their source location; literal names do not.
  CHECK(records[0].file.find("api_test.cpp") != std::string::npos);
  CHECK(records[0].line > 0);
  CHECK(records[1].file.empty());
}

TEST_CASE("explicit begin/end, marks and counters") {
  take_records();
  ferret::begin("phase");
  ferret::mark("checkpoint");
  FERRET_MARK("macro mark");
  ferret::counter depth{"queue depth"};
  depth.record(3.5);
  FERRET_COUNTER("macro counter", 12);
  ferret::end("phase");
  const auto records = take_records();
  REQUIRE(records.size() == 6);
  CHECK(records[0].kind == record_kind::region_begin);
  CHECK(records[1].kind == record_kind::mark);
  CHECK(records[1].name == "checkpoint");
  CHECK(records[2].name == "macro mark");
  CHECK(records[3].kind == record_kind::counter);
  CHECK(records[3].name == "queue depth");
  CHECK(records[3].value == 3.5);
  CHECK(records[4].value == 12.0);
  CHECK(records[5].kind == record_kind::region_end);
  CHECK(records[5].name == "phase");
}

TEST_CASE("domains name their category and switch off at compile time") {
  static_assert(ferret::domain_enabled<solver_domain>);
  static_assert(!ferret::domain_enabled<silent_domain>);
  take_records();
  {
    ferret::region_in<solver_domain> in_domain{"step"};
    FERRET_REGION_IN(solver_domain, "macro step");
    CHECK(annotated_function_in_domain() == 7);
    ferret::region_in<silent_domain> silenced{"never"};
    FERRET_REGION_IN(silent_domain, "never either");
    FERRET_MARK_IN(silent_domain, "no mark");
    int evaluations = 0;
    FERRET_COUNTER_IN(silent_domain, "no counter", ++evaluations);
    CHECK(evaluations == 0);
    ferret::mark<silent_domain>("no mark either");
    FERRET_MARK_IN(solver_domain, "domain mark");
    FERRET_COUNTER_IN(solver_domain, "domain counter", 1);
  }
  const auto records = take_records();
  REQUIRE(records.size() == 8);
  for (const auto& r : records) CHECK(r.domain == "solver");
  CHECK(records[0].name == "step");
  CHECK(records[1].name == "macro step");
  CHECK(records[2].name == "annotated_function_in_domain");
}

TEST_CASE("the same literal in two domains gives two names") {
  take_records();
  ferret::mark("shared");
  ferret::mark<solver_domain>("shared");
  const auto records = take_records();
  REQUIRE(records.size() == 2);
  CHECK(records[0].domain.empty());
  CHECK(records[1].domain == "solver");
}

TEST_CASE("thread names and run metadata reach the backend") {
  take_records();
  std::thread worker{[] {
    ferret::set_thread_name("worker one");
    FERRET_REGION("work");
  }};
  worker.join();
  ferret::set_metadata("problem", "heat");
  ferret::set_metadata("size", 1024);
  ferret::set_metadata("tolerance", 1e-6);
  ferret::set_metadata("size", 2048);  // replaces
  ferret::set_metadata("two-53-plus-1", std::uint64_t{9007199254740993});
  ferret::set_metadata("uint64-max", UINT64_MAX);
  ferret::set_metadata("int64-min", INT64_MIN);
  ferret::flush();
  const auto captured = memory_backend::snapshot();
  bool found = false;
  for (const auto& [tid, thread] : captured.threads)
    if (thread.name == "worker one") {
      found = true;
      CHECK(tid != this_tid());
      CHECK_FALSE(thread.is_main);
      CHECK(thread.records.size() == 2);
    }
  CHECK(found);
  const auto value = [&](const std::string& key) -> const ferret::runtime::metadata_value* {
    for (const auto& [k, v] : captured.user_metadata)
      if (k == key) return &v;
    return nullptr;
  };
  REQUIRE(value("problem"));
  CHECK(std::get<std::string>(*value("problem")) == "heat");
  REQUIRE(value("size"));
  CHECK(std::get<std::int64_t>(*value("size")) == 2048);
  CHECK(std::get<double>(*value("tolerance")) == doctest::Approx(1e-6));
  // Integers exactly, whatever their type.
  CHECK(std::get<std::int64_t>(*value("two-53-plus-1")) == 9007199254740993);
  CHECK(std::get<std::uint64_t>(*value("uint64-max")) == UINT64_MAX);
  CHECK(std::get<std::int64_t>(*value("int64-min")) == INT64_MIN);
  int sizes = 0;
  for (const auto& [k, v] : captured.user_metadata) sizes += k == "size";
  CHECK(sizes == 1);
  memory_backend::clear();
}

TEST_CASE("a name the application gave its thread is the default thread name") {
  take_records();
  std::thread worker{[] {
    pthread_setname_np(pthread_self(), "os-named");
    FERRET_REGION("work");
  }};
  worker.join();
  ferret::flush();
  bool found = false;
  for (const auto& entry : memory_backend::snapshot().threads) found |= entry.second.name == "os-named";
  CHECK(found);
  memory_backend::clear();
}

TEST_CASE("pause and resume stop and restart recording") {
  take_records();
  ferret::pause();
  { FERRET_REGION("paused"); }
  ferret::resume();
  { FERRET_REGION("resumed"); }
  const auto records = take_records();
  REQUIRE(records.size() == 2);
  CHECK(records[0].name == "resumed");
}

TEST_CASE("region durations follow the host clock") {
  take_records();
  const std::int64_t before = monotonic_raw_ns();
  std::int64_t inside_first = 0, inside_last = 0;
  {
    FERRET_REGION("sleep");
    inside_first = monotonic_raw_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds{20});  // a span a wrong unit would show
    inside_last = monotonic_raw_ns();
  }
  const std::int64_t after = monotonic_raw_ns();
  const auto records = take_records();
  REQUIRE(records.size() == 2);
  const std::int64_t duration = records[1].time_ns - records[0].time_ns;
  // Readings inside the region nest in it, and it nests in readings around
  // it: an order, which holds however loaded the machine is. The slack is the
  // conversion's from counter ticks (as in runtime_unit_test's clock cases).
  const std::int64_t slack = (after - before) / 1000 + 20'000;
  CHECK(duration >= inside_last - inside_first - slack);
  CHECK(duration <= after - before + slack);
}

TEST_CASE("data objects: lifetimes reach the backend and addresses map to objects") {
  memory_backend::clear();
  std::vector<double> pool(1024);
  const auto* base = reinterpret_cast<const char*>(pool.data());
  {
    ferret::data_object whole{"pool", pool.data(), pool.size() * sizeof(double),
                              ferret::memory_kind::device, 1};
    ferret::data_object part{"A", base + 800, 1600, ferret::memory_kind::device, 1};
    const auto inner = ferret::runtime::find_data_object(base + 900);
    REQUIRE(inner);
    CHECK(inner->name == "A");
    CHECK(inner->device == 1);
    const auto outer = ferret::runtime::find_data_object(base + 100);
    REQUIRE(outer);
    CHECK(outer->name == "pool");
    CHECK_FALSE(ferret::runtime::find_data_object(base + pool.size() * sizeof(double)));
    // Partially overlapping "A": refused, with one message on stderr.
    CHECK(ferret::register_data_object("bad", base + 1000, 4096) == 0);
    // Explicit registration and removal by address.
    const ferret::data_object_id explicit_id = ferret::register_data_object("B", base + 4000, 100);
    CHECK(explicit_id != 0);
    ferret::unregister_data_object_at(base + 4000);
    CHECK(ferret::runtime::find_data_object(base + 4000)->name == "pool");
  }
  CHECK_FALSE(ferret::runtime::find_data_object(base + 100));
  ferret::flush();
  const auto captured = memory_backend::snapshot();
  REQUIRE(captured.objects.size() == 6);
  CHECK(captured.objects[0].object.name == "pool");
  CHECK(captured.objects[0].change == ferret::runtime::data_object_change::registered);
  CHECK(captured.objects[0].object.bytes == 8192);
  CHECK(captured.objects[0].object.memory == ferret::memory_kind::device);
  for (std::size_t i = 1; i < captured.objects.size(); ++i)
    CHECK(captured.objects[i].time_ns >= captured.objects[i - 1].time_ns);
  CHECK(captured.objects.back().object.name == "pool");
  CHECK(captured.objects.back().change == ferret::runtime::data_object_change::unregistered);
  memory_backend::clear();
}

TEST_CASE("a moved data object is unregistered once") {
  memory_backend::clear();
  int value = 0;
  {
    ferret::data_object first{"moved", &value, sizeof value};
    ferret::data_object second{std::move(first)};
    CHECK(first.id() == 0);
    CHECK(second.id() != 0);
  }
  ferret::flush();
  CHECK(memory_backend::snapshot().objects.size() == 2);
  memory_backend::clear();
}

TEST_CASE("the runtime reports its clock and buffer settings") {
  ferret::flush();
  const auto captured = memory_backend::snapshot();
  bool buffer = false;
  for (const auto& [key, value] : captured.runtime_metadata)
    if (key == "buffer-bytes") buffer = std::get<std::int64_t>(value) > 0;
  CHECK(buffer);
  CHECK(captured.events_dropped == 0);
}

// Objects registered and removed faster than drains come (here drains come
// only when asked: FERRET_FLUSH_INTERVAL=0) must not queue without bound: the
// runtime drains them from its queue limit on (8192 events), and every
// lifetime event still reaches the backend.
TEST_CASE("data objects churned between drains: the queue stays bounded, nothing is lost") {
  ferret::flush();
  memory_backend::clear();
  constexpr std::size_t objects = 50'000;
  constexpr std::size_t queue_limit = 8192;
  char memory[3] = {};
  std::size_t most_undelivered = 0;
  for (std::size_t i = 1; i <= objects; ++i) {
    { const ferret::data_object churned{"churned", &memory[i % 3], 1}; }
    if (i % 5000 == 0) {
      // At most the queue and a drain's batch being delivered.
      const std::size_t delivered = memory_backend::snapshot().objects.size();
      most_undelivered = std::max(most_undelivered, 2 * i - delivered);
    }
  }
  ferret::flush();
  CHECK(most_undelivered <= 2 * queue_limit);
  CHECK(memory_backend::snapshot().objects.size() == 2 * objects);
  memory_backend::clear();
}
