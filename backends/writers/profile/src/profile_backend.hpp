// A backend that aggregates a run into a profile_model and writes it once, at
// the final flush: the summary and the report derive from it and differ only
// in how they write the model.
#pragma once

#include <time.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "ferret/runtime/backend.hpp"
#include "ferret/runtime/runtime.hpp"
#include "job_profile.hpp"
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
  void gpu_instruction_samples(const runtime::gpu_instruction_sample* samples,
                               std::size_t count) final {
    if (!done_) model_.add_instruction_samples(samples, count);
  }
  void gpu_remote_accesses(const runtime::gpu_remote_access* accesses, std::size_t count) final {
    if (!done_) model_.add_remote_accesses(accesses, count);
  }
  void gpu_sampled_metrics(const runtime::gpu_metric_set& set) final {
    if (!done_) model_.add_metric_set(set);
  }
  void gpu_metric_intervals(const runtime::gpu_metric_interval* intervals, std::size_t count) final {
    if (!done_) model_.add_metric_intervals(intervals, count);
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
    if (done_) return;
    if (!status.final) {
      model_.end_drain();
      return;
    }
    done_ = true;
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC_RAW, &now);
    const std::int64_t now_ns = std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
    model_.finish(status, now_ns - model_.session().start_monotonic_raw_ns);
    const std::optional<job_profile> job = reduce_job();
    write(model_, job ? &*job : nullptr);
  }
  // A fork() child: the parent writes; the child stays silent.
  void abandon() noexcept final { done_ = true; }

 protected:
  /// Writes the finished model (called once); `job` on rank 0 of an MPI job
  /// whose ranks all reached MPI_Finalize, else nullptr.
  virtual void write(const profile_model& model, const job_profile* job) = 0;
  /// True when rank 0 should get the busiest rank's calling-context tree
  /// (the same on every rank: all ranks record with the same backends).
  virtual bool wants_busiest_tree() const noexcept { return false; }
  /// The most nodes of that tree sent.
  static constexpr std::size_t busiest_tree_nodes = 10'000;
  /// True on the other ranks of such a job: their part is in rank 0's job profile.
  bool reduced_into_rank_0() const noexcept { return reduced_elsewhere_; }

 private:
  // The calling-context tree of the rank rank 0 names (`busiest` is read at
  // rank 0), gathered at rank 0: one broadcast and two gathers, all ranks.
  std::string busiest_tree(std::uint32_t busiest) {
    if (!group_->broadcast(&busiest, sizeof busiest, 0)) return {};
    const bool mine = busiest == group_->rank();
    const std::string tree = mine ? serialize_tree(model_, busiest_tree_nodes) : std::string{};
    const std::uint64_t tree_bytes = tree.size();
    std::vector<std::uint64_t> sizes(group_->rank() == 0 ? group_->size() : 0);
    if (!group_->gather(&tree_bytes, sizeof tree_bytes, sizes.data(), 0)) return {};
    const std::vector<std::size_t> counts(sizes.begin(), sizes.end());
    std::string received(busiest < sizes.size() ? sizes[busiest] : 0, '\0');
    if (!group_->gatherv(tree.data(), tree.size(), received.data(), counts.data(), 0)) return {};
    return received;
  }

  // Inside MPI_Finalize, where all ranks flush together: rank 0 gathers every
  // rank's part (job_profile.hpp) and gets the job profile; the message rows
  // go into its model too (the summary's and report's rank x rank matrix).
  // Without a group, or when the ranks cannot meet (an exit without
  // MPI_Finalize), each rank keeps its own profile.
  std::optional<job_profile> reduce_job() {
    if (group_ == nullptr || !group_->collectives_available()) return std::nullopt;
    const std::int64_t started_ns = runtime::monotonic_raw_ns();
    const std::uint32_t size = group_->size(), rank = group_->rank();
    const std::string part = serialize_rank(model_);
    const std::uint64_t part_bytes = part.size();
    std::vector<std::uint64_t> sizes(rank == 0 ? size : 0);
    if (!group_->gather(&part_bytes, sizeof part_bytes, sizes.data(), 0)) return std::nullopt;
    std::vector<std::size_t> counts(sizes.begin(), sizes.end());
    std::size_t total = 0;
    for (const std::size_t count : counts) total += count;
    std::string parts(total, '\0');
    const std::size_t parts_bytes = total;
    if (!group_->gatherv(part.data(), part.size(), parts.data(), counts.data(), 0)) return std::nullopt;
    if (rank != 0) {
      reduced_elsewhere_ = true;
      if (wants_busiest_tree()) busiest_tree(0);
      return std::nullopt;
    }
    job_profile job{size};
    std::size_t offset = 0;
    for (std::uint32_t from = 0; from < size; ++from) {
      if (!job.add_rank(from, std::string_view{parts}.substr(offset, counts[from])))
        runtime::print_message(fmt::format("the job summary leaves out rank {}: its part did not parse", from));
      offset += counts[from];
    }
    parts = std::string{};
    for (const auto& [ends, messages] : job.messages()) model_.add_message(ends.first, ends.second, messages);
    if (wants_busiest_tree() && !job.set_busiest_tree(busiest_tree(job.busiest_rank())))
      runtime::print_message("the job report leaves out the busiest rank's tree: it did not arrive");
    job.set_reduction(parts_bytes, runtime::monotonic_raw_ns() - started_ns);
    return job;
  }

  profile_model model_;
  runtime::process_group* group_ = nullptr;
  bool done_ = false;
  bool reduced_elsewhere_ = false;
};

}  // namespace ferret::profile
