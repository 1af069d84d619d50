// The OTF2 backend. See otf2_backend.hpp for the layout.
#include "otf2_backend.hpp"

#include <ferret/runtime/deferred_backend.hpp>
#include <ferret/runtime/runtime.hpp>

#include <fmt/format.h>
#include <otf2/otf2.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "otf2_chunks.hpp"
#include "otf2_collectives.hpp"
#include "otf2_definitions.hpp"
#include "otf2_errors.hpp"
#include "otf2_text.hpp"

namespace ferret::otf2 {
namespace {

using runtime::gpu_activity;
using runtime::gpu_operation;
using runtime::name_info;
using runtime::record;
using runtime::record_kind;
using runtime::session_info;
using runtime::session_status;
using runtime::thread_info;

constexpr std::uint32_t no_ref = std::numeric_limits<std::uint32_t>::max();
constexpr const char* archive_name = "traces";

// Any metadata value as text: integers exactly, floating point as the shortest
// text that reads back as the same double.
std::string to_text(const runtime::metadata_value& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>)
          return v;
        else
          return fmt::format("{}", v);
      },
      value);
}

bool is_integer(const runtime::metadata_value& value) {
  return !std::holds_alternative<std::string>(value) && !std::holds_alternative<double>(value);
}

// The role Score-P gives an MPI call's region (what Scalasca's analyses key on).
OTF2_RegionRole mpi_region_role(std::string_view call) {
  constexpr std::string_view one_to_all[] = {"MPI_Bcast", "MPI_Scatter", "MPI_Scatterv"};
  constexpr std::string_view all_to_one[] = {"MPI_Reduce", "MPI_Gather", "MPI_Gatherv"};
  constexpr std::string_view all_to_all[] = {"MPI_Allreduce", "MPI_Allgather", "MPI_Allgatherv",
                                             "MPI_Alltoall", "MPI_Alltoallv", "MPI_Alltoallw",
                                             "MPI_Reduce_scatter", "MPI_Reduce_scatter_block"};
  constexpr std::string_view other[] = {"MPI_Scan", "MPI_Exscan"};
  const auto among = [call](const auto& names) {
    return std::find(std::begin(names), std::end(names), call) != std::end(names);
  };
  if (call == "MPI_Barrier") return OTF2_REGION_ROLE_BARRIER;
  if (among(one_to_all)) return OTF2_REGION_ROLE_COLL_ONE2ALL;
  if (among(all_to_one)) return OTF2_REGION_ROLE_COLL_ALL2ONE;
  if (among(all_to_all)) return OTF2_REGION_ROLE_COLL_ALL2ALL;
  if (among(other)) return OTF2_REGION_ROLE_COLL_OTHER;
  if (call.find("send") != std::string_view::npos || call.find("Send") != std::string_view::npos ||
      call.find("Recv") != std::string_view::npos || call.find("Wait") != std::string_view::npos ||
      call.find("Test") != std::string_view::npos || call.find("probe") != std::string_view::npos ||
      call.find("Probe") != std::string_view::npos)
    return OTF2_REGION_ROLE_POINT2POINT;
  return OTF2_REGION_ROLE_FUNCTION;
}

struct location {
  std::string name;
  OTF2_LocationType type;
  std::uint32_t group;  // location group
  OTF2_EvtWriter* writer;
  std::uint64_t last = 0;    // last timestamp written on it
  std::vector<std::uint32_t> stack;  // host threads: the regions open
  // Host threads: MPI events waiting for the thread's records around them.
  std::deque<runtime::communication_event> communication;
};

struct region_def {
  std::uint32_t name;  // string refs
  std::uint32_t description;
  OTF2_RegionRole role;
  OTF2_Paradigm paradigm;
  std::uint32_t file;
  std::uint32_t line;
};

// Attributes on GPU events (Enter of kernels and memsets, RmaGet/RmaPut of
// copies): what Score-P users find in the event details in Vampir. And on the
// Leave of a region that the runtime ended (runtime::region_close).
enum attribute : std::uint32_t {
  attribute_correlation,
  attribute_context,
  attribute_launch,
  attribute_grid,
  attribute_block,
  attribute_registers,
  attribute_static_shared_memory,
  attribute_dynamic_shared_memory,
  attribute_local_memory,
  attribute_occupancy,
  attribute_source_object,
  attribute_destination_object,
  attribute_object,
  attribute_memory_kind,
  attribute_source_device,
  attribute_destination_device,
  attribute_closed,
  attribute_count
};

struct attribute_def {
  const char* name;
  const char* description;
  OTF2_Type type;
};

constexpr attribute_def attribute_defs[attribute_count] = {
    {"correlation id", "the CUDA API call's correlation id", OTF2_TYPE_UINT64},
    {"calling context", "annotated regions open when the operation was launched", OTF2_TYPE_STRING},
    {"launch", "the API call that launched the operation", OTF2_TYPE_STRING},
    {"grid", "grid size x,y,z", OTF2_TYPE_STRING},
    {"block", "block size x,y,z", OTF2_TYPE_STRING},
    {"registers per thread", "", OTF2_TYPE_UINT32},
    {"static shared memory", "bytes per block", OTF2_TYPE_UINT32},
    {"dynamic shared memory", "bytes per block", OTF2_TYPE_UINT32},
    {"local memory per thread", "bytes", OTF2_TYPE_UINT32},
    {"theoretical occupancy", "active warps per SM / maximum", OTF2_TYPE_DOUBLE},
    {"source object", "the data object copied from", OTF2_TYPE_STRING},
    {"destination object", "the data object copied to", OTF2_TYPE_STRING},
    {"object", "the data object set", OTF2_TYPE_STRING},
    {"memory kind", "", OTF2_TYPE_STRING},
    {"source device", "-1 for host memory", OTF2_TYPE_INT32},
    {"destination device", "-1 for host memory", OTF2_TYPE_INT32},
    {"ferret", "why ferret ended the region: closed at exit, closed by unbalanced end",
     OTF2_TYPE_STRING},
};

// OTF2 keeps markers in memory until the archive is closed: at most this many
// (marks and data-object changes); the others are counted.
constexpr std::uint64_t max_markers = 100'000;

struct metric_def {
  std::uint32_t name;  // string refs
  std::uint32_t description;
  std::uint32_t unit;
  OTF2_MetricMode mode;
  OTF2_MetricOccurrence occurrence;
  OTF2_Type value_type;
};

// A sampled kernel's instruction samples as Score-P writes hardware counters:
// per stream location, totals since the start (GINST, its stall classes
// GINST:STL_*, GSAMP:EXP) written just before the kernel's Enter and its Leave,
// so that a reader takes the kernel's own samples as the difference.
constexpr std::size_t sample_metric_count = runtime::gpu_stall_classes + 2;
constexpr std::size_t samples_metric = runtime::gpu_stall_classes;           // GINST
constexpr std::size_t expected_samples_metric = runtime::gpu_stall_classes + 1;  // GSAMP:EXP

struct location_group_def {
  std::uint32_t name;
  OTF2_LocationGroupType type;
  std::uint32_t creator;  // creating group, no_ref for the process
};

OTF2_FlushType pre_flush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) { return OTF2_FLUSH; }

// Event chunks of OTF2's smallest size: OTF2 fills a buffer's last chunk whole
// when it writes it, at the latest when the location's buffer is closed
// (otf2_chunks.hpp). The definition chunk size is set at the final flush, from
// the largest definition record (definition_chunk_size).
constexpr std::uint64_t chunk_size_events = OTF2_CHUNK_SIZE_MIN;

std::vector<OTF2_Archive*>& abandoned_archives() {
  // Never destroyed, so that the handles stay reachable to the end.
  static auto* archives = new std::vector<OTF2_Archive*>;
  return *archives;
}

class otf2_backend final : public runtime::backend {
 public:
  /// `group`: the ranks writing the archive together, nullptr for a process alone.
  otf2_backend(const session_info& session, std::string directory, runtime::process_group* group)
      : session_(session),
        directory_(std::move(directory)),
        group_(group),
        location_base_(group != nullptr ? std::uint64_t{group->rank()} << 32U : 0) {}

  // Never writes (see abandon()); an archive not closed by a final flush is left as it is.
  ~otf2_backend() override { OTF2_AttributeList_Delete(attributes_); }
  otf2_backend(const otf2_backend&) = delete;
  otf2_backend& operator=(const otf2_backend&) = delete;

