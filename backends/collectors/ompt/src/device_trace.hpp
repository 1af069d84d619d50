// device_trace.hpp — decoding of OMPT device trace buffers (OpenMP 5.1,
// section 4.6 "Tracing Activity on Target Devices") into GPU activity.
//
// The runtime fills buffers the tool hands it (buffer-request callback) and
// returns them full (buffer-complete callback) with a cursor to the first
// record; the tool walks them with ompt_get_record_ompt and
// ompt_advance_buffer_cursor and maps device timestamps to the host's clock
// with ompt_translate_time. Only these entry points are used, never the
// buffer's layout, so any runtime that implements the interface works.
// Plain C++ over the entry points: the tests drive it with buffers built to
// the specification.
#pragma once

#include <omp-tools.h>

#include <cstdint>
#include <vector>

#include "ferret/runtime/backend.hpp"

namespace ferret::ompt {

/// A device's trace entry points, from the lookup of its device_initialize callback.
struct trace_entry_points {
  ompt_get_record_ompt_t get_record = nullptr;
  ompt_advance_buffer_cursor_t advance_cursor = nullptr;
  ompt_translate_time_t translate_time = nullptr;
};

/// The offset from omp_get_wtime()'s clock (what ompt_translate_time
/// returns, in seconds) to CLOCK_MONOTONIC_RAW.
struct trace_clock {
  double wtime_to_monotonic_raw_s = 0;
};

struct trace_counts {
  std::uint64_t records = 0;    // every record walked
  std::uint64_t activities = 0; // data operations and kernels handed on
  std::uint64_t bad_time = 0;   // dropped: end before begin
};

/// The correlation id of a host operation (host_op_id): tagged so that it
/// cannot collide with a CUDA correlation id (32 bits) in the runtime's table.
constexpr std::uint64_t correlation_of(ompt_id_t host_op_id) noexcept {
  return (std::uint64_t{1} << 63) | host_op_id;
}

/// A data operation as GPU activity: transfers become copies, allocations
/// and deletions allocations and releases; other kinds (associate,
/// disassociate) return false. Times are left to the caller.
bool activity_of_data_op(ompt_target_data_op_t optype, const void* source, int source_device,
                         const void* destination, int destination_device, std::size_t bytes,
                         runtime::gpu_activity& out);

/// Appends the data-operation and kernel records of a buffer of device
/// `device_num` to `out`.
void decode_trace_buffer(const trace_entry_points& entry, const trace_clock& clock,
                         int device_num, ompt_device_t* device, ompt_buffer_t* buffer, std::size_t bytes,
                         ompt_buffer_cursor_t begin, std::vector<runtime::gpu_activity>& out,
                         trace_counts& counts);

}  // namespace ferret::ompt
