// collector.cpp — the CUDA collector: CUPTI subscription, activity buffers,
// devices, clock.
//
//   application thread                      ferret's drain thread
//   ──────────────────                      ─────────────────────
//   cudaLaunchKernel ─▶ API callback        collect(): cuptiActivityFlushAll
//     (api_calls.cpp: region, correlation    ─▶ buffer callbacks decode the
//     id, data objects)                         records into `completed_`
//                                            hand them to the runtime, which
//                                            matches corr ids with the drained
//                                            correlation events (calling context)
//
// API calls are recorded through the callback API (api_calls.hpp), on the
// thread's own event buffer and clock, so they nest exactly inside the
// annotated regions; FERRET_CUDA_API chooses which (api_table.cpp). GPU work
// comes from the activity API with CUPTI's timestamps on CLOCK_MONOTONIC_RAW
// (our timestamp callback), which is what the runtime's host clock is mapped
// to. If the callback cannot be registered, a measured offset between
// cuptiGetTimestamp() and CLOCK_MONOTONIC_RAW, refreshed at every drain, maps
// CUPTI's own clock instead.
#include <cupti.h>
#include <dlfcn.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api_calls.hpp"
#include "api_table.hpp"
#include "cupti_clock.hpp"
#include "cupti_error.hpp"
#include "metrics_sampling.hpp"
#include "pc_sampling.hpp"
#include "peer_access_setting.hpp"
#include "sanitizer_api.hpp"
#ifdef FERRET_HAVE_PEER_ACCESS_PATCH
#include "cubin_sections.hpp"
#include "peer_access_counter.hpp"
#include "sass_source.hpp"
#endif
#include "ferret/runtime/api_policy.hpp"
#include "ferret/runtime/context_source.hpp"
#include "ferret/runtime/runtime.hpp"
#include "record_decoder.hpp"
#include "subscription.hpp"

namespace ferret::cupti {
namespace {

using runtime::gpu_activity;
using runtime::gpu_device_info;

uint64_t CUPTIAPI timestamp_callback() { return static_cast<uint64_t>(runtime::monotonic_raw_ns()); }

// Driver entry points the collector needs for device limits, looked up in the
// libcuda the program already loaded (the collector never loads it itself).
struct driver_entry_points {
  using get_attribute_fn = int (*)(int*, int, int);
  using get_name_fn = int (*)(char*, int, int);
  using total_memory_fn = int (*)(std::size_t*, int);
  get_attribute_fn get_attribute = nullptr;
  get_name_fn get_name = nullptr;
  total_memory_fn total_memory = nullptr;

  bool load() {
    void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (cuda == nullptr) return false;
    get_attribute = reinterpret_cast<get_attribute_fn>(dlsym(cuda, "cuDeviceGetAttribute"));
    get_name = reinterpret_cast<get_name_fn>(dlsym(cuda, "cuDeviceGetName"));
    total_memory = reinterpret_cast<total_memory_fn>(dlsym(cuda, "cuDeviceTotalMem_v2"));
    return get_attribute != nullptr && get_name != nullptr;
  }
};

class cuda_collector final : public runtime::collector {
 public:
  static cuda_collector& instance() {
    // Leaked on purpose: CUPTI may call back during static destruction.
    static auto* collector = new cuda_collector;
    return *collector;
  }

  void start() {
    std::call_once(started_, [this] { subscribe(); });
    // Python call paths, before the first call; outside call_once, as the
    // sources' libraries may call back while they load.
    if (active_.load()) runtime::load_launch_context_sources();
  }

  void collect(std::vector<gpu_activity>& activities, std::vector<gpu_device_info>& new_devices,
               bool final) override;
  void collect_samples(std::vector<runtime::gpu_sample_batch>& batches, bool /*final*/) override {
    if (sampler_ != nullptr) sampler_->hand_over(batches);
  }
  void collect_remote_accesses(std::vector<runtime::gpu_remote_access_batch>& batches,
                               bool /*final*/) override {
#ifdef FERRET_HAVE_PEER_ACCESS_PATCH
    if (peer_accesses_ != nullptr) peer_accesses_->hand_over(batches);
#else
    (void)batches;
#endif
  }
  void collect_metric_intervals(std::vector<runtime::gpu_metric_set>& new_sets,
                                std::vector<runtime::gpu_metric_batch>& batches, bool final) override {
    if (active_.load() && metrics_ != nullptr) metrics_->take(new_sets, batches, final);
  }
  void add_metadata(runtime::metadata_list& metadata) const override;
  void abandon() noexcept override;