  /// Opens the archive; returns "" or the reason it failed.
  std::string start() {
    const otf2_error_scope errors{errors_};
    archive_ = OTF2_Archive_Open(directory_.c_str(), archive_name, OTF2_FILEMODE_WRITE,
                                 chunk_size_events, OTF2_UNDEFINED_UINT64,
                                 OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (archive_ == nullptr) return "OTF2_Archive_Open failed";
    flush_callbacks_.otf2_pre_flush = pre_flush;
    // The BufferFlush record OTF2 adds ends at this time: the last one written on
    // the location, so that its events stay in time order.
    flush_callbacks_.otf2_post_flush = [](void* data, OTF2_FileType, OTF2_LocationRef location) {
      return static_cast<otf2_backend*>(data)->last_time(location);
    };
    if (!ok(OTF2_Archive_SetFlushCallbacks(archive_, &flush_callbacks_, this), "flush callbacks") ||
        !ok(OTF2_Archive_SetMemoryCallbacks(archive_, &chunk_pool::callbacks, &chunks_),
            "memory callbacks") ||
        !ok(group_ != nullptr ? set_collective_callbacks(archive_, *group_)
                              : OTF2_Archive_SetSerialCollectiveCallbacks(archive_),
            "collective callbacks") ||
        !ok(OTF2_Archive_SetCreator(archive_, ("ferret " + session_.ferret_version).c_str()),
            "creator") ||
        !ok(OTF2_Archive_SetMachineName(archive_, archive_text(session_.hostname, 1024).c_str()),
            "machine name") ||
        !ok(OTF2_Archive_SetDescription(archive_, archive_text(session_.command_line, 16 * 1024).c_str()),
            "description") ||
        !ok(OTF2_Archive_OpenEvtFiles(archive_), "opening the event files"))
      return error_;
    machine_name_ = string_ref("machine");
    node_name_ = string_ref(session_.hostname.empty() ? "node" : session_.hostname);
    // Named as Score-P names MPI processes, else after the program and its pid.
    const std::string process_name =
        group_ != nullptr ? fmt::format("MPI Rank {}", group_->rank())
                          : fmt::format("{} ({})", session_.executable, session_.pid);
    groups_.push_back({string_ref(process_name), OTF2_LOCATION_GROUP_TYPE_PROCESS, no_ref});
    return {};
  }

  void thread_records(const thread_info& thread, const record* records,
                      std::size_t count) override {
    if (closed_) return;
    const otf2_error_scope errors{errors_};
    const std::uint32_t id = thread_location(thread.tid, thread.is_main, thread.name);
    for (std::size_t i = 0; i < count && !failed_; ++i) {
      const record& r = records[i];
      // An MPI event goes inside its call's region: after the region's Enter
      // (even at the same time), before whatever comes later.
      write_communication_before(id, r.time_ns, r.kind == record_kind::region_begin);
      switch (r.kind) {
        case record_kind::region_begin: {
          const std::uint32_t region = region_for(*r.name);
          location& where = locations_[id];
          where.stack.push_back(region);
          ok(OTF2_EvtWriter_Enter(where.writer, nullptr, stamp(where, r.time_ns), region), "Enter");
          break;
        }
        case record_kind::region_end: end_region(id, r); break;
        case record_kind::mark: write_mark(id, r); break;
        case record_kind::counter: write_counter(id, r); break;
      }
    }
  }

  void communicator(const runtime::communicator_info& communicator) override {
    if (closed_) return;
    mpi_comm_def definition{string_ref(communicator.name), {}};
    definition.members.assign(communicator.members.begin(), communicator.members.end());
    mpi_comm_of_.emplace(communicator.id, static_cast<std::uint32_t>(mpi_comms_.size()));
    mpi_comms_.push_back(std::move(definition));
    // Score-P's COMM_LOCATIONS group of MPI holds each rank's main thread.
    if (mpi_location_ == no_ref) mpi_location_ = thread_location(session_.pid, true, {});
  }

  void communication(const runtime::communication_event* events, std::size_t count) override {
    if (closed_) return;
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint64_t tid = events[i].tid;
      locations_[thread_location(tid, tid == session_.pid, {})].communication.push_back(events[i]);
    }
  }

  void data_object(const runtime::data_object_event& event) override {
    if (closed_ || event.object == nullptr) return;
    const runtime::data_object_info& object = *event.object;
    const bool registered = event.change == runtime::data_object_change::registered;
    const std::string on_gpu = object.device < 0 ? "" : fmt::format(" on GPU {}", object.device);
    const std::string text =
        registered ? fmt::format("{} registered: {} bytes of {} memory{} at {:#x}", object.name,
                                 object.bytes, runtime::to_string(object.memory), on_gpu,
                                 object.address)
                   : fmt::format("{} unregistered", object.name);
    const std::uint32_t id =
        thread_location(event.tid != 0 ? event.tid : session_.pid, event.tid == session_.pid, {});
    write_marker("data object", id, event.time_ns, text);
  }

  void gpu_device(const runtime::gpu_device_info& device) override {
    if (closed_) return;
    const std::uint32_t group = gpu_group(device.id);
    groups_[group].name = string_ref(fmt::format("GPU {}: {}", device.id, device.name));
  }

  // Sampled counters (FERRET_CUDA_METRICS_SAMPLING): one metric per counter,
  // shared by the GPUs, on a metric location "GPU <n> sampled counters" in
  // the GPU's group. Counts (bytes, cycles) as Score-P writes hardware
  // counters: totals since the start (ACCUMULATED_START; 0 at the first
  // interval's start, then at each interval's end), so that a reader's
  // difference is the interval's count; levels (percent) as the value over
  // the interval since the previous point (ABSOLUTE_LAST), at its end.
  void gpu_sampled_metrics(const runtime::gpu_metric_set& set) override {
    if (closed_) return;
    sampled_device& device = sampled_[set.device];
    device.metrics.clear();
    device.totals.assign(set.metrics.size(), 0.0);
    for (const runtime::gpu_metric& metric : set.metrics) {
      const std::string name = metric.label != nullptr ? metric.label : (metric.name != nullptr ? metric.name : "");
      const std::string unit = metric.unit != nullptr ? metric.unit : "";
      auto [it, inserted] = sampled_metric_of_.try_emplace({name, unit, metric.accumulates}, no_ref);
      if (inserted)
        it->second = add_metric(name, unit,
                                metric.accumulates ? OTF2_METRIC_ACCUMULATED_START : OTF2_METRIC_ABSOLUTE_LAST,
                                OTF2_METRIC_ASYNCHRONOUS,
                                metric.name != nullptr ? std::string_view{metric.name} : std::string_view{});
      device.metrics.push_back({it->second, metric.accumulates});
    }
  }

  void gpu_metric_intervals(const runtime::gpu_metric_interval* intervals,
                            std::size_t count) override {
    if (closed_) return;
    const otf2_error_scope errors{errors_};
    for (std::size_t i = 0; i < count && !failed_; ++i) {
      const runtime::gpu_metric_interval& interval = intervals[i];
      const auto found = sampled_.find(interval.device);
      if (found == sampled_.end() || interval.values == nullptr) continue;
      sampled_device& device = found->second;
      if (device.location == no_ref)
        device.location = add_location(fmt::format("GPU {} sampled counters", interval.device),
                                       OTF2_LOCATION_TYPE_METRIC, gpu_group(interval.device));
      if (!device.started) {
        for (std::size_t m = 0; m < device.metrics.size(); ++m)
          if (device.metrics[m].accumulates)
            write_metric(device.location, interval.begin_ns, device.metrics[m].metric, 0.0);
        device.started = true;
      }
      for (std::size_t m = 0; m < device.metrics.size(); ++m) {
        const double value = interval.values[m];
        if (!std::isfinite(value)) continue;
        double sample = value;
        if (device.metrics[m].accumulates) sample = device.totals[m] += value;
        write_metric(device.location, interval.end_ns, device.metrics[m].metric, sample);
      }
    }
  }

  void gpu_activities(const gpu_activity* activities, std::size_t count) override {
    if (closed_) return;
    const otf2_error_scope errors{errors_};
    // Per stream, in time order: the writer rejects time going backwards.
    std::map<std::uint32_t, std::vector<const gpu_activity*>> by_location;
    for (std::size_t i = 0; i < count; ++i) {
      const gpu_activity& a = activities[i];
      switch (a.operation) {
        case gpu_operation::kernel:
        case gpu_operation::memcpy:
        case gpu_operation::memset:
          by_location[stream_location(a.device, a.stream)].push_back(&a);
          break;
        case gpu_operation::allocation:
        case gpu_operation::release:
          by_location[memory_location(a.device)].push_back(&a);
          break;
        case gpu_operation::synchronization:
          // A wait overlaps the stream's kernels, which a location's nesting
          // cannot show; the host thread's API call region shows the wait.
          ++synchronizations_not_written_;
          break;
      }
    }
    for (auto& [id, list] : by_location) {
      std::stable_sort(list.begin(), list.end(), [](const gpu_activity* a, const gpu_activity* b) {
        return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns < b->end_ns;
      });
      for (const gpu_activity* a : list) {
        if (failed_) return;
        write_gpu_activity(id, *a);
      }
    }
  }

