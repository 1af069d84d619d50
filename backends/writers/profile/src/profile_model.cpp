// The profile of a run. See profile_model.hpp.
#include "profile_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <variant>

namespace ferret::profile {

using runtime::gpu_activity;
using runtime::gpu_operation;

std::size_t index_of(copy_kind kind) noexcept {
  const auto index = static_cast<std::size_t>(kind);
  return index < copy_kinds ? index : 0;
}

bool is_api_domain(std::string_view domain) noexcept {
  return domain == "cuda" || domain == "level_zero";
}

void gpu_metrics::add(const gpu_metrics& other) noexcept {
  kernel_ns += other.kernel_ns;
  kernels += other.kernels;
  copy_ns += other.copy_ns;
  copies += other.copies;
  copy_bytes += other.copy_bytes;
  memset_ns += other.memset_ns;
  memsets += other.memsets;
  memset_bytes += other.memset_bytes;
  allocations += other.allocations;
  allocated_bytes += other.allocated_bytes;
  sync_ns += other.sync_ns;
  syncs += other.syncs;
}

bool gpu_metrics::empty() const noexcept {
  return kernels == 0 && copies == 0 && memsets == 0 && allocations == 0 && syncs == 0;
}

void stall_samples::add(std::uint32_t reason, runtime::gpu_stall stall, double more) {
  samples += more;
  const auto index = static_cast<std::size_t>(stall);
  by_stall[index < runtime::gpu_stall_classes ? index
                                              : static_cast<std::size_t>(runtime::gpu_stall::othr)] += more;
  const auto known = std::find_if(by_reason.begin(), by_reason.end(),
                                  [reason](const auto& entry) { return entry.first == reason; });
  if (known == by_reason.end())
    by_reason.emplace_back(reason, more);
  else
    known->second += more;
}

void stall_samples::merge(const stall_samples& other) {
  samples += other.samples;
  for (std::size_t i = 0; i < runtime::gpu_stall_classes; ++i) by_stall[i] += other.by_stall[i];
  for (const auto& [reason, more] : other.by_reason) {
    const auto known = std::find_if(by_reason.begin(), by_reason.end(),
                                    [reason = reason](const auto& entry) { return entry.first == reason; });
    if (known == by_reason.end())
      by_reason.emplace_back(reason, more);
    else
      known->second += more;
  }
}

void kernel_totals::merge(const kernel_totals& other) noexcept {
  min_ns = calls == 0 ? other.min_ns : std::min(min_ns, other.min_ns);
  max_ns = std::max(max_ns, other.max_ns);
  calls += other.calls;
  total_ns += other.total_ns;
  occupancy_ppm_sum += other.occupancy_ppm_sum;
  occupancy_launches += other.occupancy_launches;
  registers = std::max(registers, other.registers);
  shared_memory_per_block = std::max(shared_memory_per_block, other.shared_memory_per_block);
  samples += other.samples;
  for (std::size_t i = 0; i < runtime::gpu_stall_classes; ++i) by_stall[i] += other.by_stall[i];
  expected_samples += other.expected_samples;
  for (std::size_t i = 0; i < link_counters; ++i) {
    link.exact[i] += other.link.exact[i];
    link.shared[i] += other.link.shared[i];
  }
  link.intervals += other.link.intervals;
  link_launches += other.link_launches;
}

void sampled_metric_totals::add(double value, std::int64_t ns) noexcept {
  if (!std::isfinite(value) || ns <= 0) return;
  ++intervals;
  sampled_ns += ns;
  if (accumulates) {
    sum += value;
    peak = std::max(peak, value * 1e9 / static_cast<double>(ns));
  } else {
    sum += value * static_cast<double>(ns);
    peak = intervals == 1 ? value : std::max(peak, value);
  }
}

double sampled_metric_totals::mean() const noexcept {
  if (sampled_ns <= 0) return 0;
  return accumulates ? sum * 1e9 / static_cast<double>(sampled_ns)
                     : sum / static_cast<double>(sampled_ns);
}

void remote_volume::add(runtime::memory_access access, std::uint64_t more_bytes,
                        std::uint64_t more_accesses) noexcept {
  // A value from a newer collector counts as a store: its bytes went to the memory.
  auto index = static_cast<std::size_t>(access);
  if (index >= access_kinds) index = static_cast<std::size_t>(runtime::memory_access::store);
  bytes[index] += more_bytes;
  accesses[index] += more_accesses;
}

void remote_volume::merge(const remote_volume& other) noexcept {
  for (std::size_t i = 0; i < access_kinds; ++i) {
    bytes[i] += other.bytes[i];
    accesses[i] += other.accesses[i];
  }
}

std::uint64_t data_object_totals::moved() const noexcept {
  std::uint64_t total = memsets.bytes;
  for (const std::uint64_t kind_bytes : copied) total += kind_bytes;
  return total;
}

bool shown_before(const data_object_totals& a, const data_object_totals& b) noexcept {
  if (a.moved() != b.moved()) return a.moved() > b.moved();
  if (a.bytes != b.bytes) return a.bytes > b.bytes;
  return a.id < b.id;
}

std::vector<unrecorded_api_calls> find_unrecorded_api_calls(
    const runtime::metadata_list& metadata) {
  constexpr std::string_view marker = "-api-unrecorded:";
  std::vector<unrecorded_api_calls> found;
  for (const auto& [key, value] : metadata) {
    const std::size_t at = key.find(marker);
    const auto* calls = std::get_if<std::int64_t>(&value);
    if (at == std::string::npos || at == 0 || calls == nullptr) continue;
    found.push_back({key.substr(0, at), key.substr(at + marker.size()), *calls});
  }
  return found;
}

std::vector<std::string> find_losses(const runtime::session_status& status) {
  std::vector<std::string> losses;
  if (status.events_dropped != 0)
    losses.push_back(fmt::format("{} events dropped", status.events_dropped));
  if (status.runtime_metadata == nullptr) return losses;
  for (const auto& [key, value] : *status.runtime_metadata) {
    // The breakdown of the dropped events above.
    if (key.rfind("events-dropped", 0) == 0) continue;
    // Losses, and regions whose end the runtime supplied or left out.
    if (key.find("dropped") == std::string::npos &&
        key.find("without-launch") == std::string::npos && key.find("region") == std::string::npos)
      continue;
    if (const auto* count = std::get_if<std::int64_t>(&value); count != nullptr && *count != 0)
      losses.push_back(fmt::format("{} {}", *count, key));
    else if (const auto* number = std::get_if<double>(&value); number != nullptr && *number != 0.0)
      losses.push_back(fmt::format("{:g} {}", *number, key));
  }
  return losses;
}

namespace {

std::int64_t duration(const gpu_activity& activity) noexcept {
  return std::max<std::int64_t>(activity.end_ns - activity.start_ns, 0);
}

__extension__ typedef unsigned __int128 wide;  // exact products of 64-bit values

std::int32_t end_of(std::int32_t device) noexcept { return std::max(device, host_end); }

}  // namespace

profile_model::profile_model(const runtime::session_info& session) : session_(session) {
  contexts_.emplace_back();  // the root
  node_name_.push_back(no_name);
}

// --- host regions ---------------------------------------------------------------

// One interned name per (domain, text): begin("x") and end("x") in different
// translation units may come with different name records.
std::uint32_t profile_model::name_index(const runtime::name_info* name) {
  if (name->id >= name_of_info_.size())
    name_of_info_.resize(std::size_t{name->id} + 1, {nullptr, 0});
  auto& [source, index] = name_of_info_[name->id];
  if (source == name) return index;
  const auto [it, inserted] = name_of_text_.try_emplace(
      std::make_pair(name->domain, name->name), static_cast<std::uint32_t>(names_.size()));
  if (inserted) names_.emplace_back(name->domain, name->name);
  source = name;
  index = it->second;
  return index;
}

std::uint32_t profile_model::child(std::uint32_t parent, std::uint32_t name,
                                   const runtime::name_info* info) {
  const std::uint64_t key = std::uint64_t{parent} << 32U | name;
  const auto [it, inserted] = child_of_.try_emplace(key, 0);
  if (inserted) {
    it->second = static_cast<std::uint32_t>(contexts_.size());
    context node;
    node.parent = parent;
    node.depth = contexts_[parent].depth + 1;
    node.domain = names_[name].first;
    node.name = names_[name].second;
    node.api_call = is_api_domain(node.domain);
    contexts_.push_back(std::move(node));
    node_name_.push_back(name);
    contexts_[parent].children.push_back(it->second);
  }
  context& node = contexts_[it->second];
  if (node.file.empty() && info != nullptr && !info->file.empty()) {
    node.file = info->file;
    node.line = info->line;
    node.function = info->function;
  }
  return it->second;
}

void profile_model::add_records(const runtime::thread_info& thread,
                                const runtime::record* records, std::size_t count) {
  if (finished_) return;
  std::vector<open_region>& stack = stacks_[thread.tid];
  for (std::size_t i = 0; i < count; ++i) {
    const runtime::record& r = records[i];
    latest_ns_ = std::max(latest_ns_, r.time_ns);
    if (r.kind == runtime::record_kind::region_begin) {
      const std::uint32_t name = name_index(r.name);
      const std::uint32_t parent = stack.empty() ? 0 : stack.back().node;
      stack.push_back(open_region{r.time_ns, child(parent, name, r.name)});
    } else if (r.kind == runtime::record_kind::region_end && !stack.empty()) {
      // The innermost open region (see runtime::record); with none open (a
      // model fed without the runtime) the end is ignored.
      close_top(stack, r.time_ns);
    } else if (r.kind == runtime::record_kind::counter) {
      add_sample(name_index(r.name), r.time_ns, r.value);
    } else if (r.kind == runtime::record_kind::mark) {
      mark_totals& mark = marks_[name_index(r.name)];
      ++mark.count;
    }
  }
}

void profile_model::add_sample(std::uint32_t name, std::int64_t time_ns, double value) {
  counter_totals& counter = counters_[name];
  if (counter.samples == 0) {
    counter.min = counter.max = value;
  } else {
    counter.min = std::min(counter.min, value);
    counter.max = std::max(counter.max, value);
  }
  ++counter.samples;
  counter.sum += value;
  // Threads are drained one after another: the latest sample by time, not by arrival.
  if (counter.samples == 1 || time_ns >= counter.last_ns) {
    counter.last = value;
    counter.last_ns = time_ns;
  }
}

// Rows in name order (then domain), with their names filled in.
template <typename Totals>
std::vector<Totals> profile_model::named_rows(const std::map<std::uint32_t, Totals>& by_name) const {
  std::vector<Totals> rows;
  for (const auto& [name, totals] : by_name) {
    rows.push_back(totals);
    rows.back().domain = names_[name].first;
    rows.back().name = names_[name].second;
  }
  std::sort(rows.begin(), rows.end(), [](const Totals& a, const Totals& b) {
    return std::tie(a.name, a.domain) < std::tie(b.name, b.domain);
  });
  return rows;
}

std::vector<counter_totals> profile_model::counters() const { return named_rows(counters_); }
std::vector<mark_totals> profile_model::marks() const { return named_rows(marks_); }

void profile_model::close_top(std::vector<open_region>& stack, std::int64_t end_ns) {
  const open_region closed = stack.back();
  stack.pop_back();
  const std::int64_t ns = std::max<std::int64_t>(end_ns - closed.begin_ns, 0);
  context& node = contexts_[closed.node];
  ++node.calls;
  node.inclusive_ns += ns;
  contexts_[node.parent].children_ns += ns;
}

std::string profile_model::region_path(std::uint32_t node) const {
  std::vector<std::uint32_t> chain;
  for (std::uint32_t at = node; at != 0; at = contexts_[at].parent)
    if (!contexts_[at].api_call) chain.push_back(at);
  std::string path;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!path.empty()) path += '/';
    path += contexts_[*it].name;
  }
  return path;
}