  /// A counting run (FERRET_CUDA_PEER_ACCESSES=1): a driver call forwarded
  /// from the Compute Sanitizer, given the correlation id CUPTI would have.
  void on_counted_driver_call(std::uint32_t id, const compute_sanitizer::api::callback_data& call);
  std::uint32_t counted_device_of(CUcontext context) const {
#ifdef FERRET_HAVE_PEER_ACCESS_PATCH
    return peer_accesses_ != nullptr ? peer_accesses_->device_of(context) : 0;
#else
    (void)context;
    return 0;
#endif
  }

  void on_api(CUpti_CallbackDomain domain, CUpti_CallbackId id, const CUpti_CallbackData& call) {
#ifdef FERRET_HAVE_PEER_ACCESS_PATCH
    // The launch call's id, for the counters of the launch it makes.
    if (peer_accesses_ != nullptr) {
      const api_table& table = api_table::cuda();
      const api_call& kind = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? table.runtime_call(id) : table.driver_call(id);
      if (kind.effect == runtime::api_effect::launch) {
        if (call.callbackSite == CUPTI_API_ENTER)
          compute_sanitizer::peer_access_counter::note_launch_call(call.correlationId);
        else
          compute_sanitizer::peer_access_counter::end_launch_call(call.correlationId);
      }
    }
#endif
    if (calls_ != nullptr) calls_->on_api(domain, id, call);
  }
  void on_resource(CUpti_CallbackId id, const CUpti_ResourceData& resource);
  void on_graph_node(CUpti_CallbackId id, const CUpti_GraphData& graph);
  void buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  void buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size,
                        size_t valid_size);
  void force_flush() noexcept;

 private:
  static constexpr std::size_t buffer_bytes = 4u << 20;
  // At most 64 buffers (256 MiB) in flight; CUPTI counts what it then drops.
  static constexpr std::size_t max_buffers = 64;

  cuda_collector() = default;
  void subscribe();
  void subscribe_api_calls(const cuda_api_setting& setting);
  bool start_counting_run(const cuda_api_setting& setting, bool pc_sampling_asked, bool metrics_asked);
  void describe_device(std::uint32_t device);
  std::int64_t to_monotonic_raw(std::int64_t cupti_ns) const noexcept {
    return cupti_ns + offset_ns_.load(std::memory_order_relaxed);
  }
  void refresh_offset() noexcept;

  std::once_flag started_;
  std::atomic<bool> active_{false};
  bool counting_run_ = false;  // the Compute Sanitizer, not CUPTI: kernels only, timed by the patch
  CUpti_SubscriberHandle subscriber_{};
  // Set once in subscribe(), before any API callback is enabled.
  std::unique_ptr<api_calls> calls_;
  std::unique_ptr<pc_sampler> sampler_;  // FERRET_CUDA_PC_SAMPLING; set once in subscribe()
  std::unique_ptr<metrics_sampler> metrics_;  // FERRET_CUDA_METRICS_SAMPLING; set once in subscribe()
#ifdef FERRET_HAVE_PEER_ACCESS_PATCH
  // FERRET_CUDA_PEER_ACCESSES; set once in subscribe(), before any API callback is enabled.
  std::unique_ptr<compute_sanitizer::peer_access_counter> peer_accesses_;
#endif
  driver_entry_points driver_;
  bool driver_loaded_ = false;
  bool using_timestamp_callback_ = false;
  std::atomic<std::int64_t> offset_ns_{0};  // CLOCK_MONOTONIC_RAW - CUPTI's clock (0 with the callback)

  std::mutex buffers_mutex_;
  std::vector<uint8_t*> free_buffers_;
  std::size_t buffers_allocated_ = 0;

