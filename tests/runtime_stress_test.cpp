// Many threads recording at once while another thread flushes, threads that
// come and go, and a buffer small enough that writers wait for the chunks the
// drain thread hands back. Runs under ThreadSanitizer in CI. Every written event must arrive,
// in order and properly nested per thread, or be counted as dropped.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <variant>
#include <vector>

#include "ferret/ferret.hpp"
#include "support/memory_backend.hpp"

using ferret::runtime::record_kind;
using ferret::testing::memory_backend;

namespace {

constexpr int threads_per_wave = 6;
constexpr int waves = 3;
constexpr int regions_per_thread = 20000;

void work(int index) {
  ferret::set_thread_name("stress " + std::to_string(index));
  ferret::counter progress{"progress"};
  for (int i = 0; i < regions_per_thread; ++i) {
    FERRET_REGION("outer");
    ferret::region inner{"inner"};
    if (i % 1000 == 0) progress.record(i);
  }
}

std::int64_t runtime_count(const ferret::testing::capture& captured, const char* key) {
  for (const auto& [k, v] : captured.runtime_metadata)
    if (k == key) return std::get<std::int64_t>(v);
  return -1;
}

}  // namespace

TEST_CASE("concurrent recording, flushing and thread exit lose nothing silently") {
  ferret::flush();
  memory_backend::clear();
  std::atomic<bool> running{true};
  std::thread flusher{[&] {
    while (running.load()) {
      ferret::flush();
      std::this_thread::yield();
    }
  }};
  for (int wave = 0; wave < waves; ++wave) {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads_per_wave; ++t) workers.emplace_back(work, wave * threads_per_wave + t);
    for (auto& w : workers) w.join();
  }
  running.store(false);
  flusher.join();
  ferret::flush();

  const auto captured = memory_backend::snapshot();
  const std::size_t per_thread = 4 * regions_per_thread + regions_per_thread / 1000;
  std::size_t workers_seen = 0;
  std::size_t received = 0;
  for (const auto& [tid, thread] : captured.threads) {
    if (thread.name.rfind("stress ", 0) != 0) continue;
    ++workers_seen;
    received += thread.records.size();
    // Per thread: time never goes back, regions nest, ends match begins.
    std::vector<std::string> open;
    for (std::size_t i = 0; i < thread.records.size(); ++i) {
      const auto& r = thread.records[i];
      if (i > 0) REQUIRE(r.time_ns >= thread.records[i - 1].time_ns);
      if (r.kind == record_kind::region_begin) open.push_back(r.name);
      if (r.kind == record_kind::region_end) {
        REQUIRE_FALSE(open.empty());
        REQUIRE(open.back() == r.name);
        open.pop_back();
      }
    }
    if (captured.events_dropped == 0) CHECK(open.empty());
  }
  CHECK(workers_seen == threads_per_wave * waves);
  CHECK(received + captured.events_dropped == per_thread * threads_per_wave * waves);
  // The buffers are large enough for every thread to get chunks: nothing dropped.
  CHECK(captured.events_dropped == 0);
  memory_backend::clear();
}

TEST_CASE("events after a thread's exit hook are counted, not written") {
  struct annotates_on_exit {
    ~annotates_on_exit() { FERRET_REGION("in a thread_local destructor"); }
  };
  ferret::flush();
  const auto before = runtime_count(memory_backend::snapshot(), "events-dropped-after-thread-exit");
  std::thread worker{[] {
    // Constructed before the thread's first event, so destroyed after the
    // runtime's exit hook has retired the thread's buffer.
    static thread_local annotates_on_exit late;
    static_cast<void>(&late);
    FERRET_REGION("first event");
  }};
  worker.join();
  ferret::flush();
  const auto after = runtime_count(memory_backend::snapshot(), "events-dropped-after-thread-exit");
  CHECK(after - before == 2);
}
