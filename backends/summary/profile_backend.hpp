// A backend that aggregates a run into a profile_model and writes it once, at
// the final flush: the summary and the report derive from it and differ only
// in how they write the model.
#pragma once

#include <time.h>

#include <cstdint>

#include "ferret/runtime/backend.hpp"
#include "profile_model.hpp"

namespace ferret::profile {

class profile_backend : public runtime::backend {
 public:
  explicit profile_backend(const runtime::session_info& session) : model_(session) {}

  void thread_records(const runtime::thread_info& thread, const runtime::record* records,
                      std::size_t count) final {
    if (!done_) model_.add_records(thread, records, count);
  }
  void data_object(const runtime::data_object_event& event) final {
    if (!done_) model_.add_data_object(event);
  }
  void gpu_device(const runtime::gpu_device_info& device) final {
    if (!done_) model_.add_device(device);
  }
  void gpu_activities(const runtime::gpu_activity* activities, std::size_t count) final {
    if (!done_) model_.add_activities(activities, count);
  }
  // Earlier flushes write nothing: the profile is written once, complete.
  void flush(const runtime::session_status& status) final {
    if (done_ || !status.final) return;
    done_ = true;
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC_RAW, &now);
    const std::int64_t now_ns = std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
    model_.finish(status, now_ns - model_.session().start_monotonic_raw_ns);
    write(model_);
  }
  // A fork() child: the parent writes; the child stays silent.
  void abandon() noexcept final { done_ = true; }

 protected:
  /// Writes the finished model (called once).
  virtual void write(const profile_model& model) = 0;

 private:
  profile_model model_;
  bool done_ = false;
};

}  // namespace ferret::profile
