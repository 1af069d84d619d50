// The Level Zero collector in a real process: Debian's loader with its
// tracing layer, in front of ferret's test driver (driver/test_driver.cpp:
// work runs on the host, events complete from the driver's own threads,
// kernel timestamps at 19.2 MHz with 24 valid bits). The memory backend shows
// exactly what reached the runtime.
#include <doctest/doctest.h>
#include <level_zero/ze_api.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ferret/ferret.hpp"
#include "ferret/runtime/runtime.hpp"
#include "support/memory_backend.hpp"

namespace {

using ferret::runtime::copy_kind;
using ferret::runtime::gpu_operation;
using ferret::testing::capture;
using ferret::testing::captured_gpu_activity;
using ferret::testing::memory_backend;

#define ZE_REQUIRE(call) REQUIRE((call) == ZE_RESULT_SUCCESS)

std::uint64_t this_tid() { return static_cast<std::uint64_t>(syscall(SYS_gettid)); }

struct level_zero {
  ze_driver_handle_t driver = nullptr;
  ze_device_handle_t device = nullptr;
  ze_context_handle_t context = nullptr;
  ze_module_handle_t module = nullptr;
  // The devices the runtime was told of, once the collector first saw the
  // device (before any test case clears the memory backend).
  std::vector<ferret::runtime::gpu_device_info> announced_devices;

