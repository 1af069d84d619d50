// The data of a report page. See report_data.hpp.
#include "report_data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <map>
#include <numeric>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "gpu_sample_tables.hpp"
#include "number_format.hpp"
#include "page_json.hpp"
#include "remote_traffic_tables.hpp"

namespace ferret::report {
namespace {

using profile::profile_model;
using json = page_json;  // keys in report_data.hpp's order

constexpr const char* gpu_metric_names[] = {
    "kernel_ns",    "kernels", "copy_ns",     "copies",          "copy_bytes", "memset_ns",
    "memsets",      "memset_bytes", "allocations", "allocated_bytes", "sync_ns",    "syncs"};

json gpu_array(const profile::gpu_metrics& gpu) {
  return json::array({gpu.kernel_ns, gpu.kernels, gpu.copy_ns, gpu.copies, gpu.copy_bytes,
                      gpu.memset_ns, gpu.memsets, gpu.memset_bytes, gpu.allocations,
                      gpu.allocated_bytes, gpu.sync_ns, gpu.syncs});
}

json metadata_array(const runtime::metadata_list& list) {
  json out = json::array();
  for (const auto& [key, value] : list)
    out.push_back(json::array({key, std::visit([](const auto& v) { return json(v); }, value)}));
  return out;
}

json transfer_array(const profile::transfer_totals& totals) {
  return json::array({totals.count, totals.bytes, totals.ns});
}

// By copy_kind, in listed_copy_kinds order.
json copies_array(const std::array<profile::transfer_totals, profile::copy_kinds>& copies) {
  json out = json::array();
  for (const profile::copy_kind kind : profile::listed_copy_kinds) {
    const profile::transfer_totals& totals = copies[profile::index_of(kind)];
    if (totals.count == 0) continue;
    out.push_back({{"kind", runtime::to_string(kind)},
                   {"count", totals.count},
                   {"bytes", totals.bytes},
                   {"ns", totals.ns}});
  }
  return out;
}

json kernel_object(const profile::kernel_totals& kernel) {
  return {{"name", kernel.mangled_name.empty()
                       ? std::string{"(unnamed kernel)"}
                       : runtime::demangled_kernel_name(kernel.mangled_name.c_str())},
          {"calls", kernel.calls},
          {"total_ns", kernel.total_ns},
          {"min_ns", kernel.min_ns},
          {"max_ns", kernel.max_ns},
          {"occupancy_ppm_sum", kernel.occupancy_ppm_sum},
          {"occupancy_launches", kernel.occupancy_launches},
          {"registers", kernel.registers},
          {"shared_memory_per_block", kernel.shared_memory_per_block},
          // Instruction sampling (0 without): GINST, GINST:STL_ANY, GSAMP:EXP, as the page shows them.
          {"samples", kernel.samples},
          {"samples_shown", profile::samples_text(kernel.samples)},
          {"stalled_shown",
           profile::share_text(kernel.samples - kernel.by_stall[static_cast<std::size_t>(runtime::gpu_stall::none)],
                               kernel.samples)},
          {"utilization_shown", profile::share_text(kernel.samples, kernel.expected_samples)}};
}

// The first `limit` kernels by total time.
json heaviest_kernels(const std::map<std::string, profile::kernel_totals>& kernels,
                      std::size_t limit) {
  std::vector<const profile::kernel_totals*> all;
  for (const auto& [name, totals] : kernels) all.push_back(&totals);
  std::stable_sort(all.begin(), all.end(), [](const auto* a, const auto* b) {
    return a->total_ns > b->total_ns;
  });
  if (all.size() > limit) all.resize(limit);
  json out = json::array();
  for (const auto* kernel : all) out.push_back(kernel_object(*kernel));
  return out;
}

template <typename T>
json optional_value(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
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

json contexts_array(const profile_model& model, const std::vector<std::uint32_t>& shown,
                    const std::vector<std::optional<std::uint32_t>>& new_index) {
  json out = json::array();
  for (const std::uint32_t i : shown) {
    const profile::context& node = model.contexts()[i];
    out.push_back({{"parent", *new_index[node.parent]},
                   {"name", node.name},
                   {"domain", node.domain},
                   {"function", node.function},
                   {"file", node.file},
                   {"line", node.line},
                   {"api_call", node.api_call},
                   {"synthetic", node.synthetic},
                   {"calls", node.calls},
                   {"inclusive_ns", node.inclusive_ns},
                   {"exclusive_ns", node.exclusive_ns()},
                   {"gpu", gpu_array(node.gpu)}});
  }
  return out;
}

json device_object(const profile::device_totals& device, const limits& bounds) {
  json info = nullptr;
  if (device.info)
    info = {{"name", device.info->name},
            {"compute_capability",
             fmt::format("{}.{}", device.info->compute_major, device.info->compute_minor)},
            {"multiprocessors", device.info->multiprocessors},
            {"global_memory_bytes", device.info->global_memory_bytes}};
  // Live bytes per bucket: the highest value in it, and the value at its
  // end where something changed (null: unchanged).
  json memory_last = json::array();
  for (const auto& last : device.memory.last) memory_last.push_back(optional_value(last));
  json streams = json::array();
  for (const auto& [number, stream] : device.streams)
    streams.push_back({{"id", number},
                       {"operations", stream.operations},
                       {"busy_ns", stream.busy_ns},
                       {"busy", stream.busy}});
  return {{"id", device.id},
          {"info", std::move(info)},
          {"copies", copies_array(device.copies)},
          {"memsets", transfer_array(device.memsets)},
          {"kernels", heaviest_kernels(device.kernels, bounds.kernels_per_device)},
          {"kernels_total", device.kernels.size()},
          {"memory_peak", device.memory.peak},
          {"memory_last", std::move(memory_last)},
          {"streams", std::move(streams)}};
}

const char* direction_name(profile::flow_direction direction) {
  switch (direction) {
    case profile::flow_direction::in: return "in";
    case profile::flow_direction::out: return "out";
    case profile::flow_direction::within: return "within";
    case profile::flow_direction::memset: return "memset";
  }
  return "unknown";
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

// Loaded, stored (stores and atomics) and accesses, with the summary's texts.
void add_remote_volume(json& row, const profile::remote_volume& volume) {
  row["loaded"] = volume.loaded();
  row["stored"] = volume.stored();
  row["accesses"] = volume.total_accesses();
}

json object_json(const profile::data_object_totals& object) {
  json device_initiated = json::array();  // by (kernel's device, memory's device)
  for (const auto& [pair, volume] : object.device_initiated) {
    json row = {{"devices", profile::device_pair_text(pair.first, pair.second, volume)},
                {"device", pair.first},
                {"target", pair.second}};
    add_remote_volume(row, volume);
    device_initiated.push_back(std::move(row));
  }
  json copied = json::object();  // by copy kind, in listed_copy_kinds order
  for (const profile::copy_kind kind : profile::listed_copy_kinds)
    copied[std::string{runtime::to_string(kind)}] = object.copied[profile::index_of(kind)];
  json flows = json::array();
  for (const auto& [key, volume] : object.flows)
    flows.push_back({{"direction", direction_name(key.direction)},
                     {"kind", key.direction == profile::flow_direction::memset
                                  ? std::string_view{"memset"}
                                  : runtime::to_string(key.kind)},
                     {"from", key.from},
                     {"to", key.to},
                     {"bytes", volume.bytes},
                     {"operations", volume.operations}});
  return {{"id", object.id},
          {"name", object.name},
          {"known", object.known},
          {"automatic", object.automatic},
          {"address", fmt::format("0x{:x}", object.address)},
          {"bytes", object.bytes},
          {"memory", runtime::to_string(object.memory)},
          {"device", object.device},
          {"registered_ns", optional_value(object.registered_ns)},
          {"unregistered_ns", optional_value(object.unregistered_ns)},
          {"copied", std::move(copied)},
          {"memset_bytes", object.memsets.bytes},
          {"memsets", object.memsets.operations},
          {"operations", object.operations},
          {"flows", std::move(flows)},
          {"heat", object.heat.empty() ? json(nullptr) : json(object.heat)},
          {"bytes_not_placed", object.bytes_not_placed},
          {"device_initiated", std::move(device_initiated)}};
}

json text_table(const profile::text_rows& table) {
  return {{"header", table.header},
          {"alignment", table.alignment},
          {"rows", table.rows},
          {"total", table.total},
          {"rest", table.rest}};
}

json samples_json(const profile::stall_samples& samples,
                  const std::vector<profile::stall_reason>& reasons) {
  json by_reason = json::array();
  for (const auto& [reason, count] : samples.by_reason) by_reason.push_back({reason, count});
  return {{"samples", samples.samples},
          {"shown", profile::samples_text(samples.samples)},
          {"stalled_shown", profile::share_text(samples.stalled(), samples.samples)},
          {"by_stall", samples.by_stall},
          {"reasons", std::move(by_reason)},
          {"reasons_shown", profile::dominant_reasons(samples, reasons)}};
}

std::string kernel_name(const std::string& mangled) {
  return mangled.empty() ? std::string{"(unnamed kernel)"}
                         : runtime::demangled_kernel_name(mangled.c_str());
}

// Instruction samples; null without. Contexts left out of the page give
// their samples to their nearest shown caller.
json gpu_samples_json(const profile_model& model,
                      const std::vector<std::optional<std::uint32_t>>& new_index,
                      const limits& bounds) {
  if (model.gpu_lines().empty() && !(model.sampling().kernel_samples > 0)) return nullptr;
  const auto shown_context = [&](std::uint32_t node) {
    while (!new_index[node]) node = model.contexts()[node].parent;
    return *new_index[node];
  };
  json classes = json::array();
  for (std::size_t i = 0; i < runtime::gpu_stall_classes; ++i) {
    const auto stall = static_cast<runtime::gpu_stall>(i);
    classes.push_back({{"metric", runtime::metric_name(stall)},
                       {"column", profile::stall_column(stall)},
                       {"describe", runtime::describe(stall)}});
  }
  json reasons = json::array();
  for (const profile::stall_reason& reason : model.stall_reasons())
    reasons.push_back({{"name", reason.name}, {"class", static_cast<int>(reason.stall)}});

  // Per shown context and kernel, and its lines, the most sampled first.
  std::vector<const profile::gpu_line*> lines;
  for (const profile::gpu_line& line : model.gpu_lines()) lines.push_back(&line);
  std::stable_sort(lines.begin(), lines.end(), [](const auto* a, const auto* b) {
    return a->samples.samples > b->samples.samples;
  });
  std::map<std::pair<std::uint32_t, std::string_view>, profile::stall_samples> kernels;
  std::map<std::tuple<std::uint32_t, std::string_view, std::string, std::uint64_t>, profile::gpu_line>
      shown_lines;
  for (const profile::gpu_line* line : lines) {
    const std::uint32_t context = shown_context(line->context);
    kernels[{context, line->function}].merge(line->samples);
    const auto key = std::make_tuple(context, std::string_view{line->function},
                                     profile::gpu_line_location(*line), line->pc_offset);
    if (const auto it = shown_lines.find(key); it != shown_lines.end())
      it->second.samples.merge(line->samples);
    else if (shown_lines.size() < bounds.gpu_lines)
      shown_lines.emplace(key, *line).first->second.context = context;
  }
  json kernel_rows = json::array();
  for (const auto& [key, samples] : kernels) {
    json row = samples_json(samples, model.stall_reasons());
    row["context"] = key.first;
    row["kernel"] = kernel_name(std::string{key.second});
    kernel_rows.push_back(std::move(row));
  }
  json line_rows = json::array();
  for (const auto& [key, line] : shown_lines) {
    json row = samples_json(line.samples, model.stall_reasons());
    row["context"] = line.context;
    row["kernel"] = kernel_name(line.function);
    row["location"] = profile::gpu_line_location(line);
    row["file"] = line.file;
    row["line"] = line.line;
    line_rows.push_back(std::move(row));
  }
  json sampling = profile::sampling_lines(model);
  return {{"classes", std::move(classes)},
          {"reasons", std::move(reasons)},
          {"total", model.instruction_samples()},
          {"sampling", std::move(sampling)},
          {"by_line", text_table(profile::gpu_line_table(model, bounds.gpu_lines))},
          {"by_context", text_table(profile::gpu_stall_table(model, bounds.contexts))},
          {"kernels", std::move(kernel_rows)},
          {"lines", std::move(line_rows)},
          {"lines_total", model.gpu_lines().size()}};
}

// Device-initiated traffic; null without. Per shown context and kernel, and
// per shown context, kernel, line, object and device pair (the code view's
// GPU rows); contexts left out of the page give theirs to their nearest
// shown caller.
json device_initiated_json(const profile_model& model,
                           const std::vector<std::optional<std::uint32_t>>& new_index,
                           const limits& bounds) {
  if (model.remote_lines().empty()) return nullptr;
  const auto shown_context = [&](std::uint32_t node) {
    while (!new_index[node]) node = model.contexts()[node].parent;
    return *new_index[node];
  };
  std::vector<const profile::remote_line*> lines;
  for (const profile::remote_line& line : model.remote_lines()) lines.push_back(&line);
  std::stable_sort(lines.begin(), lines.end(), [](const auto* a, const auto* b) {
    return a->volume.total_bytes() > b->volume.total_bytes();
  });
  std::map<std::pair<std::uint32_t, std::string_view>, profile::remote_volume> kernels;
  std::map<std::tuple<std::uint32_t, std::string_view, std::string, std::string_view, std::uint32_t, std::int32_t>,
           profile::remote_line>
      shown_lines;
  for (const profile::remote_line* line : lines) {
    const std::uint32_t context = shown_context(line->context);
    kernels[{context, line->function}].merge(line->volume);
    const auto key = std::make_tuple(context, std::string_view{line->function},
                                     profile::remote_line_location(*line), std::string_view{line->object},
                                     line->device, line->target);
    if (const auto it = shown_lines.find(key); it != shown_lines.end())
      it->second.volume.merge(line->volume);
    else if (shown_lines.size() < bounds.gpu_lines)
      shown_lines.emplace(key, *line).first->second.context = context;
  }
  json kernel_rows = json::array();
  for (const auto& [key, volume] : kernels) {
    json row = {{"context", key.first}, {"kernel", kernel_name(std::string{key.second})}};
    add_remote_volume(row, volume);
    kernel_rows.push_back(std::move(row));
  }
  json line_rows = json::array();
  for (const auto& [key, line] : shown_lines) {
    json row = {{"context", line.context},
                {"kernel", kernel_name(line.function)},
                {"location", profile::remote_line_location(line)},
                {"file", line.file},
                {"line", line.line},
                {"object", profile::remote_object_text(line)},
                {"object_id", line.object_id},
                {"devices", profile::device_pair_text(line.device, line.target, line.volume)}};
    add_remote_volume(row, line.volume);
    line_rows.push_back(std::move(row));
  }
  return {{"totals", profile::remote_totals_text(model)},
          {"by_line", text_table(profile::remote_line_table(model, bounds.remote_rows))},
          {"by_context", text_table(profile::remote_context_table(model, bounds.remote_rows))},
          {"kernels", std::move(kernel_rows)},
          {"lines", std::move(line_rows)},
          {"lines_total", model.remote_lines().size()}};
}

}  // namespace

std::string report_data(const profile_model& model, const limits& bounds) {
  json document;
  document["format"] = "ferret-report";
  document["version"] = 1;

  const runtime::session_info& session = model.session();
  document["run"] = {{"executable", session.executable},
                     {"pid", session.pid},
                     {"host", session.hostname},
                     {"command_line", session.command_line},
                     // A string: JavaScript's numbers hold 53 bits.
                     {"start_unix_ns", fmt::format("{}", session.start_realtime_ns)},
                     {"duration_ns", model.end_ns()},
                     {"clock", session.clock_source},
                     {"ferret_version", session.ferret_version},
                     {"gpu_operations", model.gpu_operations()},
                     {"bucket_ns", model.bucket_ns()},
                     {"time_buckets", profile::time_buckets},
                     {"heat_bins", profile::heat_bins}};
  document["gpu_metrics"] = gpu_metric_names;

  const std::vector<profile::gpu_metrics> inclusive = model.inclusive_gpu();
  const std::vector<std::uint32_t> contexts = shown_contexts(model, inclusive, bounds.contexts);
  std::vector<std::optional<std::uint32_t>> new_index(model.contexts().size());
  for (std::uint32_t i = 0; i < contexts.size(); ++i) new_index[contexts[i]] = i;
  document["contexts"] = contexts_array(model, contexts, new_index);

  json paths = json::array();
  for (const profile_model::path_row& row : model.gpu_by_region_path()) {
    json nodes = json::array();
    for (const std::uint32_t node : row.nodes)
      if (new_index[node]) nodes.push_back(*new_index[node]);
    paths.push_back({{"path", row.path}, {"gpu", gpu_array(row.gpu)}, {"contexts", std::move(nodes)}});
  }
  document["paths"] = std::move(paths);

  json regions = json::array();
  for (const profile_model::region_row& region : model.regions_by_name())
    regions.push_back({{"name", region.name},
                       {"domain", region.domain},
                       {"calls", region.calls},
                       {"inclusive_ns", region.inclusive_ns}});
  document["regions"] = std::move(regions);

  json counters = json::array();
  for (const profile::counter_totals& counter : model.counters())
    counters.push_back({{"name", counter.name},
                        {"domain", counter.domain},
                        {"samples", counter.samples},
                        {"min", counter.min},
                        {"mean", counter.mean()},
                        {"max", counter.max},
                        {"last", counter.last},
                        // As the summary writes them (number_format.hpp): doubles
                        // print differently in JavaScript.
                        {"shown", {profile::value_text(counter.min), profile::value_text(counter.mean()),
                                   profile::value_text(counter.max), profile::value_text(counter.last)}}});
  document["counters"] = std::move(counters);
  json marks = json::array();
  for (const profile::mark_totals& mark : model.marks())
    marks.push_back({{"name", mark.name}, {"domain", mark.domain}, {"count", mark.count}});
  document["marks"] = std::move(marks);

  json devices = json::array();
  for (const auto& [id, device] : model.devices()) devices.push_back(device_object(device, bounds));
  document["devices"] = std::move(devices);

  document["kernels"] = heaviest_kernels(model.kernels(), bounds.kernels_per_device);
  document["copies"] = copies_array(model.copies());

  document["ends"] = model.ends();
  json traffic = json::array();
  for (const profile::traffic_matrix& matrix : model.traffic()) {
    json cells = json::array();
    for (const auto& [between, volume] : matrix.cells)
      cells.push_back({between.first, between.second, volume.bytes, volume.operations});
    traffic.push_back({{"name", matrix.name}, {"cells", std::move(cells)}});
  }
  document["traffic"] = std::move(traffic);

  const auto objects = shown_objects(model, bounds.objects);
  std::unordered_set<std::uint64_t> object_shown;
  json object_list = json::array();
  for (const auto* object : objects) {
    object_list.push_back(object_json(*object));
    object_shown.insert(object->id);
  }
  document["objects"] = std::move(object_list);

  json context_objects = json::array();  // [context, object id, bytes, operations]
  for (const auto& [key, volume] : model.context_objects())
    if (new_index[key.first] && object_shown.count(key.second) != 0)
      context_objects.push_back({*new_index[key.first], key.second, volume.bytes, volume.operations});
  document["context_objects"] = std::move(context_objects);
  json context_traffic = json::array();  // [context, from, to, bytes, operations]
  for (const auto& [key, volume] : model.context_traffic()) {
    const auto& [node, from, to] = key;
    if (new_index[node])
      context_traffic.push_back({*new_index[node], from, to, volume.bytes, volume.operations});
  }
  document["context_traffic"] = std::move(context_traffic);

  json memory = json::array();
  for (const auto& [key, totals] : model.memory())
    memory.push_back({{"device", key.first},
                      {"memory", runtime::to_string(key.second)},
                      {"allocations", totals.allocations},
                      {"bytes_allocated", totals.bytes_allocated},
                      {"releases", totals.releases},
                      {"peak", totals.peak}});
  document["memory"] = std::move(memory);
  document["gpu_samples"] = gpu_samples_json(model, new_index, bounds);
  document["device_initiated"] = device_initiated_json(model, new_index, bounds);

  document["losses"] = model.losses();
  json unrecorded = json::array();
  for (const profile::unrecorded_api_calls& calls : model.unrecorded_api())
    if (calls.calls != 0)
      unrecorded.push_back({{"collector", calls.collector}, {"call", calls.api}, {"calls", calls.calls}});
  document["unrecorded_api"] = std::move(unrecorded);
  document["metadata"] = {{"user", metadata_array(model.user_metadata())},
                          {"runtime", metadata_array(model.runtime_metadata())}};

  document["limits"] = {{"contexts_shown", contexts.size()},
                        {"contexts_total", model.contexts().size()},
                        {"objects_shown", objects.size()},
                        {"objects_total", model.objects().size() + model.objects_not_kept()},
                        {"kernels_per_device", bounds.kernels_per_device}};
  make_readable(document);
  return page_safe_text(document);
}

}  // namespace ferret::report
