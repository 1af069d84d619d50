// A backend that aggregates a run into a profile_model and writes it once, at
// the final flush: the summary and the report derive from it and differ only
// in how they write the model.
#pragma once

#include <time.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ferret/runtime/backend.hpp"
#include "ferret/runtime/runtime.hpp"
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
  void communication(const runtime::communication_event* events, std::size_t count) final {
    if (!done_) model_.add_communication(events, count);
  }
  void join_process_group(runtime::process_group& group) final {
    group_ = &group;
    model_.set_process(group.rank(), group.size());
  }
  // Earlier flushes write nothing: the profile is written once, complete.
  void flush(const runtime::session_status& status) final {
    if (done_ || !status.final) return;
    done_ = true;
    gather_message_rows();
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
  // Rank 0 gets every rank's row of the message matrix (inside MPI_Finalize,
  // where all ranks flush together); elsewhere each rank keeps its own.
  void gather_message_rows() {
    if (group_ == nullptr || !group_->collectives_available()) return;
    const std::uint32_t size = group_->size();
    std::vector<volume> row(size);
    for (const auto& [ends, messages] : model_.messages())
      if (ends.first == group_->rank() && ends.second < size) row[ends.second] = messages;
    std::vector<volume> all(group_->rank() == 0 ? std::size_t{size} * size : 0);
    if (!group_->gather(row.data(), row.size() * sizeof(volume), all.data(), 0) || all.empty()) return;
    for (std::uint32_t from = 0; from < size; ++from)
      model_.add_message_row(from, std::vector<volume>(all.begin() + std::ptrdiff_t{from} * size,
                                                       all.begin() + std::ptrdiff_t{from + 1} * size));
  }

  profile_model model_;
  runtime::process_group* group_ = nullptr;
  bool done_ = false;
};

}  // namespace ferret::profile
