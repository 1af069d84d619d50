// A Level Zero driver of ferret's own, for testing the Level Zero collector
// without Intel hardware. Debian's real loader loads it (ZE_ENABLE_ALT_DRIVERS
// names this library) and its tracing layer sits between the program and it,
// exactly as in front of Intel's driver.
//
// Work runs on the host: a copy is a memcpy, a fill a memset of the pattern,
// a kernel a host function registered under its name (builtin_kernels below);
// the module's IL is ignored. Every command queue, and every immediate
// command list, has a thread of its own that executes its commands in order,
// so events complete asynchronously, as on a GPU.
//
// The device clock is CLOCK_MONOTONIC_RAW shifted by an offset and counted in
// ticks of a configurable frequency; kernel timestamps keep only the valid
// bits, so that the collector's conversion and wrap-around are tested:
//   FERRET_ZE_TEST_TIMER_HZ       ticks per second (default 19200000, 52.083 ns)
//   FERRET_ZE_TEST_VALID_BITS     kernelTimestampValidBits (default 32)
//   FERRET_ZE_TEST_CLOCK_OFFSET_S seconds added to the host clock (default 1000)
//   FERRET_ZE_TEST_DEVICES        number of devices (default 1, at most 4)
//   FERRET_ZE_TEST_SIMD           SIMD width of every kernel (default 32)
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

std::uint64_t environment_number(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  return std::strtoull(text, nullptr, 10);
}

__extension__ typedef unsigned __int128 wide_unsigned;

std::int64_t monotonic_raw_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct clock_settings {
  std::uint64_t hz = environment_number("FERRET_ZE_TEST_TIMER_HZ", 19200000);
  std::uint32_t valid_bits =
      static_cast<std::uint32_t>(environment_number("FERRET_ZE_TEST_VALID_BITS", 32));
  std::int64_t offset_ns =
      static_cast<std::int64_t>(environment_number("FERRET_ZE_TEST_CLOCK_OFFSET_S", 1000)) *
      1000000000;
  std::uint32_t simd = static_cast<std::uint32_t>(environment_number("FERRET_ZE_TEST_SIMD", 32));

  // The device's free-running counter (64 bits).
  std::uint64_t ticks() const {
    const auto ns = static_cast<wide_unsigned>(monotonic_raw_ns() + offset_ns);
    return static_cast<std::uint64_t>(ns * hz / 1000000000u);
  }
  std::uint64_t kernel_mask() const {
    return valid_bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << valid_bits) - 1;
  }
};

const clock_settings& clock() {
  static const clock_settings settings;
  return settings;
}

// ---------------------------------------------------------------------------
// Objects. Handles are pointers to these.

struct device_object {
  std::uint32_t index;
};

struct driver_object {
  std::vector<device_object> devices;
};

driver_object& the_driver() {
  static driver_object* driver = [] {
    auto* made = new driver_object;
    const auto count = std::clamp<std::uint64_t>(environment_number("FERRET_ZE_TEST_DEVICES", 1), 1, 4);
    for (std::uint32_t i = 0; i < count; ++i) made->devices.push_back({i});
    return made;
  }();
  return *driver;
}

struct context_object {};

struct event_pool_object {
  ze_event_pool_flags_t flags;
  std::uint32_t count;
};

struct event_object {
  event_pool_object* pool;
  std::mutex mutex;
  std::condition_variable changed;
  bool signaled = false;
  ze_kernel_timestamp_result_t timestamps{};
};

struct module_object {};

struct kernel_call {
  const std::vector<std::vector<unsigned char>>& arguments;
  ze_group_count_t groups;
  std::uint32_t group_size[3];

  template <typename T>
  T argument(std::size_t index) const {
    T value{};
    if (index < arguments.size())
      std::memcpy(&value, arguments[index].data(), std::min(sizeof value, arguments[index].size()));
    return value;
  }
  std::size_t threads() const {
    return std::size_t{groups.groupCountX} * groups.groupCountY * groups.groupCountZ *
           group_size[0] * group_size[1] * group_size[2];
  }
};

using kernel_function = void (*)(const kernel_call&);