  std::mutex completed_mutex_;
  record_decoder decoder_;  // guarded by completed_mutex_
  std::vector<gpu_activity> completed_;
  std::vector<gpu_device_info> new_devices_;
  std::vector<std::uint32_t> described_devices_;

  std::atomic<std::uint64_t> records_{0};
  std::atomic<std::uint64_t> records_dropped_{0};
  std::atomic<std::uint64_t> buffers_refused_{0};
  std::atomic<std::uint64_t> records_bad_time_{0};
  std::atomic<std::uint64_t> overhead_ns_{0};
};

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  cuda_collector& self = cuda_collector::instance();
  if (domain == CUPTI_CB_DOMAIN_RESOURCE)
    self.on_resource(id, *static_cast<const CUpti_ResourceData*>(data));
  else
    self.on_api(domain, id, *static_cast<const CUpti_CallbackData*>(data));
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  cuda_collector::instance().buffer_requested(buffer, size, max_records);
}

void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size,
                                  size_t valid_size) {
  cuda_collector::instance().buffer_completed(context, stream, buffer, size, valid_size);
}

std::uint32_t device_of_context(CUcontext context) {
  std::uint32_t device = 0;
  cuptiGetDeviceId(context, &device);
  return device;
}

void deliver_records() { cuda_collector::instance().force_flush(); }

