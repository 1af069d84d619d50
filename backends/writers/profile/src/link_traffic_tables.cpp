// The tables of sampled counters. See link_traffic_tables.hpp.
#include "link_traffic_tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "number_format.hpp"

namespace ferret::profile {

namespace {

std::uint64_t whole_bytes(double bytes) {
  return bytes > 0 && std::isfinite(bytes) ? static_cast<std::uint64_t>(std::llround(bytes)) : 0;
}

std::string bytes_cell(double bytes) {
  const std::uint64_t whole = whole_bytes(bytes);
  return whole == 0 ? "-" : bytes_text(whole);
}

// Bytes per second in decimal units, as link speeds are given: "1.25 GB/s",
// "3.07 MB/s", "0 B/s".
std::string bytes_rate_text(double per_second) {
  if (per_second >= 1e9) return fmt::format("{:.2f} GB/s", per_second / 1e9);
  if (per_second >= 1e6) return fmt::format("{:.2f} MB/s", per_second / 1e6);
  if (per_second >= 1e3) return fmt::format("{:.2f} kB/s", per_second / 1e3);
  return fmt::format("{:.0f} B/s", per_second);
}

// A rate or level with its unit: bytes per second as bytes_rate_text, others
// as "%g <unit>/s" (accumulating) or a level to three digits, as the rates
// beside it ("0.0243 percent", "50 percent").
std::string rate_cell(double value, const sampled_metric_totals& metric) {
  if (metric.accumulates && metric.unit == "bytes") return bytes_rate_text(value);
  if (metric.accumulates) return fmt::format("{} {}/s", value_text(value), metric.unit);
  return fmt::format("{:.3g} {}", value, metric.unit);
}

}  // namespace

text_rows link_kernel_table(const profile_model& model, std::size_t limit) {
  text_rows table;
  table.header = {"NVLink sent", "NVLink received", "PCIe read", "PCIe write", "exact",
                  "launches", "GPU", "kernel"};
  table.alignment = "rrrrrrrl";
  std::vector<const kernel_totals*> kernels;
  for (const auto& [id, on] : model.devices())
    for (const auto& [name, totals] : on.kernels)
      if (totals.link_launches > 0) kernels.push_back(&totals);
  std::stable_sort(kernels.begin(), kernels.end(), [](const kernel_totals* a, const kernel_totals* b) {
    return a->link.total() > b->link.total();
  });
  table.total = kernels.size();
  kernel_link_bytes rest;
  const auto sum_of = [](const link_bytes& a, const link_bytes& b, std::size_t i) { return a[i] + b[i]; };
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    const kernel_totals& kernel = *kernels[k];
    if (k >= limit) {
      for (std::size_t i = 0; i < link_counters; ++i) {
        rest.exact[i] += kernel.link.exact[i];
        rest.shared[i] += kernel.link.shared[i];
      }
      continue;
    }
    double exact = 0;
    for (const double bytes : kernel.link.exact) exact += bytes;
    std::vector<std::string> row;
    for (std::size_t i = 0; i < link_counters; ++i)
      row.push_back(bytes_cell(sum_of(kernel.link.exact, kernel.link.shared, i)));
    const double total = kernel.link.total();
    row.push_back(total > 0 ? fmt::format("{:.0f}%", exact / total * 100.0) : std::string{"-"});
    row.push_back(fmt::format("{}", kernel.link_launches));
    row.push_back(fmt::format("{}", kernel.device));
    row.push_back(kernel.mangled_name.empty() ? std::string{"(unnamed kernel)"}
                                              : runtime::demangled_kernel_name(kernel.mangled_name.c_str()));
    table.rows.push_back(std::move(row));
  }
  if (kernels.size() > limit) {
    std::string text;
    for (std::size_t i = 0; i < link_counters; ++i)
      text += fmt::format("{}{} {}", i == 0 ? "" : ", ", describe(static_cast<link_counter>(i)),
                          bytes_text(whole_bytes(sum_of(rest.exact, rest.shared, i))));
    table.rest = text;
  }
  return table;
}

text_rows sampled_counter_table(const profile_model& model) {
  text_rows table;
  table.header = {"GPU", "counter", "total", "mean", "peak", "sampled"};
  table.alignment = "llrrrr";
  for (const auto& [id, on] : model.devices())
    for (const sampled_metric_totals& metric : on.sampled) {
      if (metric.intervals == 0) continue;
      std::string total = "-";
      if (metric.accumulates)
        total = metric.unit == "bytes" ? bytes_text(whole_bytes(metric.sum))
                                       : fmt::format("{} {}", value_text(metric.sum), metric.unit);
      table.rows.push_back({fmt::format("GPU {}", id), metric.label, total,
                            rate_cell(metric.mean(), metric), rate_cell(metric.peak, metric),
                            fmt::format("{} s", seconds_text(metric.sampled_ns))});
    }
  table.total = table.rows.size();
  return table;
}

std::string link_attribution_text(const profile_model& model) {
  std::array<double, 3> by_share_total{};  // by link_share
  for (const auto& [id, on] : model.devices())
    for (std::size_t share = 0; share < on.link_by_share.size(); ++share)
      for (const double bytes : on.link_by_share[share]) by_share_total[share] += bytes;
  std::string text = fmt::format(
      "link bytes (NVLink and PCIe): {} while one kernel ran (exact), {} shared among several "
      "kernels by their overlap, {} while no kernel ran (idle or copies)",
      bytes_text(whole_bytes(by_share_total[0])), bytes_text(whole_bytes(by_share_total[1])),
      bytes_text(whole_bytes(by_share_total[2])));
  if (model.link_late_kernels() > 0)
    text += fmt::format("; {} kernels arrived after their time's bytes were attributed",
                        model.link_late_kernels());
  if (model.link_settled_at_limit() > 0)
    text += fmt::format("; {} kernels or intervals settled early at the window's limit",
                        model.link_settled_at_limit());
  return text;
}

}  // namespace ferret::profile
