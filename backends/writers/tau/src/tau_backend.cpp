// The TAU profile backend: records and GPU operations into thread profiles
// (tau_thread_profile.hpp), written at the final flush (tau_profile_writer.hpp).
// See tau_backend.hpp for the layout; tests/tau_backend_test.cpp and
// tools/ferret-tau-check for how it is checked.
#include "tau_backend.hpp"

#include "ferret/runtime/runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>

#include <sys/stat.h>
#include <unistd.h>

#include "tau_names.hpp"
#include "tau_profile_writer.hpp"
#include "tau_thread_profile.hpp"

namespace ferret::tau {
namespace {

using runtime::context_node;
using runtime::copy_kind;
using runtime::gpu_activity;
using runtime::gpu_operation;
using runtime::metadata_list;
using runtime::name_info;
using runtime::record;
using runtime::record_kind;
using runtime::session_info;
using runtime::session_status;
using runtime::thread_info;

// TAU's names for copies (TauGpu.cpp) and the matching byte counters.
std::string_view copy_direction(copy_kind kind) {
  switch (kind) {
    case copy_kind::host_to_device: return "Host to Device";
    case copy_kind::device_to_host: return "Device to Host";
    case copy_kind::device_to_device: return "Device to Device";
    case copy_kind::host_to_host: return "Host to Host";
    case copy_kind::peer_to_peer: return "Peer to Peer";
    case copy_kind::unknown: break;
  }
  return "unknown direction";
}

// The group of a region: TAU_USER for annotations, TAU_GPU_API for the CUDA
// and Level Zero calls the collectors record (TAU's group for them), TAU_USER|<domain> for a
// library's domain.
std::string group_of(const name_info& name) {
  if (name.domain.empty()) return "TAU_USER";
  if (name.domain == "cuda" || name.domain == "level_zero") return "TAU_GPU_API";
  return domain_group(name.domain);
}

// Any metadata value as text; integers exactly, floating point as the shortest
// text that reads back as the same double.
std::string metadata_text(const runtime::metadata_value& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>)
          return v;
        else
          return fmt::format("{}", v);
      },
      value);
}

