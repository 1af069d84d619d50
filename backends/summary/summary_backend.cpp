// The summary backend. See summary_backend.hpp for the report's layout.
//
// Everything is aggregated as it arrives (per calling context, kernel, copy
// direction, data object, device and memory kind, host region), so memory
// grows with the number of distinct keys, never with the number of events.
#include "summary_backend.hpp"

#include "ferret/runtime/api_policy.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace ferret::summary {
namespace {

using runtime::copy_kind;
using runtime::data_object_info;
using runtime::gpu_activity;
using runtime::gpu_launch;
using runtime::gpu_operation;
using runtime::memory_kind;
using runtime::name_info;
using runtime::record;
using runtime::record_kind;
using runtime::session_info;
using runtime::session_status;
using runtime::thread_info;

constexpr std::size_t top_rows = 10;
constexpr std::size_t longest_kernel_name = 100;  // display columns, "…" included

// copy_kind's values, unknown (0) to peer_to_peer (5), index the per-kind arrays.
constexpr std::size_t copy_kinds = 6;
// The order in which directions are listed.
constexpr std::array<copy_kind, copy_kinds> listed_copy_kinds = {
    copy_kind::host_to_device, copy_kind::device_to_host, copy_kind::device_to_device,
    copy_kind::host_to_host,   copy_kind::peer_to_peer,   copy_kind::unknown};

std::size_t index_of(copy_kind kind) noexcept {
  const auto index = static_cast<std::size_t>(kind);
  return index < copy_kinds ? index : 0;  // a value from a newer collector counts as unknown
}

// --- formatting -------------------------------------------------------------

bool starts_character(char byte) noexcept {
  return (static_cast<unsigned char>(byte) & 0xC0U) != 0x80U;  // not a UTF-8 continuation
}

// Terminal columns of UTF-8 text, one per code point ("µs" is two, not three).
std::size_t display_width(std::string_view text) noexcept {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), starts_character));
}

// `text` cut to `width` columns, ending in "…" when something was cut; never
// splits a UTF-8 sequence.
std::string truncated(std::string text, std::size_t width) {
  if (display_width(text) <= width) return text;
  std::size_t kept = 0;
  std::size_t cut = 0;
  for (; cut < text.size(); ++cut) {
    if (!starts_character(text[cut])) continue;
    if (kept + 1 == width) break;
    ++kept;
  }
  text.resize(cut);
  text += "…";
  return text;
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  constexpr std::array<const char*, 5> units = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < units.size()) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, units[unit]);
}

// Table cells: "-" marks nothing at all, so that real values stand out.
std::string bytes_cell(std::uint64_t bytes) { return bytes == 0 ? "-" : human_bytes(bytes); }

std::string milliseconds(std::int64_t ns) {
  return fmt::format("{:.3f}", static_cast<double>(ns) / 1e6);
}

std::string device_label(std::int64_t device) {
  return device < 0 ? std::string{"host"} : fmt::format("GPU {}", device);
}

std::string plural(std::uint64_t count, std::string_view noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

enum class alignment { left, right };

// Rows under a header, each column as wide as its widest cell: two spaces of
// indent and two between columns; the last column is not padded (no trailing
// blanks).
class text_table {
 public:
  text_table(std::initializer_list<std::pair<std::string, alignment>> columns)
      : text_table(std::vector<std::pair<std::string, alignment>>(columns)) {}
  explicit text_table(const std::vector<std::pair<std::string, alignment>>& columns) {
    for (const auto& [header, align] : columns) {
      headers_.push_back(header);
      alignments_.push_back(align);
    }
  }

  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

  void append_to(std::string& out) const {
    std::vector<std::size_t> widths(headers_.size());
    for (std::size_t i = 0; i < headers_.size(); ++i) widths[i] = display_width(headers_[i]);
    for (const auto& row : rows_)
      for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i)
        widths[i] = std::max(widths[i], display_width(row[i]));
    append_line(out, headers_, widths);
    for (const auto& row : rows_) append_line(out, row, widths);
  }

 private:
  void append_line(std::string& out, const std::vector<std::string>& cells,
                   const std::vector<std::size_t>& widths) const {
    std::string line = "  ";
    for (std::size_t i = 0; i < cells.size() && i < widths.size(); ++i) {
      if (i != 0) line += "  ";
      const std::size_t padding = widths[i] - display_width(cells[i]);
      const bool last = i + 1 == cells.size();
      if (alignments_[i] == alignment::right) line.append(padding, ' ');
      line += cells[i];
      if (alignments_[i] == alignment::left && !last) line.append(padding, ' ');
    }
    out += line;
    out += '\n';
  }

  std::vector<std::string> headers_;
  std::vector<alignment> alignments_;
  std::vector<std::vector<std::string>> rows_;
};

