// The tables of device-initiated traffic (kernels' loads and stores to other
// devices' memory and the host's) as text cells, built once for the summary
// and the report's page, so that both print the same digits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu_sample_tables.hpp"
#include "profile_model.hpp"

namespace ferret::profile {

/// The pair of devices with the direction the bytes went: "GPU 0 ← GPU 1"
/// (loads: from the memory's device to the kernel's), "GPU 0 → host" (stores
/// and atomics), "GPU 0 ↔ GPU 1" (both).
std::string device_pair_text(std::uint32_t device, std::int32_t target, const remote_volume& volume);
/// "file:line", or "+0x1a0" (the instruction's offset in its kernel) without
/// line information.
std::string remote_line_location(const remote_line& line);
/// The data object's name; "-" for bytes in no object ferret knows.
std::string remote_object_text(const remote_line& line);

/// "Device-initiated traffic": the `limit` rows by kernel, line, data object
/// and device pair (over all calling contexts) with the most bytes: loaded,
/// stored, accesses, devices, line, object, kernel (demangled); `rest` sums
/// the rows left out.
text_rows remote_line_table(const profile_model& model, std::size_t limit);
/// "Device-initiated traffic by calling context": per region path and kernel,
/// the most bytes first: loaded, stored, accesses, kernel, context.
text_rows remote_context_table(const profile_model& model, std::size_t limit);
/// The section's first line: the totals, and the bytes whose launch was not seen.
std::string remote_totals_text(const profile_model& model);

}  // namespace ferret::profile