  void flush(const session_status& status) override {
    if (closed_) return;
    events_recorded_ = status.events_recorded;
    events_dropped_ = status.events_dropped;
    if (!status.final) return;  // OTF2's writers flush full chunks by themselves
    closed_ = true;
    if (status.user_metadata != nullptr) remember_clock_offsets(*status.user_metadata);
    const otf2_error_scope errors{errors_};
    // A run's ranks close the archive together, whatever failed on one of them.
    if (failed_ && group_ == nullptr) {
      OTF2_Archive_SetDefChunkSize(archive_, OTF2_CHUNK_SIZE_MIN);  // for the anchor file Close writes
      OTF2_Archive_Close(archive_);
      archive_ = nullptr;
      report_problems();
      return;
    }
    if (group_ != nullptr && !group_->collectives_available()) {
      // The program ended without MPI_Finalize: the other ranks may never join a
      // collective, so the archive cannot be completed (and must not hang us).
      runtime::print_message(fmt::format(
          "the OTF2 archive '{}' is incomplete: rank {} ended outside MPI_Finalize (an exit "
          "without it, or a signal)",
          directory_, group_->rank()));
      failed_ = true;
      error_ = "the rank ended outside MPI_Finalize";
      abandon();
      return;
    }
    // The main thread is always a location, events or not: readers reject an
    // archive without locations (docs/formats.md, "Nothing recorded").
    thread_location(session_.pid, true, {});
    for (std::uint32_t id = 0; id < locations_.size(); ++id)
      write_communication_before(id, INT64_MAX, false);
    std::vector<std::uint64_t> event_counts(locations_.size(), 0);
    // Newest first: OTF2 finds the writer to close in a list of the open ones,
    // newest at its head (oldest first, closing n writers takes n²/2 steps).
    for (std::size_t id = locations_.size(); id-- > 0;) {
      OTF2_EvtWriter_GetNumberOfEvents(locations_[id].writer, &event_counts[id]);
      ok(OTF2_Archive_CloseEvtWriter(archive_, locations_[id].writer), "closing an event writer");
    }
    ok(OTF2_Archive_CloseEvtFiles(archive_), "closing the event files");
    const definitions local = local_definitions(event_counts, status);
    if (group_ == nullptr)
      write_definitions(local, nullptr, definition_chunk_size(local, {}));
    else
      unify_and_write_definitions(local);
    ok(OTF2_Archive_Close(archive_), "closing the archive");
    archive_ = nullptr;
    report_problems();
  }

  void abandon() noexcept override {
    // A fork child: the parent owns the archive. OTF2 has no way to drop an open
    // archive without writing, so the handle is never closed; it stays reachable
    // from abandoned_archives (no leak report), and its memory is the child's copy.
    if (archive_ != nullptr) {
      try {
        abandoned_archives().push_back(archive_);
      } catch (...) {  // out of memory: lose the handle rather than write
      }
    }
    archive_ = nullptr;
    closed_ = true;
    locations_.clear();
    strings_.clear();
    string_ids_.clear();
  }

  std::string describe() const override {
    std::string line = fmt::format("otf2 archive: {}/{}.otf2 ({} locations)", directory_,
                                   archive_name, locations_.size());
    // OTF2 may report an error and still return success: the archive is then
    // as suspect as after a failed call.
    if (failed_ || errors_.count > 0)
      fmt::format_to(std::back_inserter(line), ", incomplete: {}", failed_ ? error_ : errors_.first);
    if (errors_.count > 1) fmt::format_to(std::back_inserter(line), " ({} errors from OTF2)", errors_.count);
    if (markers_not_written_ > 0)
      fmt::format_to(std::back_inserter(line),
                     "; {} marks and data-object changes not written: OTF2 holds markers in memory "
                     "until the end, ferret at most {} (FERRET::MARKERS_NOT_WRITTEN)",
                     markers_not_written_, max_markers);
    return line;
  }

 private:
  std::uint64_t last_time(OTF2_LocationRef location) const noexcept {
    const std::uint64_t local = location - location_base_;  // wraps for other ranks' ids
    return local < locations_.size() ? locations_[local].last : latest_;
  }

  // The id of local location `id` in the archive: rank << 32 | id, unique across
  // ranks without a collective (rank 0's ids are those of a process alone).
  std::uint64_t global_location(std::uint32_t id) const noexcept { return location_base_ + id; }

  bool ok(OTF2_ErrorCode code, const char* what) {
    if (code == OTF2_SUCCESS) return true;
    if (!failed_) {
      failed_ = true;
      error_ = fmt::format("{}: {}", what,
                           errors_.first.empty() ? OTF2_Error_GetDescription(code) : errors_.first);
    }
    return false;
  }

  // One line per archive that failed or lost markers: describe() gives it at
  // exit from FERRET_VERBOSE=1 on; below that only errors and losses are
  // shown, so it is said here.
  void report_problems() const {
    if ((failed_ || errors_.count > 0 || markers_not_written_ > 0) && runtime::verbosity() < 1)
      runtime::print_message(describe());
  }

  // A time on the runtime's clock as an OTF2 timestamp on `where`, never
  // earlier than the last one written there.
  std::uint64_t stamp(location& where, std::int64_t time_ns) {
    std::uint64_t t = offset_ + static_cast<std::uint64_t>(std::max<std::int64_t>(time_ns, 0));
    if (time_ns < 0 || t < where.last) {
      ++clamped_timestamps_;
      t = std::max(t, where.last);
    }
    where.last = t;
    latest_ = std::max(latest_, t);
    return t;
  }

  std::uint32_t string_ref(const std::string& text) {
    const auto [it, inserted] =
        string_ids_.emplace(text, static_cast<std::uint32_t>(strings_.size()));
    if (inserted) strings_.push_back(archive_text(text, longest_string));
    return it->second;
  }

  std::uint32_t add_location(std::string name, OTF2_LocationType type, std::uint32_t group) {
    const auto id = static_cast<std::uint32_t>(locations_.size());
    OTF2_EvtWriter* writer = OTF2_Archive_GetEvtWriter(archive_, global_location(id));
    if (writer == nullptr && !failed_) {
      failed_ = true;
      error_ = "OTF2_Archive_GetEvtWriter failed";
    }
    locations_.push_back(location{std::move(name), type, group, writer, offset_, {}, {}});
    return id;
  }

  std::uint32_t thread_location(std::uint64_t tid, bool is_main, std::string_view name) {
    auto it = threads_.find(tid);
    if (it == threads_.end()) {
      it = threads_.emplace(tid, add_location({}, OTF2_LOCATION_TYPE_CPU_THREAD, 0)).first;
    }
    location& where = locations_[it->second];
    if (!name.empty())
      where.name.assign(name);
    else if (where.name.empty())
      where.name = runtime::unnamed_thread_label(tid, is_main);
    return it->second;
  }

  std::uint32_t gpu_group(std::uint32_t device) {
    const auto it = gpus_.find(device);
    if (it != gpus_.end()) return it->second;
    const auto group = static_cast<std::uint32_t>(groups_.size());
    groups_.push_back(
        {string_ref(fmt::format("GPU {}", device)), OTF2_LOCATION_GROUP_TYPE_ACCELERATOR, 0});
    gpus_.emplace(device, group);
    return group;
  }

  std::uint32_t stream_location(std::uint32_t device, std::uint32_t stream) {
    const std::uint64_t key = (std::uint64_t{device} << 32U) | stream;
    const auto it = streams_.find(key);
    if (it != streams_.end()) return it->second;
    const std::uint32_t id = add_location(fmt::format("GPU {} stream {}", device, stream),
                                          OTF2_LOCATION_TYPE_ACCELERATOR_STREAM, gpu_group(device));
    streams_.emplace(key, id);
    return id;
  }

  std::uint32_t add_region(const std::string& name, const std::string& description,
                           OTF2_RegionRole role, OTF2_Paradigm paradigm, const std::string& file,
                           std::uint32_t line) {
    const auto id = static_cast<std::uint32_t>(regions_.size());
    regions_.push_back(region_def{string_ref(name), string_ref(description), role, paradigm,
                                  string_ref(file), line});
    return id;
  }