std::vector<gpu_metrics> profile_model::inclusive_gpu() const {
  std::vector<gpu_metrics> inclusive(contexts_.size());
  // Children come after their parents: one pass from the leaves up.
  for (std::size_t i = contexts_.size(); i-- > 0;) {
    inclusive[i].add(contexts_[i].gpu);
    if (i != 0) inclusive[contexts_[i].parent].add(inclusive[i]);
  }
  return inclusive;
}

std::vector<profile_model::path_row> profile_model::gpu_by_region_path() const {
  std::vector<path_row> rows;
  std::map<std::string, std::size_t> row_of_path;
  for (std::uint32_t i = 0; i < contexts_.size(); ++i) {
    const context& node = contexts_[i];
    if (node.gpu.empty()) continue;
    std::string path = node.synthetic ? node.name : region_path(i);
    if (path.empty()) path = "(no region)";
    const auto [it, inserted] = row_of_path.try_emplace(path, rows.size());
    if (inserted) rows.push_back(path_row{std::move(path), {}, {}});
    rows[it->second].gpu.add(node.gpu);
    rows[it->second].nodes.push_back(i);
  }
  return rows;
}

std::vector<profile_model::region_row> profile_model::regions_by_name() const {
  std::vector<region_row> rows;
  std::unordered_map<std::uint32_t, std::size_t> row_of_name;
  // Depth first without recursion (call paths can be deep), counting the
  // instances of each name on the path: inclusive time counts once for
  // recursive regions, only where a region is not nested in itself.
  std::unordered_map<std::uint32_t, std::uint32_t> open_on_path;
  std::vector<std::pair<std::uint32_t, bool>> pending{{0, false}};  // (node, leaving)
  while (!pending.empty()) {
    const auto [index, leaving] = pending.back();
    pending.pop_back();
    const std::uint32_t name = node_name_[index];
    if (leaving) {
      --open_on_path[name];
      continue;
    }
    const context& node = contexts_[index];
    if (index != 0 && !node.synthetic && node.calls != 0) {
      const auto [it, inserted] = row_of_name.try_emplace(name, rows.size());
      if (inserted) rows.push_back(region_row{node.name, node.domain, 0, 0});
      region_row& row = rows[it->second];
      row.calls += node.calls;
      if (open_on_path[name] == 0) row.inclusive_ns += node.inclusive_ns;
    }
    ++open_on_path[name];
    pending.emplace_back(index, true);
    for (auto child = node.children.rbegin(); child != node.children.rend(); ++child)
      pending.emplace_back(*child, false);
  }
  return rows;
}

