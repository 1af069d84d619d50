// The summary backend: the profile of a run as text tables on stderr. See
// summary_backend.hpp for the layout; profile_model.hpp computes the numbers.
#include "summary_backend.hpp"

#include "ferret/runtime/runtime.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu_sample_tables.hpp"
#include "job_profile.hpp"
#include "number_format.hpp"
#include "profile_backend.hpp"
#include "readable_text.hpp"
#include "link_traffic_tables.hpp"
#include "remote_traffic_tables.hpp"

namespace ferret::summary {
namespace {

using profile::bytes_text;
using profile::milliseconds_text;
using runtime::copy_kind;

constexpr std::size_t top_rows = 10;
// Display columns of a name, "…" included: names may be of any length.
constexpr std::size_t longest_name = 100;
constexpr std::size_t longest_path = 120;

// A name as the terminal should show it: escaped, then cut.
std::string shown_name(std::string_view name, std::size_t columns = longest_name) {
  return profile::cut_end(profile::readable_text(name), columns);
}
std::string shown_path(std::string_view path) {
  return profile::cut_middle(profile::readable_text(path), longest_path);
}

// Table cells: "-" marks nothing at all, so that real values stand out.
std::string bytes_cell(std::uint64_t bytes) { return bytes == 0 ? "-" : bytes_text(bytes); }

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
    for (std::size_t i = 0; i < headers_.size(); ++i) widths[i] = profile::display_width(headers_[i]);
    for (const auto& row : rows_)
      for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i)
        widths[i] = std::max(widths[i], profile::display_width(row[i]));
    append_line(out, headers_, widths);
    for (const auto& row : rows_) append_line(out, row, widths);
  }

 private:
  void append_line(std::string& out, const std::vector<std::string>& cells,
                   const std::vector<std::size_t>& widths) const {
    std::string line = "  ";
    for (std::size_t i = 0; i < cells.size() && i < widths.size(); ++i) {
      if (i != 0) line += "  ";
      const std::size_t padding = widths[i] - profile::display_width(cells[i]);
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

using model = profile::profile_model;

void append_contexts(std::string& out, const model& run) {
  const std::vector<model::path_row> rows = run.gpu_by_region_path();
  if (rows.empty()) return;
  std::vector<const model::path_row*> all;
  for (const model::path_row& row : rows) all.push_back(&row);
  append_heading(out, "GPU time by calling context");
  text_table table{{"GKER ms", alignment::right},      {"kernels", alignment::right},
                   {"GXCOPY ms", alignment::right},    {"GXCOPY bytes", alignment::right},
                   {"GMSET bytes", alignment::right},  {"GMEM bytes", alignment::right},
                   {"GSYNC ms", alignment::right},     {"context", alignment::left}};
  for (const model::path_row* row : top(all, [](const model::path_row* a, const model::path_row* b) {
         const std::int64_t a_ns = a->gpu.kernel_ns + a->gpu.copy_ns;
         const std::int64_t b_ns = b->gpu.kernel_ns + b->gpu.copy_ns;
         return a_ns != b_ns ? a_ns > b_ns : a->path < b->path;
       })) {
    const profile::gpu_metrics& gpu = row->gpu;
    table.add_row({milliseconds_text(gpu.kernel_ns), fmt::format("{}", gpu.kernels),
                   milliseconds_text(gpu.copy_ns), bytes_cell(gpu.copy_bytes),
                   bytes_cell(gpu.memset_bytes), bytes_cell(gpu.allocated_bytes),
                   milliseconds_text(gpu.sync_ns), shown_path(row->path)});
  }
  table.append_to(out);
  append_not_shown(out, all.size(), "context");
}

void append_kernels(std::string& out, const model& run) {
  const auto kernels = run.kernels();
  if (kernels.empty()) return;
  std::vector<const profile::kernel_totals*> all;
  for (const auto& [name, totals] : kernels) all.push_back(&totals);
  append_heading(out, "Kernels");
  text_table table{{"calls", alignment::right},     {"total ms", alignment::right},
                   {"mean µs", alignment::right},   {"occupancy", alignment::right},
                   {"registers", alignment::right}, {"kernel", alignment::left}};
  for (const profile::kernel_totals* kernel :
       top(all, [](const profile::kernel_totals* a, const profile::kernel_totals* b) {
         return a->total_ns != b->total_ns ? a->total_ns > b->total_ns
                                           : a->mangled_name < b->mangled_name;
       })) {
    const std::string name =
        kernel->mangled_name.empty()
            ? std::string{"(unnamed kernel)"}
            : shown_name(runtime::demangled_kernel_name(kernel->mangled_name.c_str()));
    table.add_row({fmt::format("{}", kernel->calls), milliseconds_text(kernel->total_ns),
                   profile::mean_microseconds_text(kernel->total_ns, kernel->calls),
                   profile::percent_text(kernel->occupancy_ppm_sum, kernel->occupancy_launches),
                   fmt::format("{}", kernel->registers), name});
  }
  table.append_to(out);
  append_not_shown(out, all.size(), "kernel");
}

// The GPU lines with the most instruction samples: more than the other tables
// show, since a kernel's time often spreads over many lines.
constexpr std::size_t top_gpu_lines = 20;

void append_gpu_table(std::string& out, std::string_view heading, profile::text_rows table,
                      std::size_t shown, std::string_view noun,
                      const std::vector<std::string>& before = {}) {
  if (table.rows.empty()) return;
  append_heading(out, heading);
  for (const std::string& line : before) out += "  " + line + "\n";
  std::vector<std::pair<std::string, alignment>> columns;
  for (std::size_t i = 0; i < table.header.size(); ++i)
    columns.emplace_back(table.header[i], table.alignment[i] == 'r' ? alignment::right : alignment::left);
  text_table text{columns};
  for (std::vector<std::string>& row : table.rows) text.add_row(std::move(row));
  text.append_to(out);
  if (table.total > shown) {
    const std::size_t hidden = table.total - shown;
    out += fmt::format("  … {} more {}{}{}\n", hidden, noun, hidden == 1 ? "" : "s",
                       table.rest.empty() ? std::string{} : ": " + table.rest);
  }
}

// Instruction samples (PC sampling): the counts, then where in the kernels
// the samples fell and why the warps waited, by line and by calling context.
void append_gpu_samples(std::string& out, const model& run) {
  const model::sampling_totals totals = run.sampling();
  if (!(totals.attributed > 0) && !(totals.kernel_samples > 0) && totals.total == 0) return;
  append_heading(out, "GPU instruction sampling");
  for (const std::string& line : profile::sampling_lines(run)) out += "  " + line + "\n";
  out +=
      "  metrics (HPCToolkit's names): GINST instruction samples, STL_ANY share stalled, STL_* "
      "share per stall class; +0x…: an instruction of a kernel without line information\n";

  profile::text_rows lines = profile::gpu_line_table(run, top_gpu_lines);
  for (std::vector<std::string>& row : lines.rows) {
    row[3] = profile::cut_middle(profile::readable_text(row[3]), 60);
    row[4] = shown_name(row[4]);
  }
  const std::size_t lines_shown = lines.rows.size();
  append_gpu_table(out, "GPU instructions by source line", std::move(lines), lines_shown, "line");

  profile::text_rows contexts = profile::gpu_stall_table(run, top_rows);
  for (std::vector<std::string>& row : contexts.rows) {
    row[row.size() - 2] = shown_name(row[row.size() - 2], 40);
    row.back() = shown_path(row.back());
  }
  const std::size_t contexts_shown = contexts.rows.size();
  append_gpu_table(out, "GPU stalls by calling context", std::move(contexts), contexts_shown, "row");
}

// Device-initiated traffic (kernels' own loads and stores to other devices'
// memory and the host's): the totals, then by kernel, line, object and device
// pair (the top 20, the rest summed), then by launching context.
void append_device_initiated(std::string& out, const model& run) {
  if (run.remote_lines().empty()) return;
  profile::text_rows lines = profile::remote_line_table(run, top_gpu_lines);
  for (std::vector<std::string>& row : lines.rows) {
    row[4] = profile::cut_middle(profile::readable_text(row[4]), 60);
    row[5] = shown_name(row[5], 40);
    row[6] = shown_name(row[6]);
  }
  const std::size_t lines_shown = lines.rows.size();
  append_gpu_table(out, "Device-initiated traffic", std::move(lines), lines_shown, "row",
                   {profile::remote_totals_text(run),
                    "← loads (bytes from the memory's device to the kernel's), → stores and atomics; "
                    "+0x…: an instruction of a kernel without line information"});
  profile::text_rows contexts = profile::remote_context_table(run, top_rows);
  for (std::vector<std::string>& row : contexts.rows) {
    row[3] = shown_name(row[3], 40);
    row[4] = shown_path(row[4]);
  }
  const std::size_t contexts_shown = contexts.rows.size();
  append_gpu_table(out, "Device-initiated traffic by calling context", std::move(contexts),
                   contexts_shown, "row");
}

// Sampled counters (PM sampling): per GPU each counter's total, mean and peak,
// then the link bytes attributed to the kernels that ran in each interval.
void append_sampled_counters(std::string& out, const model& run) {
  if (!run.has_sampled_counters()) return;
  profile::text_rows counters = profile::sampled_counter_table(run);
  const std::size_t counters_shown = counters.rows.size();
  append_gpu_table(out, "Sampled counters per GPU (PM sampling)", std::move(counters), counters_shown,
                   "counter");
  profile::text_rows kernels = profile::link_kernel_table(run, top_rows);
  for (std::vector<std::string>& row : kernels.rows) row.back() = shown_name(row.back(), 40);
  const std::size_t kernels_shown = kernels.rows.size();
  append_gpu_table(out, "Link traffic by kernel (PM sampling)", std::move(kernels), kernels_shown,
                   "kernel",
                   {profile::link_attribution_text(run),
                    "exact: the share of a kernel's bytes from intervals in which it ran alone; "
                    "the rest is its part, by overlap time, of intervals shared with other kernels"});
}

void append_copies(std::string& out, const model& run) {
  const auto copies = run.copies();
  text_table table{{"direction", alignment::left},
                   {"count", alignment::right},
                   {"bytes", alignment::right},
                   {"total ms", alignment::right},
                   {"mean GB/s", alignment::right}};
  bool any = false;
  for (const copy_kind kind : profile::listed_copy_kinds) {
    const profile::transfer_totals& totals = copies[profile::index_of(kind)];
    if (totals.count == 0) continue;
    any = true;
    table.add_row({std::string{runtime::to_string(kind)}, fmt::format("{}", totals.count),
                   bytes_text(totals.bytes), milliseconds_text(totals.ns),
                   profile::rate_text(totals.bytes, totals.ns)});
  }
  if (!any) return;
  append_heading(out, "Copies");
  table.append_to(out);
}

// A traffic matrix over every end of the run (so that the copies' and the
// device-initiated matrices line up): rows where the bytes came from, columns
// where they went.
void append_matrix(std::string& out, const model& run, const profile::traffic_matrix& matrix,
                   std::string_view heading) {
  if (matrix.cells.empty()) return;
  const std::vector<std::int32_t> ends = run.ends();
  append_heading(out, heading);
  std::vector<std::pair<std::string, alignment>> columns{{"from \\ to", alignment::left}};
  for (const std::int32_t destination : ends)
    columns.emplace_back(runtime::memory_end_name(destination), alignment::right);
  text_table table{columns};
  for (const std::int32_t source : ends) {
    std::vector<std::string> row{runtime::memory_end_name(source)};
    for (const std::int32_t destination : ends) {
      const auto it = matrix.cells.find({source, destination});
      row.push_back(bytes_cell(it == matrix.cells.end() ? 0 : it->second.bytes));
    }
    table.add_row(std::move(row));
  }
  table.append_to(out);
}

// Every data object, host ones and those nothing moved included: the most
// bytes moved first, then the largest (as the report lists them).
void append_objects(std::string& out, const model& run) {
  std::vector<const profile::data_object_totals*> all;
  for (const auto& [id, totals] : run.objects()) all.push_back(&totals);
  if (all.empty()) return;
  append_heading(out, "Data objects");
  text_table table{{"size", alignment::right},   {"HtoD", alignment::right},
                   {"DtoH", alignment::right},   {"DtoD", alignment::right},
                   {"HtoH", alignment::right},   {"PtoP", alignment::right},
                   {"memset", alignment::right}, {"object", alignment::left}};
  for (const profile::data_object_totals* object :
       top(all, [](const profile::data_object_totals* a, const profile::data_object_totals* b) {
         return profile::shown_before(*a, *b);
       })) {
    const auto copied = [&](copy_kind kind) {
      return bytes_cell(object->copied[profile::index_of(kind)]);
    };
    std::string name = shown_name(object->name);
    if (object->automatic) name += " (auto)";
    table.add_row({object->known ? bytes_text(object->bytes) : "-",
                   copied(copy_kind::host_to_device), copied(copy_kind::device_to_host),
                   copied(copy_kind::device_to_device), copied(copy_kind::host_to_host),
                   copied(copy_kind::peer_to_peer), bytes_cell(object->memsets.bytes),
                   std::move(name)});
  }
  table.append_to(out);
  append_not_shown(out, all.size() + run.objects_not_kept(), "data object");
}

void append_memory(std::string& out, const model& run) {
  if (run.memory().empty()) return;
  append_heading(out, "Memory");
  text_table table{{"device", alignment::left},       {"memory", alignment::left},
                   {"allocations", alignment::right}, {"allocated", alignment::right},
                   {"releases", alignment::right},    {"peak live", alignment::right}};
  for (const auto& [key, totals] : run.memory())
    table.add_row({runtime::memory_end_name(key.first), std::string{runtime::to_string(key.second)},
                   fmt::format("{}", totals.allocations), bytes_text(totals.bytes_allocated),
                   fmt::format("{}", totals.releases), bytes_text(totals.peak)});
  table.append_to(out);
}

// A region's, counter's or mark's name, with its domain where it has one.
std::string label_of(const std::string& name, const std::string& domain) {
  std::string text = shown_name(name);
  if (!domain.empty()) text += fmt::format(" [{}]", shown_name(domain, 40));
  return text;
}

void append_regions(std::string& out, const model& run) {
  const std::vector<model::region_row> regions = run.regions_by_name();
  if (regions.empty()) return;
  std::vector<const model::region_row*> all;
  for (const model::region_row& region : regions) all.push_back(&region);
  append_heading(out, "Host regions");
  text_table table{
      {"calls", alignment::right}, {"total ms", alignment::right}, {"region", alignment::left}};
  const auto label = [](const model::region_row& region) {
    return label_of(region.name, region.domain);
  };
  for (const model::region_row* region :
       top(all, [&](const model::region_row* a, const model::region_row* b) {
         return a->inclusive_ns != b->inclusive_ns ? a->inclusive_ns > b->inclusive_ns
                                                   : label(*a) < label(*b);
       }))
    table.add_row({fmt::format("{}", region->calls), milliseconds_text(region->inclusive_ns),
                   label(*region)});
  table.append_to(out);
  append_not_shown(out, all.size(), "region");
}

// Counter samples per name: how many, their range and mean, and the latest value.
void append_counters(std::string& out, const model& run) {
  const std::vector<profile::counter_totals> counters = run.counters();
  if (counters.empty()) return;
  std::vector<const profile::counter_totals*> all;
  for (const profile::counter_totals& counter : counters) all.push_back(&counter);
  append_heading(out, "Counters");
  text_table table{{"samples", alignment::right}, {"min", alignment::right},
                   {"mean", alignment::right},    {"max", alignment::right},
                   {"last", alignment::right},    {"counter", alignment::left}};
  for (const profile::counter_totals* counter :
       top(all, [](const profile::counter_totals* a, const profile::counter_totals* b) {
         return a->samples != b->samples ? a->samples > b->samples
                                         : std::tie(a->name, a->domain) < std::tie(b->name, b->domain);
       }))
    table.add_row({fmt::format("{}", counter->samples), profile::value_text(counter->min),
                   profile::value_text(counter->mean()), profile::value_text(counter->max),
                   profile::value_text(counter->last), label_of(counter->name, counter->domain)});
  table.append_to(out);
  append_not_shown(out, all.size(), "counter");
}

void append_marks(std::string& out, const model& run) {
  const std::vector<profile::mark_totals> marks = run.marks();
  if (marks.empty()) return;
  std::vector<const profile::mark_totals*> all;
  for (const profile::mark_totals& mark : marks) all.push_back(&mark);
  append_heading(out, "Marks");
  text_table table{{"count", alignment::right}, {"mark", alignment::left}};
  for (const profile::mark_totals* mark :
       top(all, [](const profile::mark_totals* a, const profile::mark_totals* b) {
         return a->count != b->count ? a->count > b->count
                                     : std::tie(a->name, a->domain) < std::tie(b->name, b->domain);
       }))
    table.add_row({fmt::format("{}", mark->count), label_of(mark->name, mark->domain)});
  table.append_to(out);
  append_not_shown(out, all.size(), "mark");
}

// Time (the calls' regions) and bytes per MPI call.
void append_mpi_calls(std::string& out, const model& run) {
  std::map<std::string, const model::region_row*> regions;
  std::vector<model::region_row> rows = run.regions_by_name();
  for (const model::region_row& region : rows)
    if (region.domain == "mpi") regions.emplace(region.name, &region);
  if (regions.empty() && run.mpi_calls().empty()) return;
  std::vector<std::string> calls;
  for (const auto& [name, region] : regions) calls.push_back(name);
  for (const auto& [name, totals] : run.mpi_calls())
    if (regions.count(name) == 0) calls.push_back(name);
  const auto time_of = [&regions](const std::string& call) {
    const auto it = regions.find(call);
    return it == regions.end() ? std::int64_t{0} : it->second->inclusive_ns;
  };
  std::sort(calls.begin(), calls.end(), [&](const std::string& a, const std::string& b) {
    return time_of(a) != time_of(b) ? time_of(a) > time_of(b) : a < b;
  });
  append_heading(out, "MPI calls");
  text_table table{{"calls", alignment::right},    {"total ms", alignment::right},
                   {"bytes sent", alignment::right}, {"bytes received", alignment::right},
                   {"call", alignment::left}};
  for (const std::string& call : calls) {
    const auto region = regions.find(call);
    const auto totals = run.mpi_calls().find(call);
    const bool moved = totals != run.mpi_calls().end();
    table.add_row({fmt::format("{}", region == regions.end() ? 0 : region->second->calls),
                   milliseconds_text(time_of(call)), bytes_cell(moved ? totals->second.sent.bytes : 0),
                   bytes_cell(moved ? totals->second.received.bytes : 0), shown_name(call)});
  }
  table.append_to(out);
}

// A rank x rank matrix is shown up to this many ranks; past it, the pairs.
constexpr std::uint32_t widest_matrix = 16;

// The pairs of ranks that exchanged the most bytes.
void append_mpi_pairs(std::string& out, const model& run) {
  std::vector<const std::pair<const std::pair<std::uint32_t, std::uint32_t>, profile::volume>*> all;
  for (const auto& cell : run.messages()) all.push_back(&cell);
  append_heading(out, *run.rank() == 0 ? "MPI point-to-point bytes, largest pairs of ranks"
                                       : "MPI point-to-point bytes from this rank");
  text_table table{{"from", alignment::right}, {"to", alignment::right}, {"messages", alignment::right},
                   {"bytes", alignment::right}};
  for (const auto* cell : top(all, [](const auto* a, const auto* b) {
         return a->second.bytes != b->second.bytes ? a->second.bytes > b->second.bytes : a->first < b->first;
       }))
    table.add_row({fmt::format("rank {}", cell->first.first), fmt::format("rank {}", cell->first.second),
                   fmt::format("{}", cell->second.operations), bytes_text(cell->second.bytes)});
  table.append_to(out);
  append_not_shown(out, all.size(), "pair");
}

// Point-to-point bytes between MPI ranks: every rank's row on rank 0, the
// rank's own row elsewhere.
void append_mpi_matrix(std::string& out, const model& run) {
  if (run.messages().empty() || !run.rank()) return;
  if (run.size() > widest_matrix) {
    append_mpi_pairs(out, run);
    return;
  }
  append_heading(out, *run.rank() == 0 ? "MPI point-to-point bytes (rank x rank)"
                                       : "MPI point-to-point bytes from this rank");
  std::vector<std::pair<std::string, alignment>> columns{{"from \\ to", alignment::left}};
  for (std::uint32_t to = 0; to < run.size(); ++to)
    columns.emplace_back(fmt::format("rank {}", to), alignment::right);
  text_table table{columns};
  for (std::uint32_t from = 0; from < run.size(); ++from) {
    if (*run.rank() != 0 && from != *run.rank()) continue;
    std::vector<std::string> row{fmt::format("rank {}", from)};
    for (std::uint32_t to = 0; to < run.size(); ++to) {
      const auto it = run.messages().find({from, to});
      row.push_back(bytes_cell(it == run.messages().end() ? 0 : it->second.bytes));
    }
    table.add_row(std::move(row));
  }
  table.append_to(out);
}

void append_unrecorded_api(std::string& out, const model& run) {
  std::vector<const profile::unrecorded_api_calls*> all;
  for (const profile::unrecorded_api_calls& calls : run.unrecorded_api())
    if (calls.calls != 0) all.push_back(&calls);
  if (all.empty()) return;
  append_heading(out, "API calls counted, not recorded");
  text_table table{{"calls", alignment::right}, {"collector", alignment::left},
                   {"call", alignment::left}};
  for (const profile::unrecorded_api_calls* calls :
       top(all, [](const profile::unrecorded_api_calls* a, const profile::unrecorded_api_calls* b) {
         if (a->calls != b->calls) return a->calls > b->calls;
         return std::tie(a->collector, a->api) < std::tie(b->collector, b->api);
       }))
    table.add_row({fmt::format("{}", calls->calls), shown_name(calls->collector, 40),
                   shown_name(calls->api)});
  table.append_to(out);
  append_not_shown(out, all.size(), "call");
}

void append_losses(std::string& out, const model& run) {
  if (run.losses().empty()) return;
  out += "\nLosses: ";
  for (std::size_t i = 0; i < run.losses().size(); ++i) {
    if (i != 0) out += ", ";
    out += run.losses()[i];
  }
  out += '\n';
}

std::string summary_text(const model& run, bool with_matrix) {
  std::string out = fmt::format("ferret summary: {} (pid {}{}), {} s, {}\n",
                                shown_name(run.session().executable), run.session().pid,
                                run.rank() ? fmt::format(", rank {}", *run.rank()) : std::string{},
                                profile::seconds_text(run.end_ns()),
                                plural(run.gpu_operations(), "GPU operation"));
  if (run.gpu_operations() != 0)
    out +=
        "metrics (HPCToolkit's names): GKER kernel time, GXCOPY copy time and bytes, GMSET "
        "bytes set, GMEM bytes allocated, GSYNC synchronization time\n";
  append_contexts(out, run);
  append_kernels(out, run);
  append_gpu_samples(out, run);
  append_copies(out, run);
  append_matrix(out, run, run.traffic()[profile::copies_matrix], "Device-to-device bytes");
  append_matrix(out, run, run.traffic()[profile::device_initiated_matrix], "Device-initiated bytes (kernels' loads and stores)");
  append_device_initiated(out, run);
  append_sampled_counters(out, run);
  append_objects(out, run);
  append_memory(out, run);
  append_regions(out, run);
  append_counters(out, run);
  append_marks(out, run);
  append_mpi_calls(out, run);
  if (with_matrix) append_mpi_matrix(out, run);
  append_unrecorded_api(out, run);
  append_losses(out, run);
  return out;
}

// --- the job summary (rank 0 of an MPI job) ----------------------------------

std::string percent(double fraction) { return fmt::format("{:.1f}%", 100.0 * fraction); }

std::string mean_milliseconds(double ns) {
  return milliseconds_text(static_cast<std::int64_t>(ns < 0 ? ns - 0.5 : ns + 0.5));
}

// min, mean and max over the ranks, the rank of the max, the imbalance.
std::vector<std::string> spread_cells(const profile::spread& over_ranks) {
  return {milliseconds_text(over_ranks.min), mean_milliseconds(over_ranks.mean),
          milliseconds_text(over_ranks.max), fmt::format("{}", over_ranks.max_rank),
          percent(over_ranks.imbalance())};
}

const std::initializer_list<std::pair<std::string, alignment>> spread_columns = {
    {"min ms", alignment::right},   {"mean ms", alignment::right},  {"max ms", alignment::right},
    {"max rank", alignment::right}, {"imbalance", alignment::right}};

text_table spread_table(std::initializer_list<std::pair<std::string, alignment>> before,
                        std::initializer_list<std::pair<std::string, alignment>> after) {
  std::vector<std::pair<std::string, alignment>> columns(before);
  columns.insert(columns.end(), spread_columns.begin(), spread_columns.end());
  columns.insert(columns.end(), after.begin(), after.end());
  return text_table{columns};
}

// Rows by the largest time any rank spent in them: the first `top_rows`, or all.
std::vector<const profile::job_row*> by_max_time(const std::vector<profile::job_row>& rows, bool all_rows) {
  std::vector<const profile::job_row*> all;
  std::map<const profile::job_row*, std::int64_t> max_of;
  for (const profile::job_row& row : rows) {
    all.push_back(&row);
    max_of[&row] = profile::spread_of(row.time_ns).max;
  }
  const auto before = [&max_of](const profile::job_row* a, const profile::job_row* b) {
    const std::int64_t a_max = max_of[a], b_max = max_of[b];
    return a_max != b_max ? a_max > b_max : std::tie(a->name, a->domain) < std::tie(b->name, b->domain);
  };
  if (!all_rows) return top(all, before);
  std::sort(all.begin(), all.end(), before);
  return all;
}

void append_job_ranks(std::string& out, const profile::job_profile& job) {
  std::vector<std::int64_t> run(job.size()), mpi(job.size()), work(job.size());
  for (std::uint32_t rank = 0; rank < job.size(); ++rank) {
    run[rank] = job.ranks()[rank].run_ns;
    mpi[rank] = job.ranks()[rank].mpi_ns;
    work[rank] = job.ranks()[rank].work_ns;
  }
  append_heading(out, "Ranks (time per rank)");
  text_table table = spread_table({}, {{"time", alignment::left}});
  const auto add = [&](const std::vector<std::int64_t>& values, std::string_view what) {
    std::vector<std::string> cells = spread_cells(profile::spread_of(values));
    cells.emplace_back(what);
    table.add_row(std::move(cells));
  };
  add(run, "run time");
  add(work, "in regions outside MPI calls (exclusive)");
  add(mpi, "in MPI calls");
  table.append_to(out);
}

void append_job_regions(std::string& out, const profile::job_profile& job) {
  if (job.regions().empty()) return;
  append_heading(out, "Host regions over ranks (inclusive time per rank)");
  text_table table = spread_table({{"ranks", alignment::right}, {"calls", alignment::right}},
                                  {{"region", alignment::left}});
  for (const profile::job_row* row : by_max_time(job.regions(), false)) {
    std::vector<std::string> cells{fmt::format("{}", row->ranks), fmt::format("{}", row->total_calls())};
    for (std::string& cell : spread_cells(profile::spread_of(row->time_ns))) cells.push_back(std::move(cell));
    std::string label = shown_name(row->name);
    if (!row->domain.empty()) label += fmt::format(" [{}]", shown_name(row->domain, 40));
    cells.push_back(std::move(label));
    table.add_row(std::move(cells));
  }
  table.append_to(out);
  append_not_shown(out, job.regions().size(), "region");
}

void append_job_mpi_calls(std::string& out, const profile::job_profile& job) {
  if (job.mpi_calls().empty()) return;
  append_heading(out, "MPI calls over ranks (time per rank)");
  text_table table = spread_table({{"ranks", alignment::right}, {"calls", alignment::right}},
                                  {{"bytes sent", alignment::right},
                                   {"bytes received", alignment::right},
                                   {"call", alignment::left}});
  // All of them, as every rank's own "MPI calls" table: a bounded set of names.
  for (const profile::job_row* row : by_max_time(job.mpi_calls(), true)) {
    std::vector<std::string> cells{fmt::format("{}", row->ranks), fmt::format("{}", row->total_calls())};
    for (std::string& cell : spread_cells(profile::spread_of(row->time_ns))) cells.push_back(std::move(cell));
    cells.push_back(bytes_cell(row->sent.bytes));
    cells.push_back(bytes_cell(row->received.bytes));
    cells.push_back(shown_name(row->name));
    table.add_row(std::move(cells));
  }
  table.append_to(out);
}

void append_job_losses(std::string& out, const profile::job_profile& job) {
  std::size_t ranks_with_losses = 0;
  for (std::uint32_t rank = 0; rank < job.size(); ++rank) {
    const std::vector<std::string>& losses = job.ranks()[rank].losses;
    if (losses.empty()) continue;
    if (++ranks_with_losses > top_rows) continue;
    out += fmt::format("{}Losses of rank {}: ", ranks_with_losses == 1 ? "\n" : "", rank);
    for (std::size_t i = 0; i < losses.size(); ++i) out += (i != 0 ? ", " : "") + losses[i];
    out += '\n';
  }
  append_not_shown(out, ranks_with_losses, "rank with losses");
}

// What mpiP and Caliper's mpireport show for a job: per region and MPI call
// the spread over the ranks, and the message matrix; then rank 0's own
// summary (GPU work and the rest are per rank).
std::string job_summary_text(const model& run, const profile::job_profile& job) {
  std::uint64_t gpu_operations = 0;
  for (const profile::job_rank& rank : job.ranks()) gpu_operations += rank.gpu_operations;
  std::string out = fmt::format(
      "ferret job summary: {}, {}, {} s (rank 0), {} over all ranks; imbalance = (max - mean) / max\n",
      shown_name(run.session().executable), plural(job.size(), "MPI rank"),
      profile::seconds_text(run.end_ns()), plural(gpu_operations, "GPU operation"));
  append_job_ranks(out, job);
  append_job_regions(out, job);
  append_job_mpi_calls(out, job);
  append_mpi_matrix(out, run);
  append_job_losses(out, job);
  out += fmt::format("\nReduced in MPI_Finalize: {} from {} in {} ms at rank 0\n", bytes_text(job.part_bytes()),
                     plural(job.size(), "rank"), milliseconds_text(job.reduction_ns()));
  out += '\n';
  out += summary_text(run, false);
  return out;
}

class summary_backend final : public profile::profile_backend {
 public:
  // `path` empty: printed on `fd` (stderr's, or a test's).
  summary_backend(const runtime::session_info& session, int fd, std::string path)
      : profile_backend(session), fd_(fd), path_(std::move(path)) {}

  std::string describe() const override {
    if (in_rank_0s_) return "summary: in rank 0's job summary";
    return path_.empty() ? "summary: printed on stderr" : "summary: " + path_;
  }

 private:
  // Rank 0 of an MPI job prints the job summary; the other ranks' parts are in it.
  void write(const profile::profile_model& run, const profile::job_profile* job) override {
    if (job != nullptr)
      deliver(job_summary_text(run, *job));
    else if (!reduced_into_rank_0())
      deliver(summary_text(run, true));
    else if (!path_.empty())
      ::unlink(path_.c_str());  // made empty at the start; this rank's part is in rank 0's
    in_rank_0s_ = job == nullptr && reduced_into_rank_0();
  }

  // Into the file, opened again now (the program may have closed and reused
  // every descriptor since the start); where it cannot be, on stderr after a
  // line that says so.
  void deliver(std::string_view text) const {
    if (path_.empty()) return write_all(fd_, text);
    std::string reason;
    const int file = runtime::open_output_file(path_, reason);
    if (file < 0) {
      runtime::print_message(fmt::format("cannot write the summary to '{}': {}; printed here instead", path_, reason));
      return write_all(STDERR_FILENO, text);
    }
    write_all(file, text);
    ::close(file);
  }

  // One write(2) for the whole report unless the pipe takes it in parts, so
  // that it is not interleaved with the application's output.
  static void write_all(int fd, std::string_view text) {
    while (!text.empty()) {
      const ssize_t written = ::write(fd, text.data(), text.size());
      if (written < 0) {
        if (errno == EINTR) continue;
        return;  // stderr is gone: nowhere to say so
      }
      text.remove_prefix(static_cast<std::size_t>(written));
    }
  }

  int fd_;
  std::string path_;
  bool in_rank_0s_ = false;  // an MPI rank but 0: its part went into rank 0's job summary
};

// FERRET_OUTPUT naming a .txt file (in any case) is where the summary goes
// (output_file() keeps a path that already has the extension); otherwise it is
// printed on stderr.
bool names_text_file(const runtime::backend_context& context) {
  return runtime::output_file(context, ".txt") == context.output;
}

}  // namespace

std::unique_ptr<runtime::backend> make_backend_writing_to(const runtime::session_info& session,
                                                          int fd) {
  return std::make_unique<summary_backend>(session, fd, std::string{});
}

std::unique_ptr<runtime::backend> make_backend(const runtime::backend_context& context,
                                               std::string& error) {
  if (context.session == nullptr) {
    error = "cannot print the summary: no session";
    return nullptr;
  }
  if (!names_text_file(context)) return make_backend_writing_to(*context.session, STDERR_FILENO);
  // Made (or emptied) now, so that a place that cannot be written is said at the start.
  std::string reason;
  const int fd = runtime::open_output_file(context.output, reason);
  if (fd < 0) {
    error = fmt::format("cannot write the summary to '{}': {}", context.output, reason);
    return nullptr;
  }
  ::close(fd);
  return std::make_unique<summary_backend>(*context.session, -1, context.output);
}

FERRET_REGISTER_BACKEND("summary", "a plain-text report at exit, on stderr or in FERRET_OUTPUT when it ends in .txt",
                        make_backend);

}  // namespace ferret::summary