  std::uint32_t region_for(const name_info& name) {
    if (name.id >= region_of_name_.size()) region_of_name_.resize(name.id + 1U, no_ref);
    std::uint32_t& region = region_of_name_[name.id];
    if (region == no_ref) {
      const bool cuda = name.domain == "cuda";
      const bool mpi = name.domain == "mpi";
      region = add_region(name.name, name.domain,
                          mpi ? mpi_region_role(name.name) : OTF2_RegionRole{OTF2_REGION_ROLE_FUNCTION},
                          cuda  ? OTF2_PARADIGM_CUDA
                          : mpi ? OTF2_PARADIGM_MPI
                                : OTF2_PARADIGM_USER,
                          name.file, name.line);
    }
    return region;
  }

  // The MPI layer's clock offsets to rank 0 (docs/mpi.md): its run metadata
  // mpi-clock-{init,finalize}-{local,offset}-ns, on CLOCK_MONOTONIC_RAW like
  // this archive's timestamps.
  void remember_clock_offsets(const runtime::metadata_list& metadata) {
    const auto value = [&metadata](const std::string& key) -> std::optional<std::int64_t> {
      for (const auto& [name, v] : metadata)
        if (name == key && std::holds_alternative<std::int64_t>(v)) return std::get<std::int64_t>(v);
      return std::nullopt;
    };
    for (const char* when : {"init", "finalize"}) {
      const std::string prefix = std::string{"mpi-clock-"} + when;
      const auto local = value(prefix + "-local-ns"), offset = value(prefix + "-offset-ns");
      if (local && offset && *local > 0) clock_offsets_.emplace_back(*local, *offset);
    }
    std::sort(clock_offsets_.begin(), clock_offsets_.end());
  }

  // Writes the thread's MPI events before `time_ns` (at it too, unless
  // `before_only`), as Score-P writes them.
  void write_communication_before(std::uint32_t id, std::int64_t time_ns, bool before_only) {
    std::deque<runtime::communication_event>& waiting = locations_[id].communication;
    while (!waiting.empty() && !failed_ &&
           (waiting.front().time_ns < time_ns || (!before_only && waiting.front().time_ns == time_ns))) {
      write_communication(id, waiting.front());
      waiting.pop_front();
    }
  }

  void write_communication(std::uint32_t id, const runtime::communication_event& e) {
    using runtime::communication_kind;
    const auto comm = mpi_comm_of_.find(e.communicator);
    if (comm == mpi_comm_of_.end() && e.kind != communication_kind::collective_begin &&
        e.kind != communication_kind::isend_complete && e.kind != communication_kind::irecv_request) {
      ++mpi_events_without_communicator_;
      return;
    }
    const OTF2_CommRef ref = comm != mpi_comm_of_.end() ? comm->second : OTF2_UNDEFINED_COMM;
    location& where = locations_[id];
    const std::uint64_t t = stamp(where, e.time_ns);
    const auto tag = static_cast<std::uint32_t>(e.tag);
    switch (e.kind) {
      case communication_kind::send:
        ok(OTF2_EvtWriter_MpiSend(where.writer, nullptr, t, e.peer, ref, tag, e.bytes), "MpiSend");
        break;
      case communication_kind::isend:
        ok(OTF2_EvtWriter_MpiIsend(where.writer, nullptr, t, e.peer, ref, tag, e.bytes, e.request),
           "MpiIsend");
        break;
      case communication_kind::isend_complete:
        ok(OTF2_EvtWriter_MpiIsendComplete(where.writer, nullptr, t, e.request), "MpiIsendComplete");
        break;
      case communication_kind::receive:
        ok(OTF2_EvtWriter_MpiRecv(where.writer, nullptr, t, e.peer, ref, tag, e.bytes), "MpiRecv");
        break;
      case communication_kind::irecv_request:
        ok(OTF2_EvtWriter_MpiIrecvRequest(where.writer, nullptr, t, e.request), "MpiIrecvRequest");
        break;
      case communication_kind::irecv:
        ok(OTF2_EvtWriter_MpiIrecv(where.writer, nullptr, t, e.peer, ref, tag, e.bytes, e.request),
           "MpiIrecv");
        break;
      case communication_kind::collective_begin:
        ok(OTF2_EvtWriter_MpiCollectiveBegin(where.writer, nullptr, t), "MpiCollectiveBegin");
        break;
      case communication_kind::collective_end:
        ok(OTF2_EvtWriter_MpiCollectiveEnd(
               where.writer, nullptr, t, static_cast<OTF2_CollectiveOp>(e.collective), ref,
               e.peer == runtime::no_rank ? OTF2_UNDEFINED_UINT32 : e.peer, e.bytes, e.bytes_received),
           "MpiCollectiveEnd");
        break;
    }
  }

  // Leaves the innermost open region: the runtime delivers nested records (see
  // runtime::record). One that comes with no region open (a backend driven
  // without the runtime) is ignored. An end the runtime supplied says why.
  void end_region(std::uint32_t id, const record& end) {
    location& where = locations_[id];
    if (where.stack.empty()) return;
    const char* why = nullptr;
    switch (end.closed) {
      case runtime::region_close::by_program: break;
      case runtime::region_close::at_exit: why = "closed at exit"; break;
      case runtime::region_close::by_outer_end: why = "closed by unbalanced end"; break;
    }
    if (why != nullptr) {
      OTF2_AttributeList_AddStringRef(attributes_, attribute_closed, string_ref(why));
      attributes_used_ = true;
    }
    ok(OTF2_EvtWriter_Leave(where.writer, why != nullptr ? attributes_ : nullptr,
                            stamp(where, end.time_ns), where.stack.back()),
       "Leave");
    where.stack.pop_back();
  }

  void write_mark(std::uint32_t id, const record& mark) {
    write_marker(mark.name->domain.empty() ? "mark" : mark.name->domain, id, mark.time_ns,
                 mark.name->name);
  }

  // A marker on location `id`; category = the marker definition. Kept until the
  // final flush: the archive's one marker file is written once, by rank 0 for a run.
  void write_marker(const std::string& category, std::uint32_t id, std::int64_t time_ns,
                    const std::string& text) {
    if (markers_ >= max_markers) {
      ++markers_not_written_;
      return;
    }
    auto it = marker_defs_.find(category);
    if (it == marker_defs_.end())
      it = marker_defs_.emplace(category, static_cast<std::uint32_t>(marker_defs_.size())).first;
    const std::uint64_t t =
        offset_ + static_cast<std::uint64_t>(std::max<std::int64_t>(time_ns, 0));
    latest_ = std::max(latest_, t);
    markers_list_.push_back(
        {t, 0, it->second, OTF2_MARKER_SCOPE_LOCATION, global_location(id), archive_text(text, longest_string)});
    ++markers_;
  }

  void write_counter(std::uint32_t id, const record& sample) {
    const name_info& name = *sample.name;
    if (name.id >= metric_of_name_.size()) metric_of_name_.resize(name.id + 1U, no_ref);
    std::uint32_t& metric = metric_of_name_[name.id];
    if (metric == no_ref) metric = add_metric(name.name, "");
    write_metric(id, sample.time_ns, metric, sample.value);
  }

  // Counters and allocated bytes: values at a point, whenever they change.
  std::uint32_t add_metric(const std::string& name, const std::string& unit,
                           OTF2_MetricMode mode = OTF2_METRIC_ABSOLUTE_POINT,
                           OTF2_MetricOccurrence occurrence = OTF2_METRIC_ASYNCHRONOUS,
                           std::string_view description = {},
                           OTF2_Type value_type = OTF2_TYPE_DOUBLE) {
    const auto id = static_cast<std::uint32_t>(metrics_.size());
    const std::uint32_t name_ref = string_ref(name);
    metrics_.push_back(metric_def{name_ref,
                                  description.empty() ? name_ref : string_ref(std::string{description}),
                                  string_ref(unit), mode, occurrence, value_type});
    return id;
  }

  // The sample metric `index` (a gpu_stall, samples_metric or
  // expected_samples_metric), defined when first used.
  std::uint32_t sample_metric(std::size_t index) {
    std::uint32_t& metric = sample_metrics_[index];
    if (metric != no_ref) return metric;
    std::string name, description;
    if (index == samples_metric) {
      name = "GINST";
      description = "GPU instruction samples";
    } else if (index == expected_samples_metric) {
      name = "GSAMP:EXP";
      description = "GPU instruction samples expected (every SM busy)";
    } else {
      const auto stall = static_cast<runtime::gpu_stall>(index);
      name = runtime::metric_name(stall);
      description = fmt::format("GPU instruction samples: {}", runtime::describe(stall));
    }
    // Written at some Enter and Leave events of the location (sampled kernels).
    metric = add_metric(name, "samples", OTF2_METRIC_ACCUMULATED_START, OTF2_METRIC_SYNCHRONOUS,
                        description);
    return metric;
  }