// --- GPU activity -----------------------------------------------------------------

std::uint32_t profile_model::node_of(const runtime::context_node* node) {
  // Up to the first node already mapped (or the root), then down again:
  // iterative, since call paths can be deep.
  std::vector<const runtime::context_node*> chain;
  std::uint32_t mapped = 0;
  for (; node != nullptr && node->name != nullptr; node = node->parent) {
    if (const auto it = node_of_context_.find(node); it != node_of_context_.end()) {
      mapped = it->second;
      break;
    }
    chain.push_back(node);
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    mapped = child(mapped, name_index((*it)->name), (*it)->name);
    node_of_context_.emplace(*it, mapped);
  }
  return mapped;
}

std::uint32_t profile_model::context_of(const runtime::gpu_launch& launch) {
  if (launch.tid != 0) return node_of(launch.context);
  return launch_not_seen();
}

std::uint32_t profile_model::launch_not_seen() {
  if (!launch_not_seen_) {
    launch_not_seen_ = static_cast<std::uint32_t>(contexts_.size());
    context node;
    node.depth = 1;
    node.name = "(launch not seen)";
    node.synthetic = true;
    contexts_.push_back(std::move(node));
    node_name_.push_back(no_name);
    contexts_[0].children.push_back(*launch_not_seen_);
  }
  return *launch_not_seen_;
}

data_object_totals* profile_model::object_of(std::uint64_t id,
                                             const runtime::data_object_info* info,
                                             bool registering) {
  if (info != nullptr) id = info->id;
  if (id == 0) return nullptr;
  const auto [found, created] = objects_.try_emplace(id);
  data_object_totals& object = found->second;
  object.id = id;
  // Not from a registration: an object released before (and not kept), or
  // never registered; it competes with the released ones.
  if (created && !registering) released_.push_back(id);
  if (!object.known && info != nullptr) {
    object.known = true;
    object.name = info->name;
    object.automatic = info->allocated_in != nullptr;
    object.address = info->address;
    object.bytes = info->bytes;
    object.memory = info->memory;
    object.device = end_of(info->device);
  } else if (!object.known && object.name.empty()) {
    object.name = fmt::format("data object {}", id);
  }
  return &object;
}

void profile_model::add_data_object(const runtime::data_object_event& event) {
  if (finished_ || event.object == nullptr) return;
  latest_ns_ = std::max(latest_ns_, event.time_ns);
  const bool registered = event.change == runtime::data_object_change::registered;
  data_object_totals* object = object_of(event.object->id, event.object, registered);
  if (object == nullptr) return;
  if (registered) {
    object->registered_ns = event.time_ns;
    return;
  }
  if (!object->unregistered_ns) released_.push_back(object->id);
  object->unregistered_ns = event.time_ns;
  if (released_.size() >= 2 * released_objects_kept) keep_released_objects();
}