void cuda_collector::subscribe() {
  if (!runtime::session_active()) return;  // FERRET_BACKEND unset: stay out of the way
  const char* requested = std::getenv("FERRET_CUDA_API");
  const std::optional<cuda_api_setting> setting = parse_cuda_api(requested != nullptr ? requested : "work");
  if (!setting) {
    runtime::print_message(fmt::format("FERRET_CUDA_API='{}' is not valid (expected {}); running "
                                       "without GPU data",
                                       requested, cuda_api_values));
    return;
  }
  // Checked before CUPTI is asked anything, so that a bad value is said also where CUPTI cannot run.
  const char* sampling_value = std::getenv("FERRET_CUDA_PC_SAMPLING");
  std::optional<pc_sampling_setting> sampling = parse_pc_sampling(sampling_value);
  if (!sampling) {
    runtime::print_message(fmt::format("FERRET_CUDA_PC_SAMPLING='{}' is not valid (expected 0, 1, "
                                       "5 to 31 for a sample every 2^N cycles, or the cycles, a "
                                       "power of two; off, on, no, yes, false, true also); no "
                                       "instruction samples",
                                       sampling_value));
    sampling = pc_sampling_setting{};
  }
  const char* peer_value = std::getenv("FERRET_CUDA_PEER_ACCESSES");
  std::optional<bool> count_peer_accesses = compute_sanitizer::parse_peer_accesses(peer_value);
  if (!count_peer_accesses) {
    runtime::print_message(fmt::format("FERRET_CUDA_PEER_ACCESSES='{}' is not valid (expected 0 or 1, or off, on, no, yes, false, true); "
                                       "device-initiated traffic is not counted",
                                       peer_value));
    count_peer_accesses = false;
  }
  const char* metrics_value = std::getenv("FERRET_CUDA_METRICS_SAMPLING");
  std::optional<metrics_sampling_setting> metrics = parse_metrics_sampling(metrics_value);
  if (!metrics) {
    runtime::print_message(fmt::format("FERRET_CUDA_METRICS_SAMPLING='{}' is not valid (expected {}); "
                                       "no counters are sampled",
                                       metrics_value, metrics_sampling_values));
    metrics = metrics_sampling_setting{};
  }
  // Before CUPTI is touched: the two exclude each other (peer_access_counter.hpp).
  if (*count_peer_accesses && start_counting_run(*setting, sampling->on, metrics->on)) return;
  std::uint32_t version = 0;
  if (const CUptiResult result = cuptiGetVersion(&version); result != CUPTI_SUCCESS) {
    runtime::print_message(fmt::format("cannot use CUPTI ({}); running without GPU data", cupti_error(result)));
    return;
  }
  std::string error;
  if (!decoder_.select_version(version, error)) {
    runtime::print_message(fmt::format("{}; running without GPU data", error));
    return;
  }
  if (const CUptiResult result = cuptiSubscribe(&subscriber_, on_callback, nullptr);
      result != CUPTI_SUCCESS) {
    runtime::print_message(fmt::format(
        "{}; running without GPU data",
        subscription_failure(result, cupti_error(result), find_cuda_driver(), CUDA_VERSION)));
    return;
  }
  calls_ = std::make_unique<api_calls>(*setting, api_calls::services{device_of_context, deliver_records});
  driver_loaded_ = driver_.load();
  if (sampling->on)
    sampler_ = std::make_unique<pc_sampler>(*sampling, driver_loaded_ ? driver_.get_attribute : nullptr);
  if (metrics->on) {
    std::string metrics_error;
    metrics_ = metrics_sampler::start(*metrics, metrics_error);
    if (metrics_ == nullptr)
      runtime::print_message(fmt::format("FERRET_CUDA_METRICS_SAMPLING: {}; no counters are sampled", metrics_error));
  }
  // Before any kind is enabled, so that every record uses it.
  using_timestamp_callback_ =
      cuptiActivityRegisterTimestampCallback(timestamp_callback) == CUPTI_SUCCESS;
  if (!using_timestamp_callback_) refresh_offset();

  cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed);
  const CUpti_ActivityKind kinds[] = {
      CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
      CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
      CUPTI_ACTIVITY_KIND_MEMORY2,           CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
      CUPTI_ACTIVITY_KIND_DEVICE,            CUPTI_ACTIVITY_KIND_CONTEXT,
      CUPTI_ACTIVITY_KIND_OVERHEAD,
  };
  std::string refused;
  for (const CUpti_ActivityKind kind : kinds)
    if (const CUptiResult result = cuptiActivityEnable(kind); result != CUPTI_SUCCESS)
      refused += fmt::format("{}{} ({})", refused.empty() ? "" : ", ", static_cast<int>(kind),
                             cupti_error(result));
  if (!refused.empty())
    runtime::print_message(fmt::format("CUPTI refused activity kinds {}; their records are missing", refused));
  // A query that finds the event or stream not yet reached (a polling loop's
  // every turn but the last) gets no synchronisation record: its region shows
  // the poll; the record of the query that succeeds shows what was waited for.
  cuptiActivityEnableAllSyncRecords(0);
  if (decoder_.reading_newer_version() && runtime::verbosity() >= 2)
    runtime::print_message(fmt::format("libcupti {} is newer than CUDA {}: its records are read with "
                                       "that release's layouts, for the fields they share",
                                       version, decoder_.layouts_release()));

  subscribe_api_calls(*setting);
  cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                      CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  // Cubins, for the source lines of instruction samples.
  if (sampler_ != nullptr)
    cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
  // CUDA graphs: which data objects a replayed copy or memset touches.
  for (const CUpti_CallbackId id : {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED})
    cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, id);
  active_.store(true);
  runtime::register_collector(this);
}

// Callbacks only for the calls recorded or counted (api_table.cpp): a call
// left alone costs nothing.
void cuda_collector::subscribe_api_calls(const cuda_api_setting& setting) {
  const runtime::api_recording recording = setting.recording;
  const api_table& table = api_table::cuda();
  std::vector<std::string> refused_recorded;
  std::size_t refused_counted = 0;
  const auto enable = [&](CUpti_CallbackDomain domain, CUpti_CallbackId id, const api_call& kind) {
    if (cuptiEnableCallback(1, subscriber_, domain, id) == CUPTI_SUCCESS) return;
    if (!runtime::records(recording, kind.effect)) {
      ++refused_counted;
      return;
    }
    const char* name = nullptr;
    cuptiGetCallbackName(domain, id, &name);
    refused_recorded.push_back(api_name(name));
  };
  if (setting.driver_only) {
    // Not one runtime callback: see cuda_api_setting.
  } else if (recording == runtime::api_recording::all) {
    // Every runtime call, also those of a newer CUDA than the table knows.
    if (const CUptiResult result = cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
        result != CUPTI_SUCCESS)
      refused_recorded.push_back(fmt::format("the runtime API domain ({})", cupti_error(result)));
  } else {
    for (const CUpti_CallbackId id : table.runtime_subscriptions(recording))
      enable(CUPTI_CB_DOMAIN_RUNTIME_API, id, table.runtime_call(id));
  }
  for (const CUpti_CallbackId id : table.driver_calls())
    enable(CUPTI_CB_DOMAIN_DRIVER_API, id, table.driver_call(id));
  if (!refused_recorded.empty())
    runtime::print_message(fmt::format("CUPTI refused the callbacks of {} (first: {}); these calls "
                                       "are missing from the trace",
                                       refused_recorded.size(), refused_recorded.front()));
  if (refused_counted > 0 && runtime::verbosity() >= 2)
    runtime::print_message(fmt::format("CUPTI refused the callbacks of {} calls that would have "
                                       "been counted (FERRET_CUDA_API=work)",
                                       refused_counted));
}