  // The location's sample totals, of the metrics the kernel has samples of.
  void write_sample_totals(std::uint32_t id, std::int64_t time_ns,
                           const runtime::gpu_kernel_samples& samples) {
    const std::array<double, sample_metric_count>& totals = sample_totals_[id];
    for (std::size_t index = 0; index < sample_metric_count; ++index)
      if (kernel_sample_value(samples, index) > 0)
        write_metric(id, time_ns, sample_metric(index), totals[index]);
  }

  static double kernel_sample_value(const runtime::gpu_kernel_samples& samples, std::size_t index) {
    if (index == samples_metric) return samples.samples;
    if (index == expected_samples_metric) return samples.expected;
    return samples.by_stall[index];
  }

  // A kernel's device-initiated traffic (FERRET_CUDA_PEER_ACCESSES), written
  // as its samples are: per stream location and memory reached, the bytes
  // loaded from there and stored there since the start (exact integers), just
  // before the Enter and at the Leave of each kernel that moved bytes that way.
  // One metric per memory and direction: Vampir draws each device pair apart.
  using remote_direction = std::pair<std::int32_t, bool>;  // (memory reached, stored)

  std::uint32_t remote_metric(remote_direction direction) {
    auto [it, inserted] = remote_metrics_.try_emplace(direction, no_ref);
    if (!inserted) return it->second;
    const auto [device, stored] = direction;
    const std::string memory = runtime::memory_end_name(device);
    const std::string name = fmt::format("device-initiated bytes {} {}",
                                         stored ? "stored to" : "loaded from", memory);
    const std::string description = fmt::format(
        "bytes the stream's kernels {} {} by their own {} (peer access, NVSHMEM, NCCL's "
        "kernels, zero-copy)",
        stored ? "stored to" : "loaded from",
        device == runtime::host_memory_device ? std::string{"host memory"}
                                              : fmt::format("GPU {}'s memory", device),
        stored ? "stores and atomics" : "loads");
    it->second = add_metric(name, "bytes", OTF2_METRIC_ACCUMULATED_START, OTF2_METRIC_SYNCHRONOUS,
                            description, OTF2_TYPE_UINT64);
    return it->second;
  }

  // The location's totals of the directions in which the kernel moved bytes.
  void write_remote_totals(std::uint32_t id, std::int64_t time_ns,
                           const runtime::gpu_kernel_remote_traffic& remote) {
    const std::size_t targets = std::min<std::size_t>(
        remote.target_count, runtime::gpu_kernel_remote_traffic::max_targets);
    for (std::size_t i = 0; i < targets; ++i) {
      const runtime::gpu_kernel_remote_traffic::target& target = remote.targets[i];
      for (const bool stored : {false, true})
        if ((stored ? target.stored_bytes : target.loaded_bytes) != 0)
          write_count_metric(id, time_ns, remote_metric({target.device, stored}),
                             remote_totals_[{id, {target.device, stored}}]);
    }
  }

  void add_remote_totals(std::uint32_t id, const runtime::gpu_kernel_remote_traffic& remote) {
    const std::size_t targets = std::min<std::size_t>(
        remote.target_count, runtime::gpu_kernel_remote_traffic::max_targets);
    for (std::size_t i = 0; i < targets; ++i) {
      const runtime::gpu_kernel_remote_traffic::target& target = remote.targets[i];
      for (const bool stored : {false, true})
        if (const std::uint64_t bytes = stored ? target.stored_bytes : target.loaded_bytes;
            bytes != 0)
          remote_totals_[{id, {target.device, stored}}] += bytes;
    }
  }

  void write_count_metric(std::uint32_t id, std::int64_t time_ns, std::uint32_t metric,
                          std::uint64_t count) {
    location& where = locations_[id];
    const OTF2_Type type = OTF2_TYPE_UINT64;
    OTF2_MetricValue value;
    value.unsigned_int = count;
    ok(OTF2_EvtWriter_Metric(where.writer, nullptr, stamp(where, time_ns), metric, 1, &type, &value),
       "Metric");
  }

  void write_metric(std::uint32_t id, std::int64_t time_ns, std::uint32_t metric, double sample) {
    location& where = locations_[id];
    const OTF2_Type type = OTF2_TYPE_DOUBLE;
    OTF2_MetricValue value;
    value.floating_point = sample;
    ok(OTF2_EvtWriter_Metric(where.writer, nullptr, stamp(where, time_ns), metric, 1, &type, &value),
       "Metric");
  }

  // The host location a copy talks to: the launching thread's, else the main thread's.
  std::uint32_t host_location(const gpu_activity& a) {
    if (a.launch.tid != 0) return thread_location(a.launch.tid, a.launch.tid == session_.pid, {});
    return thread_location(session_.pid, true, {});
  }

  std::uint32_t kernel_region(const char* mangled) {
    const auto it = kernel_regions_.find(mangled);
    if (it != kernel_regions_.end()) return it->second;
    const std::string name = runtime::demangled_kernel_name(mangled);
    auto [by_name, inserted] = kernel_by_name_.emplace(name, no_ref);
    if (inserted)
      by_name->second = add_region(name, mangled != nullptr ? mangled : "", OTF2_REGION_ROLE_FUNCTION,
                                   OTF2_PARADIGM_CUDA, "", 0);
    kernel_regions_.emplace(mangled, by_name->second);
    return by_name->second;
  }

  // "GPU <n> memory": a metric location in the GPU's group, for the memory
  // allocated on the device and as the remote end of peer-to-peer copies.
  std::uint32_t memory_location(std::uint32_t device) {
    const auto it = gpu_memory_.find(device);
    if (it != gpu_memory_.end()) return it->second;
    const std::uint32_t id = add_location(fmt::format("GPU {} memory", device),
                                          OTF2_LOCATION_TYPE_METRIC, gpu_group(device));
    gpu_memory_.emplace(device, id);
    return id;
  }

  // Attributes naming where an operation came from (built once per context node:
  // nodes live as long as the session).
  void add_launch_attributes(const gpu_activity& a) {
    if (a.launch.correlation != 0)
      OTF2_AttributeList_AddUint64(attributes_, attribute_correlation, a.launch.correlation);
    if (a.launch.context == nullptr) return;
    auto [it, inserted] = context_strings_.try_emplace(a.launch.context, no_ref, no_ref);
    if (inserted) {
      if (const std::string path = runtime::context_path(a.launch.context); !path.empty())
        it->second.first = string_ref(path);
      if (const name_info* call = runtime::launching_call(a.launch.context); call != nullptr)
        it->second.second = string_ref(call->name);
    }
    if (it->second.first != no_ref)
      OTF2_AttributeList_AddStringRef(attributes_, attribute_context, it->second.first);
    if (it->second.second != no_ref)
      OTF2_AttributeList_AddStringRef(attributes_, attribute_launch, it->second.second);
  }

  void add_object_attribute(attribute key, const runtime::data_object_info* object) {
    if (object != nullptr) OTF2_AttributeList_AddStringRef(attributes_, key, string_ref(object->name));
  }

  void add_kernel_attributes(const runtime::kernel_attributes& k) {
    OTF2_AttributeList_AddStringRef(
        attributes_, attribute_grid, string_ref(fmt::format("{},{},{}", k.grid[0], k.grid[1], k.grid[2])));
    OTF2_AttributeList_AddStringRef(
        attributes_, attribute_block,
        string_ref(fmt::format("{},{},{}", k.block[0], k.block[1], k.block[2])));
    OTF2_AttributeList_AddUint32(attributes_, attribute_registers, k.registers_per_thread);
    OTF2_AttributeList_AddUint32(attributes_, attribute_static_shared_memory, k.static_shared_memory);
    OTF2_AttributeList_AddUint32(attributes_, attribute_dynamic_shared_memory,
                                 k.dynamic_shared_memory);
    OTF2_AttributeList_AddUint32(attributes_, attribute_local_memory, k.local_memory_per_thread);
    if (k.occupancy >= 0) OTF2_AttributeList_AddDouble(attributes_, attribute_occupancy, k.occupancy);
  }

