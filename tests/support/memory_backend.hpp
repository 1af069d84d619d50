// memory_backend.hpp — a backend that keeps every record in memory, for
// in-process tests. Register it with FERRET_BACKEND=memory (the test's CTest
// environment) and read the captured data with memory_backend::snapshot().
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ferret/runtime/backend.hpp"

namespace ferret::testing {

struct captured_record {
  std::int64_t time_ns;
  runtime::record_kind kind;
  std::string name;
  std::string domain;
  std::string file;
  std::uint32_t line;
  double value;
  runtime::region_close closed;
  int drain;  // capture::flushes when it was delivered: the drain it came in
};

// A communication event as delivered, and the drain it came in.
struct captured_communication {
  runtime::communication_event event;  // call cleared
  int drain;
};

struct captured_thread {
  std::string name;
  bool is_main = false;
  std::vector<captured_record> records;
};

struct captured_object_event {
  std::int64_t time_ns;
  runtime::data_object_change change;
  runtime::data_object_info object;
};

// A GPU operation as delivered, with what its pointers named copied out.
struct captured_gpu_activity {
  runtime::gpu_activity activity;  // pointers cleared
  std::string context;             // context_path(launch.context, "/", true)
  std::string source_object;
  std::string destination_object;
  std::optional<runtime::gpu_kernel_samples> samples;  // top_reasons cleared
  std::vector<std::string> top_reasons;
  std::optional<runtime::gpu_kernel_remote_traffic> remote;
};

// An instruction sample as delivered, with what its pointers named copied out.
struct captured_instruction_sample {
  std::string context;  // context_path(context, "/", true)
  std::uint32_t device;
  std::string function;
  std::uint64_t pc_offset;
  std::string file;  // "" without line information
  std::uint32_t line;
  std::string reason;
  runtime::gpu_stall stall;
  double samples;
};

// A device-initiated access as delivered, with what its pointers named copied out.
struct captured_remote_access {
  std::string context;  // context_path(context, "/", true)
  std::uint32_t device;
  std::int32_t target_device;
  runtime::memory_access access;
  std::string function;
  std::uint64_t pc_offset;
  std::string file;  // "" without line information
  std::uint32_t line;
  std::uint64_t object_id;
  std::string object;  // "" when not named
  std::uint64_t accesses;
  std::uint64_t bytes;
};

// A sampled-counter interval as delivered, with its values copied out.
struct captured_metric_interval {
  std::uint32_t device;
  std::int64_t begin_ns;
  std::int64_t end_ns;
  std::vector<double> values;
};

struct capture {
  std::vector<captured_gpu_activity> gpu_activities;
  std::vector<runtime::gpu_device_info> gpu_devices;
  std::vector<captured_instruction_sample> instruction_samples;
  std::vector<captured_remote_access> remote_accesses;
  std::vector<runtime::gpu_metric_set> metric_sets;  // in the order announced
  std::vector<captured_metric_interval> metric_intervals;
  // Per gpu_metric_intervals call, its intervals' devices: a set must come first.
  std::vector<std::string> metric_calls;
  std::map<std::uint64_t, captured_thread> threads;  // by tid
  std::vector<captured_object_event> objects;
  std::vector<captured_communication> communication;
  runtime::metadata_list user_metadata;
  runtime::metadata_list runtime_metadata;
  std::uint64_t events_recorded = 0;
  std::uint64_t events_dropped = 0;
  int flushes = 0;
  bool finished = false;
};

class memory_backend final : public runtime::backend {
 public:
  static capture snapshot();
  static void clear();

  void thread_records(const runtime::thread_info& thread, const runtime::record* records,
                      std::size_t count) override;
  void data_object(const runtime::data_object_event& event) override;
  void flush(const runtime::session_status& status) override;
  void gpu_device(const runtime::gpu_device_info& device) override;
  void gpu_activities(const runtime::gpu_activity* activities, std::size_t count) override;
  void gpu_instruction_samples(const runtime::gpu_instruction_sample* samples,
                               std::size_t count) override;
  void gpu_remote_accesses(const runtime::gpu_remote_access* accesses, std::size_t count) override;
  void gpu_sampled_metrics(const runtime::gpu_metric_set& set) override;
  void gpu_metric_intervals(const runtime::gpu_metric_interval* intervals, std::size_t count) override;
  void communication(const runtime::communication_event* events, std::size_t count) override;
  void abandon() noexcept override {}
  std::string describe() const override { return "memory backend"; }
};

}  // namespace ferret::testing
