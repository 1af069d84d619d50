#include "memory_backend.hpp"

#include <cstdlib>

namespace ferret::testing {
namespace {

std::mutex g_mutex;
capture g_capture;

std::unique_ptr<runtime::backend> make(const runtime::backend_context&, std::string&) {
  return std::make_unique<memory_backend>();
}

}  // namespace

FERRET_REGISTER_BACKEND("memory", "records kept in memory for tests", make);

// A test linking this backend selects it when run by hand (before its first
// annotation starts the runtime); CTest's environment takes precedence.
[[maybe_unused]] const bool environment_defaults = [] {
  setenv("FERRET_BACKEND", "memory", 0);
  setenv("FERRET_FLUSH_INTERVAL", "0", 0);
  setenv("FERRET_VERBOSE", "0", 0);
  return true;
}();

capture memory_backend::snapshot() {
  std::lock_guard lock{g_mutex};
  return g_capture;
}

void memory_backend::clear() {
  std::lock_guard lock{g_mutex};
  g_capture.threads.clear();
  g_capture.objects.clear();
  g_capture.gpu_activities.clear();
  g_capture.gpu_devices.clear();
  g_capture.instruction_samples.clear();
  g_capture.remote_accesses.clear();
  g_capture.metric_intervals.clear();
  g_capture.metric_calls.clear();
  g_capture.communication.clear();
}

void memory_backend::gpu_sampled_metrics(const runtime::gpu_metric_set& set) {
  std::lock_guard lock{g_mutex};
  g_capture.metric_sets.push_back(set);
  g_capture.metric_calls.push_back("set " + std::to_string(set.device));
}

void memory_backend::gpu_metric_intervals(const runtime::gpu_metric_interval* intervals,
                                          std::size_t count) {
  std::lock_guard lock{g_mutex};
  std::string call = "intervals";
  for (std::size_t i = 0; i < count; ++i) {
    const runtime::gpu_metric_interval& interval = intervals[i];
    std::size_t metrics = 0;
    for (const runtime::gpu_metric_set& set : g_capture.metric_sets)
      if (set.device == interval.device) metrics = set.metrics.size();
    g_capture.metric_intervals.push_back({interval.device, interval.begin_ns, interval.end_ns,
                                          {interval.values, interval.values + metrics}});
    call += " " + std::to_string(interval.device);
  }
  g_capture.metric_calls.push_back(call);
}

void memory_backend::gpu_device(const runtime::gpu_device_info& device) {
  std::lock_guard lock{g_mutex};
  g_capture.gpu_devices.push_back(device);
}

void memory_backend::gpu_activities(const runtime::gpu_activity* activities, std::size_t count) {
  std::lock_guard lock{g_mutex};
  for (std::size_t i = 0; i < count; ++i) {
    captured_gpu_activity out{activities[i], {}, {}, {}, {}, {}, {}};
    out.context = runtime::context_path(out.activity.launch.context, "/", true);
    if (out.activity.source_object != nullptr) out.source_object = out.activity.source_object->name;
    if (out.activity.destination_object != nullptr)
      out.destination_object = out.activity.destination_object->name;
    out.activity.launch.context = nullptr;
    out.activity.source_object = nullptr;
    out.activity.destination_object = nullptr;
    if (out.activity.samples != nullptr) {
      out.samples = *out.activity.samples;
      for (const runtime::gpu_stall_reason*& reason : out.samples->top_reasons) {
        if (reason != nullptr) out.top_reasons.push_back(reason->name);
        reason = nullptr;
      }
      out.activity.samples = nullptr;
    }
    if (out.activity.remote != nullptr) {
      out.remote = *out.activity.remote;
      out.activity.remote = nullptr;
    }
    g_capture.gpu_activities.push_back(std::move(out));
  }
}

void memory_backend::gpu_instruction_samples(const runtime::gpu_instruction_sample* samples,
                                             std::size_t count) {
  std::lock_guard lock{g_mutex};
  for (std::size_t i = 0; i < count; ++i) {
    const runtime::gpu_instruction_sample& s = samples[i];
    g_capture.instruction_samples.push_back(
        {runtime::context_path(s.context, "/", true), s.device, s.function, s.pc_offset,
         s.file != nullptr ? s.file : "", s.line, s.reason->name, s.reason->stall, s.samples});
  }
}

void memory_backend::gpu_remote_accesses(const runtime::gpu_remote_access* accesses,
                                         std::size_t count) {
  std::lock_guard lock{g_mutex};
  for (std::size_t i = 0; i < count; ++i) {
    const runtime::gpu_remote_access& a = accesses[i];
    g_capture.remote_accesses.push_back(
        {runtime::context_path(a.context, "/", true), a.device, a.target_device, a.access,
         a.function, a.pc_offset, a.file != nullptr ? a.file : "", a.line, a.object_id,
         a.object != nullptr ? a.object->name : "", a.accesses, a.bytes});
  }
}

void memory_backend::thread_records(const runtime::thread_info& thread,
                                    const runtime::record* records, std::size_t count) {
  std::lock_guard lock{g_mutex};
  captured_thread& out = g_capture.threads[thread.tid];
  out.name = std::string{thread.name};
  out.is_main = thread.is_main;
  for (std::size_t i = 0; i < count; ++i) {
    const runtime::record& r = records[i];
    out.records.push_back({r.time_ns, r.kind, r.name->name, r.name->domain, r.name->file,
                           r.name->line, r.value, r.closed, g_capture.flushes});
  }
}

void memory_backend::communication(const runtime::communication_event* events, std::size_t count) {
  std::lock_guard lock{g_mutex};
  for (std::size_t i = 0; i < count; ++i) {
    g_capture.communication.push_back({events[i], g_capture.flushes});
    g_capture.communication.back().event.call = nullptr;
  }
}

void memory_backend::data_object(const runtime::data_object_event& event) {
  std::lock_guard lock{g_mutex};
  g_capture.objects.push_back({event.time_ns, event.change, *event.object});
}

void memory_backend::flush(const runtime::session_status& status) {
  std::lock_guard lock{g_mutex};
  g_capture.user_metadata = *status.user_metadata;
  g_capture.runtime_metadata = *status.runtime_metadata;
  g_capture.events_recorded = status.events_recorded;
  g_capture.events_dropped = status.events_dropped;
  ++g_capture.flushes;
  g_capture.finished = status.final;
}

}  // namespace ferret::testing
