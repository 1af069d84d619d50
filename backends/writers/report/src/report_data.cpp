// The data of a report page. See report_data.hpp.
#include "report_data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <numeric>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "json_writer.hpp"

namespace ferret::report {
namespace {

using profile::profile_model;

constexpr const char* gpu_metric_names[] = {
    "kernel_ns",    "kernels", "copy_ns",     "copies",          "copy_bytes", "memset_ns",
    "memsets",      "memset_bytes", "allocations", "allocated_bytes", "sync_ns",    "syncs"};

void write_gpu(json_writer& out, const profile::gpu_metrics& gpu) {
  out.begin_array();
  out.number(gpu.kernel_ns);
  out.number(gpu.kernels);
  out.number(gpu.copy_ns);
  out.number(gpu.copies);
  out.number(gpu.copy_bytes);
  out.number(gpu.memset_ns);
  out.number(gpu.memsets);
  out.number(gpu.memset_bytes);
  out.number(gpu.allocations);
  out.number(gpu.allocated_bytes);
  out.number(gpu.sync_ns);
  out.number(gpu.syncs);
  out.end_array();
}

void write_metadata(json_writer& out, const runtime::metadata_list& list) {
  out.begin_array();
  for (const auto& [key, value] : list) {
    out.begin_array();
    out.string(key);
    std::visit([&](const auto& v) { out.value(v); }, value);
    out.end_array();
  }
  out.end_array();
}

void write_transfer(json_writer& out, const profile::transfer_totals& totals) {
  out.begin_array();
  out.number(totals.count);
  out.number(totals.bytes);
  out.number(totals.ns);
  out.end_array();
}

// By copy_kind, in the order of the enum (index_of).
void write_copies(json_writer& out,
                  const std::array<profile::transfer_totals, profile::copy_kinds>& copies) {
  out.begin_array();
  for (const profile::copy_kind kind : profile::listed_copy_kinds) {
    const profile::transfer_totals& totals = copies[profile::index_of(kind)];
    if (totals.count == 0) continue;
    out.begin_object();
    out.field("kind", runtime::to_string(kind));
    out.field("count", totals.count);
    out.field("bytes", totals.bytes);
    out.field("ns", totals.ns);
    out.end_object();
  }
  out.end_array();
}

void write_kernel(json_writer& out, const profile::kernel_totals& kernel) {
  out.begin_object();
  out.field("name", kernel.mangled_name.empty()
                        ? std::string{"(unnamed kernel)"}
                        : runtime::demangled_kernel_name(kernel.mangled_name.c_str()));
  out.field("calls", kernel.calls);
  out.field("total_ns", kernel.total_ns);
  out.field("min_ns", kernel.min_ns);
  out.field("max_ns", kernel.max_ns);
  out.field("occupancy_ppm_sum", kernel.occupancy_ppm_sum);
  out.field("occupancy_launches", kernel.occupancy_launches);
  out.field("registers", kernel.registers);
  out.field("shared_memory_per_block", kernel.shared_memory_per_block);
  out.end_object();
}

// The first `limit` kernels by total time.
std::vector<const profile::kernel_totals*> heaviest_kernels(
    const std::map<std::string, profile::kernel_totals>& kernels, std::size_t limit) {
  std::vector<const profile::kernel_totals*> all;
  for (const auto& [name, totals] : kernels) all.push_back(&totals);
  std::stable_sort(all.begin(), all.end(), [](const auto* a, const auto* b) {
    return a->total_ns > b->total_ns;
  });
  if (all.size() > limit) all.resize(limit);
  return all;
}

// The contexts shown: all, or the `limit` heaviest (host time plus GPU
// time, inclusive) with their ancestors. Returns the old index of each
// shown context, in the original order (parents first).
std::vector<std::uint32_t> shown_contexts(const profile_model& model,
                                          const std::vector<profile::gpu_metrics>& inclusive,
                                          std::size_t limit) {
  const auto& contexts = model.contexts();
  std::vector<std::uint32_t> shown(contexts.size());
  std::iota(shown.begin(), shown.end(), 0U);
  if (contexts.size() <= limit) return shown;
  const auto weight = [&](std::uint32_t i) {
    return contexts[i].inclusive_ns + inclusive[i].kernel_ns + inclusive[i].copy_ns +
           inclusive[i].memset_ns + inclusive[i].sync_ns;
  };
  std::stable_sort(shown.begin(), shown.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return weight(a) > weight(b); });
  std::vector<bool> keep(contexts.size(), false);
  std::size_t kept = 0;
  for (const std::uint32_t i : shown) {
    // A heavier context's ancestors are at least as heavy: they are kept already,
    // except where ties broke the order; walk up to be sure.
    std::vector<std::uint32_t> chain;
    for (std::uint32_t at = i; !keep[at]; at = contexts[at].parent) {
      chain.push_back(at);
      if (at == 0) break;
    }
    if (kept + chain.size() > limit) break;
    for (const std::uint32_t at : chain) keep[at] = true;
    kept += chain.size();
  }
  shown.clear();
  for (std::uint32_t i = 0; i < contexts.size(); ++i)
    if (keep[i]) shown.push_back(i);
  return shown;
}

void write_contexts(json_writer& out, const profile_model& model,
                    const std::vector<std::uint32_t>& shown,
                    const std::vector<std::optional<std::uint32_t>>& new_index) {
  out.begin_array();
  for (const std::uint32_t i : shown) {
    const profile::context& node = model.contexts()[i];
    out.begin_object();
    out.field("parent", *new_index[node.parent]);
    out.field("name", node.name);
    out.field("domain", node.domain);
    out.field("function", node.function);
    out.field("file", node.file);
    out.field("line", node.line);
    out.field("api_call", node.api_call);
    out.field("synthetic", node.synthetic);
    out.field("calls", node.calls);
    out.field("inclusive_ns", node.inclusive_ns);
    out.field("exclusive_ns", node.exclusive_ns());
    out.key("gpu");
    write_gpu(out, node.gpu);
    out.end_object();
  }
  out.end_array();
}

void write_device(json_writer& out, const profile::device_totals& device, const limits& bounds) {
  out.begin_object();
  out.field("id", device.id);
  out.key("info");
  if (device.info) {
    const runtime::gpu_device_info& info = *device.info;
    out.begin_object();
    out.field("name", info.name);
    out.field("compute_capability", fmt::format("{}.{}", info.compute_major, info.compute_minor));
    out.field("multiprocessors", info.multiprocessors);
    out.field("global_memory_bytes", info.global_memory_bytes);
    out.end_object();
  } else {
    out.null();
  }
  out.key("copies");
  write_copies(out, device.copies);
  out.key("memsets");
  write_transfer(out, device.memsets);
  out.key("kernels");
  out.begin_array();
  for (const auto* kernel : heaviest_kernels(device.kernels, bounds.kernels_per_device))
    write_kernel(out, *kernel);
  out.end_array();
  out.field("kernels_total", device.kernels.size());
  // Live bytes per bucket: the highest value in it, and the value at its
  // end where something changed (null: unchanged).
  out.key("memory_peak");
  out.begin_array();
  for (const std::uint64_t peak : device.memory.peak) out.number(peak);
  out.end_array();
  out.key("memory_last");
  out.begin_array();
  for (const auto& last : device.memory.last) {
    if (last)
      out.number(*last);
    else
      out.null();
  }
  out.end_array();
  out.key("streams");
  out.begin_array();
  for (const auto& [number, stream] : device.streams) {
    out.begin_object();
    out.field("id", number);
    out.field("operations", stream.operations);
    out.field("busy_ns", stream.busy_ns);
    out.key("busy");
    out.begin_array();
    for (const std::int64_t busy : stream.busy) out.number(busy);
    out.end_array();
    out.end_object();
  }
  out.end_array();
  out.end_object();
}

void write_flow_direction(json_writer& out, profile::flow_direction direction) {
  switch (direction) {
    case profile::flow_direction::in: out.string("in"); return;
    case profile::flow_direction::out: out.string("out"); return;
    case profile::flow_direction::within: out.string("within"); return;
    case profile::flow_direction::memset: out.string("memset"); return;
  }
  out.string("unknown");
}

// Objects that moved the most bytes first, then the largest.
std::vector<const profile::data_object_totals*> shown_objects(const profile_model& model,
                                                              std::size_t limit) {
  std::vector<const profile::data_object_totals*> all;
  for (const auto& [id, object] : model.objects()) all.push_back(&object);
  std::sort(all.begin(), all.end(),
            [](const auto* a, const auto* b) { return profile::shown_before(*a, *b); });
  if (all.size() > limit) all.resize(limit);
  return all;
}

void write_object(json_writer& out, const profile::data_object_totals& object) {
  out.begin_object();
  out.field("id", object.id);
  out.field("name", object.name);
  out.field("known", object.known);
  out.field("automatic", object.automatic);
  out.field("address", fmt::format("0x{:x}", object.address));
  out.field("bytes", object.bytes);
  out.field("memory", runtime::to_string(object.memory));
  out.field("device", object.device);
  out.key("registered_ns");
  object.registered_ns ? out.number(*object.registered_ns) : out.null();
  out.key("unregistered_ns");
  object.unregistered_ns ? out.number(*object.unregistered_ns) : out.null();
  out.key("copied");  // by copy kind, in listed_copy_kinds order
  out.begin_object();
  for (const profile::copy_kind kind : profile::listed_copy_kinds)
    out.field(runtime::to_string(kind), object.copied[profile::index_of(kind)]);
  out.end_object();
  out.field("memset_bytes", object.memsets.bytes);
  out.field("memsets", object.memsets.operations);
  out.field("operations", object.operations);
  out.key("flows");
  out.begin_array();
  for (const auto& [key, volume] : object.flows) {
    out.begin_object();
    out.key("direction");
    write_flow_direction(out, key.direction);
    out.field("kind", key.direction == profile::flow_direction::memset
                          ? std::string_view{"memset"}
                          : runtime::to_string(key.kind));
    out.field("from", key.from);
    out.field("to", key.to);
    out.field("bytes", volume.bytes);
    out.field("operations", volume.operations);
    out.end_object();
  }
  out.end_array();
  out.key("heat");
  if (object.heat.empty()) {
    out.null();
  } else {
    out.begin_array();
    for (const std::uint64_t bytes : object.heat) out.number(bytes);
    out.end_array();
  }
  out.field("bytes_not_placed", object.bytes_not_placed);
  out.end_object();
}

}  // namespace

