#include "gpu_device_initiated.hpp"

#include "chrome_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

namespace ferret::chrome {

void gpu_device_initiated::add(const runtime::gpu_remote_access* accesses, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    const runtime::gpu_remote_access& access = accesses[i];
    if (access.bytes == 0 && access.accesses == 0) continue;
    const bool has_line = access.file != nullptr;
    row& r = rows_[row_key{access.function != nullptr ? access.function : "",
                           has_line ? access.file : "", has_line ? access.line : 0,
                           has_line ? 0 : access.pc_offset,
                           access.object != nullptr ? access.object->name : std::string{},
                           access.device, access.target_device, access.access}];
    r.bytes += access.bytes;
    r.accesses += access.accesses;
  }
}

void gpu_device_initiated::append_json(std::string& out) const {
  if (rows_.empty()) return;
  using row_entry = std::pair<const row_key, row>;
  std::vector<const row_entry*> order;
  order.reserve(rows_.size());
  for (const row_entry& entry : rows_) order.push_back(&entry);
  std::stable_sort(order.begin(), order.end(), [](const row_entry* a, const row_entry* b) {
    return a->second.bytes > b->second.bytes;
  });
  const std::size_t shown = std::min(order.size(), max_device_initiated_rows);

  const auto append_device = [&out](std::int64_t device) {
    if (device == runtime::host_memory_device)
      out.append("\"host\"");
    else
      fmt::format_to(std::back_inserter(out), "{}", device);
  };
  out.append(",\"gpu-device-initiated\":[");
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& [key, r] = *order[i];
    const auto& [function, file, line, pc_offset, object, device, target, access] = key;
    if (i != 0) out.push_back(',');
    out.append("{\"kernel\":");
    append_json_string(out, runtime::demangled_kernel_name(std::string{function}.c_str()));
    if (!file.empty()) {
      out.append(",\"file\":");
      append_json_string(out, file);
      fmt::format_to(std::back_inserter(out), ",\"line\":{}", line);
    } else {
      fmt::format_to(std::back_inserter(out), ",\"pc offset\":\"{:#x}\"", pc_offset);
    }
    if (!object.empty()) {
      out.append(",\"object\":");
      append_json_string(out, object);
    }
    fmt::format_to(std::back_inserter(out), ",\"access\":\"{}\"", runtime::to_string(access));
    // A load moves bytes from the memory reached to the kernel's device; a
    // store or an atomic the other way.
    const bool load = access == runtime::memory_access::load;
    out.append(",\"source device\":");
    append_device(load ? std::int64_t{target} : std::int64_t{device});
    out.append(",\"destination device\":");
    append_device(load ? std::int64_t{device} : std::int64_t{target});
    fmt::format_to(std::back_inserter(out), ",\"bytes\":{},\"accesses\":{}}}", r.bytes,
                   r.accesses);
  }
  out.push_back(']');
  if (order.size() > shown) {
    std::uint64_t bytes_left_out = 0;
    for (std::size_t i = shown; i < order.size(); ++i) bytes_left_out += order[i]->second.bytes;
    fmt::format_to(std::back_inserter(out),
                   ",\"gpu-device-initiated-rows-left-out\":{}"
                   ",\"gpu-device-initiated-bytes-left-out\":{}",
                   order.size() - shown, bytes_left_out);
  }
}

}  // namespace ferret::chrome
