// known_tree_app: regions of known calls on two threads, for the TAU backend's
// known-answer test.
//
//   main thread:  phase ×2 { sleep 20 ms; inner { sleep 10 ms } }
//   "worker":     work { items=1; sleep 15 ms; inner { items=2; sleep 5 ms }; items=3 }
//
// The worker starts after main's phases, so main's thread is seen first. Each
// region is timed from outside as well, in CLOCK_MONOTONIC_RAW (the clock
// ferret's times are in): from just after its begin to just before its end
// (inside) and from just before its begin to just after its end (around).
// Summed per call path, they are printed at exit, one line each:
//   span <thread> <path> <inside ns> <around ns>
// and bound the profile's times however loaded the machine is.
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "ferret/ferret.hpp"

namespace {

std::int64_t monotonic_raw_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

struct span_sums {
  std::int64_t inside_ns = 0, around_ns = 0;
};
// Written by main, then by the worker after main's last region (the thread
// starts later), read after it is joined.
std::map<std::string, span_sums> g_spans;

class timed_region {
 public:
  template <std::size_t N>
  timed_region(const char (&name)[N], std::string key)
      : key_(std::move(key)), around_begin_(monotonic_raw_ns()), region_(std::in_place, name),
        inside_begin_(monotonic_raw_ns()) {}
  ~timed_region() {
    const std::int64_t inside_end = monotonic_raw_ns();
    region_.reset();
    const std::int64_t around_end = monotonic_raw_ns();
    span_sums& sums = g_spans[key_];
    sums.inside_ns += inside_end - inside_begin_;
    sums.around_ns += around_end - around_begin_;
  }
  timed_region(const timed_region&) = delete;
  timed_region& operator=(const timed_region&) = delete;

 private:
  std::string key_;
  std::int64_t around_begin_;
  std::optional<ferret::region> region_;
  std::int64_t inside_begin_;
};

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds{ms}); }

void worker() {
  ferret::set_thread_name("worker");
  ferret::counter items{"items"};
  timed_region work{"work", "worker work"};
  items.record(1);
  sleep_ms(15);
  {
    timed_region inner{"inner", "worker work/inner"};
    items.record(2);
    sleep_ms(5);
  }
  items.record(3);
}

}  // namespace

int main() {
  for (int i = 0; i < 2; ++i) {
    timed_region phase{"phase", "main phase"};
    sleep_ms(20);
    timed_region inner{"inner", "main phase/inner"};
    sleep_ms(10);
  }
  ferret::flush();  // main's records reach the backend before the worker's
  std::thread thread{worker};
  thread.join();
  for (const auto& [key, sums] : g_spans)
    std::printf("span %s %lld %lld\n", key.c_str(), static_cast<long long>(sums.inside_ns),
                static_cast<long long>(sums.around_ns));
  return 0;
}