std::string report_data(const profile_model& model, const limits& bounds) {
  json_writer out;
  out.begin_object();
  out.field("format", "ferret-report");
  out.field("version", 1);

  const runtime::session_info& session = model.session();
  out.key("run");
  out.begin_object();
  out.field("executable", session.executable);
  out.field("pid", session.pid);
  out.field("host", session.hostname);
  out.field("command_line", session.command_line);
  out.field("start_unix_ns", fmt::format("{}", session.start_realtime_ns));
  out.field("duration_ns", model.end_ns());
  out.field("clock", session.clock_source);
  out.field("ferret_version", session.ferret_version);
  out.field("gpu_operations", model.gpu_operations());
  out.field("bucket_ns", model.bucket_ns());
  out.field("time_buckets", profile::time_buckets);
  out.field("heat_bins", profile::heat_bins);
  out.end_object();

  out.key("gpu_metrics");
  out.begin_array();
  for (const char* name : gpu_metric_names) out.string(name);
  out.end_array();

  const std::vector<profile::gpu_metrics> inclusive = model.inclusive_gpu();
  const std::vector<std::uint32_t> contexts = shown_contexts(model, inclusive, bounds.contexts);
  std::vector<std::optional<std::uint32_t>> new_index(model.contexts().size());
  for (std::uint32_t i = 0; i < contexts.size(); ++i) new_index[contexts[i]] = i;
  out.key("contexts");
  write_contexts(out, model, contexts, new_index);

  out.key("paths");
  out.begin_array();
  for (const profile_model::path_row& row : model.gpu_by_region_path()) {
    out.begin_object();
    out.field("path", row.path);
    out.key("gpu");
    write_gpu(out, row.gpu);
    out.key("contexts");
    out.begin_array();
    for (const std::uint32_t node : row.nodes)
      if (new_index[node]) out.number(*new_index[node]);
    out.end_array();
    out.end_object();
  }
  out.end_array();

  out.key("regions");
  out.begin_array();
  for (const profile_model::region_row& region : model.regions_by_name()) {
    out.begin_object();
    out.field("name", region.name);
    out.field("domain", region.domain);
    out.field("calls", region.calls);
    out.field("inclusive_ns", region.inclusive_ns);
    out.end_object();
  }
  out.end_array();

  out.key("devices");
  out.begin_array();
  for (const auto& [id, device] : model.devices()) write_device(out, device, bounds);
  out.end_array();

  const auto kernels = model.kernels();
  out.key("kernels");
  out.begin_array();
  for (const auto* kernel : heaviest_kernels(kernels, bounds.kernels_per_device))
    write_kernel(out, *kernel);
  out.end_array();
  out.key("copies");
  write_copies(out, model.copies());

  out.key("ends");
  out.begin_array();
  for (const std::int32_t end : model.ends()) out.number(end);
  out.end_array();
  out.key("traffic");
  out.begin_array();
  for (const profile::traffic_matrix& matrix : model.traffic()) {
    out.begin_object();
    out.field("name", matrix.name);
    out.key("cells");
    out.begin_array();
    for (const auto& [between, volume] : matrix.cells) {
      out.begin_array();
      out.number(between.first);
      out.number(between.second);
      out.number(volume.bytes);
      out.number(volume.operations);
      out.end_array();
    }
    out.end_array();
    out.end_object();
  }
  out.end_array();

  const auto objects = shown_objects(model, bounds.objects);
  std::unordered_map<std::uint64_t, bool> object_shown;
  out.key("objects");
  out.begin_array();
  for (const auto* object : objects) {
    write_object(out, *object);
    object_shown[object->id] = true;
  }
  out.end_array();

  out.key("context_objects");  // [context, object id, bytes, operations]
  out.begin_array();
  for (const auto& [key, volume] : model.context_objects()) {
    if (!new_index[key.first] || object_shown.count(key.second) == 0) continue;
    out.begin_array();
    out.number(*new_index[key.first]);
    out.number(key.second);
    out.number(volume.bytes);
    out.number(volume.operations);
    out.end_array();
  }
  out.end_array();
  out.key("context_traffic");  // [context, from, to, bytes, operations]
  out.begin_array();
  for (const auto& [key, volume] : model.context_traffic()) {
    const auto& [node, from, to] = key;
    if (!new_index[node]) continue;
    out.begin_array();
    out.number(*new_index[node]);
    out.number(from);
    out.number(to);
    out.number(volume.bytes);
    out.number(volume.operations);
    out.end_array();
  }
  out.end_array();

  out.key("memory");
  out.begin_array();
  for (const auto& [key, totals] : model.memory()) {
    out.begin_object();
    out.field("device", key.first);
    out.field("memory", runtime::to_string(key.second));
    out.field("allocations", totals.allocations);
    out.field("bytes_allocated", totals.bytes_allocated);
    out.field("releases", totals.releases);
    out.field("peak", totals.peak);
    out.end_object();
  }
  out.end_array();

  out.key("losses");
  out.begin_array();
  for (const std::string& loss : model.losses()) out.string(loss);
  out.end_array();
  out.key("unrecorded_api");
  out.begin_array();
  for (const profile::unrecorded_api_calls& calls : model.unrecorded_api()) {
    if (calls.calls == 0) continue;
    out.begin_object();
    out.field("collector", calls.collector);
    out.field("call", calls.api);
    out.field("calls", calls.calls);
    out.end_object();
  }
  out.end_array();
  out.key("metadata");
  out.begin_object();
  out.key("user");
  write_metadata(out, model.user_metadata());
  out.key("runtime");
  write_metadata(out, model.runtime_metadata());
  out.end_object();

  out.key("limits");
  out.begin_object();
  out.field("contexts_shown", contexts.size());
  out.field("contexts_total", model.contexts().size());
  out.field("objects_shown", objects.size());
  out.field("objects_total", model.objects().size() + model.objects_not_kept());
  out.field("kernels_per_device", bounds.kernels_per_device);
  out.end_object();
  out.end_object();
  return out.text();
}

}  // namespace ferret::report