// "mpi-rank" from the run metadata: the node number N of the files.
std::optional<std::uint64_t> rank_in(const metadata_list* metadata) {
  if (metadata == nullptr) return std::nullopt;
  for (const auto& [key, value] : *metadata) {
    if (key != "mpi-rank") continue;
    const std::string text = metadata_text(value);
    if (!text.empty() && text.size() < 20 &&
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::strtoull(text.c_str(), nullptr, 10);
  }
  return std::nullopt;
}

bool is_directory(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// Creates `path` unless it is a directory already; 0 or the errno.
int make_directory(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0 || (errno == EEXIST && is_directory(path))) return 0;
  return errno == EEXIST ? ENOTDIR : errno;
}

// Run metadata stops at 48 KiB, so that the header line stays short for every
// reader (what is left out is counted in "metadata-omitted").
constexpr std::size_t longest_metadata_block = 48 * 1024;

class tau_backend final : public runtime::backend {
 public:
  tau_backend(const session_info& session, std::string directory, bool created_directory,
              std::vector<std::string> counters)
      : session_(session), directory_(std::move(directory)), created_directory_(created_directory) {
    metrics_.emplace_back("TIME");
    metric_files_.emplace_back("TIME");
    for (std::string& counter : counters) {
      metric_of_counter_.emplace(counter, metrics_.size());
      metric_files_.push_back(metric_file_name(counter));
      metrics_.push_back(std::move(counter));
    }
    counter_seen_.assign(metrics_.size(), false);
    functions_.push_back(function_entry{".TAU application", "TAU_DEFAULT"});
  }

  void thread_records(const thread_info& info, const record* records, std::size_t count) override {
    if (finished_ || count == 0) return;
    thread_profile& thread = host_thread(info.tid);
    thread.is_main = info.is_main;
    if (!info.name.empty() && info.name != thread.name) thread.name = std::string{info.name};
    // A thread's records come in time order.
    thread.see(records[0].time_ns);
    thread.see(records[count - 1].time_ns);
    for (std::size_t i = 0; i < count; ++i) {
      const record& r = records[i];
      thread.now_ns = r.time_ns;
      // Regions first, and their common cases inline (thread_profile).
      if (r.kind == record_kind::region_begin) {
        if (const std::uint32_t node = thread.cached_child(r.name); node != 0)
          thread.enter(node);
        else
          begin_region(thread, r.name);
      } else if (r.kind == record_kind::region_end) {
        // The innermost open region (see runtime::record); with none open (a
        // backend driven without the runtime) the end is ignored.
        if (thread.open_frames() > 0) thread.close_innermost();
      } else if (r.kind == record_kind::mark) {
        // TAU has no instants: a mark counts as a user event of value 1.
        thread.add_event(event_of(r.name), 1.0, thread.top_node());
      } else {
        add_counter_sample(thread, r);
      }
    }
  }

  void data_object(const runtime::data_object_event& /*event*/) override {}

  // Message sizes as TAU's MPI wrapper writes them with its communication
  // matrix on: per peer, and over all peers, for each message this thread sent;
  // over all peers for those it received.
  void communication(const runtime::communication_event* events, std::size_t count) override {
    using runtime::communication_kind;
    if (finished_) return;
    for (std::size_t i = 0; i < count; ++i) {
      const runtime::communication_event& e = events[i];
      if (e.peer_process == runtime::no_rank) continue;
      const auto bytes = static_cast<double>(e.bytes);
      if (e.kind == communication_kind::send || e.kind == communication_kind::isend) {
        thread_profile& thread = host_thread(e.tid);
        thread.add_plain_event(sent_to_node(e.peer_process), bytes);
        thread.add_plain_event(event("Message size sent to all nodes"), bytes);
      } else if (e.kind == communication_kind::receive || e.kind == communication_kind::irecv) {
        host_thread(e.tid).add_plain_event(event("Message size received from all nodes"), bytes);
      }
    }
  }

  std::uint32_t sent_to_node(std::uint32_t peer) {
    if (peer >= sent_to_node_.size()) sent_to_node_.resize(std::size_t{peer} + 1, no_event);
    if (sent_to_node_[peer] == no_event)
      sent_to_node_[peer] = event(fmt::format("Message size sent to node {}", peer));
    return sent_to_node_[peer];
  }

  // The ranks of a job write into rank 0's directory, as TAU does: every
  // rank's profile.<rank>.0.<thread> side by side, which pprof, ParaProf and
  // hatchet read as one job. A rank's own directory, made empty at start,
  // goes again; a rank that cannot write to rank 0's keeps its own.
  void join_process_group(runtime::process_group& group) override {
    std::uint64_t length = directory_.size();
    if (!group.broadcast(&length, sizeof length, 0)) return;
    std::string shared = group.rank() == 0 ? directory_ : std::string(length, '\0');
    if (!group.broadcast(shared.data(), shared.size(), 0)) return;
    job_size_ = group.size();
    if (group.rank() == 0 || shared == directory_) return;
    if (const int error = make_directory(shared); error != 0 || ::access(shared.c_str(), W_OK | X_OK) != 0) {
      runtime::print_message(fmt::format("cannot write into rank 0's TAU profile directory '{}' ({}): "
                                         "this rank writes into '{}'",
                                         shared, std::strerror(error != 0 ? error : errno), directory_));
      return;
    }
    if (created_directory_) ::rmdir(directory_.c_str());
    directory_ = std::move(shared);
  }

  void gpu_device(const runtime::gpu_device_info& device) override {
    if (!finished_) device_names_[device.id] = device.name;
  }

  void gpu_activities(const gpu_activity* activities, std::size_t count) override {
    if (finished_) return;
    for (std::size_t i = 0; i < count; ++i) add_gpu_activity(activities[i]);
  }

  // Summed per (context, function, source line or instruction, stall class)
  // until the final flush, which writes each sum as one sample (add_line_events).
  void gpu_instruction_samples(const runtime::gpu_instruction_sample* samples,
                               std::size_t count) override {
    if (finished_) return;
    for (std::size_t i = 0; i < count; ++i) {
      const runtime::gpu_instruction_sample& sample = samples[i];
      if (sample.reason == nullptr || !(sample.samples > 0)) continue;
      const line_key key = sample.file != nullptr
          ? line_key{sample.context, sample.function != nullptr ? sample.function : "", sample.file,
                     sample.line, 0}
          : line_key{sample.context, sample.function != nullptr ? sample.function : "", {}, 0,
                     sample.pc_offset};
      std::array<double, runtime::gpu_stall_classes>& by_stall = sampled_lines_[key];
      by_stall[static_cast<std::size_t>(sample.reason->stall)] += sample.samples;
    }
  }

  // Summed per (context, function, source line or instruction, object, memory
  // reached, direction) until the final flush, which writes each sum as one
  // sample (add_remote_line_events).
  void gpu_remote_accesses(const runtime::gpu_remote_access* accesses,
                           std::size_t count) override {
    if (finished_) return;
    for (std::size_t i = 0; i < count; ++i) {
      const runtime::gpu_remote_access& access = accesses[i];
      if (access.bytes == 0) continue;
      const bool has_line = access.file != nullptr;
      remote_lines_[remote_line_key{
          access.context, access.function != nullptr ? access.function : "",
          has_line ? access.file : "", has_line ? access.line : 0, has_line ? 0 : access.pc_offset,
          access.object != nullptr ? access.object->name : std::string{}, access.target_device,
          access.access != runtime::memory_access::load}] += access.bytes;
    }
  }

  void flush(const session_status& status) override {
    if (finished_ || !status.final) return;
    finished_ = true;
    // The main thread always has a profile, records or not: readers need
    // profile.N.0.0 (docs/formats.md, "Nothing recorded").
    host_thread(session_.pid);
    add_line_events();
    add_remote_line_events();
    for (std::size_t m = 1; m < metrics_.size(); ++m)
      if (!counter_seen_[m])
        runtime::print_message(fmt::format(
            "FERRET_TAU_METRICS: no counter named '{}' was recorded; its metric is 0 in the profile",
            metrics_[m]));
    write_profiles(status);
  }

  void abandon() noexcept override {
    finished_ = true;  // the parent writes the profile
    threads_.clear();
    host_index_.clear();
    stream_index_.clear();
    sampled_lines_.clear();
    remote_lines_.clear();
  }

  std::string describe() const override {
    if (!error_.empty()) return fmt::format("tau profile: {}: not written: {}", directory_, error_);
    std::string line = fmt::format("tau profile: {} ({} thread{}", directory_, written_threads_,
                                   written_threads_ == 1 ? "" : "s");
    if (metrics_.size() > 1) line += fmt::format(", {} metrics", metrics_.size());
    if (folded_calls_ > 0)
      line += fmt::format("; {} calls nested deeper than {} levels are in their functions' totals "
                          "but folded into their callers' call paths",
                          folded_calls_, callpath_depth - 1);
    return line + ")";
  }

 private:
  // --- threads, functions and events -------------------------------------------

  thread_profile& host_thread(std::uint64_t tid) {
    const auto [it, inserted] = host_index_.try_emplace(tid, threads_.size());
    if (inserted) {
      threads_.push_back(std::make_unique<thread_profile>(thread_kind::host, metrics_.size(), threads_.size()));
      threads_.back()->tid = tid;
      threads_.back()->is_main = tid == session_.pid;
    }
    return *threads_[it->second];
  }

  thread_profile& stream_thread(std::uint32_t device, std::uint32_t stream) {
    const auto [it, inserted] = stream_index_.try_emplace({device, stream}, threads_.size());
    if (inserted) {
      threads_.push_back(
          std::make_unique<thread_profile>(thread_kind::gpu_stream, metrics_.size(), threads_.size()));
      threads_.back()->device = device;
      threads_.back()->stream = stream;
    }
    return *threads_[it->second];
  }

  std::uint32_t function(std::string name, std::string group) {
    std::string key = name + '\n' + group;
    const auto [it, inserted] =
        function_index_.try_emplace(std::move(key), static_cast<std::uint32_t>(functions_.size()));
    if (inserted) functions_.push_back(function_entry{std::move(name), std::move(group)});
    return it->second;
  }

  struct region_function {
    const name_info* source;
    std::uint32_t function;
    bool task;  // an OpenMP explicit task: a call path of its own (tau_thread_profile.hpp)
  };

  // The function of a region name, cached per name record.
  const region_function& function_of(const name_info* name) {
    if (name->id >= function_of_name_.size())
      function_of_name_.resize(std::size_t{name->id} + 1, {nullptr, 0, false});
    region_function& entry = function_of_name_[name->id];
    if (entry.source != name) {
      entry.source = name;
      entry.function = function(name->file.empty() ? profile_name(name->name)
                                                   : located_name(name->name, name->file, name->line),
                                group_of(*name));
      // The OpenMP collector's region for an explicit task (docs/openmp.md).
      entry.task = name->domain == "openmp" && name->name == "task";
    }
    return entry;
  }

  std::uint32_t event(const std::string& text) {
    const auto [it, inserted] = event_index_.try_emplace(text, static_cast<std::uint32_t>(event_names_.size()));
    if (inserted) event_names_.push_back(text);
    return it->second;
  }

  // The user event of a counter or mark ("name", or "name [domain]"), cached
  // per name record.
  std::uint32_t event_of(const name_info* name) {
    if (name->id >= event_of_name_.size()) event_of_name_.resize(std::size_t{name->id} + 1, {nullptr, 0});
    auto& [source, index] = event_of_name_[name->id];
    if (source != name) {
      source = name;
      index = event(name->domain.empty()
                        ? profile_name(name->name)
                        : profile_name(profile_name(name->name) + " [" + profile_name(name->domain) + "]"));
    }
    return index;
  }

  // The metric a counter feeds (0: none), cached per name record.
  std::size_t metric_of(const name_info* name) {
    if (name->id >= metric_of_name_.size()) metric_of_name_.resize(std::size_t{name->id} + 1, {nullptr, 0});
    auto& [source, metric] = metric_of_name_[name->id];
    if (source != name) {
      source = name;
      const auto it = metric_of_counter_.find(name->name);
      metric = name->domain.empty() && it != metric_of_counter_.end() ? it->second : 0;
    }
    return metric;
  }

  // --- host regions ----------------------------------------------------------

  void begin_region(thread_profile& thread, const name_info* name) {
    const region_function& region = function_of(name);
    if (region.task)
      thread.begin_task(region.function);
    else
      thread.begin(name, region.function);
  }

  void add_counter_sample(thread_profile& thread, const record& sample) {
    if (!std::isfinite(sample.value)) {
      ++nonfinite_counter_samples_;
      return;
    }
    if (metric_of_counter_.size() > 0) {
      if (const std::size_t metric = metric_of(sample.name); metric != 0) {
        thread.set_counter(metric, sample.value);
        counter_seen_[metric] = true;
      }
    }
    thread.add_event(event_of(sample.name), sample.value, thread.top_node());
  }

  // --- GPU activity ----------------------------------------------------------

  // The node of a launch's calling context on the launching thread (the
  // context tree's regions and API calls), created on first use; a context
  // deeper than the call-path limit gives its ancestor's node at the limit.
  std::uint32_t node_of(thread_profile& thread, const context_node* context) {
    std::vector<const context_node*> chain;  // from `context` up to a known one
    std::uint32_t node = root_node;
    for (const context_node* c = context; c != nullptr && c->parent != nullptr && c->name != nullptr;
         c = c->parent) {
      if (const auto it = thread.node_of_context.find(c); it != thread.node_of_context.end()) {
        node = it->second;
        break;
      }
      chain.push_back(c);
    }
    for (std::size_t i = chain.size(); i > 0; --i) {
      // Python frames (backends/collectors/python) are context of GPU work, never timed:
      // TAU writes only called functions, so its paths keep the host's regions.
      if (chain[i - 1]->name->domain != "python") {
        const region_function& region = function_of(chain[i - 1]->name);
        if (region.task)  // as begin_task: a call path of its own
          node = thread.child(root_node, region.function);
        else if (thread.nodes[node].depth + 1 < callpath_depth)
          node = thread.child(node, region.function);
      }
      thread.node_of_context.emplace(chain[i - 1], node);
    }
    return node;
  }

  // A timed entry on the stream's virtual thread.
  void add_device_interval(const gpu_activity& activity, std::uint32_t function) {
    thread_profile& thread = stream_thread(activity.device, activity.stream);
    const std::int64_t end_ns = std::max(activity.end_ns, activity.start_ns);
    thread.see(activity.start_ns);
    thread.see(end_ns);
    thread.add_interval(function, end_ns - activity.start_ns);
  }

  // Bytes as user events: on the stream (in total and per data object) and on
  // the launching thread, per calling context of the launch.
  void add_bytes(const gpu_activity& activity, const std::string& event_name,
                 const runtime::data_object_info* first_object,
                 const runtime::data_object_info* second_object) {
    const auto bytes = static_cast<double>(activity.bytes);
    const std::uint32_t total = event(event_name);
    thread_profile& stream = stream_thread(activity.device, activity.stream);
    stream.add_plain_event(total, bytes);
    const auto add_for_object = [&](const runtime::data_object_info& object) {
      stream.add_plain_event(event(profile_name(event_name + " (object: " + object.name + ")")), bytes);
    };
    if (first_object != nullptr) add_for_object(*first_object);
    // A copy within one object counts once for it.
    if (second_object != nullptr && (first_object == nullptr || first_object->id != second_object->id))
      add_for_object(*second_object);
    if (activity.launch.tid == 0) return;  // launch not seen: counted by the runtime
    thread_profile& host = host_thread(activity.launch.tid);
    host.add_event(total, bytes, node_of(host, activity.launch.context));
  }

  // A sampled launch's instruction samples as user events — GINST, its
  // non-zero stall classes (GINST:STL_*) and GSAMP:UTIL, one sample per
  // launch — under the kernel on its stream, and under the launch's calling
  // context on the launching thread.
  // Where a launch's user events go: under the kernel on its stream, and under
  // the launch's calling context on the launching thread when it is known
  // (which the launch's GPU lines then go to as well).
  struct launch_events {
    thread_profile& stream;
    std::uint32_t kernel_node;
    thread_profile* host;
    std::uint32_t host_node;
    void add(std::uint32_t id, double value) const {
      stream.add_event(id, value, kernel_node);
      if (host != nullptr) host->add_event(id, value, host_node);
    }
  };

  launch_events events_of_launch(const gpu_activity& activity, std::uint32_t function) {
    thread_profile& stream = stream_thread(activity.device, activity.stream);
    launch_events places{stream, stream.child(root_node, function), nullptr, root_node};
    if (activity.launch.tid != 0) {
      places.host = &host_thread(activity.launch.tid);
      places.host_node = node_of(*places.host, activity.launch.context);
      if (activity.launch.context != nullptr)
        launching_thread_.insert_or_assign(activity.launch.context, activity.launch.tid);
    }
    return places;
  }

  // "device-initiated bytes loaded from GPU 1", "... stored to host" (stores
  // and atomics): the user event of a direction of device-initiated traffic.
  static std::string remote_event_name(std::int32_t memory, bool stored) {
    return fmt::format("device-initiated bytes {} {}", stored ? "stored to" : "loaded from",
                       runtime::memory_end_name(memory));
  }

  // A launch's device-initiated traffic (FERRET_CUDA_PEER_ACCESSES) as user
  // events, one sample per launch and direction it moved bytes in, under the
  // kernel on its stream and under the launch's calling context on the
  // launching thread, as its instruction samples are.
  void add_kernel_remote_traffic(const gpu_activity& activity, std::uint32_t function) {
    const runtime::gpu_kernel_remote_traffic& remote = *activity.remote;
    const launch_events places = events_of_launch(activity, function);
    const std::size_t targets = std::min<std::size_t>(
        remote.target_count, runtime::gpu_kernel_remote_traffic::max_targets);
    for (std::size_t i = 0; i < targets; ++i) {
      const runtime::gpu_kernel_remote_traffic::target& target = remote.targets[i];
      for (const bool stored : {false, true}) {
        const std::uint64_t bytes = stored ? target.stored_bytes : target.loaded_bytes;
        if (bytes == 0) continue;
        places.add(event(remote_event_name(target.device, stored)), static_cast<double>(bytes));
      }
    }
  }

  // Device-initiated traffic per GPU source line (or instruction), data object
  // and direction as user events of the launching thread under the launch's
  // calling context, one sample holding the sum: "[GPU line] a.cu:21 (kernel)
  // device-initiated bytes loaded from GPU 1 (object: halo)". Contexts no
  // such launch came from (the root: launch unknown) go to the main thread.
  void add_remote_line_events() {
    for (const auto& [key, bytes] : remote_lines_) {
      const auto& [context, function, file, line, pc_offset, object, memory, stored] = key;
      const auto launcher = launching_thread_.find(context);
      thread_profile& host =
          host_thread(launcher != launching_thread_.end() ? launcher->second : session_.pid);
      const std::string kernel = runtime::demangled_kernel_name(function.data());
      std::string name =
          file.empty() ? fmt::format("[GPU instruction] {:#x} ({}) ", pc_offset, kernel)
                       : fmt::format("[GPU line] {}:{} ({}) ", file, line, kernel);
      name += remote_event_name(memory, stored);
      if (!object.empty()) name += " (object: " + object + ")";
      host.add_event(event(profile_name(name)), static_cast<double>(bytes), node_of(host, context));
    }
    remote_lines_.clear();
  }

  void add_kernel_samples(const gpu_activity& activity, std::uint32_t function) {
    const runtime::gpu_kernel_samples& samples = *activity.samples;
    const launch_events places = events_of_launch(activity, function);
    const auto add = [&](std::string_view name, double value) {
      places.add(event(std::string{name}), value);
    };
    add("GINST", samples.samples);
    for (std::size_t stall = 0; stall < runtime::gpu_stall_classes; ++stall)
      if (samples.by_stall[stall] > 0)
        add(runtime::metric_name(static_cast<runtime::gpu_stall>(stall)), samples.by_stall[stall]);
    if (samples.expected > 0) add("GSAMP:UTIL", samples.samples / samples.expected);
  }

  // The instruction samples per GPU source line (or instruction, without line
  // information) as user events of the launching thread under the launch's
  // calling context, one sample holding the sum: "[GPU line] a.cu:42 (kernel)
  // GINST" and one per non-zero stall class. Samples of contexts no sampled
  // launch came from (the root: launch unknown) go to the main thread.
  void add_line_events() {
    for (const auto& [key, by_stall] : sampled_lines_) {
      const auto& [context, function, file, line, pc_offset] = key;
      const auto launcher = launching_thread_.find(context);
      thread_profile& host =
          host_thread(launcher != launching_thread_.end() ? launcher->second : session_.pid);
      const std::uint32_t node = node_of(host, context);
      const std::string kernel = runtime::demangled_kernel_name(function.data());
      const std::string place =
          file.empty() ? fmt::format("[GPU instruction] {:#x} ({})", pc_offset, kernel)
                       : fmt::format("[GPU line] {}:{} ({})", file, line, kernel);
      double total = 0;
      for (const double samples : by_stall) total += samples;
      host.add_event(event(profile_name(place + " GINST")), total, node);
      for (std::size_t stall = 0; stall < runtime::gpu_stall_classes; ++stall)
        if (by_stall[stall] > 0)
          host.add_event(event(profile_name(fmt::format(
                             "{} {}", place, runtime::metric_name(static_cast<runtime::gpu_stall>(stall))))),
                         by_stall[stall], node);
    }
    sampled_lines_.clear();
  }

  void add_gpu_activity(const gpu_activity& activity) {
    switch (activity.operation) {
      case gpu_operation::kernel: {
        auto [it, inserted] = kernel_functions_.try_emplace(activity.name, 0);
        if (inserted)
          it->second = function(profile_name(runtime::demangled_kernel_name(activity.name)), "TAU_GPU");
        add_device_interval(activity, it->second);
        if (activity.samples != nullptr) add_kernel_samples(activity, it->second);
        if (activity.remote != nullptr) add_kernel_remote_traffic(activity, it->second);
        break;
      }
      case gpu_operation::memcpy: {
        const std::string direction{copy_direction(activity.copy)};
        add_device_interval(activity, function("Memory copy " + direction, "TAU_GPU_MEMORY_COPY"));
        add_bytes(activity, "Bytes copied from " + direction, activity.source_object,
                  activity.destination_object);
        break;
      }
      case gpu_operation::memset:
        add_device_interval(activity, function("Memory set", "TAU_GPU_MEMORY_COPY"));
        add_bytes(activity, "Bytes set", activity.destination_object, nullptr);
        break;
      case gpu_operation::allocation: {
        const std::uint32_t allocated =
            event(fmt::format("Bytes allocated ({} memory)", runtime::to_string(activity.memory)));
        const auto bytes = static_cast<double>(activity.bytes);
        if (activity.launch.tid != 0) {
          thread_profile& host = host_thread(activity.launch.tid);
          host.add_event(allocated, bytes, node_of(host, activity.launch.context));
        } else {
          stream_thread(activity.device, activity.stream).add_plain_event(allocated, bytes);
        }
        break;
      }
      case gpu_operation::release:
      case gpu_operation::synchronization:
        ++gpu_operations_not_profiled_;  // no time or amount of their own to profile
        break;
    }
  }

  // --- writing ---------------------------------------------------------------

  std::string thread_metadata(const thread_profile& thread, const thread_layout& layout) const {
    std::string out;
    if (thread.kind == thread_kind::host) {
      append_attribute(out, "Thread Name",
                       !thread.name.empty() ? thread.name
                                            : runtime::unnamed_thread_label(thread.tid, thread.is_main));
      append_attribute(out, "Thread ID", fmt::format("{}", thread.tid));
    } else {
      // TAU's attributes of a CUDA stream's virtual thread.
      append_attribute(out, "CUDA Device", fmt::format("{}", thread.device));
      append_attribute(out, "CUDA Stream", fmt::format("{}", thread.stream));
      if (const auto it = device_names_.find(thread.device); it != device_names_.end())
        append_attribute(out, "GPU Name", it->second);
    }
    append_attribute(out, "callpath-folded-calls", fmt::format("{}", thread.folded_call_count));
    append_attribute(out, "values-saturated", fmt::format("{}", layout.saturated_values));
    return out;
  }

  std::string session_metadata(const session_status& status) const {
    std::string out;
    append_attribute(out, "Hostname", session_.hostname);
    append_attribute(out, "Executable", session_.executable);
    append_attribute(out, "Command Line", session_.command_line);
    append_attribute(out, "pid", fmt::format("{}", session_.pid));
    // TAU's start time: microseconds since the epoch.
    append_attribute(out, "Starting Timestamp", fmt::format("{}", session_.start_realtime_ns / 1000));
    // As TAU writes them for call-path profiles: ParaProf then shows the call
    // paths as its call tree, and the flat entries beside it, not in it.
    append_attribute(out, "TAU_CALLPATH", "on");
    append_attribute(out, "TAU_CALLPATH_DEPTH", fmt::format("{}", callpath_depth));
    append_attribute(out, "ferret version", session_.ferret_version);
    append_attribute(out, "clock-source", session_.clock_source);
    append_attribute(out, "start-monotonic-raw-ns", fmt::format("{}", session_.start_monotonic_raw_ns));
    if (status.runtime_metadata != nullptr)
      for (const auto& [key, value] : *status.runtime_metadata)
        append_attribute(out, key.empty() ? unnamed : std::string_view{key}, metadata_text(value));
    append_attribute(out, "events-recorded", fmt::format("{}", status.events_recorded));
    append_attribute(out, "events-dropped", fmt::format("{}", status.events_dropped));
    append_attribute(out, "nonfinite-counter-samples", fmt::format("{}", nonfinite_counter_samples_));
    append_attribute(out, "gpu-operations-not-profiled", fmt::format("{}", gpu_operations_not_profiled_));
    std::uint64_t omitted = 0;
    if (status.user_metadata != nullptr) {
      std::string attribute;
      for (const auto& [key, value] : *status.user_metadata) {
        attribute.clear();
        append_attribute(attribute, key.empty() ? unnamed : std::string_view{key}, metadata_text(value));
        if (out.size() + attribute.size() > longest_metadata_block)
          ++omitted;
        else
          out += attribute;
      }
    }
    if (omitted != 0) append_attribute(out, "metadata-omitted", fmt::format("{}", omitted));
    return out;
  }

  // main first, the other host threads as they appeared, then the streams.
  std::vector<thread_profile*> ordered_threads() const {
    std::vector<thread_profile*> ordered;
    for (const auto& thread : threads_) ordered.push_back(thread.get());
    std::stable_sort(ordered.begin(), ordered.end(), [](const thread_profile* a, const thread_profile* b) {
      const auto rank = [](const thread_profile* t) {
        return t->kind == thread_kind::gpu_stream ? 2 : (t->is_main ? 0 : 1);
      };
      if (rank(a) != rank(b)) return rank(a) < rank(b);
      if (a->kind == thread_kind::gpu_stream)
        return std::make_pair(a->device, a->stream) < std::make_pair(b->device, b->stream);
      return a->order < b->order;
    });
    return ordered;
  }

  void write_profiles(const session_status& status) {
    const std::uint64_t node =
        rank_in(status.user_metadata).value_or(rank_in(status.runtime_metadata).value_or(0));
    const profile_tables tables{functions_, event_names_, metric_files_};
    const std::vector<thread_profile*> threads = ordered_threads();
    std::vector<thread_layout> layouts;
    std::vector<std::string> metadata;
    const std::string session = session_metadata(status);
    layouts.reserve(threads.size());
    for (thread_profile* thread : threads) {
      layouts.push_back(layout_of(*thread, tables));
      metadata.push_back(session + thread_metadata(*thread, layouts.back()));
      folded_calls_ += thread->folded_call_count;
    }

    for (std::size_t metric = 0; metric < metrics_.size() && error_.empty(); ++metric) {
      std::string directory = directory_;
      if (metrics_.size() > 1) {
        directory += "/MULTI__" + metric_files_[metric];
        if (const int error = make_directory(directory); error != 0) {
          fail(directory, error);
          break;
        }
      }
      for (std::size_t t = 0; t < threads.size(); ++t) {
        const std::string path = fmt::format("{}/profile.{}.0.{}", directory, node, t);
        if (const int error = write_profile(path, *threads[t], layouts[t], metric, metadata[t], tables);
            error != 0) {
          fail(path, error);
          break;
        }
      }
      // A profile left by an earlier run with more threads would read as ours.
      remove_profiles(directory, node, threads.size());
    }
    if (!error_.empty()) return;
    written_threads_ = threads.size();
    // Nodes past the job's last rank, left by an earlier run with more ranks,
    // would read as ranks of this one.
    if (node == 0 && job_size_ > 1)
      for (std::uint64_t stale = job_size_; remove_node(stale) != 0; ++stale) {
      }
    // Files of this node from an earlier run with another set of metrics:
    // readers would take them with ours.
    if (metrics_.size() > 1) {
      remove_profiles(directory_, node, 0);
    } else {
      std::error_code ignored;
      for (const auto& entry : std::filesystem::directory_iterator(directory_, ignored))
        if (entry.path().filename().string().rfind("MULTI__", 0) == 0)
          remove_profiles(entry.path().string(), node, 0);
    }
  }

  // Removes profile.<node>.0.T from T = `first` on, as long as they exist;
  // how many it removed.
  static std::size_t remove_profiles(const std::string& directory, std::uint64_t node, std::size_t first) {
    for (std::size_t t = first;; ++t)
      if (::unlink(fmt::format("{}/profile.{}.0.{}", directory, node, t).c_str()) != 0) return t - first;
  }

  // Every profile of `node` in the directory and its MULTI__ directories.
  std::size_t remove_node(std::uint64_t node) const {
    std::size_t removed = remove_profiles(directory_, node, 0);
    std::error_code ignored;
    for (const auto& entry : std::filesystem::directory_iterator(directory_, ignored))
      if (entry.path().filename().string().rfind("MULTI__", 0) == 0)
        removed += remove_profiles(entry.path().string(), node, 0);
    return removed;
  }

  // One line per failed output: describe() gives it at exit from FERRET_VERBOSE=1
  // on; below that only errors are shown, so it is said here.
  void fail(const std::string& path, int error) {
    error_ = fmt::format("{}: {}", path, std::strerror(error));
    if (runtime::verbosity() < 1) runtime::print_message(describe());
  }

  session_info session_;
  std::string directory_;
  bool created_directory_ = false;  // by this process (else it existed)
  std::uint32_t job_size_ = 1;      // ranks of the process group
  std::vector<std::string> metrics_;       // TIME, then the counters of FERRET_TAU_METRICS
  std::vector<std::string> metric_files_;  // the same as written (metric_file_name)
  std::unordered_map<std::string, std::size_t> metric_of_counter_;
  std::vector<bool> counter_seen_;         // per metric: a sample of its counter arrived
  bool finished_ = false;
  std::string error_;
  std::size_t written_threads_ = 0;
  std::uint64_t folded_calls_ = 0;

  std::vector<function_entry> functions_;
  std::unordered_map<std::string, std::uint32_t> function_index_;        // name '\n' group
  std::vector<region_function> function_of_name_;  // by name_info::id
  std::vector<std::string> event_names_;
  std::unordered_map<std::string, std::uint32_t> event_index_;
  std::vector<std::pair<const name_info*, std::uint32_t>> event_of_name_;   // by name_info::id
  static constexpr std::uint32_t no_event = 0xffffffffU;
  std::vector<std::uint32_t> sent_to_node_;  // by MPI_COMM_WORLD rank
  std::vector<std::pair<const name_info*, std::size_t>> metric_of_name_;    // by name_info::id
  std::unordered_map<const char*, std::uint32_t> kernel_functions_;      // by mangled name pointer
  // Instruction samples by (launch context, function, file, line, pc offset
  // without line information), per stall class.
  using line_key = std::tuple<const context_node*, std::string_view, std::string_view, std::uint32_t,
                              std::uint64_t>;
  std::map<line_key, std::array<double, runtime::gpu_stall_classes>> sampled_lines_;
  // Device-initiated traffic by (launch context, function, file, line, pc
  // offset without line information, object name, memory reached, stored):
  // bytes. Objects by name, so that memory is bounded by the code.
  using remote_line_key = std::tuple<const context_node*, std::string_view, std::string_view,
                                     std::uint32_t, std::uint64_t, std::string, std::int32_t, bool>;
  std::map<remote_line_key, std::uint64_t> remote_lines_;
  // The thread each context's sampled launches, or launches with device-initiated traffic, came from.
  std::unordered_map<const context_node*, std::uint64_t> launching_thread_;

  std::vector<std::unique_ptr<thread_profile>> threads_;
  std::unordered_map<std::uint64_t, std::size_t> host_index_;                     // by tid
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::size_t> stream_index_;  // (device, stream)
  std::map<std::uint32_t, std::string> device_names_;

  std::uint64_t nonfinite_counter_samples_ = 0;
  std::uint64_t gpu_operations_not_profiled_ = 0;
};

bool holds_tau_profile(const std::string& directory) {
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ignored)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("profile.", 0) == 0 || name.rfind("MULTI__", 0) == 0) return true;
  }
  return false;
}

