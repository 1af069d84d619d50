// Decoding of OMPT device trace buffers (OpenMP 5.1, 4.6): buffers of
// ompt_record_ompt_t built as the specification lays them out, walked through
// the entry points a runtime would hand over (get_record, advance_cursor,
// translate_time), here implemented by the test.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "device_trace.hpp"

using ferret::ompt::correlation_of;
using ferret::ompt::decode_trace_buffer;
using ferret::ompt::trace_counts;
using ferret::ompt::trace_entry_points;
using ferret::runtime::copy_kind;
using ferret::runtime::gpu_activity;
using ferret::runtime::gpu_operation;

namespace {

// The cursor is the byte offset of a record in the buffer.
ompt_record_ompt_t* get_record(ompt_buffer_t* buffer, ompt_buffer_cursor_t cursor) {
  return reinterpret_cast<ompt_record_ompt_t*>(static_cast<char*>(buffer) + cursor);
}

int advance_cursor(ompt_device_t*, ompt_buffer_t*, size_t size, ompt_buffer_cursor_t current,
                   ompt_buffer_cursor_t* next) {
  *next = current + sizeof(ompt_record_ompt_t);
  return *next < size ? 1 : 0;
}

// Device time in nanoseconds since the device's start, which was 100 s on
// omp_get_wtime()'s clock.
double translate_time(ompt_device_t*, ompt_device_time_t time) {
  return 100.0 + static_cast<double>(time) * 1e-9;
}

constexpr int host = 4;  // LLVM numbers the host after its devices

ompt_record_ompt_t data_op(ompt_target_data_op_t optype, int source_device, int destination_device,
                           std::size_t bytes, ompt_id_t host_op_id, ompt_device_time_t begin,
                           ompt_device_time_t end) {
  ompt_record_ompt_t record{};
  record.type = ompt_callback_target_data_op_emi;
  record.time = begin;
  record.target_id = 1;
  ompt_record_target_data_op_t& op = record.record.target_data_op;
  op.host_op_id = host_op_id;
  op.optype = optype;
  op.src_addr = reinterpret_cast<void*>(0x1000);
  op.src_device_num = source_device;
  op.dest_addr = reinterpret_cast<void*>(0x2000);
  op.dest_device_num = destination_device;
  op.bytes = bytes;
  op.end_time = end;
  return record;
}

ompt_record_ompt_t kernel(ompt_id_t host_op_id, unsigned requested, unsigned granted,
                          ompt_device_time_t begin, ompt_device_time_t end) {
  ompt_record_ompt_t record{};
  record.type = ompt_callback_target_submit_emi;
  record.time = begin;
  record.record.target_kernel = {host_op_id, requested, granted, end};
  return record;
}

ompt_record_ompt_t target_region() {
  ompt_record_ompt_t record{};
  record.type = ompt_callback_target_emi;
  record.time = 10;
  record.record.target = {ompt_target, ompt_scope_begin, 1, 0, 1, nullptr};
  return record;
}

struct decoded {
  std::vector<gpu_activity> activities;
  trace_counts counts;
};

decoded decode(std::vector<ompt_record_ompt_t> records, int device_num = 1) {
  const trace_entry_points entry{&get_record, &advance_cursor, &translate_time};
  decoded out;
  decode_trace_buffer(entry, {0.5}, device_num, nullptr, records.data(),
                      records.size() * sizeof(ompt_record_ompt_t), 0, out.activities, out.counts);
  return out;
}

std::int64_t host_ns(double device_ns) {
  return std::llround((100.0 + device_ns * 1e-9 + 0.5) * 1e9);
}

}  // namespace

TEST_CASE("transfers become copies with bytes, ends, correlation and host time") {
  const decoded out = decode({data_op(ompt_target_data_transfer_to_device, host, 1, 4096, 7, 1000, 3000),
                              data_op(ompt_target_data_transfer_from_device_async, 1, host, 512, 8,
                                      5000, 5500)});
  REQUIRE(out.activities.size() == 2);
  const gpu_activity& in = out.activities[0];
  CHECK(in.operation == gpu_operation::memcpy);
  CHECK(in.copy == copy_kind::host_to_device);
  CHECK(in.bytes == 4096);
  CHECK(in.source_device == -1);
  CHECK(in.destination_device == 1);
  CHECK(in.device == 1);
  CHECK(in.launch.correlation == correlation_of(7));
  CHECK(in.start_ns == host_ns(1000));
  CHECK(in.end_ns == host_ns(3000));
  const gpu_activity& back = out.activities[1];
  CHECK(back.copy == copy_kind::device_to_host);
  CHECK(back.source_device == 1);
  CHECK(back.destination_device == -1);
  CHECK(back.bytes == 512);
  CHECK(out.counts.records == 2);
  CHECK(out.counts.activities == 2);
}

TEST_CASE("allocations, deletions and kernels") {
  const decoded out = decode({data_op(ompt_target_data_alloc, host, 1, 256, 1, 10, 20),
                              kernel(2, 4, 3, 30, 90),
                              data_op(ompt_target_data_delete, 1, host, 256, 3, 100, 110)},
                             /*device_num=*/1);
  REQUIRE(out.activities.size() == 3);
  CHECK(out.activities[0].operation == gpu_operation::allocation);
  CHECK(out.activities[0].address == 0x2000);  // the device side: the destination
  CHECK(out.activities[0].device == 1);
  CHECK(out.activities[0].bytes == 256);
  const gpu_activity& launched = out.activities[1];
  CHECK(launched.operation == gpu_operation::kernel);
  CHECK(launched.kernel.grid[0] == 3);  // granted teams
  CHECK(launched.device == 1);         // the buffer's device
  CHECK(launched.launch.correlation == correlation_of(2));
  CHECK(launched.end_ns - launched.start_ns == 60);
  CHECK(launched.kernel.occupancy < 0);
  CHECK(out.activities[2].operation == gpu_operation::release);
  CHECK(out.activities[2].address == 0x1000);  // the device side: the source
}

TEST_CASE("records the host already has, or that carry no device work, are walked and skipped") {
  const decoded out = decode({target_region(),
                              data_op(ompt_target_data_associate, host, 1, 64, 1, 10, 20),
                              data_op(ompt_target_data_transfer_to_device, host, 1, 64, 2, 50, 40)});
  CHECK(out.activities.empty());
  CHECK(out.counts.records == 3);
  CHECK(out.counts.bad_time == 1);  // ends before it begins
}

TEST_CASE("an empty buffer, or one without entry points, yields nothing") {
  std::vector<gpu_activity> activities;
  trace_counts counts;
  ompt_record_ompt_t record = kernel(1, 1, 1, 1, 2);
  decode_trace_buffer({&get_record, &advance_cursor, &translate_time}, {}, 0, nullptr, &record, 0, 0,
                      activities, counts);
  decode_trace_buffer({nullptr, &advance_cursor, &translate_time}, {}, 0, nullptr, &record,
                      sizeof record, 0, activities, counts);
  CHECK(activities.empty());
  CHECK(counts.records == 0);
}