void append_heading(std::string& out, std::string_view heading) {
  out += '\n';
  out += heading;
  out += '\n';
}

void append_not_shown(std::string& out, std::size_t total, std::string_view noun) {
  if (total <= top_rows) return;
  const std::size_t hidden = total - top_rows;
  out += fmt::format("  … {} more {}{}\n", hidden, noun, hidden == 1 ? "" : "s");
}

// The first `top_rows` of `items` by `before` (a strict "comes first" order).
template <typename T, typename Order>
std::vector<const T*> top(const std::vector<const T*>& items, Order before) {
  std::vector<const T*> sorted = items;
  const std::size_t shown = std::min(sorted.size(), top_rows);
  std::partial_sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(shown),
                    sorted.end(), before);
  sorted.resize(shown);
  return sorted;
}

// --- aggregates -------------------------------------------------------------

struct context_totals {
  std::string label;  // the context path, or what stands in for it
  std::int64_t kernel_ns = 0;
  std::uint64_t kernels = 0;
  std::int64_t copy_ns = 0;
  std::uint64_t copy_bytes = 0;
  std::uint64_t memset_bytes = 0;
  std::int64_t sync_ns = 0;
};

struct kernel_totals {
  std::string mangled_name;
  std::uint64_t calls = 0;
  std::int64_t total_ns = 0;
  double occupancy_sum = 0.0;  // over the launches whose occupancy is known
  std::uint64_t occupancy_launches = 0;
  std::uint32_t registers = 0;  // the most any launch used
};

struct copy_totals {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  std::int64_t ns = 0;
};

struct object_totals {
  std::uint64_t id = 0;
  std::string name;    // "(auto)" appended for allocations the runtime named
  bool named = false;  // false while only the id is known
  std::array<std::uint64_t, copy_kinds> copied{};  // by copy_kind
  std::uint64_t memset_bytes = 0;

  std::uint64_t moved() const noexcept {
    std::uint64_t total = memset_bytes;
    for (const std::uint64_t bytes : copied) total += bytes;
    return total;
  }
};

struct memory_totals {
  std::uint64_t allocations = 0;
  std::uint64_t bytes_allocated = 0;
  std::uint64_t releases = 0;
  std::uint64_t live = 0;
  std::uint64_t peak = 0;
};

struct live_allocation {
  memory_kind memory;
  std::uint64_t bytes;
};

struct region_totals {
  std::string label;
  std::uint64_t calls = 0;
  std::int64_t inclusive_ns = 0;
};

struct open_region {
  std::int64_t begin_ns;
  std::size_t region;  // index into regions_
};

class summary_backend final : public runtime::backend {
 public:
  summary_backend(const session_info& session, int fd)
      : executable_(session.executable),
        pid_(session.pid),
        start_ns_(session.start_monotonic_raw_ns),
        fd_(fd) {}

  void thread_records(const thread_info& thread, const record* records,
                      std::size_t count) override {
    if (finished_) return;
    std::vector<open_region>& stack = stacks_[thread.tid];
    for (std::size_t i = 0; i < count; ++i) {
      const record& r = records[i];
      if (r.name == nullptr) continue;
      latest_ns_ = std::max(latest_ns_, r.time_ns);
      if (r.kind == record_kind::region_begin)
        stack.push_back(open_region{r.time_ns, region_of(r.name)});
      else if (r.kind == record_kind::region_end)
        end_region(stack, region_of(r.name), r.time_ns);
    }
  }

  void data_object(const runtime::data_object_event& event) override {
    if (!finished_) latest_ns_ = std::max(latest_ns_, event.time_ns);
  }

  void gpu_device(const runtime::gpu_device_info& device) override {
    if (!finished_) devices_.insert(device.id);
  }