// The profile directory for FERRET_OUTPUT: runtime::output_directory(), the
// OTF2 archive's too. A FERRET_OUTPUT without a trailing slash that names a
// TAU profile directory of an earlier run is that directory again, as TAU's
// PROFILEDIR is: a rerun replaces the profile rather than nesting a new one
// inside the old.
std::string profile_directory(const runtime::backend_context& context) {
  if (context.output_is_directory && !context.output.empty() && context.output.back() != '/' &&
      holds_tau_profile(context.output))
    return context.output;
  return runtime::output_directory(context);
}

}  // namespace

std::optional<std::vector<std::string>> parse_metrics(std::string_view text) {
  std::vector<std::string> names;
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  std::string_view trimmed = text;
  while (!trimmed.empty() && blank(trimmed.front())) trimmed.remove_prefix(1);
  while (!trimmed.empty() && blank(trimmed.back())) trimmed.remove_suffix(1);
  if (trimmed.empty() || trimmed == "none") return names;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    std::string_view name = text.substr(start, comma - start);
    while (!name.empty() && blank(name.front())) name.remove_prefix(1);
    while (!name.empty() && blank(name.back())) name.remove_suffix(1);
    if (name.empty()) return std::nullopt;
    if (name != "TIME" && std::find(names.begin(), names.end(), name) == names.end())
      names.emplace_back(name);
    start = comma + 1;
  }
  return names;
}

