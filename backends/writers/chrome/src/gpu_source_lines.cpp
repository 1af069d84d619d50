#include "gpu_source_lines.hpp"

#include "chrome_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>
#include <utility>

namespace ferret::chrome {

double rounded_samples(double samples) noexcept { return std::round(samples * 100.0) / 100.0; }

std::string stall_shares(const runtime::gpu_stall_reason* const* reasons, const double* samples,
                         std::size_t count, double total) {
  std::string text;
  if (total <= 0) return text;
  for (std::size_t i = 0; i < count; ++i) {
    if (reasons[i] == nullptr) continue;
    const double percent = 100.0 * samples[i] / total;
    if (percent < 0.5) continue;
    if (!text.empty()) text.append(", ");
    fmt::format_to(std::back_inserter(text), "{} {:.0f}%", reasons[i]->name, percent);
  }
  return text;
}

void gpu_source_lines::add(const runtime::gpu_instruction_sample* samples, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    const runtime::gpu_instruction_sample& sample = samples[i];
    if (sample.reason == nullptr || !(sample.samples > 0)) continue;
    function& f = functions_[sample.function != nullptr ? sample.function : ""];
    const line_key key = sample.file != nullptr
                             ? line_key{sample.file, sample.line, 0}
                             : line_key{std::string_view{}, 0, sample.pc_offset};
    line& l = f.lines[key];
    const std::uint32_t id = sample.reason->id;
    if (id >= l.by_reason.size()) l.by_reason.resize(std::size_t{id} + 1);
    if (id >= reasons_.size()) reasons_.resize(std::size_t{id} + 1);
    reasons_[id] = sample.reason;
    l.by_reason[id] += sample.samples;
    l.samples += sample.samples;
    f.samples += sample.samples;
  }
}

void gpu_source_lines::append_json(std::string& out) const {
  if (functions_.empty()) return;
  using function_entry = std::pair<const std::string_view, function>;
  std::vector<const function_entry*> order;
  for (const function_entry& entry : functions_) order.push_back(&entry);
  std::stable_sort(order.begin(), order.end(), [](const function_entry* a, const function_entry* b) {
    return a->second.samples > b->second.samples;
  });
  if (order.size() > max_sampled_functions) order.resize(max_sampled_functions);

  out.append(",\"gpu-source-lines\":[");
  bool first_function = true;
  for (const function_entry* entry : order) {
    const function& f = entry->second;
    if (!first_function) out.push_back(',');
    first_function = false;
    out.append("{\"function\":");
    append_json_string(out, runtime::demangled_kernel_name(entry->first.data()));
    fmt::format_to(std::back_inserter(out), ",\"samples\":{},\"lines\":[",
                   rounded_samples(f.samples));

    using line_entry = std::pair<const line_key, line>;
    std::vector<const line_entry*> lines;
    for (const line_entry& l : f.lines) lines.push_back(&l);
    std::stable_sort(lines.begin(), lines.end(), [](const line_entry* a, const line_entry* b) {
      return a->second.samples > b->second.samples;
    });
    const std::size_t shown = std::min(lines.size(), max_lines_per_function);
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& [key, l] = *lines[i];
      if (i != 0) out.push_back(',');
      const auto& [file, line_number, pc_offset] = key;
      if (line_number != 0 || !file.empty()) {
        out.append("{\"file\":");
        append_json_string(out, file);
        fmt::format_to(std::back_inserter(out), ",\"line\":{}", line_number);
      } else {
        fmt::format_to(std::back_inserter(out), "{{\"pc offset\":\"{:#x}\"", pc_offset);
      }
      fmt::format_to(std::back_inserter(out), ",\"samples\":{}", rounded_samples(l.samples));
      // The line's reasons, most sampled first, issued ones too: a line's
      // "selected" share says how much of its time it issued.
      std::vector<std::uint32_t> ids(l.by_reason.size());
      std::iota(ids.begin(), ids.end(), 0U);
      std::stable_sort(ids.begin(), ids.end(), [&l](std::uint32_t a, std::uint32_t b) {
        return l.by_reason[a] > l.by_reason[b];
      });
      if (ids.size() > 3) ids.resize(3);
      const runtime::gpu_stall_reason* top[3] = {};
      double top_samples[3] = {};
      for (std::size_t k = 0; k < ids.size(); ++k) {
        top[k] = reasons_[ids[k]];
        top_samples[k] = l.by_reason[ids[k]];
      }
      out.append(",\"stalls\":");
      append_json_string(out, stall_shares(top, top_samples, ids.size(), l.samples));
      out.push_back('}');
    }
    out.push_back(']');
    if (lines.size() > shown)
      fmt::format_to(std::back_inserter(out), ",\"lines left out\":{}", lines.size() - shown);
    out.push_back('}');
  }
  out.push_back(']');
  if (functions_.size() > order.size())
    fmt::format_to(std::back_inserter(out), ",\"gpu-source-lines-functions-left-out\":{}",
                   functions_.size() - order.size());
}

}  // namespace ferret::chrome