  void write_gpu_activity(std::uint32_t id, const gpu_activity& a) {
    attributes_used_ = true;
    switch (a.operation) {
      case gpu_operation::memcpy: write_copy(id, a); return;
      case gpu_operation::allocation:
      case gpu_operation::release: write_allocation(id, a); return;
      case gpu_operation::kernel:
      case gpu_operation::memset: break;
      case gpu_operation::synchronization: return;  // not delivered here (see gpu_activities)
    }
    std::uint32_t region = 0;
    add_launch_attributes(a);
    if (a.operation == gpu_operation::kernel) {
      region = kernel_region(a.name);
      add_kernel_attributes(a.kernel);
    } else {
      if (memset_region_ == no_ref)
        memset_region_ = add_region("Memset", "", OTF2_REGION_ROLE_DATA_TRANSFER,
                                    OTF2_PARADIGM_CUDA, "", 0);
      region = memset_region_;
      add_object_attribute(attribute_object, a.destination_object);
      OTF2_AttributeList_AddStringRef(attributes_, attribute_memory_kind,
                                      string_ref(std::string{runtime::to_string(a.memory)}));
    }
    const std::int64_t end_ns = std::max(a.end_ns, a.start_ns);
    if (a.samples != nullptr) write_sample_totals(id, a.start_ns, *a.samples);
    if (a.remote != nullptr) write_remote_totals(id, a.start_ns, *a.remote);
    location& where = locations_[id];
    ok(OTF2_EvtWriter_Enter(where.writer, attributes_, stamp(where, a.start_ns), region), "Enter");
    if (a.samples != nullptr) {
      std::array<double, sample_metric_count>& totals = sample_totals_[id];
      for (std::size_t index = 0; index < sample_metric_count; ++index)
        totals[index] += std::max(kernel_sample_value(*a.samples, index), 0.0);
      write_sample_totals(id, end_ns, *a.samples);
    }
    if (a.remote != nullptr) {
      add_remote_totals(id, *a.remote);
      write_remote_totals(id, end_ns, *a.remote);
    }
    ok(OTF2_EvtWriter_Leave(where.writer, nullptr, stamp(where, end_ns), region), "Leave");
  }

  // A copy as Score-P writes CUDA memcpys: one-sided communication from the
  // stream's location. The device gets data (RmaGet) when it is the destination
  // and puts it (RmaPut) otherwise. Remote: the launching host thread for copies
  // from or to the host, the other GPU's memory location for peer copies, the
  // stream itself for copies within one device.
  void write_copy(std::uint32_t id, const gpu_activity& a) {
    const auto device = static_cast<std::int32_t>(a.device);
    std::uint32_t remote = id;
    bool get = a.copy == runtime::copy_kind::host_to_device;
    if (a.copy == runtime::copy_kind::peer_to_peer) {
      const std::int32_t peer =
          a.source_device == device ? a.destination_device : a.source_device;
      get = a.destination_device == device;
      if (peer >= 0) remote = memory_location(static_cast<std::uint32_t>(peer));
    } else if (a.copy != runtime::copy_kind::device_to_device) {
      remote = host_location(a);
    }
    add_launch_attributes(a);
    add_object_attribute(attribute_source_object, a.source_object);
    add_object_attribute(attribute_destination_object, a.destination_object);
    OTF2_AttributeList_AddInt32(attributes_, attribute_source_device, a.source_device);
    OTF2_AttributeList_AddInt32(attributes_, attribute_destination_device, a.destination_device);
    location& where = locations_[id];
    const std::uint64_t matching = ++copies_;
    const std::uint64_t start = stamp(where, a.start_ns);
    if (get)
      ok(OTF2_EvtWriter_RmaGet(where.writer, attributes_, start, 0, remote, a.bytes, matching),
         "RmaGet");
    else
      ok(OTF2_EvtWriter_RmaPut(where.writer, attributes_, start, 0, remote, a.bytes, matching),
         "RmaPut");
    ok(OTF2_EvtWriter_RmaOpCompleteBlocking(where.writer, nullptr,
                                            stamp(where, std::max(a.end_ns, a.start_ns)), 0,
                                            matching),
       "RmaOpCompleteBlocking");
  }

  // Memory allocated on a device, per memory kind, as a metric on the GPU's
  // memory location (Vampir draws it as a counter).
  void write_allocation(std::uint32_t id, const gpu_activity& a) {
    const std::uint64_t key = (std::uint64_t{a.device} << 8U) | static_cast<std::uint8_t>(a.memory);
    auto [it, inserted] = allocated_.try_emplace(key);
    if (inserted)
      it->second.metric = add_metric(
          fmt::format("GPU {} allocated {} memory", a.device, runtime::to_string(a.memory)), "bytes");
    std::uint64_t& bytes = it->second.bytes;
    if (a.operation == gpu_operation::allocation)
      bytes += a.bytes;
    else
      bytes -= std::min(bytes, a.bytes);
    write_metric(id, a.start_ns, it->second.metric, static_cast<double>(bytes));
  }

  // The archive's property list; counts are summed over the ranks of a run.
  std::vector<property> properties(const session_status& status) const {
    std::vector<property> list;
    // An empty value would remove the property.
    auto add = [&](std::string name, std::string_view value, bool summed) {
      list.push_back({std::move(name), value.empty() ? "-" : archive_text(value, longest_property_value), summed});
    };
    // Metadata: the key escaped (otf2_text.hpp), and as given beside it.
    auto add_metadata = [&](std::string_view prefix, const std::string& key, const std::string& value,
                            bool summed) {
      const std::string name = fmt::format("FERRET::{}::{}", prefix, property_key(key));
      add(name, value, summed);
      if (!key.empty()) add(name + "::KEY", key, false);
    };
    add("FERRET::VERSION", session_.ferret_version, false);
    add("FERRET::HOSTNAME", session_.hostname, false);
    add("FERRET::EXECUTABLE", session_.executable, false);
    add("FERRET::COMMAND_LINE", session_.command_line, false);
    add("FERRET::CLOCK_SOURCE", session_.clock_source, false);
    add("FERRET::PID", std::to_string(session_.pid), false);
    const std::pair<const char*, std::uint64_t> counts[] = {
        {"EVENTS_RECORDED", events_recorded_},
        {"EVENTS_DROPPED", events_dropped_},
        {"CLAMPED_TIMESTAMPS", clamped_timestamps_},
        {"MPI_EVENTS_WITHOUT_COMMUNICATOR", mpi_events_without_communicator_},
        {"GPU_SYNCHRONIZATIONS_NOT_WRITTEN", synchronizations_not_written_},
        {"MARKERS", markers_},
        {"MARKERS_NOT_WRITTEN", markers_not_written_},
    };
    for (const auto& [key, count] : counts) add(std::string{"FERRET::"} + key, std::to_string(count), true);
    // Runtime counts of losses are summed too; settings and sizes are rank 0's.
    if (status.runtime_metadata != nullptr)
      for (const auto& [key, value] : *status.runtime_metadata)
        add_metadata("RUNTIME", key, to_text(value),
                     is_integer(value) && (key.find("dropped") != std::string::npos ||
                                           key.find("region") != std::string::npos ||
                                           key.find("refused") != std::string::npos ||
                                           key.find("without") != std::string::npos));
    if (status.user_metadata != nullptr)
      for (const auto& [key, value] : *status.user_metadata) add_metadata("RUN", key, to_text(value), false);
    return list;
  }