  void gpu_activities(const gpu_activity* activities, std::size_t count) override {
    if (finished_) return;
    std::vector<const gpu_activity*> memory_changes;
    for (std::size_t i = 0; i < count; ++i) {
      const gpu_activity& activity = activities[i];
      ++operations_;
      switch (activity.operation) {
        case gpu_operation::kernel:
          add_kernel(activity);
          break;
        case gpu_operation::memcpy:
          add_copy(activity);
          break;
        case gpu_operation::memset:
          add_memset(activity);
          break;
        case gpu_operation::allocation:
        case gpu_operation::release:
          memory_changes.push_back(&activity);
          break;
        case gpu_operation::synchronization:
          context_of(activity.launch).sync_ns += duration(activity);
          break;
      }
    }
    // Activities of a drain come in no particular order; the live bytes (and
    // so the peak) need them in time order, a release before an allocation
    // at the same instant so that reusing memory does not count twice.
    std::sort(memory_changes.begin(), memory_changes.end(),
              [](const gpu_activity* a, const gpu_activity* b) {
                if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
                return a->operation == gpu_operation::release &&
                       b->operation != gpu_operation::release;
              });
    for (const gpu_activity* change : memory_changes) {
      if (change->operation == gpu_operation::allocation)
        add_allocation(*change);
      else
        add_release(*change);
    }
  }

  void flush(const session_status& status) override {
    if (finished_ || !status.final) return;
    finished_ = true;
    for (auto& [tid, stack] : stacks_)
      while (!stack.empty()) close_top(stack, latest_ns_);
    const std::string report = build_report(status);
    write_all(report);
  }

  void abandon() noexcept override {
    finished_ = true;  // the parent reports; the child must stay silent
  }

  std::string describe() const override { return "summary: printed on stderr"; }

 private:
  static std::int64_t duration(const gpu_activity& activity) noexcept {
    return std::max<std::int64_t>(activity.end_ns - activity.start_ns, 0);
  }

  // --- host regions -----------------------------------------------------------

  // One total per region text and domain: begin("x") and end("x") in
  // different translation units may come with different name records.
  std::size_t region_of(const name_info* name) {
    if (name->id >= region_of_name_.size())
      region_of_name_.resize(std::size_t{name->id} + 1, {nullptr, 0});
    auto& [source, region] = region_of_name_[name->id];
    if (source == name) return region;
    const auto [it, inserted] =
        region_index_.try_emplace(std::make_pair(name->domain, name->name), regions_.size());
    if (inserted) {
      std::string label =
          name->domain.empty() ? name->name : fmt::format("{} [{}]", name->name, name->domain);
      regions_.push_back(region_totals{std::move(label)});
    }
    source = name;
    region = it->second;
    return region;
  }

  // An end closes the innermost open region of its name, and the regions
  // opened inside it that did not end (so that times still nest); an end
  // without a matching begin is ignored.
  void end_region(std::vector<open_region>& stack, std::size_t region, std::int64_t end_ns) {
    std::size_t match = stack.size();
    while (match > 0 && stack[match - 1].region != region) --match;
    if (match == 0) return;
    while (stack.size() >= match) close_top(stack, end_ns);
  }

  // Inclusive time counts once for recursive regions: only the outermost
  // open instance of a region adds its time.
  void close_top(std::vector<open_region>& stack, std::int64_t end_ns) {
    const open_region closed = stack.back();
    stack.pop_back();
    region_totals& totals = regions_[closed.region];
    ++totals.calls;
    const bool nested_in_itself =
        std::any_of(stack.begin(), stack.end(),
                    [&](const open_region& open) { return open.region == closed.region; });
    if (!nested_in_itself)
      totals.inclusive_ns += std::max<std::int64_t>(end_ns - closed.begin_ns, 0);
  }

  // --- GPU activity -----------------------------------------------------------

  // Contexts with the same path (a kernel launch and a copy under the same
  // regions differ only in their API-call leaf) share one row.
  context_totals& context_of(const gpu_launch& launch) {
    if (launch.tid == 0) {
      if (!without_launch_) {
        without_launch_ = contexts_.size();
        contexts_.push_back(context_totals{"(launch not seen)"});
      }
      return contexts_[*without_launch_];
    }
    const auto [node, new_node] = context_of_node_.try_emplace(launch.context, 0);
    if (new_node) {
      std::string path = runtime::context_path(launch.context);
      const auto [entry, new_path] = context_of_path_.try_emplace(path, contexts_.size());
      if (new_path) contexts_.push_back(context_totals{path.empty() ? "(no region)" : path});
      node->second = entry->second;
    }
    return contexts_[node->second];
  }

