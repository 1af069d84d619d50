#include "discard_backend.hpp"

#include <memory>
#include <string>

#include "ferret/runtime/backend.hpp"

namespace ferret_bench {

discard_accounting g_discard;

namespace {

class discard_backend final : public ferret::runtime::backend {
 public:
  void thread_records(const ferret::runtime::thread_info&, const ferret::runtime::record*,
                      std::size_t count) override {
    g_discard.received.fetch_add(count, std::memory_order_relaxed);
  }
  void data_object(const ferret::runtime::data_object_event&) override {}
  void flush(const ferret::runtime::session_status& status) override {
    g_discard.runtime_recorded.store(status.events_recorded, std::memory_order_relaxed);
    g_discard.runtime_dropped.store(status.events_dropped, std::memory_order_relaxed);
  }
  void abandon() noexcept override {}
  std::string describe() const override {
    return "discard: " + std::to_string(g_discard.received.load()) +
           " records received and dropped";
  }
};

std::unique_ptr<ferret::runtime::backend> make_discard(const ferret::runtime::backend_context&,
                                                       std::string&) {
  g_discard.started.store(true);
  return std::make_unique<discard_backend>();
}

}  // namespace
}  // namespace ferret_bench

FERRET_REGISTER_BACKEND("discard", "counts the records it receives and drops them",
                        ferret_bench::make_discard);