// Amortised: once per released_objects_kept releases, in linear time.
void profile_model::keep_released_objects() {
  std::sort(released_.begin(), released_.end());
  released_.erase(std::unique(released_.begin(), released_.end()), released_.end());
  std::vector<data_object_totals*> released;
  released.reserve(released_.size());
  for (const std::uint64_t id : released_)
    if (const auto it = objects_.find(id); it != objects_.end()) released.push_back(&it->second);
  released_.clear();
  if (released.size() > released_objects_kept) {
    const auto first_dropped = released.begin() + static_cast<std::ptrdiff_t>(released_objects_kept);
    std::nth_element(released.begin(), first_dropped, released.end(),
                     [](const data_object_totals* a, const data_object_totals* b) {
                       return shown_before(*a, *b);
                     });
    for (auto it = first_dropped; it != released.end(); ++it) {
      const std::uint64_t id = (*it)->id;
      for (const auto& [node, volume] : (*it)->contexts) context_objects_.erase({node, id});
      ++objects_not_kept_;
      objects_.erase(id);
    }
    released.erase(first_dropped, released.end());
  }
  for (const data_object_totals* kept : released) released_.push_back(kept->id);
}

device_totals& profile_model::device(std::uint32_t id) {
  device_totals& found = devices_[id];
  found.id = id;
  return found;
}

void profile_model::add_device(const runtime::gpu_device_info& info) {
  if (!finished_) device(info.id).info = info;
}

void profile_model::add_communication(const runtime::communication_event* events,
                                      std::size_t count) {
  using runtime::communication_kind;
  for (std::size_t i = 0; i < count; ++i) {
    const runtime::communication_event& e = events[i];
    mpi_call_totals& call = mpi_calls_[e.call != nullptr ? e.call : "(unknown call)"];
    switch (e.kind) {
      case communication_kind::send:
      case communication_kind::isend:
        call.sent.add(e.bytes);
        if (rank_ && e.peer_process != runtime::no_rank) messages_[{*rank_, e.peer_process}].add(e.bytes);
        break;
      case communication_kind::receive:
      case communication_kind::irecv: call.received.add(e.bytes); break;
      case communication_kind::collective_end:
        call.sent.add(e.bytes);
        call.received.add(e.bytes_received);
        break;
      case communication_kind::isend_complete:
      case communication_kind::irecv_request:
      case communication_kind::collective_begin: break;
    }
  }
}

void profile_model::set_process(std::uint32_t rank, std::uint32_t size) noexcept {
  rank_ = rank;
  size_ = size;
}

void profile_model::add_message(std::uint32_t from, std::uint32_t to, const volume& messages) {
  if (messages.operations != 0) messages_[{from, to}] = messages;
}

void profile_model::add_activities(const gpu_activity* activities, std::size_t count) {
  if (finished_) return;
  std::vector<std::pair<const gpu_activity*, std::uint32_t>> memory_changes;
  for (std::size_t i = 0; i < count; ++i) {
    const gpu_activity& activity = activities[i];
    ++gpu_operations_;
    const std::uint32_t node = context_of(activity.launch);
    switch (activity.operation) {
      case gpu_operation::kernel:
        add_kernel(activity, node);
        break;
      case gpu_operation::memcpy:
        add_copy(activity, node);
        break;
      case gpu_operation::memset:
        add_memset(activity, node);
        break;
      case gpu_operation::allocation:
      case gpu_operation::release:
        memory_changes.emplace_back(&activity, node);
        break;
      case gpu_operation::synchronization:
        contexts_[node].gpu.sync_ns += duration(activity);
        ++contexts_[node].gpu.syncs;
        break;
    }
  }
  // Activities of a drain come in no particular order; the live bytes (and
  // so the peak) need them in time order, a release before an allocation at
  // the same instant so that reusing memory does not count twice.
  std::sort(memory_changes.begin(), memory_changes.end(), [](const auto& a, const auto& b) {
    if (a.first->start_ns != b.first->start_ns) return a.first->start_ns < b.first->start_ns;
    return a.first->operation == gpu_operation::release &&
           b.first->operation != gpu_operation::release;
  });
  for (const auto& [change, node] : memory_changes) {
    if (change->operation == gpu_operation::allocation)
      add_allocation(*change, node);
    else
      add_release(*change);
  }
}

void profile_model::add_kernel(const gpu_activity& kernel, std::uint32_t node) {
  const std::int64_t ns = duration(kernel);
  gpu_metrics& metrics = contexts_[node].gpu;
  metrics.kernel_ns += ns;
  ++metrics.kernels;
  device_totals& on = device(kernel.device);
  const auto [entry, inserted] = on.kernels.try_emplace(kernel.name != nullptr ? kernel.name : "");
  kernel_totals& totals = entry->second;
  if (inserted) {
    totals.mangled_name = entry->first;
    totals.device = kernel.device;
    totals.min_ns = ns;
  }
  ++totals.calls;
  totals.total_ns += ns;
  totals.min_ns = std::min(totals.min_ns, ns);
  totals.max_ns = std::max(totals.max_ns, ns);
  if (kernel.kernel.occupancy >= 0.0) {
    totals.occupancy_ppm_sum +=
        static_cast<std::uint64_t>(std::min(kernel.kernel.occupancy, 1.0) * 1e6 + 0.5);
    ++totals.occupancy_launches;
  }
  totals.registers = std::max(totals.registers, kernel.kernel.registers_per_thread);
  if (kernel.samples != nullptr) {
    totals.samples += kernel.samples->samples;
    for (std::size_t i = 0; i < runtime::gpu_stall_classes; ++i)
      totals.by_stall[i] += kernel.samples->by_stall[i];
    totals.expected_samples += kernel.samples->expected;
    if (kernel.samples->period_cycles != 0) period_cycles_ = kernel.samples->period_cycles;
  }
  totals.shared_memory_per_block =
      std::max(totals.shared_memory_per_block,
               kernel.kernel.static_shared_memory + kernel.kernel.dynamic_shared_memory);
  link_attribution_.add_kernel(kernel.device, kernel.start_ns, kernel.end_ns,
                               reinterpret_cast<std::uintptr_t>(&totals));
  add_busy(kernel);
}

