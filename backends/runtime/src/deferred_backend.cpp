// See ferret/runtime/deferred_backend.hpp.
#include "ferret/runtime/deferred_backend.hpp"

#include <fmt/format.h>

#include <deque>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "ferret/runtime/runtime.hpp"

namespace ferret::runtime {
namespace {

// What the runtime handed over, copied: its pointers are valid for the call only
// (name_info and context_node pointers live as long as the session and are kept).
struct held_records {
  thread_info thread;  // name points into thread_name
  std::string thread_name;
  std::vector<record> records;
};
struct held_object_event {
  data_object_event event;  // object points into object
  data_object_info object;
};
struct held_activities {
  std::vector<gpu_activity> activities;  // name, object and samples pointers point into the holder
  std::deque<data_object_info> objects;
  std::deque<gpu_kernel_samples> samples;
  std::deque<gpu_kernel_remote_traffic> remote;
};
// Instruction samples' pointers (contexts, functions, files, reasons) live as long as the session.
struct held_samples {
  std::vector<gpu_instruction_sample> samples;
};
// Device-initiated traffic: its objects are copied, they may be forgotten before the replay.
struct held_remote_accesses {
  std::vector<gpu_remote_access> accesses;  // object pointers point into the holder
  std::deque<data_object_info> objects;
};
// Sampled counters: the set's strings live as long as the session; the values
// are valid for the call only.
struct held_metric_intervals {
  std::vector<gpu_metric_interval> intervals;  // values point into the holder
  std::vector<double> values;
};
using held_call = std::variant<held_records, held_object_event, gpu_device_info, held_activities,
                               held_samples, held_remote_accesses, gpu_metric_set,
                               held_metric_intervals>;

class deferred_backend final : public backend {
 public:
  deferred_backend(deferred_opener open, std::string waiting_description, std::size_t max_held)
      : open_(std::move(open)),
        waiting_description_(std::move(waiting_description)),
        max_held_(max_held) {}

  // Over the bound, records are dropped so that the held ones still nest (see
  // runtime::record): the end of a held region is held, that of a dropped one
  // dropped.
  void thread_records(const thread_info& thread, const record* records,
                      std::size_t count) override {
    if (real_ != nullptr) return real_->thread_records(thread, records, count);
    if (failed_) return;
    std::vector<bool>& open_held = open_held_[thread.tid];  // per open region: held
    held_records held{thread, std::string{thread.name}, {}};
    held.thread.name = {};
    for (std::size_t i = 0; i < count; ++i) {
      const record& r = records[i];
      bool keep = false;
      if (r.kind == record_kind::region_end && !open_held.empty()) {
        keep = open_held.back();
        open_held.pop_back();
        held_events_ += keep ? 1 : 0;  // may pass the bound: one per held begin
        dropped_ += keep ? 0 : 1;
      } else {
        keep = admit(1) == 1;
        if (r.kind == record_kind::region_begin) open_held.push_back(keep);
      }
      if (keep) held.records.push_back(r);
    }
    if (!held.records.empty()) held_.emplace_back(std::move(held));
  }

  void data_object(const data_object_event& event) override {
    if (real_ != nullptr) return real_->data_object(event);
    if (failed_ || admit(1) == 0) return;
    held_.emplace_back(held_object_event{event, *event.object});
  }

  void gpu_device(const gpu_device_info& device) override {
    if (real_ != nullptr) return real_->gpu_device(device);
    if (!failed_) held_.emplace_back(device);
  }

  // Communication is recorded only once the group joined: forwarded, never held.
  void communicator(const communicator_info& communicator) override {
    if (real_ != nullptr) real_->communicator(communicator);
  }

  void communication(const communication_event* events, std::size_t count) override {
    if (real_ != nullptr) real_->communication(events, count);
  }

  void gpu_activities(const gpu_activity* activities, std::size_t count) override {
    if (real_ != nullptr) return real_->gpu_activities(activities, count);
    if (failed_) return;
    const std::size_t kept = admit(count);
    if (kept == 0) return;
    held_activities held;
    held.activities.assign(activities, activities + kept);
    for (gpu_activity& a : held.activities) {
      if (a.name != nullptr) a.name = kernel_names_.emplace(a.name).first->c_str();
      if (a.source_object != nullptr) {
        held.objects.push_back(*a.source_object);
        a.source_object = &held.objects.back();
      }
      if (a.destination_object != nullptr) {
        held.objects.push_back(*a.destination_object);
        a.destination_object = &held.objects.back();
      }
      if (a.samples != nullptr) {
        held.samples.push_back(*a.samples);
        a.samples = &held.samples.back();
      }
      if (a.remote != nullptr) {
        held.remote.push_back(*a.remote);
        a.remote = &held.remote.back();
      }
    }
    held_.emplace_back(std::move(held));
  }

  void gpu_instruction_samples(const gpu_instruction_sample* samples, std::size_t count) override {
    if (real_ != nullptr) return real_->gpu_instruction_samples(samples, count);
    if (failed_) return;
    const std::size_t kept = admit(count);
    if (kept == 0) return;
    held_.emplace_back(held_samples{{samples, samples + kept}});
  }

