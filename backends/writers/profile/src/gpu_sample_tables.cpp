// The tables of GPU instruction samples. See gpu_sample_tables.hpp.
#include "gpu_sample_tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

namespace ferret::profile {

using runtime::gpu_stall;

std::string samples_text(double samples) {
  // Shares of several launches add up to whole counts give or take rounding.
  const double whole = std::round(samples);
  if (std::abs(samples - whole) < 1e-6 * std::max(1.0, std::abs(samples)))
    return fmt::format("{:.0f}", whole);
  return fmt::format("{:.1f}", samples);
}

std::string share_text(double part, double whole) {
  if (!(whole > 0)) return "-";
  return fmt::format("{:.1f}%", 100.0 * part / whole);
}

std::string dominant_reasons(const stall_samples& samples, const std::vector<stall_reason>& reasons,
                             std::size_t most) {
  std::vector<std::pair<std::uint32_t, double>> sorted = samples.by_reason;
  std::sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    return reasons[a.first].name < reasons[b.first].name;
  });
  std::string text;
  for (std::size_t i = 0; i < sorted.size() && i < most; ++i) {
    const double percent = std::round(100.0 * sorted[i].second / samples.samples);
    if (i != 0 && percent < 1) break;
    if (i != 0) text += ", ";
    text += fmt::format("{} {:.0f}%", reasons[sorted[i].first].name, percent);
  }
  return text;
}

std::string gpu_line_location(const gpu_line& line) {
  if (line.has_line()) return fmt::format("{}:{}", line.file, line.line);
  return fmt::format("+0x{:x}", line.pc_offset);
}

std::string stall_column(gpu_stall stall) {
  std::string name{runtime::metric_name(stall)};
  const std::size_t colon = name.find(':');
  return colon == std::string::npos ? name : name.substr(colon + 1);
}

namespace {

std::string kernel_name(const std::string& mangled) {
  return mangled.empty() ? std::string{"(unnamed kernel)"}
                         : runtime::demangled_kernel_name(mangled.c_str());
}

}  // namespace

text_rows gpu_line_table(const profile_model& model, std::size_t limit) {
  text_rows table;
  table.header = {"samples", "share", "stall reasons", "line", "kernel"};
  table.alignment = "rrlll";
  const std::vector<gpu_line> lines = model.gpu_lines_over_contexts();
  table.total = lines.size();
  const double all = model.instruction_samples();
  for (std::size_t i = 0; i < lines.size() && i < limit; ++i) {
    const gpu_line& line = lines[i];
    table.rows.push_back({samples_text(line.samples.samples), share_text(line.samples.samples, all),
                          dominant_reasons(line.samples, model.stall_reasons()),
                          gpu_line_location(line), kernel_name(line.function)});
  }
  return table;
}

text_rows gpu_stall_table(const profile_model& model, std::size_t limit, std::size_t classes) {
  const std::vector<profile_model::stall_row> rows = model.gpu_stalls_by_region_path();
  // The classes with the most samples over all rows, stalls only.
  std::array<double, runtime::gpu_stall_classes> totals{};
  for (const profile_model::stall_row& row : rows)
    for (std::size_t i = 0; i < totals.size(); ++i) totals[i] += row.samples.by_stall[i];
  std::vector<std::size_t> shown(totals.size());
  std::iota(shown.begin(), shown.end(), std::size_t{0});
  shown.erase(std::remove_if(shown.begin(), shown.end(),
                             [&](std::size_t i) {
                               return i == static_cast<std::size_t>(gpu_stall::none) || !(totals[i] > 0);
                             }),
              shown.end());
  std::stable_sort(shown.begin(), shown.end(),
                   [&](std::size_t a, std::size_t b) { return totals[a] > totals[b]; });
  if (shown.size() > classes) shown.resize(classes);

  text_rows table;
  table.header = {"GINST", "STL_ANY"};
  for (const std::size_t i : shown) table.header.push_back(stall_column(static_cast<gpu_stall>(i)));
  table.header.insert(table.header.end(), {"kernel", "context"});
  table.alignment = std::string(table.header.size() - 2, 'r') + "ll";
  table.total = rows.size();
  for (std::size_t r = 0; r < rows.size() && r < limit; ++r) {
    const profile_model::stall_row& row = rows[r];
    const stall_samples& samples = row.samples;
    std::vector<std::string> cells{samples_text(samples.samples),
                                   share_text(samples.stalled(), samples.samples)};
    // "-" marks a class without samples, so that the others stand out.
    for (const std::size_t i : shown)
      cells.push_back(samples.by_stall[i] > 0 ? share_text(samples.by_stall[i], samples.samples) : "-");
    cells.push_back(kernel_name(row.function));
    cells.push_back(row.path);
    table.rows.push_back(std::move(cells));
  }
  return table;
}

std::vector<std::string> sampling_lines(const profile_model& model) {
  const profile_model::sampling_totals totals = model.sampling();
  std::vector<std::string> lines;
  std::string counts = fmt::format("{} samples attributed (GINST)", samples_text(totals.attributed));
  if (totals.total > 0) counts += fmt::format(" of {} taken (GSAMP:TOT)", totals.total);
  counts += fmt::format(", {} dropped (GSAMP:DRP)", totals.dropped);
  if (totals.non_user > 0) counts += fmt::format(", {} outside the program's kernels", totals.non_user);
  lines.push_back(std::move(counts));
  std::string rates;
  if (totals.period_cycles > 0) rates = fmt::format("period {} cycles (GSAMP:PER)", totals.period_cycles);
  if (totals.expected > 0) {
    if (!rates.empty()) rates += ", ";
    rates += fmt::format("GSAMP:UTIL {} (the kernels' {} samples of the {} their time allowed)",
                         share_text(totals.kernel_samples, totals.expected),
                         samples_text(totals.kernel_samples), samples_text(totals.expected));
  }
  if (!rates.empty()) lines.push_back(std::move(rates));
  if (totals.dropped > 0) {
    const std::int64_t taken = std::max(totals.total, totals.dropped);
    lines.push_back(fmt::format(
        "{} samples were dropped ({} of those taken): the shares below are of the samples kept",
        totals.dropped, share_text(static_cast<double>(totals.dropped), static_cast<double>(taken))));
  }
  return lines;
}

}  // namespace ferret::profile