std::unique_ptr<runtime::backend> make_backend_in(const runtime::session_info& session,
                                                  const std::string& directory,
                                                  const std::vector<std::string>& counter_metrics,
                                                  std::string& error) {
  const bool existed = is_directory(directory);
  if (const int failure = make_directory(directory); failure != 0) {
    error = fmt::format("cannot write the TAU profile to '{}': {}", directory, std::strerror(failure));
    return nullptr;
  }
  if (::access(directory.c_str(), W_OK | X_OK) != 0) {
    error = fmt::format("cannot write the TAU profile to '{}': {}", directory, std::strerror(errno));
    return nullptr;
  }
  // Two counters whose directory names coincide would overwrite each other.
  std::vector<std::string> file_names{"TIME"};
  for (const std::string& counter : counter_metrics) {
    const std::string file_name = metric_file_name(counter);
    if (std::find(file_names.begin(), file_names.end(), file_name) != file_names.end()) {
      error = fmt::format("FERRET_TAU_METRICS: '{}' would be written as MULTI__{} twice", counter,
                          file_name);
      return nullptr;
    }
    file_names.push_back(file_name);
  }
  return std::make_unique<tau_backend>(session, directory, !existed, counter_metrics);
}

std::unique_ptr<runtime::backend> make_backend(const runtime::backend_context& context,
                                               std::string& error) {
  if (context.session == nullptr) {
    error = fmt::format("cannot write the TAU profile to '{}': no session", context.output);
    return nullptr;
  }
  const char* requested = std::getenv("FERRET_TAU_METRICS");
  const std::optional<std::vector<std::string>> counters =
      parse_metrics(requested != nullptr ? requested : "");
  if (!counters) {
    error = fmt::format(
        "FERRET_TAU_METRICS='{}' is not valid (expected comma-separated counter names)", requested);
    return nullptr;
  }
  return make_backend_in(*context.session, profile_directory(context), *counters, error);
}

FERRET_REGISTER_BACKEND("tau", "TAU profiles (profile.N.C.T), open with ParaProf or pprof",
                        make_backend);

}  // namespace ferret::tau
