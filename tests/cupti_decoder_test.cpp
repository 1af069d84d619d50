// Unit tests of the CUPTI record decoder and the occupancy calculation:
// records synthesised from the CUPTI headers' structs, decoded without
// libcupti, a driver or a GPU.
#include <cupti_activity.h>
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "occupancy.hpp"
#include "record_decoder.hpp"

using namespace ferret::cupti;
namespace rt = ferret::runtime;

namespace {

constexpr std::uint32_t cupti_13_0 = 130001;  // cuptiGetVersion() of CUDA 13.0's libcupti
constexpr std::uint32_t cupti_13_1 = 130100;
constexpr std::uint32_t cupti_12_9_update_1 = 28;

record_decoder decoder_for(std::uint32_t version = cupti_13_0) {
  record_decoder decoder;
  std::string error;
  REQUIRE(decoder.select_version(version, error));
  return decoder;
}

template <class Record>
const CUpti_Activity* as_activity(const Record& record) {
  return reinterpret_cast<const CUpti_Activity*>(&record);
}

// An H100 SXM as its CUPTI DEVICE record describes it (driver 580, CUDA 13.0).
rt::gpu_device_info hopper(std::uint32_t id = 0) {
  rt::gpu_device_info device{};
  device.id = id;
  device.name = "NVIDIA H100 80GB HBM3";
  device.compute_major = 9;
  device.compute_minor = 0;
  device.multiprocessors = 132;
  device.global_memory_bytes = 85'017'493'504;
  device.max_threads_per_block = 1024;
  device.max_warps_per_multiprocessor = 64;
  device.max_blocks_per_multiprocessor = 32;
  device.max_registers_per_multiprocessor = 65536;
  device.max_registers_per_block = 65536;
  device.max_shared_memory_per_multiprocessor = 228 * 1024;
  device.max_shared_memory_per_block = 48 * 1024;  // the default limit, not the opt-in one
  return device;
}

// Compute capability 8.6 (GA102): 48 warps and 16 blocks per SM, 100 KiB.
rt::gpu_device_info ampere_8_6() {
  rt::gpu_device_info device = hopper();
  device.name = "NVIDIA RTX A6000";
  device.compute_major = 8;
  device.compute_minor = 6;
  device.multiprocessors = 84;
  device.max_threads_per_block = 1024;
  device.max_warps_per_multiprocessor = 48;
  device.max_blocks_per_multiprocessor = 16;
  device.max_shared_memory_per_multiprocessor = 100 * 1024;
  device.max_shared_memory_per_block = 99 * 1024;
  return device;
}

// Compute capability 7.0 (V100): no shared memory reserved per block.
rt::gpu_device_info volta() {
  rt::gpu_device_info device = hopper();
  device.name = "Tesla V100-SXM2-16GB";
  device.compute_major = 7;
  device.compute_minor = 0;
  device.multiprocessors = 80;
  device.max_shared_memory_per_multiprocessor = 96 * 1024;
  device.max_shared_memory_per_block = 96 * 1024;
  return device;
}

rt::kernel_attributes launch(std::uint32_t threads, std::uint32_t registers,
                             std::uint32_t static_shared = 0, std::uint32_t dynamic_shared = 0,
                             std::uint32_t shared_executed = 0) {
  rt::kernel_attributes kernel{};
  kernel.grid[0] = kernel.grid[1] = kernel.grid[2] = 1;
  kernel.block[0] = threads;
  kernel.block[1] = kernel.block[2] = 1;
  kernel.registers_per_thread = registers;
  kernel.static_shared_memory = static_shared;
  kernel.dynamic_shared_memory = dynamic_shared;
  kernel.shared_memory_executed = shared_executed;
  return kernel;
}

const char* const saxpy = "_Z5saxpyifPKfPf";

CUpti_ActivityKernel10 kernel_record(
    CUpti_ActivityKind kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
  CUpti_ActivityKernel10 record{};
  record.kind = kind;
  record.start = 1'000'000'123;
  record.end = 1'000'050'456;
  record.deviceId = 1;
  record.contextId = 7;
  record.streamId = 13;
  record.correlationId = 4242;
  record.gridX = 120;
  record.gridY = 2;
  record.gridZ = 3;
  record.blockX = 128;
  record.blockY = 2;
  record.blockZ = 1;
  record.registersPerThread = 64;
  record.staticSharedMemory = 1024;
  record.dynamicSharedMemory = 2048;
  record.localMemoryPerThread = 24;
  record.sharedMemoryExecuted = 132 * 1024;
  record.name = saxpy;
  return record;
}

void check_kernel(const decoded& out, double occupancy) {
  REQUIRE(out.kind == decoded_kind::activity);
  CHECK(out.device_known);
  const rt::gpu_activity& activity = out.activity;
  CHECK(activity.operation == rt::gpu_operation::kernel);
  CHECK(activity.start_ns == 1'000'000'123);
  CHECK(activity.end_ns == 1'000'050'456);
  CHECK(activity.device == 1);
  CHECK(activity.stream == 13);
  CHECK(activity.launch.correlation == 4242);
  CHECK(activity.launch.tid == 0);
  CHECK(activity.name == saxpy);
  CHECK(activity.bytes == 0);
  CHECK(activity.source_object_id == 0);
  const rt::kernel_attributes& kernel = activity.kernel;
  CHECK(kernel.grid[0] == 120);
  CHECK(kernel.grid[1] == 2);
  CHECK(kernel.grid[2] == 3);
  CHECK(kernel.block[0] == 128);
  CHECK(kernel.block[1] == 2);
  CHECK(kernel.block[2] == 1);
  CHECK(kernel.registers_per_thread == 64);
  CHECK(kernel.static_shared_memory == 1024);
  CHECK(kernel.dynamic_shared_memory == 2048);
  CHECK(kernel.local_memory_per_thread == 24);
  CHECK(kernel.shared_memory_executed == 132 * 1024);
  CHECK(kernel.occupancy == doctest::Approx(occupancy));
}

}  // namespace

TEST_CASE("occupancy: Hopper, limited by registers, warps and blocks") {
  const rt::gpu_device_info device = hopper();
  // 8 warps per block; registers allocated per warp (32 threads x registers,
  // rounded up to 256) from 16384 per SM sub-partition, 4 sub-partitions.
  CHECK(theoretical_occupancy(device, launch(256, 32)) == doctest::Approx(1.0));    // 8 blocks
  CHECK(theoretical_occupancy(device, launch(256, 64)) == doctest::Approx(0.5));    // 32 warps
  CHECK(theoretical_occupancy(device, launch(256, 128)) == doctest::Approx(0.25));  // 16 warps
  // 33 registers: 1056 per warp, allocated as 1280: 12 warps per
  // sub-partition, 48 per SM, 6 blocks (7 without the granularity).
  CHECK(theoretical_occupancy(device, launch(256, 33)) == doctest::Approx(0.75));
  // One warp per block: 32 blocks per SM at most.
  CHECK(theoretical_occupancy(device, launch(32, 16)) == doctest::Approx(0.5));
  // 96 threads are 3 warps: 21 blocks fit in 64 warp slots.
  CHECK(theoretical_occupancy(device, launch(96, 32)) == doctest::Approx(63.0 / 64.0));
  // The block's shape does not matter, only its threads.
  rt::kernel_attributes cube = launch(8, 32);
  cube.block[1] = 8;
  cube.block[2] = 4;
  CHECK(theoretical_occupancy(device, cube) == doctest::Approx(1.0));
}

TEST_CASE("occupancy: shared memory, its granularity, reservation and carveout") {
  const rt::gpu_device_info device = hopper();
  // 48 KiB static + 1 KiB reserved = 50176 bytes: 4 blocks in 228 KiB.
  CHECK(theoretical_occupancy(device, launch(128, 32, 48 * 1024)) == doctest::Approx(0.25));
  // The same kernel ran with a 100 KiB carveout: 2 blocks.
  CHECK(theoretical_occupancy(device, launch(128, 32, 48 * 1024, 0, 100 * 1024)) ==
        doctest::Approx(0.125));
  // 20000 static + 4876 dynamic + 1024 reserved = 25900, allocated as 25984
  // (128-byte units): 8 blocks of 2 warps (9 without the rounding, also 9
  // without the reserved KiB).
  CHECK(theoretical_occupancy(device, launch(64, 32, 20000, 4876)) == doctest::Approx(0.25));
  // Volta reserves nothing: 48 KiB static is 2 blocks in 96 KiB (1 with a
  // reserved KiB).
  CHECK(theoretical_occupancy(volta(), launch(128, 32, 48 * 1024)) == doctest::Approx(0.125));
  // More dynamic shared memory than the default 48 KiB per block (opted in).
  CHECK(theoretical_occupancy(device, launch(256, 32, 0, 100 * 1024)) == doctest::Approx(0.25));
}

TEST_CASE("occupancy: as the CUDA runtime computes it on an H100") {
  // Kernel records of a probe on an H100 (driver 580, CUDA 13.0), and what
  // cudaOccupancyMaxActiveBlocksPerMultiprocessor said for each launch.
  struct measured {
    std::uint32_t threads, registers, static_shared, dynamic_shared, shared_executed;
    double occupancy;
  };
  const measured launches[] = {
      {32, 16, 0, 0, 32768, 0.5},         {96, 16, 0, 0, 32768, 63.0 / 64.0},
      {256, 16, 0, 0, 32768, 1.0},        {1024, 16, 0, 0, 8192, 1.0},
      {64, 64, 0, 0, 32768, 0.5},         {512, 64, 0, 0, 16384, 0.5},
      {128, 16, 48000, 0, 200704, 0.25},  {256, 16, 48000, 0, 200704, 0.5},
      {128, 16, 0, 512, 65536, 1.0},      {128, 16, 0, 4876, 135168, 1.0},
      {128, 16, 0, 20000, 233472, 0.6875}, {128, 16, 0, 102400, 233472, 0.125},
      {128, 16, 0, 204800, 233472, 0.0625},
      // cudaFuncAttributePreferredSharedMemoryCarveout 50: the driver ran it
      // with 132 KiB.
      {128, 16, 0, 20000, 135168, 0.375},
  };
  for (const measured& row : launches) {
    CAPTURE(row.threads);
    CAPTURE(row.dynamic_shared);
    CAPTURE(row.shared_executed);
    CHECK(theoretical_occupancy(hopper(), launch(row.threads, row.registers, row.static_shared,
                                                 row.dynamic_shared, row.shared_executed)) ==
          doctest::Approx(row.occupancy));
  }
}

TEST_CASE("occupancy: the device's warp limit") {
  const rt::gpu_device_info device = ampere_8_6();
  CHECK(theoretical_occupancy(device, launch(256, 32)) == doctest::Approx(1.0));  // 6 blocks
  CHECK(theoretical_occupancy(device, launch(1024, 32)) == doctest::Approx(32.0 / 48.0));
  // 16 blocks per SM on compute capability 8.6.
  CHECK(theoretical_occupancy(device, launch(32, 32)) == doctest::Approx(16.0 / 48.0));
}

TEST_CASE("occupancy: negative when it cannot be computed") {
  CHECK(theoretical_occupancy(hopper(), launch(0, 32)) < 0);
  rt::gpu_device_info no_limits{};
  CHECK(theoretical_occupancy(no_limits, launch(256, 32)) < 0);
  rt::gpu_device_info no_registers = hopper();
  no_registers.max_registers_per_multiprocessor = 0;
  CHECK(theoretical_occupancy(no_registers, launch(256, 32)) < 0);
  rt::gpu_device_info future = hopper();
  future.compute_major = 99;
  CHECK(theoretical_occupancy(future, launch(256, 32)) < 0);
}

TEST_CASE("version: 13.0 is read, newer versions with the newest layouts, older refused") {
  record_decoder decoder;
  std::string error;
  CHECK(decoder.layouts_release().empty());
  for (std::uint32_t version : {130000u, cupti_13_0, 130099u}) {
    CAPTURE(version);
    CHECK(decoder.select_version(version, error));
    CHECK_FALSE(decoder.reading_newer_version());
    CHECK(decoder.layouts_release() == "13.0");
  }
  for (std::uint32_t version : {cupti_13_1, 130200u, 140000u}) {
    CAPTURE(version);
    CHECK(decoder.select_version(version, error));
    CHECK(decoder.reading_newer_version());
    CHECK(decoder.layouts_release() == "13.0");
  }
  CHECK(error.empty());

  CHECK_FALSE(decoder.select_version(cupti_12_9_update_1, error));
  CHECK(error ==
        "libcupti API version 28 is older than CUDA 13.0 (API version 130000), the oldest whose "
        "activity records ferret reads");
  CHECK_FALSE(decoder.reading_newer_version());
  CHECK(decoder.layouts_release().empty());
  error.clear();
  CHECK_FALSE(decoder.select_version(129999, error));
  CHECK(error.find("129999") != std::string::npos);
  error.clear();
  CHECK_FALSE(decoder.select_version(0, error));
  CHECK(error == "libcupti reported API version 0");
}

TEST_CASE("version: nothing is decoded without a readable version") {
  const CUpti_ActivityKernel10 record = kernel_record();
  decoded out{};
  record_decoder unselected;
  CHECK(unselected.decode(as_activity(record), out) == decoded_kind::ignored);
  CHECK(out.kind == decoded_kind::ignored);

  record_decoder refused = decoder_for();
  std::string error;
  REQUIRE_FALSE(refused.select_version(cupti_12_9_update_1, error));
  CHECK(refused.decode(as_activity(record), out) == decoded_kind::ignored);
}

TEST_CASE("kernel: every field, occupancy once the device is known") {
  record_decoder decoder = decoder_for();
  const CUpti_ActivityKernel10 record = kernel_record();
  decoded out{};
  CHECK(decoder.decode(as_activity(record), out) == decoded_kind::activity);
  check_kernel(out, -1.0);

  decoder.add_device(hopper(1));
  REQUIRE(decoder.find_device(1) != nullptr);
  CHECK(decoder.find_device(0) == nullptr);
  // 256 threads, 64 registers: 4 blocks by registers; 4096 bytes of shared
  // memory per block fit 33 times in the 132 KiB carveout.
  CHECK(decoder.decode(as_activity(record), out) == decoded_kind::activity);
  check_kernel(out, 0.5);

  // The serialising KERNEL kind has the same record.
  const CUpti_ActivityKernel10 serial = kernel_record(CUPTI_ACTIVITY_KIND_KERNEL);
  CHECK(decoder.decode(as_activity(serial), out) == decoded_kind::activity);
  check_kernel(out, 0.5);
}

TEST_CASE("kernel: a newer libcupti is read with the newest layouts") {
  record_decoder decoder = decoder_for(cupti_13_1);
  CHECK(decoder.reading_newer_version());
  decoder.add_device(hopper(1));
  const CUpti_ActivityKernel10 record = kernel_record();
  decoded out{};
  CHECK(decoder.decode(as_activity(record), out) == decoded_kind::activity);
  check_kernel(out, 0.5);
}

TEST_CASE("kernel: records need no alignment") {
  record_decoder decoder = decoder_for();
  const CUpti_ActivityKernel10 record = kernel_record();
  std::vector<unsigned char> buffer(sizeof record + 1);
  std::memcpy(buffer.data() + 1, &record, sizeof record);
  decoded out{};
  CHECK(decoder.decode(reinterpret_cast<const CUpti_Activity*>(buffer.data() + 1), out) ==
        decoded_kind::activity);
  check_kernel(out, -1.0);
}

TEST_CASE("memcpy: every copy kind, its direction and devices") {
  struct expected {
    CUpti_ActivityMemcpyKind cupti;
    rt::copy_kind copy;
    std::int32_t source, destination;
  };
  const expected table[] = {
      {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, rt::copy_kind::unknown, 3, 3},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, rt::copy_kind::host_to_device, -1, 3},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, rt::copy_kind::device_to_host, 3, -1},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, rt::copy_kind::host_to_device, -1, 3},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, rt::copy_kind::device_to_host, 3, -1},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, rt::copy_kind::device_to_device, 3, 3},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, rt::copy_kind::device_to_device, 3, 3},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, rt::copy_kind::device_to_device, 3, 3},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, rt::copy_kind::device_to_device, 3, 3},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, rt::copy_kind::host_to_host, -1, -1},
      {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, rt::copy_kind::peer_to_peer, 3, 3},
  };
  record_decoder decoder = decoder_for();
  for (const expected& row : table) {
    CAPTURE(row.cupti);
    CUpti_ActivityMemcpy6 record{};
    record.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    record.copyKind = static_cast<std::uint8_t>(row.cupti);
    record.bytes = 5'000'000'000;  // more than 32 bits
    record.start = 2'000;
    record.end = 9'000;
    record.deviceId = 3;
    record.contextId = 4;
    record.streamId = 21;
    record.correlationId = 77;
    decoded out{};
    REQUIRE(decoder.decode(as_activity(record), out) == decoded_kind::activity);
    const rt::gpu_activity& activity = out.activity;
    CHECK(activity.operation == rt::gpu_operation::memcpy);
    CHECK(activity.copy == row.copy);
    CHECK(activity.source_device == row.source);
    CHECK(activity.destination_device == row.destination);
    CHECK(activity.bytes == 5'000'000'000);
    CHECK(activity.start_ns == 2'000);
    CHECK(activity.end_ns == 9'000);
    CHECK(activity.device == 3);
    CHECK(activity.stream == 21);
    CHECK(activity.launch.correlation == 77);
    CHECK(activity.name == nullptr);
  }
}

TEST_CASE("memcpy2: peer copies name both devices") {
  record_decoder decoder = decoder_for();
  CUpti_ActivityMemcpyPtoP4 record{};
  record.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  record.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  record.bytes = 1 << 26;
  record.start = 100;
  record.end = 900;
  record.deviceId = 0;
  record.contextId = 1;
  record.streamId = 17;
  record.srcDeviceId = 0;
  record.dstDeviceId = 2;
  record.correlationId = 555;
  decoded out{};
  REQUIRE(decoder.decode(as_activity(record), out) == decoded_kind::activity);
  CHECK(out.activity.operation == rt::gpu_operation::memcpy);
  CHECK(out.activity.copy == rt::copy_kind::peer_to_peer);
  CHECK(out.activity.source_device == 0);
  CHECK(out.activity.destination_device == 2);
  CHECK(out.activity.bytes == 1 << 26);
  CHECK(out.activity.start_ns == 100);
  CHECK(out.activity.end_ns == 900);
  CHECK(out.activity.device == 0);
  CHECK(out.activity.stream == 17);
  CHECK(out.activity.launch.correlation == 555);

  record.srcDeviceId = record.dstDeviceId = 1;
  REQUIRE(decoder.decode(as_activity(record), out) == decoded_kind::activity);
  CHECK(out.activity.copy == rt::copy_kind::device_to_device);
  CHECK(out.activity.source_device == 1);
  CHECK(out.activity.destination_device == 1);
}

TEST_CASE("memset: every memory kind") {
  struct expected {
    CUpti_ActivityMemoryKind cupti;
    rt::memory_kind memory;
  };
  const expected table[] = {
      {CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN, rt::memory_kind::device},
      {CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, rt::memory_kind::host},
      {CUPTI_ACTIVITY_MEMORY_KIND_PINNED, rt::memory_kind::pinned},
      {CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, rt::memory_kind::device},
      {CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, rt::memory_kind::device},
      {CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, rt::memory_kind::managed},
      {CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, rt::memory_kind::device},
      {CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC, rt::memory_kind::managed},
  };
  record_decoder decoder = decoder_for();
  for (const expected& row : table) {
    CAPTURE(row.cupti);
    CUpti_ActivityMemset4 record{};
    record.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    record.value = 0xff;
    record.bytes = 4096;
    record.start = 40;
    record.end = 50;
    record.deviceId = 2;
    record.contextId = 3;
    record.streamId = 8;
    record.correlationId = 31;
    record.memoryKind = static_cast<std::uint16_t>(row.cupti);
    decoded out{};
    REQUIRE(decoder.decode(as_activity(record), out) == decoded_kind::activity);
    CHECK(out.activity.operation == rt::gpu_operation::memset);
    CHECK(out.activity.memory == row.memory);
    CHECK(out.activity.bytes == 4096);
    CHECK(out.activity.start_ns == 40);
    CHECK(out.activity.end_ns == 50);
    CHECK(out.activity.device == 2);
    CHECK(out.activity.stream == 8);
    CHECK(out.activity.launch.correlation == 31);
  }
}

TEST_CASE("memory2: allocations and releases at one instant") {
  record_decoder decoder = decoder_for();
  CUpti_ActivityMemory4 record{};
  record.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  record.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  record.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  record.correlationId = 901;
  record.address = 0x7f12'3400'0000;
  record.bytes = 1 << 20;
  record.timestamp = 123'456'789;
  record.deviceId = 1;
  record.contextId = 5;
  record.streamId = CUPTI_INVALID_STREAM_ID;
  decoded out{};
  REQUIRE(decoder.decode(as_activity(record), out) == decoded_kind::activity);
  CHECK(out.activity.operation == rt::gpu_operation::allocation);
  CHECK(out.activity.address == 0x7f12'3400'0000);
  CHECK(out.activity.bytes == 1 << 20);
  CHECK(out.activity.memory == rt::memory_kind::device);
  CHECK(out.activity.start_ns == 123'456'789);
  CHECK(out.activity.end_ns == 123'456'789);
  CHECK(out.activity.device == 1);
  CHECK(out.activity.stream == 0);  // no stream
  CHECK(out.activity.launch.correlation == 901);

  record.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  record.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  record.streamId = 22;
  REQUIRE(decoder.decode(as_activity(record), out) == decoded_kind::activity);
  CHECK(out.activity.operation == rt::gpu_operation::release);
  CHECK(out.activity.memory == rt::memory_kind::pinned);
  CHECK(out.activity.stream == 22);

  record.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID;
  CHECK(decoder.decode(as_activity(record), out) == decoded_kind::ignored);
}

TEST_CASE("synchronization: what waited, and the device through the context") {
  record_decoder decoder = decoder_for();
  CUpti_ActivitySynchronization2 record{};
  record.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  record.start = 10'000;
  record.end = 60'000;
  record.correlationId = 64;
  record.contextId = 9;
  record.streamId = 14;
  const std::pair<CUpti_ActivitySynchronizationType, std::uint32_t> types[] = {
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 1},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 2},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 3},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 4},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN, 0},
  };
  decoded out{};
  for (const auto& [type, detail] : types) {
    const int cupti_type = type;  // structured bindings cannot be captured in C++17
    CAPTURE(cupti_type);
    record.type = type;
    REQUIRE(decoder.decode(as_activity(record), out) == decoded_kind::activity);
    CHECK(out.activity.operation == rt::gpu_operation::synchronization);
    CHECK(out.activity.detail == detail);
    CHECK(out.activity.start_ns == 10'000);
    CHECK(out.activity.end_ns == 60'000);
    CHECK(out.activity.stream == 14);
    CHECK(out.activity.launch.correlation == 64);
    CHECK_FALSE(out.device_known);  // context 9 not seen yet
    CHECK(out.activity.device == 0);
  }

  // A CONTEXT record ties context 9 to device 2.
  CUpti_ActivityContext3 context{};
  context.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  context.contextId = 9;
  context.deviceId = 2;
  REQUIRE(decoder.decode(as_activity(context), out) == decoded_kind::context);
  CHECK(out.context.context_id == 9);
  CHECK(out.context.device_id == 2);
  record.streamId = CUPTI_INVALID_STREAM_ID;  // context synchronization
  REQUIRE(decoder.decode(as_activity(record), out) == decoded_kind::activity);
  CHECK(out.device_known);
  CHECK(out.activity.device == 2);
  CHECK(out.activity.stream == 0);

  // So does device work: kernel_record() runs on context 7, device 1.
  record.contextId = 7;
  REQUIRE(decoder.decode(as_activity(record), out) == decoded_kind::activity);
  CHECK_FALSE(out.device_known);
  const CUpti_ActivityKernel10 kernel = kernel_record();
  REQUIRE(decoder.decode(as_activity(kernel), out) == decoded_kind::activity);
  REQUIRE(decoder.decode(as_activity(record), out) == decoded_kind::activity);
  CHECK(out.device_known);
  CHECK(out.activity.device == 1);

  // And the collector's own knowledge.
  decoder.add_context({11, 3});
  record.contextId = 11;
  REQUIRE(decoder.decode(as_activity(record), out) == decoded_kind::activity);
  CHECK(out.device_known);
  CHECK(out.activity.device == 3);
}

TEST_CASE("device: every limit, and occupancy from it") {
  record_decoder decoder = decoder_for();
  const char* const name = "NVIDIA H200";
  CUpti_ActivityDevice5 record{};
  record.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  record.id = 4;
  record.name = name;
  record.computeCapabilityMajor = 9;
  record.computeCapabilityMinor = 0;
  record.numMultiprocessors = 132;
  record.globalMemorySize = 150'754'820'096;
  record.maxThreadsPerBlock = 1024;
  record.maxWarpsPerMultiprocessor = 64;
  record.maxBlocksPerMultiprocessor = 32;
  record.maxRegistersPerMultiprocessor = 65536;
  record.maxRegistersPerBlock = 65535;
  record.maxSharedMemoryPerMultiprocessor = 233472;
  record.maxSharedMemoryPerBlock = 232448;
  record.numThreadsPerWarp = 32;
  record.l2CacheSize = 52'428'800;
  decoded out{};
  REQUIRE(decoder.decode(as_activity(record), out) == decoded_kind::device);
  const rt::gpu_device_info& device = out.device;
  CHECK(device.id == 4);
  CHECK(device.name == "NVIDIA H200");
  CHECK(device.compute_major == 9);
  CHECK(device.compute_minor == 0);
  CHECK(device.multiprocessors == 132);
  CHECK(device.global_memory_bytes == 150'754'820'096);
  CHECK(device.max_threads_per_block == 1024);
  CHECK(device.max_warps_per_multiprocessor == 64);
  CHECK(device.max_blocks_per_multiprocessor == 32);
  CHECK(device.max_registers_per_multiprocessor == 65536);
  CHECK(device.max_registers_per_block == 65535);
  CHECK(device.max_shared_memory_per_multiprocessor == 233472);
  CHECK(device.max_shared_memory_per_block == 232448);

  const rt::gpu_device_info* known = decoder.find_device(4);
  REQUIRE(known != nullptr);
  CHECK(known->name == "NVIDIA H200");
  CHECK(known->max_warps_per_multiprocessor == 64);

  // A kernel on device 4: 256 threads with 128 registers is 16 warps of 64.
  CUpti_ActivityKernel10 kernel = kernel_record();
  kernel.deviceId = 4;
  kernel.registersPerThread = 128;
  REQUIRE(decoder.decode(as_activity(kernel), out) == decoded_kind::activity);
  CHECK(out.activity.kernel.occupancy == doctest::Approx(0.25));

  // A later record of the same device replaces it in place.
  record.maxWarpsPerMultiprocessor = 48;
  record.name = nullptr;
  REQUIRE(decoder.decode(as_activity(record), out) == decoded_kind::device);
  CHECK(out.device.name.empty());
  CHECK(known == decoder.find_device(4));
  CHECK(known->max_warps_per_multiprocessor == 48);
}

TEST_CASE("overhead: kind and span") {
  record_decoder decoder = decoder_for();
  CUpti_ActivityOverhead3 record{};
  record.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  record.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  record.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  record.start = 7'000'000;
  record.end = 7'250'000;
  record.correlationId = 3;
  decoded out{};
  REQUIRE(decoder.decode(as_activity(record), out) == decoded_kind::overhead);
  CHECK(out.overhead.kind == CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH);
  CHECK(out.overhead.start_ns == 7'000'000);
  CHECK(out.overhead.end_ns == 7'250'000);
}

TEST_CASE("other kinds are ignored") {
  record_decoder decoder = decoder_for();
  for (std::uint32_t kind :
       {std::uint32_t{CUPTI_ACTIVITY_KIND_INVALID}, std::uint32_t{CUPTI_ACTIVITY_KIND_DRIVER},
        std::uint32_t{CUPTI_ACTIVITY_KIND_RUNTIME}, std::uint32_t{CUPTI_ACTIVITY_KIND_NAME},
        std::uint32_t{CUPTI_ACTIVITY_KIND_MEMORY},
        std::uint32_t{CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION},
        std::uint32_t{CUPTI_ACTIVITY_KIND_MEMORY_POOL}, std::uint32_t{CUPTI_ACTIVITY_KIND_COUNT},
        9999u}) {
    CAPTURE(kind);
    // A zeroed record as large as any decoded one, so that a wrong decode
    // would read inside it.
    std::vector<unsigned char> record(1024);
    std::memcpy(record.data(), &kind, sizeof kind);
    decoded out{};
    out.kind = decoded_kind::activity;
    CHECK(decoder.decode(reinterpret_cast<const CUpti_Activity*>(record.data()), out) ==
          decoded_kind::ignored);
    CHECK(out.kind == decoded_kind::ignored);
  }
  decoded out{};
  CHECK(decoder.decode(nullptr, out) == decoded_kind::ignored);
}
