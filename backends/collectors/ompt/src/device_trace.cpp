// device_trace.cpp — see device_trace.hpp.
#include "device_trace.hpp"

#include <algorithm>
#include <cmath>

namespace ferret::ompt {
namespace {

using runtime::copy_kind;
using runtime::gpu_activity;
using runtime::gpu_operation;

std::uint32_t device_number(int device) noexcept {
  return static_cast<std::uint32_t>(std::max(device, 0));
}

}  // namespace

// The operation says which side is the host: its device number is not needed
// (LLVM 19 passes omp_get_initial_device(), others -1).
bool activity_of_data_op(ompt_target_data_op_t optype, const void* source, int source_device,
                         const void* destination, int destination_device, std::size_t bytes,
                         gpu_activity& out) {
  out = gpu_activity{};
  out.bytes = bytes;
  switch (optype) {
    case ompt_target_data_transfer_to_device:
    case ompt_target_data_transfer_to_device_async:
      out.operation = gpu_operation::memcpy;
      out.copy = copy_kind::host_to_device;
      out.source_device = -1;
      out.destination_device = destination_device;
      out.device = device_number(destination_device);
      return true;
    case ompt_target_data_transfer_from_device:
    case ompt_target_data_transfer_from_device_async:
      out.operation = gpu_operation::memcpy;
      out.copy = copy_kind::device_to_host;
      out.source_device = source_device;
      out.destination_device = -1;
      out.device = device_number(source_device);
      return true;
    case ompt_target_data_alloc:
    case ompt_target_data_alloc_async:
      out.operation = gpu_operation::allocation;
      out.device = device_number(destination_device);
      out.address = reinterpret_cast<std::uintptr_t>(destination);
      out.memory = runtime::memory_kind::device;
      return true;
    case ompt_target_data_delete:
    case ompt_target_data_delete_async:
      // The device pointer is the source (LLVM 19, and the specification's
      // record of a deletion); a runtime naming only a destination is read too.
      out.operation = gpu_operation::release;
      out.device = device_number(source != nullptr ? source_device : destination_device);
      out.address = reinterpret_cast<std::uintptr_t>(source != nullptr ? source : destination);
      out.memory = runtime::memory_kind::device;
      return true;
    default: return false;
  }
}

void decode_trace_buffer(const trace_entry_points& entry, const trace_clock& clock,
                         int device_num, ompt_device_t* device, ompt_buffer_t* buffer, std::size_t bytes,
                         ompt_buffer_cursor_t begin, std::vector<gpu_activity>& out,
                         trace_counts& counts) {
  if (buffer == nullptr || bytes == 0 || entry.get_record == nullptr ||
      entry.advance_cursor == nullptr || entry.translate_time == nullptr)
    return;
  const auto host_ns = [&](ompt_device_time_t time) {
    const double seconds = entry.translate_time(device, time) + clock.wtime_to_monotonic_raw_s;
    return static_cast<std::int64_t>(std::llround(seconds * 1e9));
  };
  ompt_buffer_cursor_t cursor = begin;
  do {
    const ompt_record_ompt_t* record = entry.get_record(buffer, cursor);
    if (record == nullptr) break;
    ++counts.records;
    gpu_activity activity{};
    bool decoded = false;
    ompt_device_time_t end_time = 0;
    if (record->type == ompt_callback_target_data_op ||
        record->type == ompt_callback_target_data_op_emi) {
      const ompt_record_target_data_op_t& op = record->record.target_data_op;
      decoded = activity_of_data_op(op.optype, op.src_addr, op.src_device_num, op.dest_addr,
                                    op.dest_device_num, op.bytes, activity);
      activity.launch.correlation = correlation_of(op.host_op_id);
      end_time = op.end_time;
    } else if (record->type == ompt_callback_target_submit ||
               record->type == ompt_callback_target_submit_emi) {
      const ompt_record_target_kernel_t& kernel = record->record.target_kernel;
      activity.operation = gpu_operation::kernel;
      activity.kernel.grid[0] = kernel.granted_num_teams;
      activity.kernel.grid[1] = activity.kernel.grid[2] = 1;
      activity.kernel.occupancy = -1;  // the device's limits are not known here
      activity.launch.correlation = correlation_of(kernel.host_op_id);
      end_time = kernel.end_time;
      decoded = true;
    }
    // Target-region records repeat what the host callbacks already give.
    if (decoded) {
      activity.start_ns = host_ns(record->time);
      activity.end_ns = host_ns(end_time);
      if (activity.end_ns < activity.start_ns) {
        ++counts.bad_time;
      } else {
        if (activity.operation == gpu_operation::kernel)
          activity.device = static_cast<std::uint32_t>(std::max(device_num, 0));
        out.push_back(activity);
        ++counts.activities;
      }
    }
  } while (entry.advance_cursor(device, buffer, bytes, cursor, &cursor) != 0);
}

}  // namespace ferret::ompt