void cuda_collector::on_resource(CUpti_CallbackId id, const CUpti_ResourceData& resource) {
  if (id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    if (sampler_ != nullptr) sampler_->context_destroying(resource.context);
    force_flush();  // the context's records, before it goes
    return;
  }
  if (id == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
    if (sampler_ != nullptr)
      sampler_->module_loaded(*static_cast<const CUpti_ModuleResourceData*>(resource.resourceDescriptor));
    return;
  }
  if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED || id == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    on_graph_node(id, *static_cast<const CUpti_GraphData*>(resource.resourceDescriptor));
    return;
  }
  std::uint32_t device = 0;
  std::uint32_t context = 0;
  if (id != CUPTI_CBID_RESOURCE_CONTEXT_CREATED ||
      cuptiGetDeviceId(resource.context, &device) != CUPTI_SUCCESS)
    return;
  if (cuptiGetContextId(resource.context, &context) == CUPTI_SUCCESS) {
    // Synchronization records name only the context.
    std::lock_guard lock{completed_mutex_};
    decoder_.add_context({context, device});
  }
  describe_device(device);
  if (sampler_ != nullptr) sampler_->context_created(resource.context, device);
  if (metrics_ != nullptr) metrics_->device_used(device);
}

void cuda_collector::on_graph_node(CUpti_CallbackId id, const CUpti_GraphData& graph) {
  std::uint64_t node = 0;
  if (calls_ == nullptr || graph.node == nullptr || cuptiGetGraphNodeId(graph.node, &node) != CUPTI_SUCCESS)
    return;
  if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    std::uint64_t original = 0;
    if (graph.originalNode != nullptr && cuptiGetGraphNodeId(graph.originalNode, &original) == CUPTI_SUCCESS)
      calls_->graph_node_cloned(original, node);
  } else {
    // CUPTI 13.0 leaves nodeType 0 here (seen on an H100): the node a copy or
    // memset call makes while capturing is known by the call it comes in.
    calls_->graph_node_created(node);
  }
}

void cuda_collector::describe_device(std::uint32_t device) {
  if (!driver_loaded_) return;
  std::lock_guard lock{completed_mutex_};
  if (std::find(described_devices_.begin(), described_devices_.end(), device) != described_devices_.end())
    return;
  described_devices_.push_back(device);
  const int ordinal = static_cast<int>(device);
  const auto attribute = [&](CUdevice_attribute which) {
    int value = 0;
    driver_.get_attribute(&value, which, ordinal);
    return static_cast<std::uint32_t>(std::max(value, 0));
  };
  gpu_device_info info{};
  info.id = device;
  char name[256] = {};
  if (driver_.get_name(name, sizeof name - 1, ordinal) == 0) info.name = name;
  std::size_t memory = 0;
  if (driver_.total_memory != nullptr && driver_.total_memory(&memory, ordinal) == 0)
    info.global_memory_bytes = memory;
  info.compute_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.compute_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.multiprocessors = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.max_warps_per_multiprocessor =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) /
      std::max<std::uint32_t>(attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE), 1);
  info.max_blocks_per_multiprocessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  info.max_registers_per_multiprocessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  info.max_registers_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  info.max_shared_memory_per_multiprocessor =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  info.max_shared_memory_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  decoder_.add_device(info);
  new_devices_.push_back(std::move(info));
}