// --- sampled counters ------------------------------------------------------------

void profile_model::add_metric_set(const runtime::gpu_metric_set& set) {
  if (finished_) return;
  std::vector<sampled_metric_totals>& sampled = device(set.device).sampled;
  sampled.clear();
  for (const runtime::gpu_metric& metric : set.metrics) {
    sampled_metric_totals& totals = sampled.emplace_back();
    totals.label = metric.label != nullptr ? metric.label : (metric.name != nullptr ? metric.name : "");
    totals.unit = metric.unit != nullptr ? metric.unit : "";
    totals.accumulates = metric.accumulates;
  }
  link_attribution_.add_metric_set(set);
}

void profile_model::add_metric_intervals(const runtime::gpu_metric_interval* intervals,
                                         std::size_t count) {
  if (finished_) return;
  for (std::size_t i = 0; i < count; ++i) {
    const runtime::gpu_metric_interval& interval = intervals[i];
    const auto found = devices_.find(interval.device);
    if (found == devices_.end() || interval.values == nullptr) continue;
    std::vector<sampled_metric_totals>& sampled = found->second.sampled;
    for (std::size_t metric = 0; metric < sampled.size(); ++metric)
      sampled[metric].add(interval.values[metric], interval.end_ns - interval.begin_ns);
  }
  link_attribution_.add_intervals(intervals, count);
}

void profile_model::end_drain() {
  if (!finished_) link_attribution_.end_drain();
}

bool profile_model::has_sampled_counters() const noexcept {
  for (const auto& [id, on] : devices_)
    if (!on.sampled.empty()) return true;
  return false;
}

void profile_model::link_sink::kernel_done(std::uint64_t key, const kernel_link_bytes* bytes) {
  if (bytes == nullptr || bytes->intervals == 0) return;
  auto& totals = *reinterpret_cast<kernel_totals*>(static_cast<std::uintptr_t>(key));
  for (std::size_t i = 0; i < link_counters; ++i) {
    totals.link.exact[i] += bytes->exact[i];
    totals.link.shared[i] += bytes->shared[i];
  }
  totals.link.intervals += bytes->intervals;
  ++totals.link_launches;
}

void profile_model::link_sink::interval_done(std::uint32_t device, link_share share,
                                             const link_bytes& bytes) {
  link_bytes& into = model_.device(device).link_by_share[static_cast<std::size_t>(share)];
  for (std::size_t i = 0; i < link_counters; ++i) into[i] += bytes[i];
}

void profile_model::add_copy(const gpu_activity& copy, std::uint32_t node) {
  const std::int64_t ns = duration(copy);
  gpu_metrics& metrics = contexts_[node].gpu;
  metrics.copy_ns += ns;
  ++metrics.copies;
  metrics.copy_bytes += copy.bytes;
  const std::size_t kind = index_of(copy.copy);
  device(copy.device).copies[kind].add(copy.bytes, ns);
  const std::int32_t from = end_of(copy.source_device);
  const std::int32_t to = end_of(copy.destination_device);
  traffic_[copies_matrix].cells[{from, to}].add(copy.bytes);
  context_traffic_[{node, from, to}].add(copy.bytes);
  data_object_totals* source = object_of(copy.source_object_id, copy.source_object);
  data_object_totals* destination = object_of(copy.destination_object_id, copy.destination_object);
  const auto moved = [&](data_object_totals& object, flow_direction direction) {
    object.flows[{direction, static_cast<copy_kind>(kind), from, to}].add(copy.bytes);
    object.copied[kind] += copy.bytes;
    ++object.operations;
    object.contexts[node].add(copy.bytes);
    context_objects_[{node, object.id}].add(copy.bytes);
  };
  if (source != nullptr && source == destination) {
    // Within one object: its bytes count once.
    moved(*source, flow_direction::within);
    touch(*source, copy.source_address, copy.bytes);
    touch(*source, copy.destination_address, copy.bytes);
  } else {
    if (source != nullptr) {
      moved(*source, flow_direction::out);
      touch(*source, copy.source_address, copy.bytes);
    }
    if (destination != nullptr) {
      moved(*destination, flow_direction::in);
      touch(*destination, copy.destination_address, copy.bytes);
    }
  }
  add_busy(copy);
}

void profile_model::add_memset(const gpu_activity& memset, std::uint32_t node) {
  const std::int64_t ns = duration(memset);
  gpu_metrics& metrics = contexts_[node].gpu;
  metrics.memset_ns += ns;
  ++metrics.memsets;
  metrics.memset_bytes += memset.bytes;
  device(memset.device).memsets.add(memset.bytes, ns);
  if (data_object_totals* object =
          object_of(memset.destination_object_id, memset.destination_object)) {
    const auto on = static_cast<std::int32_t>(memset.device);
    object->flows[{flow_direction::memset, copy_kind::unknown, on, on}].add(memset.bytes);
    object->memsets.add(memset.bytes);
    ++object->operations;
    object->contexts[node].add(memset.bytes);
    context_objects_[{node, object->id}].add(memset.bytes);
    touch(*object, memset.destination_address, memset.bytes);
  }
  add_busy(memset);
}