// The kernels this driver knows, by name.
void saxpy(const kernel_call& call) {  // (float a, const float* x, float* y): y = a x + y
  const auto a = call.argument<float>(0);
  const auto* x = call.argument<const float*>(1);
  auto* y = call.argument<float*>(2);
  for (std::size_t i = 0; i < call.threads(); ++i) y[i] = a * x[i] + y[i];
}
void scale(const kernel_call& call) {  // (float* x, float factor): x *= factor
  auto* x = call.argument<float*>(0);
  const auto factor = call.argument<float>(1);
  for (std::size_t i = 0; i < call.threads(); ++i) x[i] *= factor;
}
void spin(const kernel_call& call) {  // (uint32_t microseconds): busy for that long
  const std::int64_t until = monotonic_raw_ns() + std::int64_t{call.argument<std::uint32_t>(0)} * 1000;
  while (monotonic_raw_ns() < until) {
  }
}

struct builtin_kernel {
  const char* name;
  kernel_function function;
  std::uint32_t arguments;
  std::uint32_t private_memory;  // bytes per work item, as a compiler would report
  std::uint32_t local_memory;    // bytes of shared local memory per group
};
constexpr builtin_kernel builtin_kernels[] = {
    {"saxpy", saxpy, 3, 0, 0},
    {"scale", scale, 2, 16, 1024},
    {"spin", spin, 1, 0, 0},
};

struct kernel_object {
  const builtin_kernel* builtin;
  std::vector<std::vector<unsigned char>> arguments;
  std::uint32_t group_size[3] = {1, 1, 1};
};

// One command as a queue's thread executes it.
struct command {
  std::function<void()> work;  // empty for barriers and signals
  event_object* signal = nullptr;
  std::vector<event_object*> waits;
};

void signal_event(event_object* event, std::uint64_t start, std::uint64_t end) {
  std::lock_guard lock{event->mutex};
  if ((event->pool->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) != 0) {
    const std::uint64_t mask = clock().kernel_mask();
    event->timestamps.global = {start & mask, end & mask};
    event->timestamps.context = event->timestamps.global;
  }
  event->signaled = true;
  event->changed.notify_all();
}

void wait_for(event_object* event) {
  std::unique_lock lock{event->mutex};
  event->changed.wait(lock, [&] { return event->signaled; });
}