  static level_zero& get() {
    static level_zero* instance = [] {
      auto* made = new level_zero;
      REQUIRE(zeInit(0) == ZE_RESULT_SUCCESS);
      std::uint32_t count = 1;
      REQUIRE(zeDriverGet(&count, &made->driver) == ZE_RESULT_SUCCESS);
      count = 1;
      REQUIRE(zeDeviceGet(made->driver, &count, &made->device) == ZE_RESULT_SUCCESS);
      ze_context_desc_t context_desc{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
      REQUIRE(zeContextCreate(made->driver, &context_desc, &made->context) == ZE_RESULT_SUCCESS);
      const unsigned char il[4] = {0x03, 0x02, 0x23, 0x07};  // the test driver ignores the IL
      ze_module_desc_t module_desc{ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, sizeof il,
                                   il, nullptr, nullptr};
      REQUIRE(zeModuleCreate(made->context, made->device, &module_desc, &made->module, nullptr) ==
              ZE_RESULT_SUCCESS);
      made->device_memory_freed(16);  // the collector meets the device
      ferret::flush();
      made->announced_devices = memory_backend::snapshot().gpu_devices;
      return made;
    }();
    return *instance;
  }

  ze_kernel_handle_t kernel(const char* name) const {
    ze_kernel_desc_t desc{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, name};
    ze_kernel_handle_t made = nullptr;
    REQUIRE(zeKernelCreate(module, &desc, &made) == ZE_RESULT_SUCCESS);
    return made;
  }
  ze_command_list_handle_t immediate_list() const {
    ze_command_queue_desc_t desc{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                                 ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_list_handle_t list = nullptr;
    REQUIRE(zeCommandListCreateImmediate(context, device, &desc, &list) == ZE_RESULT_SUCCESS);
    return list;
  }
  ze_command_queue_handle_t queue() const {
    ze_command_queue_desc_t desc{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                                 ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_queue_handle_t made = nullptr;
    REQUIRE(zeCommandQueueCreate(context, device, &desc, &made) == ZE_RESULT_SUCCESS);
    return made;
  }
  void device_memory_freed(std::size_t bytes) const { REQUIRE(zeMemFree(context, device_memory(bytes)) == ZE_RESULT_SUCCESS); }
  void* device_memory(std::size_t bytes) const {
    ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    void* memory = nullptr;
    REQUIRE(zeMemAllocDevice(context, &desc, bytes, 64, device, &memory) == ZE_RESULT_SUCCESS);
    return memory;
  }
};

// A program's own event, from a pool created without KERNEL_TIMESTAMP (the
// collector adds the flag).
struct program_event {
  ze_event_pool_handle_t pool = nullptr;
  ze_event_handle_t event = nullptr;
  explicit program_event(const level_zero& ze) {
    ze_event_pool_desc_t pool_desc{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
    REQUIRE(zeEventPoolCreate(ze.context, &pool_desc, 1, const_cast<ze_device_handle_t*>(&ze.device), &pool) ==
            ZE_RESULT_SUCCESS);
    ze_event_desc_t desc{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
    REQUIRE(zeEventCreate(pool, &desc, &event) == ZE_RESULT_SUCCESS);
  }
  ~program_event() {
    zeEventDestroy(event);
    zeEventPoolDestroy(pool);
  }
};

std::vector<captured_gpu_activity> level_zero_operations(const capture& c) {
  std::vector<captured_gpu_activity> found;
  for (const captured_gpu_activity& each : c.gpu_activities)
    if (each.activity.device >= 64) found.push_back(each);
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.activity.start_ns < b.activity.start_ns;
  });
  return found;
}

std::int64_t metadata_count(const capture& c, const std::string& key) {
  for (const auto& [k, v] : c.runtime_metadata)
    if (k == key) return std::get<std::int64_t>(v);
  return -1;
}

// The session-relative times of a region's begin and end on this thread.
std::pair<std::int64_t, std::int64_t> region_window(const capture& c, const std::string& name) {
  std::pair<std::int64_t, std::int64_t> window{-1, -1};
  for (const auto& record : c.threads.at(this_tid()).records)
    if (record.name == name) {
      if (record.kind == ferret::runtime::record_kind::region_begin) window.first = record.time_ns;
      if (record.kind == ferret::runtime::record_kind::region_end) window.second = record.time_ns;
    }
  REQUIRE(window.first >= 0);
  REQUIRE(window.second >= window.first);
  return window;
}

}  // namespace

TEST_CASE("immediate list: a copy in, a kernel, a fill and a copy out, attributed and timed") {
  level_zero& ze = level_zero::get();
  const ze_command_list_handle_t list = ze.immediate_list();
  const ze_kernel_handle_t scale = ze.kernel("scale");
  constexpr std::uint32_t count = 256;
  std::vector<float> host(count, 2.0f);
  ferret::data_object host_object{"host values", host.data(), host.size() * sizeof(float)};
  void* device = nullptr;
  {
    ferret::region setup{"setup"};
    device = ze.device_memory(count * sizeof(float));
  }
  memory_backend::clear();
  program_event done{ze};
  {
    ferret::region step{"step"};
    ZE_REQUIRE(zeCommandListAppendMemoryCopy(list, device, host.data(), count * sizeof(float), nullptr, 0, nullptr));
    const float factor = 3.0f;
    ZE_REQUIRE(zeKernelSetArgumentValue(scale, 0, sizeof device, &device));
    ZE_REQUIRE(zeKernelSetArgumentValue(scale, 1, sizeof factor, &factor));
    ZE_REQUIRE(zeKernelSetGroupSize(scale, 64, 1, 1));
    const ze_group_count_t groups{count / 64, 1, 1};
    ZE_REQUIRE(zeCommandListAppendLaunchKernel(list, scale, &groups, nullptr, 0, nullptr));
    const std::uint8_t zero = 0;
    ZE_REQUIRE(zeCommandListAppendMemoryFill(list, static_cast<float*>(device) + count / 2, &zero, 1,
                                             count / 2 * sizeof(float), nullptr, 0, nullptr));
    ZE_REQUIRE(zeCommandListAppendMemoryCopy(list, host.data(), device, count * sizeof(float), done.event, 0, nullptr));
    ZE_REQUIRE(zeEventHostSynchronize(done.event, UINT64_MAX));
  }
  // The driver really did the work, in order.
  CHECK(host[0] == 6.0f);
  CHECK(host[count - 1] == 0.0f);
  ferret::flush();

  const capture c = memory_backend::snapshot();
  const auto operations = level_zero_operations(c);
  REQUIRE(operations.size() == 4);
  const auto& copy_in = operations[0];
  const auto& kernel = operations[1];
  const auto& fill = operations[2];
  const auto& copy_out = operations[3];

  CHECK(copy_in.activity.operation == gpu_operation::memcpy);
  CHECK(copy_in.activity.copy == copy_kind::host_to_device);
  CHECK(copy_in.activity.bytes == count * sizeof(float));
  CHECK(copy_in.activity.source_device == -1);
  CHECK(copy_in.activity.destination_device == 64);
  CHECK(copy_in.source_object == "host values");
  CHECK(copy_in.destination_object == "zeMemAllocDevice@setup");
  CHECK(copy_in.context == "step/zeCommandListAppendMemoryCopy");

  CHECK(kernel.activity.operation == gpu_operation::kernel);
  CHECK(std::string{kernel.activity.name} == "scale");
  CHECK(kernel.activity.kernel.grid[0] == 4);
  CHECK(kernel.activity.kernel.block[0] == 64);
  CHECK(kernel.activity.kernel.simd_width == 32);
  CHECK(kernel.activity.kernel.local_memory_per_thread == 16);
  CHECK(kernel.activity.kernel.static_shared_memory == 1024);
  CHECK(kernel.context == "step/zeCommandListAppendLaunchKernel");
  CHECK(kernel.activity.launch.tid == this_tid());

  CHECK(fill.activity.operation == gpu_operation::memset);
  CHECK(fill.activity.bytes == count / 2 * sizeof(float));
  CHECK(fill.destination_object == "zeMemAllocDevice@setup");
  CHECK(fill.activity.destination_address ==
        reinterpret_cast<std::uintptr_t>(static_cast<float*>(device) + count / 2));

  CHECK(copy_out.activity.copy == copy_kind::device_to_host);
  CHECK(copy_out.destination_object == "host values");

  // One device (id 64), one stream for the immediate list, times on the host
  // clock: inside the host's window, in submission order, each after its call.
  REQUIRE(ze.announced_devices.size() == 1);
  CHECK(ze.announced_devices[0].id == 64);
  CHECK(ze.announced_devices[0].name == "ferret test GPU 0");
  CHECK(ze.announced_devices[0].multiprocessors == 64);  // 2 slices x 4 subslices x 8 EUs
  constexpr std::int64_t tick_ns = 53;  // 1 / 19.2 MHz, rounded up
  const auto [before, after] = region_window(c, "step");
  for (std::size_t i = 0; i < operations.size(); ++i) {
    const auto& a = operations[i].activity;
    CAPTURE(i);
    CHECK(a.stream == copy_in.activity.stream);
    CHECK(a.start_ns >= before - tick_ns);
    CHECK(a.end_ns <= after + tick_ns);
    CHECK(a.end_ns >= a.start_ns);
    CHECK(a.start_ns >= a.launch.time_ns - tick_ns);
    if (i > 0) CHECK(a.start_ns >= operations[i - 1].activity.end_ns - tick_ns);
  }
  CHECK(metadata_count(c, "level-zero-operations-untimed") == 0);
  CHECK(metadata_count(c, "level-zero-timestamps-before-submission") == 0);
  zeMemFree(ze.context, device);
  zeKernelDestroy(scale);
  zeCommandListDestroy(list);
}

TEST_CASE("regular list: each execution on each queue is its own work, joined to its execute call") {
  level_zero& ze = level_zero::get();
  const ze_kernel_handle_t spin = ze.kernel("spin");
  const std::uint32_t microseconds = 300;
  ZE_REQUIRE(zeKernelSetArgumentValue(spin, 0, sizeof microseconds, &microseconds));
  ze_command_list_desc_t list_desc{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, 0, 0};
  ze_command_list_handle_t list = nullptr;
  ZE_REQUIRE(zeCommandListCreate(ze.context, ze.device, &list_desc, &list));
  void* a = ze.device_memory(4096);
  void* b = ze.device_memory(4096);
  const ze_group_count_t one{1, 1, 1};
  ZE_REQUIRE(zeCommandListAppendLaunchKernel(list, spin, &one, nullptr, 0, nullptr));
  ZE_REQUIRE(zeCommandListAppendBarrier(list, nullptr, 0, nullptr));
  ZE_REQUIRE(zeCommandListAppendMemoryCopy(list, b, a, 4096, nullptr, 0, nullptr));
  ZE_REQUIRE(zeCommandListClose(list));
  const ze_command_queue_handle_t first = ze.queue();
  const ze_command_queue_handle_t second = ze.queue();
  memory_backend::clear();
  {
    ferret::region r{"first queue"};
    ZE_REQUIRE(zeCommandQueueExecuteCommandLists(first, 1, &list, nullptr));
    ZE_REQUIRE(zeCommandQueueSynchronize(first, UINT64_MAX));
  }
  {
    ferret::region r{"second queue"};
    ZE_REQUIRE(zeCommandQueueExecuteCommandLists(second, 1, &list, nullptr));
    ZE_REQUIRE(zeCommandQueueSynchronize(second, UINT64_MAX));
  }
  ferret::flush();

  const capture c = memory_backend::snapshot();
  const auto operations = level_zero_operations(c);
  REQUIRE(operations.size() == 6);
  for (std::size_t run = 0; run < 2; ++run) {
    CAPTURE(run);
    const auto& kernel = operations[run * 3];
    const auto& barrier = operations[run * 3 + 1];
    const auto& copy = operations[run * 3 + 2];
    const std::string context = run == 0 ? "first queue/zeCommandQueueExecuteCommandLists"
                                         : "second queue/zeCommandQueueExecuteCommandLists";
    CHECK(std::string{kernel.activity.name} == "spin");
    CHECK(kernel.context == context);
    // The spin kernel is busy for 300 µs: the converted duration says so.
    CHECK(kernel.activity.end_ns - kernel.activity.start_ns >= 300'000 - 53);
    CHECK(kernel.activity.end_ns - kernel.activity.start_ns < 50'000'000);
    CHECK(barrier.activity.operation == gpu_operation::synchronization);
    CHECK(barrier.context == context);
    CHECK(copy.activity.copy == copy_kind::device_to_device);
    CHECK(copy.activity.bytes == 4096);
    CHECK(copy.context == context);
    CHECK(kernel.activity.launch.correlation == copy.activity.launch.correlation);
    CHECK(kernel.activity.stream == copy.activity.stream);
  }
  CHECK(operations[0].activity.stream != operations[3].activity.stream);
  CHECK(operations[0].activity.launch.correlation != operations[3].activity.launch.correlation);
  // The appends to a regular list submit nothing: they are regions without work.
  const auto& records = c.threads.at(this_tid()).records;
  CHECK(std::count_if(records.begin(), records.end(), [](const auto& r) {
          return r.name == "zeCommandQueueExecuteCommandLists" && r.domain == "level_zero";
        }) == 4);  // two calls, begin and end
  zeCommandQueueDestroy(first);
  zeCommandQueueDestroy(second);
  zeCommandListDestroy(list);
  zeMemFree(ze.context, a);
  zeMemFree(ze.context, b);
  zeKernelDestroy(spin);
}

TEST_CASE("a kernel across the wrap of the 24-bit timestamp counter keeps its length and place") {
  level_zero& ze = level_zero::get();
  ze_device_properties_t properties{};
  properties.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2;
  ZE_REQUIRE(zeDeviceGetProperties(ze.device, &properties));
  REQUIRE(properties.kernelTimestampValidBits == 24);
  REQUIRE(properties.timerResolution == 19'200'000);
  const std::uint64_t period = std::uint64_t{1} << 24;  // 0.874 s
  const ze_command_list_handle_t list = ze.immediate_list();
  const ze_kernel_handle_t spin = ze.kernel("spin");
  const std::uint32_t microseconds = 60'000;
  ZE_REQUIRE(zeKernelSetArgumentValue(spin, 0, sizeof microseconds, &microseconds));

  // Start a kernel of 60 ms some 20 ms before the counter wraps. On a loaded
  // machine the queue's thread may start it only after the wrap: that attempt
  // still checks the kernel, and the next period tries again.
  bool wrapped = false;
  for (int attempt = 0; attempt < 6 && !wrapped; ++attempt) {
    CAPTURE(attempt);
    for (;;) {
      std::uint64_t host = 0;
      std::uint64_t ticks = 0;
      ZE_REQUIRE(zeDeviceGetGlobalTimestamps(ze.device, &host, &ticks));
      const std::uint64_t left = period - ticks % period;
      if (left < 480'000 && left > 288'000) break;  // 25 ms .. 15 ms
      usleep(left > 1'000'000 ? 20'000 : 1'000);
    }
    memory_backend::clear();
    program_event done{ze};
    {
      ferret::region around{"around the kernel"};
      const ze_group_count_t one{1, 1, 1};
      ZE_REQUIRE(zeCommandListAppendLaunchKernel(list, spin, &one, done.event, 0, nullptr));
      ZE_REQUIRE(zeEventHostSynchronize(done.event, UINT64_MAX));
    }
    ze_kernel_timestamp_result_t raw{};
    ZE_REQUIRE(zeEventQueryKernelTimestamp(done.event, &raw));
    wrapped = raw.global.kernelEnd < raw.global.kernelStart;
    ferret::flush();

    const capture c = memory_backend::snapshot();
    const auto operations = level_zero_operations(c);
    REQUIRE(operations.size() == 1);
    const auto& kernel = operations[0].activity;
    CHECK(kernel.end_ns - kernel.start_ns >= 60'000'000 - 53);
    // A wrong unwrap is off by a whole period (0.874 s); a busy machine may stretch the kernel.
    CHECK(kernel.end_ns - kernel.start_ns < 400'000'000);
    const auto [before, after] = region_window(c, "around the kernel");
    CHECK(kernel.start_ns >= before - 53);
    CHECK(kernel.end_ns <= after + 53);
  }
  CHECK(wrapped);
  zeKernelDestroy(spin);
  zeCommandListDestroy(list);
}

TEST_CASE("calls that do no device work are counted, not recorded") {
  level_zero& ze = level_zero::get();
  const ze_kernel_handle_t saxpy = ze.kernel("saxpy");
  memory_backend::clear();
  const float a = 2.0f;
  for (int i = 0; i < 5; ++i) ZE_REQUIRE(zeKernelSetArgumentValue(saxpy, 0, sizeof a, &a));
  ferret::flush();
  const capture c = memory_backend::snapshot();
  CHECK(metadata_count(c, "level-zero-api-unrecorded:zeKernelSetArgumentValue") >= 5);
  for (const auto& [tid, thread] : c.threads)
    for (const auto& record : thread.records) CHECK(record.name != "zeKernelSetArgumentValue");
  zeKernelDestroy(saxpy);
}

// Run by the level_zero_peer test, with two devices (FERRET_ZE_TEST_DEVICES=2).
TEST_CASE("peer: a copy between two devices is peer to peer, each device with its own id" * doctest::skip()) {
  level_zero& ze = level_zero::get();
  std::uint32_t count = 0;
  ZE_REQUIRE(zeDeviceGet(ze.driver, &count, nullptr));
  REQUIRE(count == 2);
  ze_device_handle_t devices[2] = {};
  ZE_REQUIRE(zeDeviceGet(ze.driver, &count, devices));
  ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  void* on_first = nullptr;
  void* on_second = nullptr;
  ZE_REQUIRE(zeMemAllocDevice(ze.context, &desc, 4096, 64, devices[0], &on_first));
  ZE_REQUIRE(zeMemAllocDevice(ze.context, &desc, 4096, 64, devices[1], &on_second));
  const ze_command_list_handle_t list = ze.immediate_list();  // on the first device
  memory_backend::clear();
  program_event done{ze};
  ZE_REQUIRE(zeCommandListAppendMemoryCopy(list, on_first, on_second, 4096, done.event, 0, nullptr));
  ZE_REQUIRE(zeEventHostSynchronize(done.event, UINT64_MAX));
  ferret::flush();

  const capture c = memory_backend::snapshot();
  const auto operations = level_zero_operations(c);
  REQUIRE(operations.size() == 1);
  CHECK(operations[0].activity.copy == copy_kind::peer_to_peer);
  CHECK(operations[0].activity.source_device == 65);
  CHECK(operations[0].activity.destination_device == 64);
  CHECK(operations[0].activity.device == 64);
  zeCommandListDestroy(list);
  zeMemFree(ze.context, on_first);
  zeMemFree(ze.context, on_second);
}