// Bytes [address, address + bytes) spread over the object's heat bins; bytes
// at no known place in the object (no address, or past its end) are counted.
void profile_model::touch(data_object_totals& object, std::uintptr_t address,
                          std::uint64_t bytes) {
  if (!object.known || object.bytes == 0 || address < object.address ||
      address - object.address >= object.bytes) {
    object.bytes_not_placed += bytes;
    return;
  }
  if (object.heat.empty()) object.heat.assign(heat_bins, 0);
  const std::uint64_t size = object.bytes;
  const std::uint64_t begin = address - object.address;
  const std::uint64_t end = begin + std::min<std::uint64_t>(bytes, size - begin);
  object.bytes_not_placed += bytes - (end - begin);
  const auto boundary = [&](std::size_t bin) {
    return static_cast<std::uint64_t>(static_cast<wide>(size) * bin / heat_bins);
  };
  // The first bin whose end lies past `begin`.
  std::size_t bin = static_cast<std::size_t>(static_cast<wide>(begin) * heat_bins / size);
  for (; bin < heat_bins && boundary(bin) < end; ++bin) {
    const std::uint64_t from = std::max(begin, boundary(bin));
    const std::uint64_t to = std::min(end, boundary(bin + 1));
    if (to > from) object.heat[bin] += to - from;
  }
}

void profile_model::add_allocation(const gpu_activity& allocation, std::uint32_t node) {
  gpu_metrics& metrics = contexts_[node].gpu;
  ++metrics.allocations;
  metrics.allocated_bytes += allocation.bytes;
  memory_totals& totals = memory_[{allocation.device, allocation.memory}];
  ++totals.allocations;
  totals.bytes_allocated += allocation.bytes;
  totals.live += allocation.bytes;
  totals.peak = std::max(totals.peak, totals.live);
  live_allocations_[{allocation.device, allocation.address}] =
      live_allocation{allocation.memory, allocation.bytes};
  memory_series& series = device(allocation.device).memory;
  const std::uint64_t before = series.live;
  series.live += allocation.bytes;
  note_memory(allocation.device, before, allocation.start_ns);
}

// A release counts against its allocation's memory kind, and takes its size
// from the allocation when it carries none.
void profile_model::add_release(const gpu_activity& release) {
  memory_kind memory = release.memory;
  std::uint64_t bytes = release.bytes;
  bool known = false;
  if (const auto it = live_allocations_.find({release.device, release.address});
      it != live_allocations_.end()) {
    memory = it->second.memory;
    if (bytes == 0) bytes = it->second.bytes;
    live_allocations_.erase(it);
    known = true;
  }
  memory_totals& totals = memory_[{release.device, memory}];
  ++totals.releases;
  totals.live -= std::min(totals.live, bytes);
  if (!known) return;  // its allocation was never counted as live
  memory_series& series = device(release.device).memory;
  const std::uint64_t before = series.live;
  series.live -= std::min(series.live, bytes);
  note_memory(release.device, before, release.start_ns);
}

void profile_model::note_memory(std::uint32_t device_id, std::uint64_t before, std::int64_t ns) {
  fit_time(ns);
  memory_series& series = devices_[device_id].memory;
  const std::size_t bucket = bucket_of(ns);
  series.peak[bucket] = std::max({series.peak[bucket], before, series.live});
  series.last[bucket] = series.live;
}

void profile_model::add_busy(const gpu_activity& activity) {
  if (activity.stream == 0) return;
  const std::int64_t start = std::max<std::int64_t>(activity.start_ns, 0);
  const std::int64_t end = std::max(activity.end_ns, start);
  stream_totals& stream = device(activity.device).streams[activity.stream];
  ++stream.operations;
  stream.busy_ns += end - start;
  fit_time(end);
  for (std::size_t bucket = bucket_of(start); bucket < time_buckets; ++bucket) {
    const std::int64_t bucket_start = static_cast<std::int64_t>(bucket) * bucket_ns_;
    const std::int64_t bucket_end = bucket_start + bucket_ns_;
    if (bucket_start >= end && end > start) break;
    stream.busy[bucket] += std::min(end, bucket_end) - std::max(start, bucket_start);
    if (bucket_end >= end) break;
  }
}

std::size_t profile_model::bucket_of(std::int64_t ns) const noexcept {
  const auto bucket = static_cast<std::size_t>(std::max<std::int64_t>(ns, 0) / bucket_ns_);
  return std::min(bucket, time_buckets - 1);
}

// Doubles the bucket width until `ns` falls into the last bucket or before;
// neighbouring buckets merge.
void profile_model::fit_time(std::int64_t ns) {
  while (ns >= bucket_ns_ * static_cast<std::int64_t>(time_buckets)) {
    bucket_ns_ *= 2;
    for (auto& [id, on] : devices_) {
      memory_series& memory = on.memory;
      for (std::size_t i = 0; i < time_buckets / 2; ++i) {
        memory.peak[i] = std::max(memory.peak[2 * i], memory.peak[2 * i + 1]);
        memory.last[i] = memory.last[2 * i + 1] ? memory.last[2 * i + 1] : memory.last[2 * i];
      }
      std::fill(memory.peak.begin() + time_buckets / 2, memory.peak.end(), 0);
      std::fill(memory.last.begin() + time_buckets / 2, memory.last.end(), std::nullopt);
      for (auto& [number, stream] : on.streams) {
        for (std::size_t i = 0; i < time_buckets / 2; ++i)
          stream.busy[i] = stream.busy[2 * i] + stream.busy[2 * i + 1];
        std::fill(stream.busy.begin() + time_buckets / 2, stream.busy.end(), 0);
      }
    }
  }
}

// --- instruction samples -----------------------------------------------------------

std::uint32_t profile_model::text_index(const char* text) {
  if (text == nullptr) text = "";
  if (const auto it = text_of_pointer_.find(text); it != text_of_pointer_.end()) return it->second;
  const auto [it, inserted] =
      text_of_string_.try_emplace(text, static_cast<std::uint32_t>(text_of_string_.size()));
  text_of_pointer_.emplace(text, it->second);
  return it->second;
}

// Texts that may not outlive the call (object names): by content only.
std::uint32_t profile_model::string_index(std::string_view text) {
  if (const auto it = text_of_string_.find(text); it != text_of_string_.end()) return it->second;
  const auto index = static_cast<std::uint32_t>(text_of_string_.size());
  text_of_string_.emplace(std::string{text}, index);
  return index;
}