  // The object's totals, or nullptr when the operation names none. The
  // pointer is valid for this call only: the name is copied now.
  object_totals* object_of(std::uint64_t id, const data_object_info* info) {
    if (info != nullptr) id = info->id;
    if (id == 0) return nullptr;
    object_totals& totals = objects_[id];
    totals.id = id;
    if (!totals.named && info != nullptr) {
      totals.name = info->allocated_in != nullptr ? info->name + " (auto)" : info->name;
      totals.named = true;
    } else if (!totals.named) {
      totals.name = fmt::format("data object {}", id);
    }
    return &totals;
  }

  void add_kernel(const gpu_activity& kernel) {
    const std::int64_t ns = duration(kernel);
    context_totals& context = context_of(kernel.launch);
    context.kernel_ns += ns;
    ++context.kernels;
    const auto [entry, inserted] = kernels_.try_emplace(kernel.name != nullptr ? kernel.name : "");
    kernel_totals& totals = entry->second;
    if (inserted) totals.mangled_name = entry->first;
    ++totals.calls;
    totals.total_ns += ns;
    if (kernel.kernel.occupancy >= 0.0) {
      totals.occupancy_sum += kernel.kernel.occupancy;
      ++totals.occupancy_launches;
    }
    totals.registers = std::max(totals.registers, kernel.kernel.registers_per_thread);
  }

  void add_copy(const gpu_activity& copy) {
    const std::int64_t ns = duration(copy);
    context_totals& context = context_of(copy.launch);
    context.copy_ns += ns;
    context.copy_bytes += copy.bytes;
    const std::size_t kind = index_of(copy.copy);
    copy_totals& totals = copies_[kind];
    ++totals.count;
    totals.bytes += copy.bytes;
    totals.ns += ns;
    const std::int64_t source = std::max(copy.source_device, -1);  // any negative is the host
    const std::int64_t destination = std::max(copy.destination_device, -1);
    copied_between_[{source, destination}] += copy.bytes;
    object_totals* source_object = object_of(copy.source_object_id, copy.source_object);
    object_totals* destination_object =
        object_of(copy.destination_object_id, copy.destination_object);
    if (source_object != nullptr) source_object->copied[kind] += copy.bytes;
    if (destination_object != nullptr && destination_object != source_object)
      destination_object->copied[kind] += copy.bytes;
  }

  void add_memset(const gpu_activity& memset) {
    context_of(memset.launch).memset_bytes += memset.bytes;
    if (object_totals* object = object_of(memset.destination_object_id, memset.destination_object))
      object->memset_bytes += memset.bytes;
  }

  void add_allocation(const gpu_activity& allocation) {
    memory_totals& totals = memory_[{allocation.device, allocation.memory}];
    ++totals.allocations;
    totals.bytes_allocated += allocation.bytes;
    totals.live += allocation.bytes;
    totals.peak = std::max(totals.peak, totals.live);
    live_allocations_[{allocation.device, allocation.address}] =
        live_allocation{allocation.memory, allocation.bytes};
  }

  // A release counts against its allocation's memory kind, and takes its size
  // from the allocation when it carries none.
  void add_release(const gpu_activity& release) {
    memory_kind memory = release.memory;
    std::uint64_t bytes = release.bytes;
    if (const auto it = live_allocations_.find({release.device, release.address});
        it != live_allocations_.end()) {
      memory = it->second.memory;
      if (bytes == 0) bytes = it->second.bytes;
      live_allocations_.erase(it);
    }
    memory_totals& totals = memory_[{release.device, memory}];
    ++totals.releases;
    totals.live -= std::min(totals.live, bytes);
  }

  // --- the report -------------------------------------------------------------

