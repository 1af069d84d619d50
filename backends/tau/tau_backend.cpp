// The TAU profile backend. See tau_backend.hpp for the layout and
// tests/tau_backend_test.cpp and tools/ferret-tau-check for how it is checked.
#include "tau_backend.hpp"

#include "ferret/runtime/runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>
#include <variant>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

constexpr std::string_view application_name = ".TAU application";
constexpr std::uint32_t application_function = 0;  // functions_[0]
constexpr std::uint32_t root_node = 0;              // every thread's nodes_[0]

// The group of a region: TAU_USER for annotations, TAU_GPU_API for the CUDA
// calls the collector records (TAU's group for them), TAU_USER|<domain> for a
// library's domain, with blanks as '_' (readers take the group up to a blank).
std::string group_of(const name_info& name) {
  if (name.domain.empty()) return "TAU_USER";
  if (name.domain == "cuda") return "TAU_GPU_API";
  std::string domain = profile_name(name.domain);
  std::replace(domain.begin(), domain.end(), ' ', '_');
  return "TAU_USER|" + domain;
}

// TAU's name for a region: the name, and where it is in the source in the
// form ParaProf turns into a source link ("solve [{heat.cpp} {42,0}]").
std::string function_name_of(const name_info& name) {
  std::string text = profile_name(name.name);
  if (!name.file.empty()) {
    // '{', '}' and ']' would end the location early in ParaProf's parser.
    std::string file = profile_name(name.file);
    std::replace_if(
        file.begin(), file.end(), [](char c) { return c == '{' || c == '}' || c == ']'; }, '_');
    text += fmt::format(" [{{{}}} {{{},0}}]", file, name.line);
  }
  return text;
}

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

struct function_entry {
  std::string name;
  std::string group;
};

// A calling context on one thread: a region entered from its parent's context.
struct call_node {
  std::uint32_t function;
  std::uint32_t parent;  // root_node for the children of the root (and the root itself)
  std::uint64_t calls = 0;
  std::uint64_t child_calls = 0;  // completed calls of its children
};

struct statistics {
  std::uint64_t count = 0;
  double max = -std::numeric_limits<double>::infinity();
  double min = std::numeric_limits<double>::infinity();
  double sum = 0.0;
  double sum_of_squares = 0.0;

  void add(double value) noexcept {
    ++count;
    max = std::max(max, value);
    min = std::min(min, value);
    sum += value;
    sum_of_squares += value * value;
  }
};

struct user_event {
  std::string name;
  statistics values;
};

struct context_event {
  std::uint32_t event;  // index into profile_thread::events
  std::uint32_t node;
  statistics values;
};

struct open_frame {
  const name_info* name;
  std::uint32_t node;
};

enum class thread_kind : std::uint8_t { host, gpu_stream };

// One profile.N.C.T file's worth of data, for every metric.
struct profile_thread {
  profile_thread(thread_kind k, std::size_t metric_count, std::uint64_t appearance)
      : kind(k), metrics(metric_count), order(appearance), current(metric_count, 0.0),
        root_children(metric_count, 0.0) {
    nodes.push_back(call_node{application_function, root_node});
    node_values.assign(2 * metrics, 0.0);
  }

  double* inclusive(std::uint32_t node) { return &node_values[std::size_t{node} * 2 * metrics]; }
  double* exclusive(std::uint32_t node) { return inclusive(node) + metrics; }
  double* frame_begin(std::size_t frame) { return &frame_values[frame * 2 * metrics]; }
  double* frame_children(std::size_t frame) { return frame_begin(frame) + metrics; }

  // The node for `function` called from `parent`, created on first use.
  std::uint32_t child(std::uint32_t parent, std::uint32_t function) {
    const std::uint64_t key = (std::uint64_t{parent} << 32U) | function;
    const auto [it, inserted] = child_index.try_emplace(key, static_cast<std::uint32_t>(nodes.size()));
    if (inserted) {
      nodes.push_back(call_node{function, parent});
      node_values.resize(node_values.size() + 2 * metrics, 0.0);
    }
    return it->second;
  }