  void gpu_remote_accesses(const gpu_remote_access* accesses, std::size_t count) override {
    if (real_ != nullptr) return real_->gpu_remote_accesses(accesses, count);
    if (failed_) return;
    const std::size_t kept = admit(count);
    if (kept == 0) return;
    held_remote_accesses held;
    held.accesses.assign(accesses, accesses + kept);
    for (gpu_remote_access& access : held.accesses)
      if (access.object != nullptr) {
        held.objects.push_back(*access.object);
        access.object = &held.objects.back();
      }
    held_.emplace_back(std::move(held));
  }

  // A set is held like a device: one per device, not counted against the bound.
  void gpu_sampled_metrics(const gpu_metric_set& set) override {
    if (real_ != nullptr) return real_->gpu_sampled_metrics(set);
    if (!failed_) {
      held_.emplace_back(set);
      metric_counts_[set.device] = set.metrics.size();
    }
  }

  void gpu_metric_intervals(const gpu_metric_interval* intervals, std::size_t count) override {
    if (real_ != nullptr) return real_->gpu_metric_intervals(intervals, count);
    if (failed_) return;
    const std::size_t kept = admit(count);
    if (kept == 0) return;
    held_metric_intervals held;
    held.intervals.assign(intervals, intervals + kept);
    std::size_t values = 0;
    for (const gpu_metric_interval& interval : held.intervals) values += metric_counts_[interval.device];
    held.values.reserve(values);  // never reallocated below: the copies' pointers stay
    for (gpu_metric_interval& interval : held.intervals) {
      const double* from = interval.values;
      interval.values = held.values.data() + held.values.size();
      held.values.insert(held.values.end(), from, from + metric_counts_[interval.device]);
    }
    held_.emplace_back(std::move(held));
  }

  void join_process_group(process_group& group) override {
    if (real_ == nullptr && !failed_) open(&group);
  }

  void flush(const session_status& status) override {
    if (real_ == nullptr && !failed_ && status.final) open(nullptr);
    if (real_ == nullptr) return;
    if (dropped_ == 0) return real_->flush(status);
    metadata_list runtime_metadata;
    if (status.runtime_metadata != nullptr) runtime_metadata = *status.runtime_metadata;
    runtime_metadata.emplace_back("events-dropped-before-process-group",
                                  static_cast<std::int64_t>(dropped_));
    session_status with_drops = status;
    with_drops.runtime_metadata = &runtime_metadata;
    with_drops.events_dropped += dropped_;
    real_->flush(with_drops);
  }

  void abandon() noexcept override {
    if (real_ != nullptr) real_->abandon();
    held_.clear();
  }

  std::string describe() const override {
    if (real_ != nullptr) return real_->describe();
    return waiting_description_;
  }

 private:
  // How many of `count` events fit under the bound; the rest are counted.
  std::size_t admit(std::size_t count) {
    const std::size_t room = max_held_ > held_events_ ? max_held_ - held_events_ : 0;
    const std::size_t kept = count < room ? count : room;
    held_events_ += kept;
    dropped_ += count - kept;
    return kept;
  }

  void open(process_group* group) {
    std::string error;
    real_ = open_(group, error);
    if (real_ == nullptr) {
      failed_ = true;
      print_message(error.empty() ? std::string_view{"a deferred backend failed to start"}
                                  : std::string_view{error});
      held_.clear();
      return;
    }
    for (held_call& call : held_) std::visit([this](auto& held) { replay(held); }, call);
    held_.clear();
    held_.shrink_to_fit();
    open_held_.clear();
  }

  void replay(held_records& held) {
    held.thread.name = held.thread_name;
    real_->thread_records(held.thread, held.records.data(), held.records.size());
  }
  void replay(held_object_event& held) {
    held.event.object = &held.object;
    real_->data_object(held.event);
  }
  void replay(const gpu_device_info& device) { real_->gpu_device(device); }
  void replay(held_activities& held) {
    real_->gpu_activities(held.activities.data(), held.activities.size());
  }
  void replay(held_samples& held) {
    real_->gpu_instruction_samples(held.samples.data(), held.samples.size());
  }
  void replay(held_remote_accesses& held) {
    real_->gpu_remote_accesses(held.accesses.data(), held.accesses.size());
  }
  void replay(const gpu_metric_set& set) { real_->gpu_sampled_metrics(set); }
  void replay(held_metric_intervals& held) {
    real_->gpu_metric_intervals(held.intervals.data(), held.intervals.size());
  }

  deferred_opener open_;
  std::string waiting_description_;
  std::size_t max_held_;
  std::unique_ptr<backend> real_;
  bool failed_ = false;
  std::vector<held_call> held_;
  // Kernel names, kept for the session: backends may key caches on the pointer.
  std::unordered_set<std::string> kernel_names_;  // node-based: c_str() stays valid
  std::size_t held_events_ = 0;
  std::uint64_t dropped_ = 0;
  std::unordered_map<std::uint64_t, std::vector<bool>> open_held_;  // by tid
  std::unordered_map<std::uint32_t, std::size_t> metric_counts_;     // by device: values per interval
};

}  // namespace

std::unique_ptr<backend> make_deferred_backend(deferred_opener open,
                                               std::string waiting_description,
                                               std::size_t max_held_events) {
  return std::make_unique<deferred_backend>(std::move(open), std::move(waiting_description),
                                            max_held_events);
}

}  // namespace ferret::runtime
