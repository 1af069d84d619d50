// The tables of device-initiated traffic. See remote_traffic_tables.hpp.
#include "remote_traffic_tables.hpp"

#include <fmt/format.h>

#include <variant>

#include "number_format.hpp"

namespace ferret::profile {

namespace {

std::string bytes_cell(std::uint64_t bytes) { return bytes == 0 ? "-" : bytes_text(bytes); }

std::string kernel_name(const std::string& mangled) {
  return mangled.empty() ? std::string{"(unnamed kernel)"}
                         : runtime::demangled_kernel_name(mangled.c_str());
}

std::string volume_text(const remote_volume& volume) {
  return fmt::format("{} loaded, {} stored, {} accesses", bytes_text(volume.loaded()),
                     bytes_text(volume.stored()), volume.total_accesses());
}

}  // namespace

std::string device_pair_text(std::uint32_t device, std::int32_t target, const remote_volume& volume) {
  const char* arrow = volume.loaded() > 0 && volume.stored() > 0 ? "↔"
                      : volume.stored() > 0                      ? "→"
                                                                 : "←";
  return fmt::format("{} {} {}", runtime::memory_end_name(static_cast<std::int32_t>(device)), arrow, runtime::memory_end_name(target));
}

std::string remote_line_location(const remote_line& line) {
  if (line.has_line()) return fmt::format("{}:{}", line.file, line.line);
  return fmt::format("+0x{:x}", line.pc_offset);
}

std::string remote_object_text(const remote_line& line) {
  return line.object.empty() ? std::string{"-"} : line.object;
}

text_rows remote_line_table(const profile_model& model, std::size_t limit) {
  text_rows table;
  table.header = {"loaded", "stored", "accesses", "devices", "line", "object", "kernel"};
  table.alignment = "rrrllll";
  const std::vector<remote_line> lines = model.remote_lines_over_contexts();
  table.total = lines.size();
  remote_volume rest;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const remote_line& line = lines[i];
    if (i >= limit) {
      rest.merge(line.volume);
      continue;
    }
    table.rows.push_back({bytes_cell(line.volume.loaded()), bytes_cell(line.volume.stored()),
                          fmt::format("{}", line.volume.total_accesses()),
                          device_pair_text(line.device, line.target, line.volume),
                          remote_line_location(line), remote_object_text(line),
                          kernel_name(line.function)});
  }
  if (lines.size() > limit) table.rest = volume_text(rest);
  return table;
}

text_rows remote_context_table(const profile_model& model, std::size_t limit) {
  text_rows table;
  table.header = {"loaded", "stored", "accesses", "kernel", "context"};
  table.alignment = "rrrll";
  const std::vector<profile_model::remote_row> rows = model.remote_by_region_path();
  table.total = rows.size();
  remote_volume rest;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const profile_model::remote_row& row = rows[i];
    if (i >= limit) {
      rest.merge(row.volume);
      continue;
    }
    table.rows.push_back({bytes_cell(row.volume.loaded()), bytes_cell(row.volume.stored()),
                          fmt::format("{}", row.volume.total_accesses()), kernel_name(row.function),
                          row.path});
  }
  if (rows.size() > limit) table.rest = volume_text(rest);
  return table;
}

std::string remote_totals_text(const profile_model& model) {
  const remote_volume& total = model.remote_total();
  std::string text = fmt::format("{} loaded, {} stored", bytes_text(total.loaded()),
                                 bytes_text(total.stored()));
  if (total.bytes[2] > 0) text += fmt::format(" ({} of it by atomics)", bytes_text(total.bytes[2]));
  text += fmt::format(", {} accesses", total.total_accesses());
  for (const auto& [key, value] : model.runtime_metadata())
    if (const auto* bytes = std::get_if<std::int64_t>(&value);
        key == "gpu-device-initiated-bytes-without-launch" && bytes != nullptr && *bytes > 0)
      text += fmt::format("; {} from launches not seen", bytes_text(static_cast<std::uint64_t>(*bytes)));
  return text;
}

}  // namespace ferret::profile