  std::string build_report(const session_status& status) const {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC_RAW, &now);
    const std::int64_t now_ns = std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
    std::string out = fmt::format("ferret summary: {} (pid {}), {:.3f} s, {}\n", executable_, pid_,
                                  static_cast<double>(now_ns - start_ns_) / 1e9,
                                  plural(operations_, "GPU operation"));
    if (operations_ != 0)
      out +=
          "metrics (HPCToolkit's names): GKER kernel time, GXCOPY copy time and bytes, GMSET "
          "bytes set, GMEM allocations, GSYNC synchronization time\n";
    append_contexts(out);
    append_kernels(out);
    append_copies(out);
    append_copy_matrix(out);
    append_objects(out);
    append_memory(out);
    append_regions(out);
    append_unrecorded_api(out, status);
    append_losses(out, status);
    return out;
  }

  void append_contexts(std::string& out) const {
    std::vector<const context_totals*> shown;
    for (const context_totals& context : contexts_)
      if (context.kernels != 0 || context.copy_ns != 0 || context.copy_bytes != 0 ||
          context.memset_bytes != 0 || context.sync_ns != 0)
        shown.push_back(&context);
    if (shown.empty()) return;
    append_heading(out, "GPU time by calling context");
    text_table table{{"GKER ms", alignment::right},     {"kernels", alignment::right},
                     {"GXCOPY ms", alignment::right},   {"GXCOPY bytes", alignment::right},
                     {"GMSET bytes", alignment::right}, {"GSYNC ms", alignment::right},
                     {"context", alignment::left}};
    for (const context_totals* context :
         top(shown, [](const context_totals*a, const context_totals*b) {
           const std::int64_t a_ns = a->kernel_ns + a->copy_ns;
           const std::int64_t b_ns = b->kernel_ns + b->copy_ns;
           return a_ns != b_ns ? a_ns > b_ns : a->label < b->label;
         }))
      table.add_row({milliseconds(context->kernel_ns), fmt::format("{}", context->kernels),
                     milliseconds(context->copy_ns), bytes_cell(context->copy_bytes),
                     bytes_cell(context->memset_bytes), milliseconds(context->sync_ns),
                     context->label});
    table.append_to(out);
    append_not_shown(out, shown.size(), "context");
  }

  void append_kernels(std::string& out) const {
    if (kernels_.empty()) return;
    std::vector<const kernel_totals*> all;
    for (const auto& [name, totals] : kernels_) all.push_back(&totals);
    append_heading(out, "Kernels");
    text_table table{{"calls", alignment::right},     {"total ms", alignment::right},
                     {"mean µs", alignment::right},   {"occupancy", alignment::right},
                     {"registers", alignment::right}, {"kernel", alignment::left}};
    for (const kernel_totals* kernel : top(all, [](const kernel_totals*a, const kernel_totals*b) {
           return a->total_ns != b->total_ns ? a->total_ns > b->total_ns
                                             : a->mangled_name < b->mangled_name;
         })) {
      const std::string occupancy =
          kernel->occupancy_launches == 0
              ? std::string{"-"}
              : fmt::format("{:.1f}%", 100.0 * kernel->occupancy_sum /
                                           static_cast<double>(kernel->occupancy_launches));
      const std::string name =
          kernel->mangled_name.empty()
              ? std::string{"(unnamed kernel)"}
              : truncated(runtime::demangled_kernel_name(kernel->mangled_name.c_str()), longest_kernel_name);
      table.add_row({fmt::format("{}", kernel->calls), milliseconds(kernel->total_ns),
                     fmt::format("{:.3f}", static_cast<double>(kernel->total_ns) / 1e3 /
                                               static_cast<double>(kernel->calls)),
                     occupancy, fmt::format("{}", kernel->registers), name});
    }
    table.append_to(out);
    append_not_shown(out, all.size(), "kernel");
  }

  void append_copies(std::string& out) const {
    text_table table{{"direction", alignment::left},
                     {"count", alignment::right},
                     {"bytes", alignment::right},
                     {"total ms", alignment::right},
                     {"mean GB/s", alignment::right}};
    bool any = false;
    for (const copy_kind kind : listed_copy_kinds) {
      const copy_totals& totals = copies_[index_of(kind)];
      if (totals.count == 0) continue;
      any = true;
      // Bytes per nanosecond are GB/s.
      const std::string rate = totals.ns == 0
                                   ? std::string{"-"}
                                   : fmt::format("{:.2f}", static_cast<double>(totals.bytes) /
                                                               static_cast<double>(totals.ns));
      table.add_row({std::string{runtime::to_string(kind)}, fmt::format("{}", totals.count),
                     human_bytes(totals.bytes), milliseconds(totals.ns), rate});
    }
    if (!any) return;
    append_heading(out, "Copies");
    table.append_to(out);
  }

  void append_copy_matrix(std::string& out) const {
    if (copied_between_.empty()) return;
    std::set<std::int64_t> ends{-1};  // the host first, then the GPUs in order
    for (const std::uint32_t device : devices_) ends.insert(device);
    for (const auto& [between, bytes] : copied_between_) {
      ends.insert(between.first);
      ends.insert(between.second);
    }
    append_heading(out, "Device-to-device bytes");
    // Rows: where the bytes came from; columns: where they went.
    std::vector<std::pair<std::string, alignment>> columns{{"from \\ to", alignment::left}};
    for (const std::int64_t destination : ends)
      columns.emplace_back(device_label(destination), alignment::right);
    text_table table{columns};
    for (const std::int64_t source : ends) {
      std::vector<std::string> row{device_label(source)};
      for (const std::int64_t destination : ends) {
        const auto it = copied_between_.find({source, destination});
        row.push_back(bytes_cell(it == copied_between_.end() ? 0 : it->second));
      }
      table.add_row(std::move(row));
    }
    table.append_to(out);
  }

  void append_objects(std::string& out) const {
    std::vector<const object_totals*> moved;
    for (const auto& [id, totals] : objects_)
      if (totals.moved() != 0) moved.push_back(&totals);
    if (moved.empty()) return;
    append_heading(out, "Data objects");
    text_table table{{"HtoD", alignment::right}, {"DtoH", alignment::right},
                     {"DtoD", alignment::right}, {"HtoH", alignment::right},
                     {"PtoP", alignment::right}, {"memset", alignment::right},
                     {"object", alignment::left}};
    for (const object_totals* object : top(moved, [](const object_totals*a, const object_totals*b) {
           return a->moved() != b->moved() ? a->moved() > b->moved() : a->id < b->id;
         })) {
      const auto copied = [&](copy_kind kind) {
        return bytes_cell(object->copied[index_of(kind)]);
      };
      table.add_row({copied(copy_kind::host_to_device), copied(copy_kind::device_to_host),
                     copied(copy_kind::device_to_device), copied(copy_kind::host_to_host),
                     copied(copy_kind::peer_to_peer), bytes_cell(object->memset_bytes),
                     object->name});
    }
    table.append_to(out);
    append_not_shown(out, moved.size(), "data object");
  }

  void append_memory(std::string& out) const {
    if (memory_.empty()) return;
    append_heading(out, "Memory");
    text_table table{{"device", alignment::left},       {"memory", alignment::left},
                     {"allocations", alignment::right}, {"allocated", alignment::right},
                     {"releases", alignment::right},    {"peak live", alignment::right}};
    for (const auto& [key, totals] : memory_)
      table.add_row({device_label(key.first), std::string{runtime::to_string(key.second)},
                     fmt::format("{}", totals.allocations), human_bytes(totals.bytes_allocated),
                     fmt::format("{}", totals.releases), human_bytes(totals.peak)});
    table.append_to(out);
  }

  void append_regions(std::string& out) const {
    std::vector<const region_totals*> closed;
    for (const region_totals& region : regions_)
      if (region.calls != 0) closed.push_back(&region);
    if (closed.empty()) return;
    append_heading(out, "Host regions");
    text_table table{
        {"calls", alignment::right}, {"total ms", alignment::right}, {"region", alignment::left}};
    for (const region_totals* region :
         top(closed, [](const region_totals*a, const region_totals*b) {
           return a->inclusive_ns != b->inclusive_ns ? a->inclusive_ns > b->inclusive_ns
                                                     : a->label < b->label;
         }))
      table.add_row(
          {fmt::format("{}", region->calls), milliseconds(region->inclusive_ns), region->label});
    table.append_to(out);
    append_not_shown(out, closed.size(), "region");
  }

  // Calls a collector counted instead of recording them (FERRET_CUDA_API):
  // the run metadata's "<collector>-api-unrecorded:<call>" entries.
  static void append_unrecorded_api(std::string& out, const session_status& status) {
    if (status.runtime_metadata == nullptr) return;
    struct counted {
      std::string collector, call;
      std::int64_t calls;
    };
    std::vector<counted> all;
    for (const auto& [key, value] : *status.runtime_metadata) {
      const std::size_t at = key.find(runtime::api_unrecorded_infix);
      const auto* calls = std::get_if<std::int64_t>(&value);
      if (at == std::string::npos || at == 0 || calls == nullptr || *calls == 0) continue;
      all.push_back({key.substr(0, at), key.substr(at + runtime::api_unrecorded_infix.size()), *calls});
    }
    if (all.empty()) return;
    std::vector<const counted*> shown;
    for (const counted& entry : all) shown.push_back(&entry);
    append_heading(out, "API calls counted, not recorded");
    text_table table{{"calls", alignment::right}, {"collector", alignment::left},
                     {"call", alignment::left}};
    for (const counted* entry : top(shown, [](const counted* a, const counted* b) {
           if (a->calls != b->calls) return a->calls > b->calls;
           return std::tie(a->collector, a->call) < std::tie(b->collector, b->call);
         }))
      table.add_row({fmt::format("{}", entry->calls), entry->collector, entry->call});
    table.append_to(out);
    append_not_shown(out, shown.size(), "call");
  }

  // Losses as the runtime reports them at exit: the dropped events (their
  // "events-dropped-*" breakdown is left out), then collectors' losses and
  // GPU work whose launch was not seen.
  static void append_losses(std::string& out, const session_status& status) {
    std::vector<std::string> losses;
    if (status.events_dropped != 0)
      losses.push_back(fmt::format("{} events dropped", status.events_dropped));
    if (status.runtime_metadata != nullptr) {
      for (const auto& [key, value] : *status.runtime_metadata) {
        if (key.rfind("events-dropped", 0) == 0) continue;
        if (key.find("dropped") == std::string::npos &&
            key.find("without-launch") == std::string::npos)
          continue;
        if (const auto* count = std::get_if<std::int64_t>(&value); count != nullptr && *count != 0)
          losses.push_back(fmt::format("{} {}", *count, key));
        else if (const auto* number = std::get_if<double>(&value);
                 number != nullptr && *number != 0.0)
          losses.push_back(fmt::format("{:g} {}", *number, key));
      }
    }
    if (losses.empty()) return;
    out += "\nLosses: ";
    for (std::size_t i = 0; i < losses.size(); ++i) {
      if (i != 0) out += ", ";
      out += losses[i];
    }
    out += '\n';
  }

  // One write(2) for the whole report unless the pipe takes it in parts, so
  // that it is not interleaved with the application's output.
  void write_all(std::string_view text) const {
    while (!text.empty()) {
      const ssize_t written = ::write(fd_, text.data(), text.size());
      if (written < 0) {
        if (errno == EINTR) continue;
        return;  // stderr is gone: nowhere to say so
      }
      text.remove_prefix(static_cast<std::size_t>(written));
    }
  }

  std::string executable_;
  std::uint32_t pid_;
  std::int64_t start_ns_;
  int fd_;
  bool finished_ = false;
  std::int64_t latest_ns_ = 0;  // latest host time seen: where open regions end
  std::uint64_t operations_ = 0;

  std::unordered_map<std::uint64_t, std::vector<open_region>> stacks_;       // by tid
  std::vector<std::pair<const name_info*, std::size_t>> region_of_name_;     // by name_info::id
  std::map<std::pair<std::string, std::string>, std::size_t> region_index_;  // (domain, name)
  std::vector<region_totals> regions_;

  std::vector<context_totals> contexts_;
  std::unordered_map<const runtime::context_node*, std::size_t> context_of_node_;
  std::unordered_map<std::string, std::size_t> context_of_path_;
  std::optional<std::size_t> without_launch_;

  std::unordered_map<std::string, kernel_totals> kernels_;  // by mangled name
  std::array<copy_totals, copy_kinds> copies_{};
  std::map<std::pair<std::int64_t, std::int64_t>, std::uint64_t> copied_between_;
  std::set<std::uint32_t> devices_;
  std::unordered_map<std::uint64_t, object_totals> objects_;  // by data object id
  std::map<std::pair<std::uint32_t, memory_kind>, memory_totals> memory_;
  std::map<std::pair<std::uint32_t, std::uintptr_t>, live_allocation> live_allocations_;
};

}  // namespace

std::unique_ptr<runtime::backend> make_backend_writing_to(const runtime::session_info& session,
                                                          int fd) {
  return std::make_unique<summary_backend>(session, fd);
}

std::unique_ptr<runtime::backend> make_backend(const runtime::backend_context& context,
                                               std::string& error) {
  if (context.session == nullptr) {
    error = "cannot print the summary: no session";
    return nullptr;
  }
  return make_backend_writing_to(*context.session, STDERR_FILENO);
}

FERRET_REGISTER_BACKEND("summary", "a plain-text report on stderr at exit", make_backend);

}  // namespace ferret::summary