void cuda_collector::buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *size = buffer_bytes;
  std::lock_guard lock{buffers_mutex_};
  if (!free_buffers_.empty()) {
    *buffer = free_buffers_.back();
    free_buffers_.pop_back();
    return;
  }
  if (buffers_allocated_ < max_buffers) {
    // CUPTI wants 8-byte alignment; operator new gives at least 16.
    *buffer = static_cast<uint8_t*>(::operator new(buffer_bytes, std::nothrow));
    if (*buffer != nullptr) {
      ++buffers_allocated_;
      return;
    }
  }
  *buffer = nullptr;  // CUPTI drops records until a buffer comes back, and counts them
  buffers_refused_.fetch_add(1, std::memory_order_relaxed);
}

void cuda_collector::buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer,
                                      size_t /*size*/, size_t valid_size) {
  // Decoded here, never flushed from here (CUPTI forbids it).
  if (buffer != nullptr && valid_size > 0) {
    std::lock_guard lock{completed_mutex_};
    CUpti_Activity* record = nullptr;
    std::uint64_t count = 0;
    decoded out{};
    while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
      ++count;
      switch (decoder_.decode(record, out)) {
        case decoded_kind::activity: {
          gpu_activity& activity = out.activity;
          if (activity.start_ns <= 0 || activity.end_ns < activity.start_ns) {
            records_bad_time_.fetch_add(1, std::memory_order_relaxed);
            break;
          }
          activity.start_ns = to_monotonic_raw(activity.start_ns);
          activity.end_ns = to_monotonic_raw(activity.end_ns);
          completed_.push_back(activity);
          break;
        }
        case decoded_kind::device:
          if (std::find(described_devices_.begin(), described_devices_.end(), out.device.id) ==
              described_devices_.end()) {
            described_devices_.push_back(out.device.id);
            new_devices_.push_back(out.device);
          }
          break;
        case decoded_kind::overhead:
          if (out.overhead.end_ns > out.overhead.start_ns)
            overhead_ns_.fetch_add(static_cast<std::uint64_t>(out.overhead.end_ns - out.overhead.start_ns),
                                   std::memory_order_relaxed);
          break;
        case decoded_kind::context:
        case decoded_kind::ignored: break;
      }
    }
    records_.fetch_add(count, std::memory_order_relaxed);
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS && dropped > 0)
    records_dropped_.fetch_add(dropped, std::memory_order_relaxed);
  if (buffer != nullptr) {
    std::lock_guard lock{buffers_mutex_};
    free_buffers_.push_back(buffer);
  }
}

