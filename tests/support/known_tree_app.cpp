// known_tree_app: regions of known calls and known minimum durations (sleeps)
// on two threads, for the TAU backend's known-answer test.
//
//   main thread:  phase ×2 { sleep 20 ms; inner { sleep 10 ms } }
//   "worker":     work { items=1; sleep 15 ms; inner { items=2; sleep 5 ms }; items=3 }
//
// The worker starts after main's phases, so main's thread is seen first.
#include <chrono>
#include <thread>

#include "ferret/ferret.hpp"

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds{ms}); }

void worker() {
  ferret::set_thread_name("worker");
  ferret::counter items{"items"};
  ferret::region work{"work"};
  items.record(1);
  sleep_ms(15);
  {
    ferret::region inner{"inner"};
    items.record(2);
    sleep_ms(5);
  }
  items.record(3);
}

}  // namespace

int main() {
  for (int i = 0; i < 2; ++i) {
    ferret::region phase{"phase"};
    sleep_ms(20);
    ferret::region inner{"inner"};
    sleep_ms(10);
  }
  ferret::flush();  // main's records reach the backend before the worker's
  std::thread thread{worker};
  thread.join();
  return 0;
}