void profile_model::add_instruction_samples(const runtime::gpu_instruction_sample* samples,
                                            std::size_t count) {
  if (finished_) return;
  for (std::size_t i = 0; i < count; ++i) {
    const runtime::gpu_instruction_sample& s = samples[i];
    if (s.reason == nullptr || !(s.samples > 0)) continue;
    // The runtime gives the root the samples of launches it did not find.
    const std::uint32_t node = s.context == nullptr || s.context->name == nullptr
                                   ? launch_not_seen()
                                   : node_of(s.context);
    const bool has_line = s.file != nullptr && s.file[0] != '\0' && s.line != 0;
    const auto key = std::make_tuple(node, text_index(s.function), text_index(has_line ? s.file : ""),
                                     has_line ? s.line : 0U, has_line ? 0U : s.pc_offset);
    const auto [row, inserted] = gpu_line_of_.try_emplace(key, gpu_lines_.size());
    if (inserted) {
      gpu_line line;
      line.context = node;
      line.function = s.function != nullptr ? s.function : "";
      if (has_line) {
        line.file = s.file;
        line.line = s.line;
      } else {
        line.pc_offset = s.pc_offset;
      }
      gpu_lines_.push_back(std::move(line));
    }
    auto [reason, new_reason] = reason_of_pointer_.try_emplace(s.reason, 0);
    if (new_reason) {
      const auto named = std::find_if(stall_reasons_.begin(), stall_reasons_.end(),
                                      [&](const stall_reason& known) { return known.name == s.reason->name; });
      reason->second = static_cast<std::uint32_t>(named - stall_reasons_.begin());
      if (named == stall_reasons_.end()) stall_reasons_.push_back({s.reason->name, s.reason->stall});
    }
    gpu_lines_[row->second].samples.add(reason->second, stall_reasons_[reason->second].stall, s.samples);
    instruction_samples_ += s.samples;
  }
}

namespace {

// Most samples first; ties in a fixed order of their names.
bool more_samples(const gpu_line& a, const gpu_line& b) {
  if (a.samples.samples != b.samples.samples) return a.samples.samples > b.samples.samples;
  return std::tie(a.file, a.line, a.function, a.pc_offset, a.context) <
         std::tie(b.file, b.line, b.function, b.pc_offset, b.context);
}

}  // namespace

std::vector<gpu_line> profile_model::gpu_lines_over_contexts() const {
  std::vector<gpu_line> merged;
  std::map<std::tuple<std::string_view, std::string_view, std::uint32_t, std::uint64_t>, std::size_t> row_of;
  for (const gpu_line& line : gpu_lines_) {
    const auto [row, inserted] = row_of.try_emplace(
        std::make_tuple(std::string_view{line.function}, std::string_view{line.file}, line.line,
                        line.pc_offset),
        merged.size());
    if (inserted) {
      merged.push_back(line);
      merged.back().context = 0;
    } else {
      merged[row->second].samples.merge(line.samples);
    }
  }
  std::sort(merged.begin(), merged.end(), more_samples);
  return merged;
}

// Rows by region path (API calls folded into their region) and kernel: the
// lines' contexts of one path and function together, each line's payload
// merged into its row by `merge`.
template <typename Row, typename Line, typename Merge>
std::vector<Row> profile_model::fold_by_region_path(const std::vector<Line>& lines, Merge merge) const {
  std::vector<Row> rows;
  std::map<std::pair<std::string, std::string_view>, std::size_t> row_of;
  for (const Line& line : lines) {
    const context& node = contexts_[line.context];
    std::string path = node.synthetic ? node.name : region_path(line.context);
    if (path.empty()) path = "(no region)";
    const auto [row, inserted] =
        row_of.try_emplace(std::make_pair(path, std::string_view{line.function}), rows.size());
    if (inserted) {
      rows.emplace_back();
      rows.back().path = std::move(path);
      rows.back().function = line.function;
    }
    Row& found = rows[row->second];
    merge(found, line);
    if (std::find(found.nodes.begin(), found.nodes.end(), line.context) == found.nodes.end())
      found.nodes.push_back(line.context);
  }
  return rows;
}

std::vector<profile_model::stall_row> profile_model::gpu_stalls_by_region_path() const {
  std::vector<stall_row> rows = fold_by_region_path<stall_row>(
      gpu_lines_, [](stall_row& row, const gpu_line& line) { row.samples.merge(line.samples); });
  std::sort(rows.begin(), rows.end(), [](const stall_row& a, const stall_row& b) {
    if (a.samples.samples != b.samples.samples) return a.samples.samples > b.samples.samples;
    return std::tie(a.path, a.function) < std::tie(b.path, b.function);
  });
  return rows;
}

profile_model::sampling_totals profile_model::sampling() const {
  sampling_totals totals;
  totals.period_cycles = period_cycles_;
  totals.attributed = instruction_samples_;
  for (const auto& [id, on] : devices_)
    for (const auto& [name, kernel] : on.kernels) {
      totals.kernel_samples += kernel.samples;
      totals.expected += kernel.expected_samples;
    }
  for (const auto& [key, value] : runtime_metadata_) {
    const auto* number = std::get_if<std::int64_t>(&value);
    if (number == nullptr) continue;
    if (key == "gpu-pc-sampling-period-cycles") totals.period_cycles = *number;
    else if (key == "gpu-pc-samples") totals.total = *number;
    else if (key == "gpu-pc-samples-dropped") totals.dropped = *number;
    else if (key == "gpu-pc-samples-non-user") totals.non_user = *number;
  }
  return totals;
}

// --- device-initiated traffic --------------------------------------------------------