void cuda_collector::force_flush() noexcept {
  if (active_.load()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void cuda_collector::refresh_offset() noexcept {
  const cupti_clock_reading now = read_cupti_clock();
  if (!now.read) return;
  offset_ns_.store(now.monotonic_raw_ns - static_cast<std::int64_t>(now.cupti_ns), std::memory_order_relaxed);
}

void cuda_collector::collect(std::vector<gpu_activity>& activities,
                             std::vector<gpu_device_info>& new_devices, bool final) {
  if (!active_.load()) return;
#ifdef FERRET_HAVE_PEER_ACCESS_PATCH
  if (counting_run_) {
    peer_accesses_->collect(final);
    const std::size_t first = activities.size();
    peer_accesses_->hand_over_kernels(activities);
    // The devices' limits, through driver calls that are ferret's, not the program's.
    const compute_sanitizer::peer_access_counter::own_calls own;
    if (!driver_loaded_) driver_loaded_ = driver_.load();
    for (std::size_t i = first; i < activities.size(); ++i) describe_device(activities[i].device);
    std::lock_guard lock{completed_mutex_};
    new_devices.insert(new_devices.end(), new_devices_.begin(), new_devices_.end());
    new_devices_.clear();
    return;
  }
#endif
  if (!using_timestamp_callback_) refresh_offset();
  // Samples first: every kernel that ended before this point has its record
  // in the flush below (sample_attribution.hpp).
  const std::int64_t now = runtime::monotonic_raw_ns();
  if (sampler_ != nullptr) sampler_->take(now);
  // Also the records of buffers not yet full, so that the trace keeps up with
  // the program and memory stays bounded; but forced only at the end: a
  // forced flush hands over the records of kernels still running or queued
  // with no timestamps, and they are lost (seen with kernels that spanned a drain).
  if (final)
    force_flush();
  else
    cuptiActivityFlushAll(0);
  std::vector<gpu_activity> done;
  {
    std::lock_guard lock{completed_mutex_};
    done.swap(completed_);
    new_devices.insert(new_devices.end(), new_devices_.begin(), new_devices_.end());
    new_devices_.clear();
  }
  calls_->name_objects(done);
  if (sampler_ != nullptr) sampler_->attribute(done, now, final);
  activities.insert(activities.end(), done.begin(), done.end());
}

void cuda_collector::add_metadata(runtime::metadata_list& metadata) const {
  const auto count = [](const std::atomic<std::uint64_t>& value) {
    return static_cast<std::int64_t>(value.load(std::memory_order_relaxed));
  };
#ifdef FERRET_HAVE_PEER_ACCESS_PATCH
  if (counting_run_) {
    metadata.emplace_back("cuda-collector", std::string{"Compute Sanitizer (FERRET_CUDA_PEER_ACCESSES=1): "
                                                        "kernels timed by ferret's patch, no other GPU operations"});
    calls_->add_metadata(metadata);
    peer_accesses_->add_metadata(metadata);
    return;
  }
#endif
  metadata.emplace_back("cupti-clock", using_timestamp_callback_
                                           ? std::string{"timestamp callback (CLOCK_MONOTONIC_RAW)"}
                                           : std::string{"offset to cuptiGetTimestamp"});
  metadata.emplace_back("cupti-records", count(records_));
  metadata.emplace_back("cupti-records-dropped", count(records_dropped_));
  metadata.emplace_back("cupti-buffers-refused", count(buffers_refused_));
  metadata.emplace_back("cupti-records-bad-timestamps-dropped", count(records_bad_time_));
  metadata.emplace_back("cupti-overhead-ns", count(overhead_ns_));
  calls_->add_metadata(metadata);
  if (sampler_ != nullptr) sampler_->add_metadata(metadata);
  if (metrics_ != nullptr) metrics_->add_metadata(metadata);
}

#ifdef FERRET_HAVE_PEER_ACCESS_PATCH
// Correlation ids of a counting run's calls: the outermost driver call of a
// thread takes one; calls it makes inside share it, as CUPTI's would.
std::atomic<std::uint64_t> next_counted_call{1};
thread_local std::uint64_t t_counted_call = 0;
thread_local std::uint32_t t_counted_depth = 0;

void forward_counted_driver_call(std::uint32_t id, const compute_sanitizer::api::callback_data& call) {
  cuda_collector::instance().on_counted_driver_call(id, call);
}

std::uint32_t device_of_counted_context(CUcontext context) {
  return cuda_collector::instance().counted_device_of(context);
}
#endif

void cuda_collector::on_counted_driver_call(std::uint32_t id, const compute_sanitizer::api::callback_data& call) {
#ifdef FERRET_HAVE_PEER_ACCESS_PATCH
  const bool entering = call.callback_site == compute_sanitizer::api::api_enter;
  if (entering && t_counted_depth++ == 0) t_counted_call = next_counted_call.fetch_add(1, std::memory_order_relaxed);
  CUpti_CallbackData translated{};
  translated.callbackSite = entering ? CUPTI_API_ENTER : CUPTI_API_EXIT;
  translated.functionName = call.function_name;
  translated.functionParams = call.function_params;
  translated.functionReturnValue = const_cast<void*>(call.function_return_value);  // CUPTI declares it writable
  translated.symbolName = call.symbol_name;
  translated.context = call.context;
  translated.correlationId = static_cast<std::uint32_t>(t_counted_call);
  // Only the outermost call: api_calls joins device work to it.
  if (t_counted_depth == 1) on_api(CUPTI_CB_DOMAIN_DRIVER_API, id, translated);
  if (!entering && t_counted_depth > 0) --t_counted_depth;
#else
  (void)id;
  (void)call;
#endif
}

// FERRET_CUDA_PEER_ACCESSES=1: the Compute Sanitizer counts device-initiated
// traffic and, since CUPTI cannot run beside it, also forwards the driver
// calls that api_calls records or counts. False (and one line said) when the
// sanitizer cannot be used: the run goes on with CUPTI, uncounted.
bool cuda_collector::start_counting_run(const cuda_api_setting& setting, bool pc_sampling_asked,
                                       bool metrics_asked) {
#ifdef FERRET_HAVE_PEER_ACCESS_PATCH
  compute_sanitizer::peer_access_counter::cubin_lines lines{
      cubin_has_line_info,
      [](const char* cubin, std::size_t bytes) { return cubin_function_names(cubin, bytes); },
      [](const std::string& cubin, const char* function, std::uint64_t pc_offset)
          -> std::optional<std::pair<std::string, std::uint32_t>> {
        if (auto source = source_of_instruction(cubin, function, pc_offset))
          return std::make_pair(std::move(source->path), source->line);
        return std::nullopt;
      }};
  std::string error;
  peer_accesses_ = compute_sanitizer::peer_access_counter::start(std::move(lines), forward_counted_driver_call, error);
  if (peer_accesses_ == nullptr) {
    runtime::print_message(fmt::format("FERRET_CUDA_PEER_ACCESSES=1: {}; device-initiated traffic is not "
                                       "counted (tracing with CUPTI instead)",
                                       error));
    return false;
  }
  // The driver calls only: the sanitizer numbers them as CUPTI does (compared
  // on the GPU machine: 809 of 809 ids, CUDA 13.0, docs/gpu-results.md).
  calls_ = std::make_unique<api_calls>(cuda_api_setting{setting.recording, true},
                                       api_calls::services{device_of_counted_context, nullptr});
  std::size_t refused = 0;
  for (const CUpti_CallbackId id : api_table::cuda().driver_calls())
    if (!peer_accesses_->forward_driver_call(id)) ++refused;
  if (refused > 0)
    runtime::print_message(fmt::format("FERRET_CUDA_PEER_ACCESSES=1: the Compute Sanitizer refused the "
                                       "callbacks of {} driver calls; these calls are missing",
                                       refused));
  runtime::print_message(fmt::format(
      "FERRET_CUDA_PEER_ACCESSES=1: counting device-initiated traffic with the Compute Sanitizer; CUPTI "
      "cannot run beside it, so this run has CUDA driver calls and kernels (timed as the counting slows them) "
      "but no copies, memsets or other GPU operations{}{}",
      pc_sampling_asked ? ", no instruction samples (FERRET_CUDA_PC_SAMPLING is ignored)" : "",
      metrics_asked ? ", no sampled counters (FERRET_CUDA_METRICS_SAMPLING is ignored)" : ""));
  counting_run_ = true;
  active_.store(true);
  runtime::register_collector(this);
  return true;
#else
  (void)setting;
  (void)pc_sampling_asked;
  (void)metrics_asked;
  runtime::print_message("FERRET_CUDA_PEER_ACCESSES=1: this ferret was built without nvcc, so without "
                         "its device patch; device-initiated traffic is not counted");
  return false;
#endif
}

void cuda_collector::abandon() noexcept {
  // In a fork child CUPTI's state is the parent's: stop listening, quietly.
  active_.store(false);
}

}  // namespace
}  // namespace ferret::cupti

// Referenced by code built against ferret::cuda (see ferret/detail/abi.hpp).
extern "C" FERRET_EXPORT const int ferret_cuda_collector_v1 = 1;

// The driver calls this when CUDA_INJECTION64_PATH names this library
// (tools/ferret-run), from cuInit.
extern "C" FERRET_EXPORT int InitializeInjection() {
  ferret::cupti::cuda_collector::instance().start();
  return 1;
}

namespace {
// Linked into a program (ferret::cuda): start with the program. Before main()
// is fine: CUPTI takes subscriptions before CUDA is initialised.
[[maybe_unused]] const bool started_at_load = [] {
  ferret::cupti::cuda_collector::instance().start();
  return true;
}();
}  // namespace