  std::uint32_t top_node() const { return stack.empty() ? root_node : stack.back().node; }

  void see(std::int64_t time_ns) {
    if (!seen) {
      seen = true;
      if (!is_main) start_ns = time_ns;  // the main thread starts with the process
    }
    start_ns = std::min(start_ns, time_ns);
    end_ns = std::max(end_ns, time_ns);
  }

  // Adds `value` to the user event `event`, and to its context event at `node`.
  void add_user_event(const std::string& event, double value, std::uint32_t node) {
    const auto [it, inserted] = event_index.try_emplace(event, static_cast<std::uint32_t>(events.size()));
    if (inserted) events.push_back(user_event{event, {}});
    events[it->second].values.add(value);
    const std::uint64_t key = (std::uint64_t{it->second} << 32U) | node;
    const auto [context, added] =
        context_index.try_emplace(key, static_cast<std::uint32_t>(context_events.size()));
    if (added) context_events.push_back(context_event{it->second, node, {}});
    context_events[context->second].values.add(value);
  }

  // Adds `value` to the user event `event` without a calling context.
  void add_plain_event(const std::string& event, double value) {
    const auto [it, inserted] = event_index.try_emplace(event, static_cast<std::uint32_t>(events.size()));
    if (inserted) events.push_back(user_event{event, {}});
    events[it->second].values.add(value);
  }

  thread_kind kind;
  std::size_t metrics;
  std::uint64_t order;  // appearance, for the thread numbers
  bool is_main = false;
  std::uint64_t tid = 0;
  std::string name;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;

  bool seen = false;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;

  std::vector<call_node> nodes;
  std::vector<double> node_values;  // per node: inclusive[metrics], exclusive[metrics]
  std::unordered_map<std::uint64_t, std::uint32_t> child_index;  // (parent, function) → node
  std::unordered_map<const context_node*, std::uint32_t> node_of_context;

  std::vector<open_frame> stack;
  std::vector<double> frame_values;  // per open frame: values at begin, children's inclusive
  std::vector<double> current;       // TIME (ns) and each counter metric, now
  std::vector<double> root_children; // inclusive values of the root's completed children

  std::vector<user_event> events;
  std::unordered_map<std::string, std::uint32_t> event_index;
  std::vector<context_event> context_events;
  std::unordered_map<std::uint64_t, std::uint32_t> context_index;  // (event, node) → index
};

bool same_region(const name_info* a, const name_info* b) noexcept {
  return a == b || (a->name == b->name && a->domain == b->domain);
}

// pprof reads lines into 64 KiB buffers (SIZE_OF_LINE in utils/pprof.cpp): a
// longer metadata line would be cut and the rest read as function lines. So a
// value is kept to 4 KiB, and run metadata stops at 48 KiB (what is left out is
// counted in "metadata-omitted").
constexpr std::size_t longest_metadata_value = 4096;
constexpr std::size_t longest_metadata_block = 48 * 1024;

void append_attribute(std::string& out, std::string_view name, std::string_view value) {
  out += "<attribute><name>";
  append_xml_text(out, name.substr(0, longest_metadata_value));
  out += "</name><value>";
  if (value.size() > longest_metadata_value) {
    std::size_t cut = longest_metadata_value;
    while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0U) == 0x80U) --cut;  // UTF-8
    append_xml_text(out, value.substr(0, cut));
    out += "…";
  } else {
    append_xml_text(out, value);
  }
  out += "</value></attribute>";
}

std::string metadata_text(const runtime::metadata_value& value) {
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return fmt::format("{}", *integer);
  return fmt::format("{}", std::get<double>(value));
}