// A queue: its own thread runs its commands in order.
class queue_object {
 public:
  queue_object() : worker_([this] { run(); }) {}
  ~queue_object() {
    {
      std::lock_guard lock{mutex_};
      stopping_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }
  void submit(std::vector<command> commands) {
    {
      std::lock_guard lock{mutex_};
      for (command& each : commands) pending_.push_back(std::move(each));
    }
    changed_.notify_all();
  }
  void synchronize() {
    std::unique_lock lock{mutex_};
    changed_.wait(lock, [&] { return pending_.empty() && !busy_; });
  }

 private:
  void run() {
    std::unique_lock lock{mutex_};
    for (;;) {
      changed_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;
      command next = std::move(pending_.front());
      pending_.pop_front();
      busy_ = true;
      lock.unlock();
      for (event_object* event : next.waits) wait_for(event);
      const std::uint64_t start = clock().ticks();
      if (next.work) next.work();
      const std::uint64_t end = clock().ticks();
      if (next.signal != nullptr) signal_event(next.signal, start, end);
      lock.lock();
      busy_ = false;
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<command> pending_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

struct command_list_object {
  bool immediate;
  std::unique_ptr<queue_object> queue;  // immediate lists only
  std::vector<command> commands;        // regular lists only
  void append(command next) {
    if (immediate) {
      std::vector<command> one;
      one.push_back(std::move(next));
      queue->submit(std::move(one));
    } else {
      commands.push_back(std::move(next));
    }
  }
};

// Allocations by start address.
struct allocation {
  std::size_t bytes;
  ze_memory_type_t type;
  ze_device_handle_t device;
};
std::mutex allocations_mutex;
std::map<std::uintptr_t, allocation>& allocations() {
  static auto* table = new std::map<std::uintptr_t, allocation>;
  return *table;
}

template <typename Object, typename Handle>
Object* object(Handle handle) {
  return reinterpret_cast<Object*>(handle);
}
template <typename Handle, typename Object>
Handle handle(Object* object) {
  return reinterpret_cast<Handle>(object);
}

command make_command(std::function<void()> work, ze_event_handle_t signal, std::uint32_t wait_count,
                     const ze_event_handle_t* waits) {
  command made;
  made.work = std::move(work);
  made.signal = object<event_object>(signal);
  for (std::uint32_t i = 0; waits != nullptr && i < wait_count; ++i)
    made.waits.push_back(object<event_object>(waits[i]));
  return made;
}

// ---------------------------------------------------------------------------
// Entry points.

ze_result_t ZE_APICALL Init(ze_init_flags_t) { return ZE_RESULT_SUCCESS; }

ze_result_t ZE_APICALL DriverGet(std::uint32_t* count, ze_driver_handle_t* drivers) {
  if (drivers != nullptr && *count > 0) drivers[0] = handle<ze_driver_handle_t>(&the_driver());
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DriverGetApiVersion(ze_driver_handle_t, ze_api_version_t* version) {
  *version = ZE_API_VERSION_CURRENT;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DriverGetProperties(ze_driver_handle_t, ze_driver_properties_t* properties) {
  std::memset(&properties->uuid, 0, sizeof properties->uuid);
  properties->driverVersion = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGet(ze_driver_handle_t, std::uint32_t* count, ze_device_handle_t* devices) {
  auto& all = the_driver().devices;
  if (devices != nullptr)
    for (std::uint32_t i = 0; i < std::min<std::size_t>(*count, all.size()); ++i)
      devices[i] = handle<ze_device_handle_t>(&all[i]);
  *count = static_cast<std::uint32_t>(all.size());
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGetSubDevices(ze_device_handle_t, std::uint32_t* count, ze_device_handle_t*) {
  *count = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGetProperties(ze_device_handle_t device, ze_device_properties_t* properties) {
  const bool cycles_per_second = properties->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2;
  properties->type = ZE_DEVICE_TYPE_GPU;
  properties->vendorId = 0x8086;
  properties->deviceId = 0xfe77;
  properties->flags = 0;
  properties->subdeviceId = 0;
  properties->coreClockRate = 1600;
  properties->maxMemAllocSize = std::uint64_t{1} << 32;
  properties->maxHardwareContexts = 64;
  properties->maxCommandQueuePriority = 0;
  properties->numThreadsPerEU = 8;
  properties->physicalEUSimdWidth = 8;
  properties->numEUsPerSubslice = 8;
  properties->numSubslicesPerSlice = 4;
  properties->numSlices = 2;
  // Before 1.2 the unit was nanoseconds per tick.
  properties->timerResolution = cycles_per_second ? clock().hz : 1000000000 / clock().hz;
  properties->timestampValidBits = 64;
  properties->kernelTimestampValidBits = clock().valid_bits;
  std::memset(&properties->uuid, 0, sizeof properties->uuid);
  properties->uuid.id[0] = static_cast<std::uint8_t>(object<device_object>(device)->index);
  std::snprintf(properties->name, sizeof properties->name, "ferret test GPU %u",
                object<device_object>(device)->index);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGetComputeProperties(ze_device_handle_t, ze_device_compute_properties_t* properties) {
  properties->maxTotalGroupSize = 1024;
  properties->maxGroupSizeX = properties->maxGroupSizeY = properties->maxGroupSizeZ = 1024;
  properties->maxGroupCountX = properties->maxGroupCountY = properties->maxGroupCountZ = 1u << 20;
  properties->maxSharedLocalMemory = 65536;
  properties->numSubGroupSizes = 1;
  properties->subGroupSizes[0] = clock().simd;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGetCommandQueueGroupProperties(ze_device_handle_t, std::uint32_t* count,
                                                            ze_command_queue_group_properties_t* groups) {
  if (groups != nullptr && *count > 0) {
    groups[0].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
    groups[0].maxMemoryFillPatternSize = 128;
    groups[0].numQueues = 4;
  }
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGetGlobalTimestamps(ze_device_handle_t, std::uint64_t* host, std::uint64_t* device) {
  *host = static_cast<std::uint64_t>(monotonic_raw_ns());
  *device = clock().ticks();
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL ContextCreate(ze_driver_handle_t, const ze_context_desc_t*, ze_context_handle_t* context) {
  *context = handle<ze_context_handle_t>(new context_object);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL ContextDestroy(ze_context_handle_t context) {
  delete object<context_object>(context);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL CommandQueueCreate(ze_context_handle_t, ze_device_handle_t, const ze_command_queue_desc_t*,
                                          ze_command_queue_handle_t* queue) {
  *queue = handle<ze_command_queue_handle_t>(new queue_object);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL CommandQueueDestroy(ze_command_queue_handle_t queue) {
  delete object<queue_object>(queue);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL CommandQueueExecuteCommandLists(ze_command_queue_handle_t queue, std::uint32_t count,
                                                       ze_command_list_handle_t* lists, ze_fence_handle_t) {
  for (std::uint32_t i = 0; i < count; ++i) {
    auto* list = object<command_list_object>(lists[i]);
    if (list->immediate) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    object<queue_object>(queue)->submit(list->commands);  // a copy: lists run again
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL CommandQueueSynchronize(ze_command_queue_handle_t queue, std::uint64_t) {
  object<queue_object>(queue)->synchronize();
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL CommandListCreate(ze_context_handle_t, ze_device_handle_t, const ze_command_list_desc_t*,
                                         ze_command_list_handle_t* list) {
  *list = handle<ze_command_list_handle_t>(new command_list_object{false, nullptr, {}});
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL CommandListCreateImmediate(ze_context_handle_t, ze_device_handle_t,
                                                  const ze_command_queue_desc_t*, ze_command_list_handle_t* list) {
  *list = handle<ze_command_list_handle_t>(
      new command_list_object{true, std::make_unique<queue_object>(), {}});
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL CommandListDestroy(ze_command_list_handle_t list) {
  delete object<command_list_object>(list);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL CommandListClose(ze_command_list_handle_t) { return ZE_RESULT_SUCCESS; }

ze_result_t ZE_APICALL CommandListReset(ze_command_list_handle_t list) {
  object<command_list_object>(list)->commands.clear();
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL AppendBarrier(ze_command_list_handle_t list, ze_event_handle_t signal,
                                     std::uint32_t wait_count, ze_event_handle_t* waits) {
  object<command_list_object>(list)->append(make_command({}, signal, wait_count, waits));
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL AppendMemoryCopy(ze_command_list_handle_t list, void* destination, const void* source,
                                        std::size_t bytes, ze_event_handle_t signal, std::uint32_t wait_count,
                                        ze_event_handle_t* waits) {
  object<command_list_object>(list)->append(make_command(
      [=] { std::memcpy(destination, source, bytes); }, signal, wait_count, waits));
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL AppendMemoryCopyRegion(ze_command_list_handle_t list, void* destination,
                                              const ze_copy_region_t* destination_region, std::uint32_t destination_pitch,
                                              std::uint32_t destination_slice_pitch, const void* source,
                                              const ze_copy_region_t* source_region, std::uint32_t source_pitch,
                                              std::uint32_t source_slice_pitch, ze_event_handle_t signal,
                                              std::uint32_t wait_count, ze_event_handle_t* waits) {
  const ze_copy_region_t to = *destination_region;
  const ze_copy_region_t from = *source_region;
  object<command_list_object>(list)->append(make_command(
      [=] {
        for (std::uint32_t z = 0; z < std::max(from.depth, 1u); ++z)
          for (std::uint32_t y = 0; y < std::max(from.height, 1u); ++y)
            std::memcpy(static_cast<char*>(destination) + (to.originZ + z) * std::size_t{destination_slice_pitch} +
                            (to.originY + y) * std::size_t{destination_pitch} + to.originX,
                        static_cast<const char*>(source) + (from.originZ + z) * std::size_t{source_slice_pitch} +
                            (from.originY + y) * std::size_t{source_pitch} + from.originX,
                        from.width);
      },
      signal, wait_count, waits));
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL AppendMemoryFill(ze_command_list_handle_t list, void* destination, const void* pattern,
                                        std::size_t pattern_bytes, std::size_t bytes, ze_event_handle_t signal,
                                        std::uint32_t wait_count, ze_event_handle_t* waits) {
  std::vector<unsigned char> copied(static_cast<const unsigned char*>(pattern),
                                    static_cast<const unsigned char*>(pattern) + pattern_bytes);
  object<command_list_object>(list)->append(make_command(
      [=] {
        auto* out = static_cast<unsigned char*>(destination);
        for (std::size_t i = 0; i < bytes; ++i) out[i] = copied[i % copied.size()];
      },
      signal, wait_count, waits));
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL AppendLaunchKernel(ze_command_list_handle_t list, ze_kernel_handle_t kernel,
                                          const ze_group_count_t* groups, ze_event_handle_t signal,
                                          std::uint32_t wait_count, ze_event_handle_t* waits) {
  const kernel_object* launched = object<kernel_object>(kernel);
  const kernel_function function = launched->builtin->function;
  const ze_group_count_t count = *groups;
  // Arguments as they are now: the program may set others before the next launch.
  auto arguments = launched->arguments;
  const std::uint32_t size[3] = {launched->group_size[0], launched->group_size[1], launched->group_size[2]};
  object<command_list_object>(list)->append(make_command(
      [=] { function(kernel_call{arguments, count, {size[0], size[1], size[2]}}); }, signal, wait_count, waits));
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL AppendLaunchCooperativeKernel(ze_command_list_handle_t list, ze_kernel_handle_t kernel,
                                                     const ze_group_count_t* groups, ze_event_handle_t signal,
                                                     std::uint32_t wait_count, ze_event_handle_t* waits) {
  return AppendLaunchKernel(list, kernel, groups, signal, wait_count, waits);
}

ze_result_t ZE_APICALL AppendSignalEvent(ze_command_list_handle_t list, ze_event_handle_t event) {
  object<command_list_object>(list)->append(make_command({}, event, 0, nullptr));
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL AppendWaitOnEvents(ze_command_list_handle_t list, std::uint32_t count, ze_event_handle_t* events) {
  object<command_list_object>(list)->append(make_command({}, nullptr, count, events));
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL EventPoolCreate(ze_context_handle_t, const ze_event_pool_desc_t* desc, std::uint32_t,
                                       ze_device_handle_t*, ze_event_pool_handle_t* pool) {
  *pool = handle<ze_event_pool_handle_t>(new event_pool_object{desc->flags, desc->count});
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL EventPoolDestroy(ze_event_pool_handle_t pool) {
  delete object<event_pool_object>(pool);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL EventCreate(ze_event_pool_handle_t pool, const ze_event_desc_t* desc, ze_event_handle_t* event) {
  if (desc->index >= object<event_pool_object>(pool)->count) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  auto* made = new event_object;
  made->pool = object<event_pool_object>(pool);
  *event = handle<ze_event_handle_t>(made);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL EventDestroy(ze_event_handle_t event) {
  delete object<event_object>(event);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL EventHostSignal(ze_event_handle_t event) {
  const std::uint64_t now = clock().ticks();
  signal_event(object<event_object>(event), now, now);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL EventHostSynchronize(ze_event_handle_t event, std::uint64_t timeout_ns) {
  auto* waited = object<event_object>(event);
  std::unique_lock lock{waited->mutex};
  if (timeout_ns == UINT64_MAX) {
    waited->changed.wait(lock, [&] { return waited->signaled; });
    return ZE_RESULT_SUCCESS;
  }
  return waited->changed.wait_for(lock, std::chrono::nanoseconds{timeout_ns}, [&] { return waited->signaled; })
             ? ZE_RESULT_SUCCESS
             : ZE_RESULT_NOT_READY;
}

ze_result_t ZE_APICALL EventQueryStatus(ze_event_handle_t event) {
  auto* queried = object<event_object>(event);
  std::lock_guard lock{queried->mutex};
  return queried->signaled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

ze_result_t ZE_APICALL EventHostReset(ze_event_handle_t event) {
  auto* reset = object<event_object>(event);
  std::lock_guard lock{reset->mutex};
  reset->signaled = false;
  reset->timestamps = {};
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL EventQueryKernelTimestamp(ze_event_handle_t event, ze_kernel_timestamp_result_t* result) {
  auto* queried = object<event_object>(event);
  if ((queried->pool->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) == 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  std::lock_guard lock{queried->mutex};
  if (!queried->signaled) return ZE_RESULT_NOT_READY;
  *result = queried->timestamps;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL ModuleCreate(ze_context_handle_t, ze_device_handle_t, const ze_module_desc_t*,
                                    ze_module_handle_t* module, ze_module_build_log_handle_t* log) {
  *module = handle<ze_module_handle_t>(new module_object);
  if (log != nullptr) *log = nullptr;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL ModuleDestroy(ze_module_handle_t module) {
  delete object<module_object>(module);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL ModuleGetKernelNames(ze_module_handle_t, std::uint32_t* count, const char** names) {
  constexpr std::uint32_t known = std::size(builtin_kernels);
  if (names != nullptr)
    for (std::uint32_t i = 0; i < std::min(*count, known); ++i) names[i] = builtin_kernels[i].name;
  *count = known;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL KernelCreate(ze_module_handle_t, const ze_kernel_desc_t* desc, ze_kernel_handle_t* kernel) {
  for (const builtin_kernel& builtin : builtin_kernels)
    if (desc->pKernelName != nullptr && std::strcmp(builtin.name, desc->pKernelName) == 0) {
      auto* made = new kernel_object{&builtin, std::vector<std::vector<unsigned char>>(builtin.arguments)};
      *kernel = handle<ze_kernel_handle_t>(made);
      return ZE_RESULT_SUCCESS;
    }
  return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
}

ze_result_t ZE_APICALL KernelDestroy(ze_kernel_handle_t kernel) {
  delete object<kernel_object>(kernel);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL KernelSetGroupSize(ze_kernel_handle_t kernel, std::uint32_t x, std::uint32_t y, std::uint32_t z) {
  auto* set = object<kernel_object>(kernel);
  set->group_size[0] = x;
  set->group_size[1] = y;
  set->group_size[2] = z;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL KernelSuggestGroupSize(ze_kernel_handle_t, std::uint32_t x, std::uint32_t, std::uint32_t,
                                              std::uint32_t* gx, std::uint32_t* gy, std::uint32_t* gz) {
  *gx = std::min<std::uint32_t>(x, 256);
  *gy = 1;
  *gz = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL KernelSetArgumentValue(ze_kernel_handle_t kernel, std::uint32_t index, std::size_t bytes,
                                              const void* value) {
  auto* set = object<kernel_object>(kernel);
  if (index >= set->arguments.size()) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
  const auto* first = static_cast<const unsigned char*>(value);
  set->arguments[index].assign(first, first + (value != nullptr ? bytes : 0));
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL KernelGetProperties(ze_kernel_handle_t kernel, ze_kernel_properties_t* properties) {
  const builtin_kernel& builtin = *object<kernel_object>(kernel)->builtin;
  properties->numKernelArgs = builtin.arguments;
  properties->requiredGroupSizeX = properties->requiredGroupSizeY = properties->requiredGroupSizeZ = 0;
  properties->requiredNumSubGroups = 0;
  properties->requiredSubgroupSize = 0;
  properties->maxSubgroupSize = clock().simd;
  properties->maxNumSubgroups = 1024 / clock().simd;
  properties->localMemSize = builtin.local_memory;
  properties->privateMemSize = builtin.private_memory;
  properties->spillMemSize = 0;
  std::memset(&properties->uuid, 0, sizeof properties->uuid);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL KernelGetName(ze_kernel_handle_t kernel, std::size_t* size, char* name) {
  const char* own = object<kernel_object>(kernel)->builtin->name;
  const std::size_t needed = std::strlen(own) + 1;
  if (name != nullptr) std::memcpy(name, own, std::min(*size, needed));
  *size = needed;
  return ZE_RESULT_SUCCESS;
}

ze_result_t allocate(std::size_t bytes, std::size_t alignment, ze_memory_type_t type, ze_device_handle_t device,
                     void** address) {
  const std::size_t align = std::max<std::size_t>(alignment, 64);
  *address = std::aligned_alloc(align, (std::max<std::size_t>(bytes, 1) + align - 1) / align * align);
  if (*address == nullptr) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  std::lock_guard lock{allocations_mutex};
  allocations()[reinterpret_cast<std::uintptr_t>(*address)] = {bytes, type, device};
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL MemAllocShared(ze_context_handle_t, const ze_device_mem_alloc_desc_t*,
                                      const ze_host_mem_alloc_desc_t*, std::size_t bytes, std::size_t alignment,
                                      ze_device_handle_t device, void** address) {
  return allocate(bytes, alignment, ZE_MEMORY_TYPE_SHARED, device, address);
}

ze_result_t ZE_APICALL MemAllocDevice(ze_context_handle_t, const ze_device_mem_alloc_desc_t*, std::size_t bytes,
                                      std::size_t alignment, ze_device_handle_t device, void** address) {
  return allocate(bytes, alignment, ZE_MEMORY_TYPE_DEVICE, device, address);
}

ze_result_t ZE_APICALL MemAllocHost(ze_context_handle_t, const ze_host_mem_alloc_desc_t*, std::size_t bytes,
                                    std::size_t alignment, void** address) {
  return allocate(bytes, alignment, ZE_MEMORY_TYPE_HOST, nullptr, address);
}

ze_result_t ZE_APICALL MemFree(ze_context_handle_t, void* address) {
  {
    std::lock_guard lock{allocations_mutex};
    if (allocations().erase(reinterpret_cast<std::uintptr_t>(address)) == 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  std::free(address);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL MemGetAllocProperties(ze_context_handle_t, const void* address,
                                             ze_memory_allocation_properties_t* properties,
                                             ze_device_handle_t* device) {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  std::lock_guard lock{allocations_mutex};
  auto it = allocations().upper_bound(at);
  properties->type = ZE_MEMORY_TYPE_UNKNOWN;
  properties->id = 0;
  properties->pageSize = 4096;
  if (device != nullptr) *device = nullptr;
  if (it == allocations().begin()) return ZE_RESULT_SUCCESS;
  --it;
  if (at >= it->first + std::max<std::size_t>(it->second.bytes, 1)) return ZE_RESULT_SUCCESS;
  properties->type = it->second.type;
  properties->id = it->first;
  if (device != nullptr) *device = it->second.device;
  return ZE_RESULT_SUCCESS;
}

bool version_supported(ze_api_version_t version) {
  return ZE_MAJOR_VERSION(version) == ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT);
}

}  // namespace

// The DDI table getters the loader asks every driver for.
#define FERRET_ZE_TABLE(getter, table_type)                                      \
  extern "C" ZE_DLLEXPORT ze_result_t ZE_APICALL getter(ze_api_version_t version, \
                                                        table_type* table) {     \
    if (table == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;           \
    if (!version_supported(version)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION; \
    *table = {};                                                                 \
    fill(*table);                                                                \
    return ZE_RESULT_SUCCESS;                                                    \
  }
// Tables of entry points this driver does not implement: all null (the
// loader answers ZE_RESULT_ERROR_UNSUPPORTED_FEATURE for them).
#define FERRET_ZE_EMPTY_TABLE(getter, table_type)                                \
  extern "C" ZE_DLLEXPORT ze_result_t ZE_APICALL getter(ze_api_version_t version, \
                                                        table_type* table) {     \
    if (table == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;           \
    if (!version_supported(version)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION; \
    *table = {};                                                                 \
    return ZE_RESULT_SUCCESS;                                                    \
  }

namespace {
void fill(ze_global_dditable_t& t) { t.pfnInit = Init; }
void fill(ze_driver_dditable_t& t) {
  t.pfnGet = DriverGet;
  t.pfnGetApiVersion = DriverGetApiVersion;
  t.pfnGetProperties = DriverGetProperties;
}
void fill(ze_device_dditable_t& t) {
  t.pfnGet = DeviceGet;
  t.pfnGetSubDevices = DeviceGetSubDevices;
  t.pfnGetProperties = DeviceGetProperties;
  t.pfnGetComputeProperties = DeviceGetComputeProperties;
  t.pfnGetCommandQueueGroupProperties = DeviceGetCommandQueueGroupProperties;
  t.pfnGetGlobalTimestamps = DeviceGetGlobalTimestamps;
}
void fill(ze_context_dditable_t& t) {
  t.pfnCreate = ContextCreate;
  t.pfnDestroy = ContextDestroy;
}
void fill(ze_command_queue_dditable_t& t) {
  t.pfnCreate = CommandQueueCreate;
  t.pfnDestroy = CommandQueueDestroy;
  t.pfnExecuteCommandLists = CommandQueueExecuteCommandLists;
  t.pfnSynchronize = CommandQueueSynchronize;
}
void fill(ze_command_list_dditable_t& t) {
  t.pfnCreate = CommandListCreate;
  t.pfnCreateImmediate = CommandListCreateImmediate;
  t.pfnDestroy = CommandListDestroy;
  t.pfnClose = CommandListClose;
  t.pfnReset = CommandListReset;
  t.pfnAppendBarrier = AppendBarrier;
  t.pfnAppendMemoryCopy = AppendMemoryCopy;
  t.pfnAppendMemoryCopyRegion = AppendMemoryCopyRegion;
  t.pfnAppendMemoryFill = AppendMemoryFill;
  t.pfnAppendLaunchKernel = AppendLaunchKernel;
  t.pfnAppendLaunchCooperativeKernel = AppendLaunchCooperativeKernel;
  t.pfnAppendSignalEvent = AppendSignalEvent;
  t.pfnAppendWaitOnEvents = AppendWaitOnEvents;
}
void fill(ze_event_pool_dditable_t& t) {
  t.pfnCreate = EventPoolCreate;
  t.pfnDestroy = EventPoolDestroy;
}
void fill(ze_event_dditable_t& t) {
  t.pfnCreate = EventCreate;
  t.pfnDestroy = EventDestroy;
  t.pfnHostSignal = EventHostSignal;
  t.pfnHostSynchronize = EventHostSynchronize;
  t.pfnQueryStatus = EventQueryStatus;
  t.pfnHostReset = EventHostReset;
  t.pfnQueryKernelTimestamp = EventQueryKernelTimestamp;
}
void fill(ze_module_dditable_t& t) {
  t.pfnCreate = ModuleCreate;
  t.pfnDestroy = ModuleDestroy;
  t.pfnGetKernelNames = ModuleGetKernelNames;
}
void fill(ze_kernel_dditable_t& t) {
  t.pfnCreate = KernelCreate;
  t.pfnDestroy = KernelDestroy;
  t.pfnSetGroupSize = KernelSetGroupSize;
  t.pfnSuggestGroupSize = KernelSuggestGroupSize;
  t.pfnSetArgumentValue = KernelSetArgumentValue;
  t.pfnGetProperties = KernelGetProperties;
  t.pfnGetName = KernelGetName;
}
void fill(ze_mem_dditable_t& t) {
  t.pfnAllocShared = MemAllocShared;
  t.pfnAllocDevice = MemAllocDevice;
  t.pfnAllocHost = MemAllocHost;
  t.pfnFree = MemFree;
  t.pfnGetAllocProperties = MemGetAllocProperties;
}
}  // namespace

FERRET_ZE_TABLE(zeGetGlobalProcAddrTable, ze_global_dditable_t)
FERRET_ZE_TABLE(zeGetDriverProcAddrTable, ze_driver_dditable_t)
FERRET_ZE_TABLE(zeGetDeviceProcAddrTable, ze_device_dditable_t)
FERRET_ZE_TABLE(zeGetContextProcAddrTable, ze_context_dditable_t)
FERRET_ZE_TABLE(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t)
FERRET_ZE_TABLE(zeGetCommandListProcAddrTable, ze_command_list_dditable_t)
FERRET_ZE_TABLE(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t)
FERRET_ZE_TABLE(zeGetEventProcAddrTable, ze_event_dditable_t)
FERRET_ZE_TABLE(zeGetModuleProcAddrTable, ze_module_dditable_t)
FERRET_ZE_TABLE(zeGetKernelProcAddrTable, ze_kernel_dditable_t)
FERRET_ZE_TABLE(zeGetMemProcAddrTable, ze_mem_dditable_t)
FERRET_ZE_EMPTY_TABLE(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
FERRET_ZE_EMPTY_TABLE(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
FERRET_ZE_EMPTY_TABLE(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)
FERRET_ZE_EMPTY_TABLE(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)
FERRET_ZE_EMPTY_TABLE(zeGetFenceProcAddrTable, ze_fence_dditable_t)
FERRET_ZE_EMPTY_TABLE(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)
FERRET_ZE_EMPTY_TABLE(zeGetImageProcAddrTable, ze_image_dditable_t)
FERRET_ZE_EMPTY_TABLE(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)
FERRET_ZE_EMPTY_TABLE(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t)
FERRET_ZE_EMPTY_TABLE(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)
FERRET_ZE_EMPTY_TABLE(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
FERRET_ZE_EMPTY_TABLE(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetDeviceProcAddrTable, zes_device_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetDriverProcAddrTable, zes_driver_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetEngineProcAddrTable, zes_engine_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetFanProcAddrTable, zes_fan_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetLedProcAddrTable, zes_led_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetMemoryProcAddrTable, zes_memory_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetPowerProcAddrTable, zes_power_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetPsuProcAddrTable, zes_psu_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetRasProcAddrTable, zes_ras_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
FERRET_ZE_EMPTY_TABLE(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)
FERRET_ZE_EMPTY_TABLE(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
FERRET_ZE_EMPTY_TABLE(zetGetContextProcAddrTable, zet_context_dditable_t)
FERRET_ZE_EMPTY_TABLE(zetGetDebugProcAddrTable, zet_debug_dditable_t)
FERRET_ZE_EMPTY_TABLE(zetGetDeviceProcAddrTable, zet_device_dditable_t)
FERRET_ZE_EMPTY_TABLE(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
FERRET_ZE_EMPTY_TABLE(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)
FERRET_ZE_EMPTY_TABLE(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
FERRET_ZE_EMPTY_TABLE(zetGetMetricProcAddrTable, zet_metric_dditable_t)
FERRET_ZE_EMPTY_TABLE(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
FERRET_ZE_EMPTY_TABLE(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
FERRET_ZE_EMPTY_TABLE(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
FERRET_ZE_EMPTY_TABLE(zetGetModuleProcAddrTable, zet_module_dditable_t)
FERRET_ZE_EMPTY_TABLE(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