  // This process's definitions, with its own ids (those its events use).
  definitions local_definitions(const std::vector<std::uint64_t>& event_counts,
                                const session_status& status) {
    definitions d;
    // Readers shift this rank's timestamps by its clock offsets: the trace
    // must hold them shifted either way.
    std::int64_t earliest_shift = 0, latest_shift = 0;
    for (const auto& point : clock_offsets_) {
      earliest_shift = std::min(earliest_shift, -point.second);
      latest_shift = std::max(latest_shift, -point.second);
    }
    d.clock.offset = offset_ - std::min<std::uint64_t>(offset_, static_cast<std::uint64_t>(-earliest_shift));
    const std::uint64_t end = std::max(latest_, offset_) + static_cast<std::uint64_t>(latest_shift);
    d.clock.length = end - d.clock.offset;
    d.clock.realtime =
        static_cast<std::uint64_t>(std::max<std::int64_t>(session_.start_realtime_ns, 0));
    d.system_tree_nodes = {{machine_name_, string_ref("machine"), undefined_ref},
                           {node_name_, string_ref("node"), 0}};
    for (const location_group_def& g : groups_)
      d.location_groups.push_back({g.name, g.type, 1, g.creator});
    for (std::uint32_t i = 0; i < locations_.size(); ++i)
      d.locations.push_back({global_location(i), string_ref(locations_[i].name),
                             locations_[i].type, event_counts[i], locations_[i].group});
    for (const region_def& r : regions_)
      d.regions.push_back({r.name, r.name, r.description, r.role, r.paradigm,
                           OTF2_REGION_FLAG_NONE, r.file, r.line, r.line});
    if (attributes_used_)
      for (const attribute_def& a : attribute_defs)
        d.attributes.push_back({string_ref(a.name), string_ref(a.description), a.type});
    for (const metric_def& m : metrics_)
      d.metrics.push_back({m.name, m.description, m.unit, OTF2_METRIC_TYPE_USER, m.mode,
                           m.value_type, m.occurrence, OTF2_RECORDER_KIND_ABSTRACT});
    if (mpi_location_ != no_ref) {
      // Score-P's MPI layout: one COMM_LOCATIONS group (each rank's location,
      // joined in rank order by the unification, so that a world rank is an
      // index into it), one COMM_GROUP per communicator (world ranks) and the
      // communicator over it. Comm ids are the order of announcement, as the
      // events written used them; equal definitions of all ranks become one.
      const std::uint32_t mpi = string_ref("MPI");
      d.groups.push_back({mpi, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                          OTF2_GROUP_FLAG_NONE, {global_location(mpi_location_)}});
      for (const mpi_comm_def& comm : mpi_comms_) {
        d.groups.push_back({comm.name, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                            OTF2_GROUP_FLAG_NONE, comm.members});
        d.comms.push_back({comm.name, static_cast<std::uint32_t>(d.groups.size() - 1),
                           undefined_ref, OTF2_COMM_FLAG_NONE});
      }
    }
    if (copies_ > 0) {
      // Score-P's CUDA layout: a window over a communicator of all the process's
      // locations; a location's rank in it is its local id.
      const std::uint32_t cuda = string_ref("CUDA");
      group_definition locations{cuda, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_CUDA,
                                 OTF2_GROUP_FLAG_NONE, {}};
      group_definition ranks{cuda, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_CUDA,
                             OTF2_GROUP_FLAG_NONE, {}};
      for (std::uint32_t i = 0; i < locations_.size(); ++i) {
        locations.members.push_back(global_location(i));
        ranks.members.push_back(i);
      }
      const auto first_group = static_cast<std::uint32_t>(d.groups.size());
      d.groups.push_back(std::move(locations));
      d.groups.push_back(std::move(ranks));
      d.comms.push_back({cuda, first_group + 1, undefined_ref, OTF2_COMM_FLAG_NONE});
      d.rma_windows = {{cuda, static_cast<std::uint32_t>(d.comms.size() - 1), OTF2_RMA_WIN_FLAG_NONE}};
    }
    const std::uint32_t ferret_group = string_ref("ferret");
    d.marker_definitions.resize(marker_defs_.size());
    for (const auto& [category, id] : marker_defs_)
      d.marker_definitions[id] = {ferret_group, string_ref(category), OTF2_SEVERITY_NONE};
    d.markers = std::move(markers_list_);
    d.properties = properties(status);
    d.strings = strings_;  // last: the strings above are in it
    return d;
  }

  // Local definition files (with `mappings` when the ids are local to this
  // rank) and, on rank 0 or alone, the global definitions, markers and
  // properties. `chunk_size`: the definition chunk size (rank 0's counts; the
  // others pass OTF2_UNDEFINED_UINT64).
  void write_definitions(const definitions& global, const id_mappings* mappings, std::uint64_t chunk_size) {
    ok(OTF2_Archive_SetDefChunkSize(archive_, chunk_size), "setting the definition chunk size");
    ok(OTF2_Archive_OpenDefFiles(archive_), "opening the definition files");
    for (std::uint32_t id = 0; id < locations_.size(); ++id) {
      OTF2_DefWriter* writer = OTF2_Archive_GetDefWriter(archive_, global_location(id));
      if (writer == nullptr) continue;
      if (mappings != nullptr)
        if (const std::string failed = write_mapping_tables(writer, *mappings); !failed.empty())
          fail("writing the mapping tables: " + failed);
      // OTF2's readers correct this location's timestamps with them (linear
      // interpolation), as they do for Score-P's archives.
      for (const auto& [when, offset] : clock_offsets_)
        ok(OTF2_DefWriter_WriteClockOffset(writer, static_cast<std::uint64_t>(when), -offset, 0.0),
           "ClockOffset");
      ok(OTF2_Archive_CloseDefWriter(archive_, writer), "definitions");
    }
    ok(OTF2_Archive_CloseDefFiles(archive_), "closing the definition files");
    if (group_ != nullptr && group_->rank() != 0) return;
    OTF2_GlobalDefWriter* writer = OTF2_Archive_GetGlobalDefWriter(archive_);
    if (writer == nullptr) {
      fail("no global definition writer");
      return;
    }
    if (const std::string failed = write_global_definitions(writer, global); !failed.empty())
      fail("writing the global definitions: " + failed);
    if (!global.markers.empty()) {
      OTF2_MarkerWriter* markers = OTF2_Archive_GetMarkerWriter(archive_);
      const std::string failed = markers == nullptr ? "no marker writer" : write_markers(markers, global);
      if (!failed.empty()) fail("writing the markers: " + failed);
    }
    write_properties(global.properties);
  }

  // The properties, as many as OTF2's anchor file holds (otf2_text.hpp): a
  // property and its ::KEY go in together or are left out together, counted.
  void write_properties(const std::vector<property>& properties) {
    std::size_t used = 0;
    std::uint64_t omitted = 0;
    for (std::size_t i = 0; i < properties.size(); ++i) {
      const bool with_key = i + 1 < properties.size() && properties[i + 1].name == properties[i].name + "::KEY";
      std::size_t size = 0;
      for (std::size_t k = i; k <= i + (with_key ? 1 : 0); ++k)
        size += properties[k].name.size() + properties[k].value.size() + 16;
      if (used + size > property_budget) {
        ++omitted;
      } else {
        used += size;
        for (std::size_t k = i; k <= i + (with_key ? 1 : 0); ++k)
          ok(OTF2_Archive_SetProperty(archive_, properties[k].name.c_str(), properties[k].value.c_str(), true),
             "property");
      }
      if (with_key) ++i;
    }
    if (omitted > 0)
      ok(OTF2_Archive_SetProperty(archive_, "FERRET::METADATA_OMITTED", std::to_string(omitted).c_str(), true),
         "property");
  }

  // Rank 0 gathers every rank's definitions, unifies them and sends each rank
  // the global ids of its local ones; every rank then writes its local
  // definition files with these mappings, rank 0 the global definitions.
  // Every rank calls the same collectives in the same order, whatever fails.
  void unify_and_write_definitions(const definitions& local) {
    runtime::process_group& group = *group_;
    const bool root = group.rank() == 0;
    const std::uint32_t ranks = group.size();
    const std::vector<unsigned char> bytes = serialize(local);
    const std::uint64_t size = bytes.size();
    std::vector<std::uint64_t> sizes(root ? ranks : 0);
    bool exchanged = group.gather(&size, sizeof size, sizes.data(), 0);
    const std::vector<std::size_t> counts(sizes.begin(), sizes.end());
    std::vector<unsigned char> gathered(std::accumulate(counts.begin(), counts.end(), std::size_t{0}));
    exchanged = group.gatherv(bytes.data(), bytes.size(), gathered.data(), counts.data(), 0) &&
                exchanged;

    definitions global;
    std::uint64_t chunk_size = root ? definition_chunk_size(global, {}) : OTF2_UNDEFINED_UINT64;
    std::vector<std::uint64_t> mapping_sizes(root ? ranks : 0);
    std::vector<unsigned char> all_mappings;
    if (root && exchanged) {
      std::vector<definitions> received(ranks);
      std::size_t at = 0;
      for (std::uint32_t r = 0; r < ranks; ++r) {
        std::string problem;
        if (!deserialize(gathered.data() + at, counts[r], received[r], problem))
          fail(fmt::format("definitions of rank {}: {}", r, problem));
        at += counts[r];
      }
      std::vector<id_mappings> mappings;
      global = unify(received, mappings);
      chunk_size = definition_chunk_size(global, mappings);
      for (std::uint32_t r = 0; r < ranks; ++r) {
        const std::vector<unsigned char> mapping = serialize(mappings[r]);
        mapping_sizes[r] = mapping.size();
        all_mappings.insert(all_mappings.end(), mapping.begin(), mapping.end());
      }
    }
    std::uint64_t mapping_size = 0;
    exchanged = group.scatter(mapping_sizes.data(), &mapping_size, sizeof mapping_size, 0) &&
                exchanged;
    const std::vector<std::size_t> mapping_counts(mapping_sizes.begin(), mapping_sizes.end());
    std::vector<unsigned char> mapping_bytes(static_cast<std::size_t>(mapping_size));
    exchanged = group.scatterv(all_mappings.data(), mapping_counts.data(), mapping_bytes.data(),
                               mapping_bytes.size(), 0) &&
                exchanged;
    id_mappings mappings;
    std::string problem;
    if (!exchanged)
      fail("exchanging the definitions with the other ranks failed");
    else if (!deserialize(mapping_bytes.data(), mapping_bytes.size(), mappings, problem))
      fail("mappings from rank 0: " + problem);
    write_definitions(global, &mappings, chunk_size);
  }

