// The runtime starts on the first call from any thread. Threads whose first
// calls come at the same moment each read the settings and find the backends
// (with no lock held: a backend's library may call back while it loads),
// then one of them starts the session under the lock and the others wait for
// it: every thread records into that one session. Runs under ThreadSanitizer
// in CI; a fresh process, so that nothing started the runtime before.
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "ferret/ferret.hpp"
#include "ferret/runtime/runtime.hpp"
#include "support/memory_backend.hpp"

TEST_CASE("threads whose first calls come at once share one start") {
  constexpr int thread_count = 8;
  std::atomic<int> ready{0};
  std::atomic<int> saw_session{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < thread_count) std::this_thread::yield();
      // Half start as a collector does, half as annotated code does.
      if (t % 2 == 0 && ferret::runtime::session_active()) saw_session.fetch_add(1);
      ferret::region first{"first call"};  // as annotated code starts
    });
  for (std::thread& thread : threads) thread.join();
  ferret::flush();
  CHECK(saw_session.load() == thread_count / 2);
  const ferret::testing::capture captured = ferret::testing::memory_backend::snapshot();
  int recorded = 0;
  for (const auto& entry : captured.threads)
    for (const auto& record : entry.second.records)
      if (record.kind == ferret::runtime::record_kind::region_begin && record.name == "first call") ++recorded;
  CHECK(recorded == thread_count);
}