// "mpi-rank" from the run metadata: the node number N of the files.
std::optional<std::uint64_t> rank_in(const metadata_list* metadata) {
  if (metadata == nullptr) return std::nullopt;
  for (const auto& [key, value] : *metadata) {
    if (key != "mpi-rank") continue;
    if (const auto* integer = std::get_if<std::int64_t>(&value); integer != nullptr && *integer >= 0)
      return static_cast<std::uint64_t>(*integer);
    if (const auto* text = std::get_if<std::string>(&value); text != nullptr && !text->empty() &&
        std::all_of(text->begin(), text->end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::strtoull(text->c_str(), nullptr, 10);
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

// Writes `text` to `path`, replacing it; 0 or the errno.
int write_file(const std::string& path, std::string_view text) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno;
  int error = 0;
  while (!text.empty()) {
    const ssize_t written = ::write(fd, text.data(), text.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      error = errno;
      break;
    }
    if (written == 0) {  // no progress and no errno: give up rather than spin
      error = EIO;
      break;
    }
    text.remove_prefix(static_cast<std::size_t>(written));
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  return error;
}

class tau_backend final : public runtime::backend {
 public:
  tau_backend(const session_info& session, std::string directory, std::vector<std::string> counters)
      : session_(session), directory_(std::move(directory)) {
    metrics_.emplace_back("TIME");
    for (std::string& counter : counters) {
      metric_of_counter_.emplace(counter, metrics_.size());
      metrics_.push_back(std::move(counter));
    }
    functions_.push_back(function_entry{std::string{application_name}, "TAU_DEFAULT"});
    function_index_.emplace(std::string{application_name} + '\n' + "TAU_DEFAULT", 0);
  }

  void thread_records(const thread_info& info, const record* records, std::size_t count) override {
    if (finished_) return;
    profile_thread& thread = host_thread(info.tid);
    thread.is_main = info.is_main;
    if (!info.name.empty() && info.name != thread.name) thread.name = std::string{info.name};
    for (std::size_t i = 0; i < count; ++i) {
      const record& r = records[i];
      if (r.name == nullptr) continue;
      thread.see(r.time_ns);
      latest_ns_ = std::max(latest_ns_, r.time_ns);
      thread.current[0] = static_cast<double>(r.time_ns);
      switch (r.kind) {
        case record_kind::region_begin: begin_region(thread, r.name); break;
        case record_kind::region_end: end_region(thread, r.name); break;
        case record_kind::mark:
          // TAU has no instants: a mark counts as a user event of value 1.
          thread.add_user_event(event_name_of(r.name), 1.0, thread.top_node());
          break;
        case record_kind::counter: add_counter_sample(thread, r); break;
      }
    }
  }

  void data_object(const runtime::data_object_event& event) override {
    if (!finished_) latest_ns_ = std::max(latest_ns_, event.time_ns);
  }

  void gpu_device(const runtime::gpu_device_info& device) override {
    if (!finished_) device_names_[device.id] = device.name;
  }

  void gpu_activities(const gpu_activity* activities, std::size_t count) override {
    if (finished_) return;
    for (std::size_t i = 0; i < count; ++i) add_gpu_activity(activities[i]);
  }

  void flush(const session_status& status) override {
    if (finished_ || !status.final) return;
    finished_ = true;
    for (auto& [tid, index] : host_index_) {
      profile_thread& thread = *threads_[index];
      while (!thread.stack.empty()) {
        ++unfinished_regions_;
        thread.see(latest_ns_);
        thread.current[0] = static_cast<double>(latest_ns_);
        close_top(thread);
      }
    }
    write_profiles(status);
  }

  void abandon() noexcept override {
    finished_ = true;  // the parent writes the profile
    threads_.clear();
    host_index_.clear();
    stream_index_.clear();
  }

  std::string describe() const override {
    if (!error_.empty()) return fmt::format("tau profile: {}: not written: {}", directory_, error_);
    std::string line = fmt::format("tau profile: {} ({} thread{}", directory_, written_threads_,
                                   written_threads_ == 1 ? "" : "s");
    if (metrics_.size() > 1) line += fmt::format(", {} metrics", metrics_.size());
    return line + ")";
  }

 private:
  // --- threads and names -----------------------------------------------------

  profile_thread& host_thread(std::uint64_t tid) {
    const auto [it, inserted] = host_index_.try_emplace(tid, threads_.size());
    if (inserted) {
      threads_.push_back(std::make_unique<profile_thread>(thread_kind::host, metrics_.size(), threads_.size()));
      threads_.back()->tid = tid;
      threads_.back()->is_main = tid == session_.pid;
    }
    return *threads_[it->second];
  }

  profile_thread& stream_thread(std::uint32_t device, std::uint32_t stream) {
    const auto [it, inserted] = stream_index_.try_emplace({device, stream}, threads_.size());
    if (inserted) {
      threads_.push_back(
          std::make_unique<profile_thread>(thread_kind::gpu_stream, metrics_.size(), threads_.size()));
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

  // The function of a region name, cached per name record.
  std::uint32_t function_of(const name_info* name) {
    if (name->id >= function_of_name_.size())
      function_of_name_.resize(std::size_t{name->id} + 1, {nullptr, 0});
    auto& [source, index] = function_of_name_[name->id];
    if (source != name) {
      source = name;
      index = function(function_name_of(*name), group_of(*name));
    }
    return index;
  }

  // The user event of a counter or mark ("name", or "name [domain]"), cached
  // per name record.
  const std::string& event_name_of(const name_info* name) {
    if (name->id >= event_name_of_name_.size())
      event_name_of_name_.resize(std::size_t{name->id} + 1);
    auto& [source, text] = event_name_of_name_[name->id];
    if (source != name) {
      source = name;
      text = name->domain.empty() ? profile_name(name->name)
                                  : profile_name(name->name) + " [" + profile_name(name->domain) + "]";
    }
    return text;
  }

  // --- host regions ----------------------------------------------------------

  void begin_region(profile_thread& thread, const name_info* name) {
    const std::uint32_t node = thread.child(thread.top_node(), function_of(name));
    thread.stack.push_back(open_frame{name, node});
    thread.frame_values.insert(thread.frame_values.end(), thread.current.begin(), thread.current.end());
    thread.frame_values.resize(thread.frame_values.size() + metrics_.size(), 0.0);
  }

  // An end closes the innermost open region of its name, and the regions opened
  // inside it that did not end (so that times still nest); an end without a
  // matching begin is ignored. Both are counted in the metadata.
  void end_region(profile_thread& thread, const name_info* name) {
    std::size_t match = thread.stack.size();
    while (match > 0 && !same_region(thread.stack[match - 1].name, name)) --match;
    if (match == 0) {
      ++unmatched_region_ends_;
      return;
    }
    if (match < thread.stack.size()) ++unbalanced_region_ends_;
    while (thread.stack.size() >= match) close_top(thread);
  }

  // Closes the innermost open region at the thread's current values.
  void close_top(profile_thread& thread) {
    const std::size_t frame = thread.stack.size() - 1;
    const std::uint32_t node = thread.stack[frame].node;
    double* inclusive = thread.inclusive(node);
    double* exclusive = thread.exclusive(node);
    double* parent_children =
        frame == 0 ? thread.root_children.data() : thread.frame_children(frame - 1);
    for (std::size_t m = 0; m < metrics_.size(); ++m) {
      const double spent = thread.current[m] - thread.frame_begin(frame)[m];
      inclusive[m] += spent;
      exclusive[m] += spent - thread.frame_children(frame)[m];
      parent_children[m] += spent;
    }
    ++thread.nodes[node].calls;
    ++thread.nodes[thread.nodes[node].parent].child_calls;
    thread.stack.pop_back();
    thread.frame_values.resize(frame * 2 * metrics_.size());
  }

  void add_counter_sample(profile_thread& thread, const record& sample) {
    if (!std::isfinite(sample.value)) {
      ++nonfinite_counter_samples_;
      return;
    }
    if (!metric_of_counter_.empty() && sample.name->domain.empty()) {
      if (const auto it = metric_of_counter_.find(sample.name->name); it != metric_of_counter_.end())
        thread.current[it->second] = sample.value;
    }
    thread.add_user_event(event_name_of(sample.name), sample.value, thread.top_node());
  }

  // --- GPU activity ----------------------------------------------------------

  // The node of a launch's calling context on the launching thread (the
  // context tree's regions and API calls), created on first use.
  std::uint32_t node_of(profile_thread& thread, const context_node* context) {
    if (context == nullptr || context->parent == nullptr || context->name == nullptr) return root_node;
    if (const auto it = thread.node_of_context.find(context); it != thread.node_of_context.end())
      return it->second;
    const std::uint32_t parent = node_of(thread, context->parent);
    // Python frames (backends/python) are context of GPU work, never timed:
    // TAU writes only called functions, so its paths keep the host's regions.
    const std::uint32_t node =
        context->name->domain == "python" ? parent : thread.child(parent, function_of(context->name));
    thread.node_of_context.emplace(context, node);
    return node;
  }

  // A timed entry on the stream's virtual thread.
  void add_device_interval(const gpu_activity& activity, std::uint32_t function) {
    profile_thread& thread = stream_thread(activity.device, activity.stream);
    const std::int64_t end_ns = std::max(activity.end_ns, activity.start_ns);
    thread.see(activity.start_ns);
    thread.see(end_ns);
    latest_ns_ = std::max(latest_ns_, end_ns);
    const auto spent = static_cast<double>(end_ns - activity.start_ns);
    const std::uint32_t node = thread.child(root_node, function);
    thread.inclusive(node)[0] += spent;
    thread.exclusive(node)[0] += spent;
    thread.root_children[0] += spent;
    ++thread.nodes[node].calls;
    ++thread.nodes[root_node].child_calls;
  }

  // Bytes as user events: on the stream (in total and per data object) and on
  // the launching thread, per calling context of the launch.
  void add_bytes(const gpu_activity& activity, const std::string& event,
                 const runtime::data_object_info* first_object,
                 const runtime::data_object_info* second_object) {
    const auto bytes = static_cast<double>(activity.bytes);
    profile_thread& stream = stream_thread(activity.device, activity.stream);
    stream.add_plain_event(event, bytes);
    const auto add_for_object = [&](const runtime::data_object_info& object) {
      stream.add_plain_event(event + " (object: " + profile_name(object.name) + ")", bytes);
    };
    if (first_object != nullptr) add_for_object(*first_object);
    // A copy within one object counts once for it.
    if (second_object != nullptr && (first_object == nullptr || first_object->id != second_object->id))
      add_for_object(*second_object);
    if (activity.launch.tid == 0) return;  // launch not seen: counted by the runtime
    profile_thread& host = host_thread(activity.launch.tid);
    host.add_user_event(event, bytes, node_of(host, activity.launch.context));
  }

  void add_gpu_activity(const gpu_activity& activity) {
    switch (activity.operation) {
      case gpu_operation::kernel: {
        auto [it, inserted] = kernel_functions_.try_emplace(activity.name, 0);
        if (inserted)
          it->second = function(profile_name(runtime::demangled_kernel_name(activity.name)), "TAU_GPU");
        add_device_interval(activity, it->second);
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
        const std::string event =
            fmt::format("Bytes allocated ({} memory)", runtime::to_string(activity.memory));
        if (activity.launch.tid != 0) {
          profile_thread& host = host_thread(activity.launch.tid);
          host.add_user_event(event, static_cast<double>(activity.bytes),
                              node_of(host, activity.launch.context));
        } else {
          stream_thread(activity.device, activity.stream)
              .add_plain_event(event, static_cast<double>(activity.bytes));
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

  struct flat_totals {
    std::uint64_t calls = 0;
    std::uint64_t child_calls = 0;
    std::vector<double> exclusive, inclusive;
  };

  // Everything of a thread that does not depend on the metric.
  struct thread_layout {
    std::vector<std::string> paths;  // per node: ".TAU application => a => b"
    std::vector<bool> recursive;     // per node: a caller has the same function
    std::vector<flat_totals> flat;   // per function
    std::vector<double> root_inclusive;
  };

  thread_layout layout_of(profile_thread& thread) const {
    const std::size_t metric_count = metrics_.size();
    thread_layout layout;
    layout.paths.resize(thread.nodes.size());
    layout.recursive.assign(thread.nodes.size(), false);
    layout.paths[root_node] = std::string{application_name};
    for (std::uint32_t n = 1; n < thread.nodes.size(); ++n) {  // parents come before children
      const call_node& node = thread.nodes[n];
      layout.paths[n] = layout.paths[node.parent] + " => " + functions_[node.function].name;
      for (std::uint32_t up = node.parent; up != root_node; up = thread.nodes[up].parent)
        if (thread.nodes[up].function == node.function) layout.recursive[n] = true;
    }
    layout.flat.resize(functions_.size());
    for (flat_totals& totals : layout.flat) {
      totals.exclusive.assign(metric_count, 0.0);
      totals.inclusive.assign(metric_count, 0.0);
    }
    for (std::uint32_t n = 1; n < thread.nodes.size(); ++n) {
      const call_node& node = thread.nodes[n];
      flat_totals& totals = layout.flat[node.function];
      totals.calls += node.calls;
      totals.child_calls += node.child_calls;
      for (std::size_t m = 0; m < metric_count; ++m) {
        totals.exclusive[m] += thread.exclusive(n)[m];
        // A recursive call's time is already in its outermost call's.
        if (!layout.recursive[n]) totals.inclusive[m] += thread.inclusive(n)[m];
      }
    }
    // The root spans the thread: from its start (the process's for the main
    // thread) to its last event; a counter metric from 0 to its last value.
    layout.root_inclusive.assign(metric_count, 0.0);
    layout.root_inclusive[0] = static_cast<double>(thread.end_ns - thread.start_ns);
    for (std::size_t m = 1; m < metric_count; ++m) layout.root_inclusive[m] = thread.current[m];
    return layout;
  }

  // A metric value: TIME (held in whole nanoseconds) as microseconds with at
  // most three decimals, computed in integers so that no rounding noise such as
  // 7828.186000000001 appears; other metrics as TAU writes them (%.16G).
  static void append_value(std::string& out, double value, bool time) {
    if (!time || std::fabs(value) >= 9e15) {
      fmt::format_to(std::back_inserter(out), "{:.16G}", value);
      return;
    }
    const auto ns = static_cast<std::int64_t>(std::llround(value));
    const std::uint64_t magnitude = ns < 0 ? 0U - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
    if (ns < 0) out += '-';
    fmt::format_to(std::back_inserter(out), "{}", magnitude / 1000U);
    std::uint64_t fraction = magnitude % 1000U;
    if (fraction == 0) return;
    int digits = 3;
    while (fraction % 10U == 0) {
      fraction /= 10U;
      --digits;
    }
    fmt::format_to(std::back_inserter(out), ".{:0{}}", fraction, digits);
  }

  static void append_function_line(std::string& out, std::string_view name, std::uint64_t calls,
                                   std::uint64_t child_calls, double exclusive, double inclusive,
                                   std::string_view group, bool time) {
    fmt::format_to(std::back_inserter(out), "\"{}\" {} {} ", name, calls, child_calls);
    append_value(out, exclusive, time);
    out += ' ';
    append_value(out, inclusive, time);
    fmt::format_to(std::back_inserter(out), " 0 GROUP=\"{}\" \n", group);
  }

  static void append_statistics(std::string& out, std::string_view name, const statistics& s) {
    const double mean = s.sum / static_cast<double>(s.count);
    fmt::format_to(std::back_inserter(out), "\"{}\" {} {:.16G} {:.16G} {:.16G} {:.16G}\n", name,
                   s.count, s.max, s.min, mean, s.sum_of_squares);
  }

  std::string thread_metadata(const profile_thread& thread) const {
    std::string out;
    if (thread.kind == thread_kind::host) {
      append_attribute(out, "Thread Name",
                       !thread.name.empty() ? thread.name
                                            : (thread.is_main ? std::string{"main"}
                                                              : fmt::format("thread {}", thread.tid)));
      append_attribute(out, "Thread ID", fmt::format("{}", thread.tid));
    } else {
      // TAU's attributes of a CUDA stream's virtual thread.
      append_attribute(out, "CUDA Device", fmt::format("{}", thread.device));
      append_attribute(out, "CUDA Stream", fmt::format("{}", thread.stream));
      if (const auto it = device_names_.find(thread.device); it != device_names_.end())
        append_attribute(out, "GPU Name", it->second);
    }
    return out;
  }

  std::string profile_text(profile_thread& thread, const thread_layout& layout, std::size_t metric,
                           const std::string& session_metadata) const {
    const bool time = metric == 0;
    std::string lines;
    std::size_t count = 0;

    const double root_inclusive = layout.root_inclusive[metric];
    double root_exclusive = root_inclusive - thread.root_children[metric];
    // Operations of one stream do not overlap, nor regions on a thread; this
    // keeps rounding from ever writing a negative exclusive time.
    if (time) root_exclusive = std::max(root_exclusive, 0.0);
    append_function_line(lines, application_name, 1, thread.nodes[root_node].child_calls,
                         root_exclusive, root_inclusive, "TAU_DEFAULT", time);
    ++count;
    for (std::uint32_t f = 1; f < functions_.size(); ++f) {
      const flat_totals& totals = layout.flat[f];
      if (totals.calls == 0) continue;
      append_function_line(lines, functions_[f].name, totals.calls, totals.child_calls,
                           totals.exclusive[metric], totals.inclusive[metric], functions_[f].group, time);
      ++count;
    }
    for (std::uint32_t n = 1; n < thread.nodes.size(); ++n) {
      const call_node& node = thread.nodes[n];
      if (node.calls == 0) continue;
      append_function_line(lines, layout.paths[n], node.calls, node.child_calls,
                           thread.exclusive(n)[metric], thread.inclusive(n)[metric],
                           "TAU_CALLPATH|" + functions_[node.function].group, time);
      ++count;
    }
    lines += "0 aggregates\n";
    const std::size_t event_count = thread.events.size() + thread.context_events.size();
    if (event_count != 0) {
      fmt::format_to(std::back_inserter(lines), "{} userevents\n", event_count);
      lines += "# eventname numevents max min mean sumsqr\n";
      for (const user_event& event : thread.events) append_statistics(lines, event.name, event.values);
      for (const context_event& event : thread.context_events)
        append_statistics(lines, thread.events[event.event].name + " : " + layout.paths[event.node],
                          event.values);
    }

    const std::string metric_name = metric_file_name(metrics_[metric]);
    std::string out = fmt::format("{} templated_functions_MULTI_{}\n", count, metric_name);
    out += "# Name Calls Subrs Excl Incl ProfileCalls # <metadata>";
    append_attribute(out, "Metric Name", metric_name);
    out += session_metadata;
    out += thread_metadata(thread);
    out += "</metadata>\n";
    out += lines;
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
    append_attribute(out, "ferret version", session_.ferret_version);
    append_attribute(out, "clock-source", session_.clock_source);
    append_attribute(out, "start-monotonic-raw-ns", fmt::format("{}", session_.start_monotonic_raw_ns));
    if (status.runtime_metadata != nullptr)
      for (const auto& [key, value] : *status.runtime_metadata)
        append_attribute(out, key, metadata_text(value));
    append_attribute(out, "events-recorded", fmt::format("{}", status.events_recorded));
    append_attribute(out, "events-dropped", fmt::format("{}", status.events_dropped));
    append_attribute(out, "unbalanced-region-ends", fmt::format("{}", unbalanced_region_ends_));
    append_attribute(out, "unmatched-region-ends", fmt::format("{}", unmatched_region_ends_));
    append_attribute(out, "unfinished-regions", fmt::format("{}", unfinished_regions_));
    append_attribute(out, "nonfinite-counter-samples", fmt::format("{}", nonfinite_counter_samples_));
    append_attribute(out, "gpu-operations-not-profiled", fmt::format("{}", gpu_operations_not_profiled_));
    std::uint64_t omitted = 0;
    if (status.user_metadata != nullptr) {
      for (const auto& [key, value] : *status.user_metadata) {
        if (out.size() > longest_metadata_block)
          ++omitted;
        else
          append_attribute(out, key, metadata_text(value));
      }
    }
    if (omitted != 0) append_attribute(out, "metadata-omitted", fmt::format("{}", omitted));
    return out;
  }

  // main first, the other host threads as they appeared, then the streams.
  std::vector<profile_thread*> ordered_threads() const {
    std::vector<profile_thread*> ordered;
    for (const auto& thread : threads_) ordered.push_back(thread.get());
    std::stable_sort(ordered.begin(), ordered.end(), [](const profile_thread* a, const profile_thread* b) {
      const auto rank = [](const profile_thread* t) {
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
    const std::string metadata = session_metadata(status);
    const std::vector<profile_thread*> threads = ordered_threads();
    std::vector<thread_layout> layouts;
    layouts.reserve(threads.size());
    for (profile_thread* thread : threads) layouts.push_back(layout_of(*thread));

    for (std::size_t metric = 0; metric < metrics_.size() && error_.empty(); ++metric) {
      std::string directory = directory_;
      if (metrics_.size() > 1) {
        directory += "/MULTI__" + metric_file_name(metrics_[metric]);
        if (const int error = make_directory(directory); error != 0) {
          fail(directory, error);
          break;
        }
      }
      for (std::size_t t = 0; t < threads.size(); ++t) {
        const std::string path = fmt::format("{}/profile.{}.0.{}", directory, node, t);
        if (const int error = write_file(path, profile_text(*threads[t], layouts[t], metric, metadata));
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

  // Removes profile.<node>.0.T from T = `first` on, as long as they exist.
  static void remove_profiles(const std::string& directory, std::uint64_t node, std::size_t first) {
    for (std::size_t t = first;; ++t)
      if (::unlink(fmt::format("{}/profile.{}.0.{}", directory, node, t).c_str()) != 0) return;
  }

  void fail(const std::string& path, int error) {
    error_ = fmt::format("{}: {}", path, std::strerror(error));
    runtime::print_message(fmt::format("cannot write the TAU profile {}", error_));
  }

  session_info session_;
  std::string directory_;
  std::vector<std::string> metrics_;  // TIME, then the counters of FERRET_TAU_METRICS
  std::unordered_map<std::string, std::size_t> metric_of_counter_;
  bool finished_ = false;
  std::string error_;
  std::size_t written_threads_ = 0;
  std::int64_t latest_ns_ = 0;

  std::vector<function_entry> functions_;
  std::unordered_map<std::string, std::uint32_t> function_index_;        // name '\n' group
  std::vector<std::pair<const name_info*, std::uint32_t>> function_of_name_;  // by name_info::id
  std::vector<std::pair<const name_info*, std::string>> event_name_of_name_;  // by name_info::id
  std::unordered_map<const char*, std::uint32_t> kernel_functions_;      // by mangled name pointer

  std::vector<std::unique_ptr<profile_thread>> threads_;
  std::unordered_map<std::uint64_t, std::size_t> host_index_;                     // by tid
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::size_t> stream_index_;  // (device, stream)
  std::map<std::uint32_t, std::string> device_names_;

  std::uint64_t unbalanced_region_ends_ = 0;
  std::uint64_t unmatched_region_ends_ = 0;
  std::uint64_t unfinished_regions_ = 0;
  std::uint64_t nonfinite_counter_samples_ = 0;
  std::uint64_t gpu_operations_not_profiled_ = 0;
};

// The profile directory for FERRET_OUTPUT: runtime::output_file() without an
// extension made of letters only ("run.json" → "run"), so that beside chrome's
// file it does not take that file's name. "ferret-a.out-42" keeps its dot.
std::string profile_directory(const runtime::backend_context& context) {
  std::string path = runtime::output_file(context, "");
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const std::size_t slash = path.rfind('/');
  const std::size_t dot = path.rfind('.');
  const std::size_t name_start = slash == std::string::npos ? 0 : slash + 1;
  if (dot != std::string::npos && dot > name_start && dot + 1 < path.size() &&
      std::all_of(path.begin() + static_cast<std::ptrdiff_t>(dot) + 1, path.end(),
                  [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }))
    path.resize(dot);
  return path;
}

}  // namespace

std::unique_ptr<runtime::backend> make_backend_in(const runtime::session_info& session,
                                                  const std::string& directory,
                                                  const std::vector<std::string>& counter_metrics,
                                                  std::string& error) {
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
  return std::make_unique<tau_backend>(session, directory, counter_metrics);
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
