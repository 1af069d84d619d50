// When a drain reads the MPI layer's events against the threads' records: an
// event recorded inside a call never comes in a later drain than the end of
// the call's region, however the call and the drain interleave. Otherwise a
// writer that keeps each thread in time order (OTF2) can only clamp the event
// to the last time it wrote, and a receive can land before its send (seen in
// CI, 2026-11-28). A fake layer stands in for the MPI collector and makes a
// whole call while the drain collects its events; the memory backend shows
// which drain each record and event came in.
#include <doctest/doctest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ferret/ferret.hpp"
#include "ferret/runtime/runtime.hpp"
#include "support/memory_backend.hpp"

namespace {

using ferret::runtime::communication_event;
using ferret::testing::memory_backend;

class layer_calling_while_collected final : public ferret::runtime::collector {
 public:
  void collect(std::vector<ferret::runtime::gpu_activity>&, std::vector<ferret::runtime::gpu_device_info>&,
               bool) override {}

  // Hands over the events held, then (once armed) lets the worker make one
  // whole call, whose event stays for the next drain, as a call that ends
  // between the MPI collector's reading of its rings and the drain's reading
  // of the threads would.
  void collect_communication(std::vector<ferret::runtime::communicator_info>&,
                             std::vector<communication_event>& events, bool) override {
    std::unique_lock lock{mutex_};
    events.insert(events.end(), held_.begin(), held_.end());
    held_.clear();
    if (!armed_) return;
    armed_ = false;
    call_wanted_ = true;
    changed_.notify_all();
    changed_.wait(lock, [this] { return !call_wanted_; });
  }
  void add_metadata(ferret::runtime::metadata_list&) const override {}
  void abandon() noexcept override {}

  void arm() {
    std::lock_guard lock{mutex_};
    armed_ = true;
  }

  // The worker: waits for the drain to want a call, then makes it.
  void serve_one_call() {
    std::unique_lock lock{mutex_};
    changed_.wait(lock, [this] { return call_wanted_; });
    lock.unlock();
    {
      ferret::region call{"MPI_Send"};
      communication_event event{};
      event.time_ns = static_cast<std::int64_t>(ferret::runtime::clock_reading());
      event.tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
      event.kind = ferret::runtime::communication_kind::send;
      event.peer = event.peer_process = 1;
      event.bytes = 8;
      lock.lock();
      held_.push_back(event);
      lock.unlock();
    }
    lock.lock();
    call_wanted_ = false;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<communication_event> held_;
  bool armed_ = false;
  bool call_wanted_ = false;
};

}  // namespace

TEST_CASE("an MPI event comes no later than its call's region end, whenever the drain runs") {
  static auto* layer = new layer_calling_while_collected;  // registered for the process
  REQUIRE(ferret::runtime::register_collector(layer));
  memory_backend::clear();
  std::uint64_t worker_tid = 0;
  std::thread worker{[&worker_tid] {
    worker_tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
    layer->serve_one_call();
  }};
  layer->arm();
  ferret::flush();  // the worker's call happens inside this drain
  worker.join();
  ferret::flush();

  const ferret::testing::capture c = memory_backend::snapshot();
  REQUIRE(c.communication.size() == 1);
  const ferret::testing::captured_communication& sent = c.communication.front();
  CHECK(sent.event.tid == worker_tid);
  const auto thread = c.threads.find(worker_tid);
  REQUIRE(thread != c.threads.end());
  const std::vector<ferret::testing::captured_record>& records = thread->second.records;
  REQUIRE(records.size() == 2);
  CHECK(records[0].name == "MPI_Send");
  CHECK(records[0].time_ns <= sent.event.time_ns);
  CHECK(sent.event.time_ns <= records[1].time_ns);
  CHECK(sent.drain <= records[1].drain);
}