  void fail(std::string what) {
    if (!failed_) {
      failed_ = true;
      error_ = std::move(what);
    }
  }

  session_info session_;
  std::string directory_;
  runtime::process_group* group_;  // nullptr: a process alone
  std::uint64_t location_base_;    // rank << 32
  OTF2_Archive* archive_ = nullptr;
  OTF2_FlushCallbacks flush_callbacks_{};
  chunk_pool chunks_;  // the memory of OTF2's buffers
  bool closed_ = false;
  bool failed_ = false;
  std::string error_;
  otf2_error_sink errors_;  // what OTF2 itself said

  std::uint64_t offset_ = static_cast<std::uint64_t>(std::max<std::int64_t>(session_.start_monotonic_raw_ns, 0));
  std::uint64_t latest_ = offset_;  // latest timestamp written anywhere

  std::vector<std::string> strings_;
  std::unordered_map<std::string, std::uint32_t> string_ids_;
  std::uint32_t machine_name_ = 0;
  std::uint32_t node_name_ = 0;
  std::vector<location_group_def> groups_;  // 0: the process
  std::vector<location> locations_;         // by location id
  std::unordered_map<std::uint64_t, std::uint32_t> threads_;  // tid → location
  std::unordered_map<std::uint64_t, std::uint32_t> streams_;  // device << 32 | stream → location
  std::map<std::uint32_t, std::uint32_t> gpus_;               // device → location group
  std::vector<region_def> regions_;
  std::vector<std::uint32_t> region_of_name_;  // by name_info::id
  std::unordered_map<const char*, std::uint32_t> kernel_regions_;
  std::unordered_map<std::string, std::uint32_t> kernel_by_name_;
  std::uint32_t memset_region_ = no_ref;
  std::vector<std::uint32_t> metric_of_name_;  // by name_info::id
  std::vector<metric_def> metrics_;            // by metric id
  // Instruction samples: the metric of each (no_ref until used), and each stream location's totals.
  std::array<std::uint32_t, sample_metric_count> sample_metrics_ = [] {
    std::array<std::uint32_t, sample_metric_count> refs{};
    refs.fill(no_ref);
    return refs;
  }();
  std::unordered_map<std::uint32_t, std::array<double, sample_metric_count>> sample_totals_;
  // Device-initiated traffic: the metric of each direction, each stream location's totals.
  std::map<remote_direction, std::uint32_t> remote_metrics_;
  std::map<std::pair<std::uint32_t, remote_direction>, std::uint64_t> remote_totals_;
  std::map<std::string, std::uint32_t> marker_defs_;  // category → marker definition
  std::vector<marker> markers_list_;
  std::map<std::uint32_t, std::uint32_t> gpu_memory_;  // device → its memory location
  struct sampled_metric {
    std::uint32_t metric;
    bool accumulates;
  };
  struct sampled_device {
    std::vector<sampled_metric> metrics;  // in the order of the set's values
    std::vector<double> totals;           // counts since the start, per metric
    std::uint32_t location = no_ref;      // "GPU <n> sampled counters", at the first interval
    bool started = false;
  };
  std::map<std::uint32_t, sampled_device> sampled_;  // by device
  std::map<std::tuple<std::string, std::string, bool>, std::uint32_t> sampled_metric_of_;
  struct allocated_memory {
    std::uint32_t metric = no_ref;
    std::uint64_t bytes = 0;
  };
  std::unordered_map<std::uint64_t, allocated_memory> allocated_;  // device << 8 | memory kind
  // Per context node: string refs of its path and of its launching call (no_ref: none).
  std::unordered_map<const runtime::context_node*, std::pair<std::uint32_t, std::uint32_t>>
      context_strings_;
  OTF2_AttributeList* attributes_ = OTF2_AttributeList_New();  // consumed by each event written
  bool attributes_used_ = false;

  std::uint64_t events_recorded_ = 0;
  std::uint64_t events_dropped_ = 0;
  std::uint64_t copies_ = 0;
  std::uint64_t markers_ = 0;
  std::uint64_t markers_not_written_ = 0;
  std::uint64_t synchronizations_not_written_ = 0;
  std::uint64_t clamped_timestamps_ = 0;
  std::uint64_t mpi_events_without_communicator_ = 0;
  // MPI communicators in the order announced (their local comm ids); the
  // members are MPI_COMM_WORLD ranks.
  struct mpi_comm_def {
    std::uint32_t name;  // string ref
    std::vector<std::uint64_t> members;
  };
  std::vector<mpi_comm_def> mpi_comms_;
  std::unordered_map<std::uint64_t, std::uint32_t> mpi_comm_of_;  // layer's id → local comm id
  std::uint32_t mpi_location_ = no_ref;
  std::vector<std::pair<std::int64_t, std::int64_t>> clock_offsets_;  // (local time, local - rank 0)  // the rank's location in the MPI COMM_LOCATIONS group
};

// Records held until MPI_Init when the MPI layer is loaded (see
// deferred_backend.hpp): about 32 MiB of records at most; the rest is counted.
constexpr std::size_t max_events_before_mpi_init = 1U << 20U;

// "" when `directory` may take a new archive, else why not.
std::string refusal(const std::string& directory) {
  std::error_code ignored;
  if (std::filesystem::exists(directory + "/" + archive_name + ".otf2", ignored) ||
      std::filesystem::exists(directory + "/" + archive_name, ignored))
    return fmt::format("cannot write the OTF2 archive '{}': an archive exists there already",
                       directory);
  return {};
}

// The ranks agree on rank 0's archive directory (its expansion of FERRET_OUTPUT,
// e.g. with rank 0's pid) or on rank 0's refusal: "d<directory>" or "e<error>".
bool agree_on_directory(runtime::process_group& group, std::string& directory,
                        std::string& error) {
  std::string decision = error.empty() ? "d" + directory : "e" + error;
  std::uint64_t size = decision.size();
  if (!group.broadcast(&size, sizeof size, 0)) return false;
  decision.resize(static_cast<std::size_t>(size));
  if (!group.broadcast(decision.data(), decision.size(), 0) || decision.empty()) return false;
  if (decision[0] == 'd') {
    directory = decision.substr(1);
    error.clear();
  } else {
    error = decision.substr(1);
  }
  return true;
}

std::unique_ptr<runtime::backend> open_backend(const runtime::backend_context& context,
                                               runtime::process_group* group,
                                               std::string& error) {
  std::string directory = runtime::output_directory(context);
  if (group == nullptr || group->rank() == 0) error = refusal(directory);
  if (group != nullptr && !agree_on_directory(*group, directory, error)) {
    error = fmt::format("cannot write the OTF2 archive '{}': the ranks could not agree on it",
                        directory);
    return nullptr;
  }
  if (!error.empty()) return nullptr;
  auto backend = std::make_unique<otf2_backend>(*context.session, directory, group);
  if (std::string reason = backend->start(); !reason.empty()) {
    error = fmt::format("cannot write the OTF2 archive '{}': {}", directory, reason);
    return nullptr;
  }
  return backend;
}

}  // namespace

std::unique_ptr<runtime::backend> make_backend(const runtime::backend_context& context,
                                               std::string& error) {
  if (context.session == nullptr) {
    error = fmt::format("cannot write the OTF2 archive '{}': no session", context.output);
    return nullptr;
  }
  if (!runtime::process_group_expected()) return open_backend(context, nullptr, error);
  // The MPI layer is loaded: one archive for all ranks, opened when MPI_Init
  // returns (or per process at the end, when it never does).
  return runtime::make_deferred_backend(
      [context](runtime::process_group* group, std::string& open_error) {
        return open_backend(context, group, open_error);
      },
      "otf2 archive: not written (see the message above)",
      max_events_before_mpi_init);
}

FERRET_REGISTER_BACKEND("otf2", "OTF2 archive, opens in Vampir and the Score-P tools",
                        make_backend);

}  // namespace ferret::otf2