void profile_model::add_remote_accesses(const runtime::gpu_remote_access* accesses,
                                        std::size_t count) {
  if (finished_) return;
  for (std::size_t i = 0; i < count; ++i) {
    const runtime::gpu_remote_access& a = accesses[i];
    if (a.bytes == 0 && a.accesses == 0) continue;
    // The runtime gives the root the traffic of launches it did not find.
    const std::uint32_t node = a.context == nullptr || a.context->name == nullptr
                                   ? launch_not_seen()
                                   : node_of(a.context);
    const bool has_line = a.file != nullptr && a.file[0] != '\0' && a.line != 0;
    const std::int32_t target = end_of(a.target_device);
    data_object_totals* object = object_of(a.object_id, a.object);
    const auto key = std::make_tuple(node, text_index(a.function), text_index(has_line ? a.file : ""),
                                     has_line ? a.line : 0U, has_line ? 0U : a.pc_offset,
                                     string_index(object != nullptr ? object->name : ""), a.device, target);
    const auto [row, inserted] = remote_line_of_.try_emplace(key, remote_lines_.size());
    if (inserted) {
      remote_line line;
      line.context = node;
      line.function = a.function != nullptr ? a.function : "";
      if (has_line) {
        line.file = a.file;
        line.line = a.line;
      } else {
        line.pc_offset = a.pc_offset;
      }
      if (object != nullptr) {
        line.object_id = object->id;
        line.object = object->name;
      }
      line.device = a.device;
      line.target = target;
      remote_lines_.push_back(std::move(line));
    }
    remote_lines_[row->second].volume.add(a.access, a.bytes, a.accesses);
    remote_total_.add(a.access, a.bytes, a.accesses);
    if (object != nullptr) object->device_initiated[{a.device, target}].add(a.access, a.bytes, a.accesses);
    // The matrix: a load's bytes come from the memory's device, the others' go to it.
    const auto device = static_cast<std::int32_t>(a.device);
    const bool load = a.access == runtime::memory_access::load;
    volume& cell = traffic_[device_initiated_matrix].cells[load ? std::make_pair(target, device) : std::make_pair(device, target)];
    cell.bytes += a.bytes;
    cell.operations += a.accesses;
  }
}

namespace {

// Most bytes first; ties in a fixed order of their names.
bool more_bytes(const remote_line& a, const remote_line& b) {
  if (a.volume.total_bytes() != b.volume.total_bytes())
    return a.volume.total_bytes() > b.volume.total_bytes();
  return std::tie(a.function, a.file, a.line, a.pc_offset, a.object, a.object_id, a.device, a.target,
                  a.context) < std::tie(b.function, b.file, b.line, b.pc_offset, b.object,
                                        b.object_id, b.device, b.target, b.context);
}

}  // namespace

std::vector<remote_line> profile_model::remote_lines_over_contexts() const {
  std::vector<remote_line> merged;
  std::map<std::tuple<std::string_view, std::string_view, std::uint32_t, std::uint64_t, std::string_view,
                      std::uint32_t, std::int32_t>,
           std::size_t>
      row_of;
  for (const remote_line& line : remote_lines_) {
    const auto [row, inserted] = row_of.try_emplace(
        std::make_tuple(std::string_view{line.function}, std::string_view{line.file}, line.line,
                        line.pc_offset, std::string_view{line.object}, line.device, line.target),
        merged.size());
    if (inserted) {
      merged.push_back(line);
      merged.back().context = 0;
    } else {
      merged[row->second].volume.merge(line.volume);
    }
  }
  std::sort(merged.begin(), merged.end(), more_bytes);
  return merged;
}

std::vector<profile_model::remote_row> profile_model::remote_by_region_path() const {
  std::vector<remote_row> rows = fold_by_region_path<remote_row>(
      remote_lines_, [](remote_row& row, const remote_line& line) { row.volume.merge(line.volume); });
  std::sort(rows.begin(), rows.end(), [](const remote_row& a, const remote_row& b) {
    if (a.volume.total_bytes() != b.volume.total_bytes())
      return a.volume.total_bytes() > b.volume.total_bytes();
    return std::tie(a.path, a.function) < std::tie(b.path, b.function);
  });
  return rows;
}

// --- the end ------------------------------------------------------------------------

void profile_model::finish(const runtime::session_status& status, std::int64_t end_ns) {
  if (finished_) return;
  link_attribution_.finish();
  finished_ = true;
  end_ns_ = std::max(end_ns, latest_ns_);
  fit_time(end_ns_);
  contexts_.front().inclusive_ns = contexts_.front().children_ns;
  losses_ = find_losses(status);
  if (status.runtime_metadata != nullptr) {
    runtime_metadata_ = *status.runtime_metadata;
    unrecorded_ = find_unrecorded_api_calls(runtime_metadata_);
  }
  if (status.user_metadata != nullptr) user_metadata_ = *status.user_metadata;
}

std::map<std::string, kernel_totals> profile_model::kernels() const {
  std::map<std::string, kernel_totals> merged;
  for (const auto& [id, on] : devices_)
    for (const auto& [name, totals] : on.kernels) {
      const auto [it, inserted] = merged.try_emplace(name, totals);
      if (!inserted) it->second.merge(totals);
    }
  return merged;
}

std::array<transfer_totals, copy_kinds> profile_model::copies() const {
  std::array<transfer_totals, copy_kinds> all{};
  for (const auto& [id, on] : devices_)
    for (std::size_t kind = 0; kind < copy_kinds; ++kind) all[kind].merge(on.copies[kind]);
  return all;
}

std::vector<std::int32_t> profile_model::ends() const {
  std::vector<std::int32_t> all{host_end};
  for (const auto& [id, on] : devices_) all.push_back(static_cast<std::int32_t>(id));
  for (const traffic_matrix& matrix : traffic_)
    for (const auto& [between, amount] : matrix.cells) {
      all.push_back(between.first);
      all.push_back(between.second);
    }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

}  // namespace ferret::profile
