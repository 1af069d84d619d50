// collector.cpp — the Level Zero collector (libferret_level_zero).
//
//   application thread (tracing-layer callbacks)     ferret's drain thread
//   ─────────────────────────────────────────────     ─────────────────────
//   zeCommandListAppendLaunchKernel                   collect(): a clock pair per
//     prologue: region begin, correlation id          device, then every pending
//       (immediate lists), the operation's            operation whose event is
//       attributes, its own KERNEL_TIMESTAMP          signalled: its kernel
//       event when the program passed none            timestamps, converted and
//     epilogue: the operation pending (immediate)     mapped (device_clock.hpp)
//       or recorded in its list (regular), end        → gpu_activity
//   zeCommandQueueExecuteCommandLists: the lists'
//     recorded operations pending, with this
//     call's correlation id
//
// The loader's tracing layer must be enabled before zeInit (loader 1.8:
// ZE_ENABLE_TRACING_LAYER=1): this library defines zeInit, sets the variable
// when the program did not, calls the loader's zeInit and then creates its
// tracer. Event pools the program creates get KERNEL_TIMESTAMP added, as
// Intel's PTI does, so that an operation with the program's own event is
// timed from that event; events are read before the program resets or
// destroys them, or after it synchronised.
//
// API calls are regions of domain "level_zero" in the calling thread's
// buffer; FERRET_LEVEL_ZERO_API picks which (api_policy.hpp).
//
// Locking: appends take one mutex (the collector's tables of lists, kernels,
// events and pending operations); the tracing layer itself allocates on
// every call it traces. docs/level-zero.md says what this costs.
#include <dlfcn.h>
#include <level_zero/layers/zel_tracing_api.h>
#include <level_zero/ze_api.h>
#include <time.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "api_table.hpp"
#include "device_clock.hpp"
#include "ferret/ferret.hpp"
#include "ferret/runtime/context_source.hpp"
#include "ferret/runtime/api_policy.hpp"
#include "ferret/runtime/runtime.hpp"

namespace ferret::level_zero {
namespace {

using runtime::api_effect;
using runtime::gpu_activity;
using runtime::gpu_device_info;
using runtime::gpu_operation;

// Level Zero devices get ids from 64, away from CUDA's ordinals.
constexpr std::uint32_t first_device_id = 64;
// Correlation ids above CUPTI's 32-bit range: a program may use both.
constexpr std::uint64_t first_correlation = std::uint64_t{1} << 40;
// Own events are made in pools of this size, per context.
constexpr std::uint32_t own_pool_events = 256;
// A clock pair older than this is refreshed before timestamps are mapped.
constexpr std::int64_t pair_refresh_ns = 100'000'000;

std::int64_t monotonic_raw_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The collector's own Level Zero calls outside a callback (the drain thread)
// pass through the tracing layer: their callbacks must do nothing.
FERRET_TLS_MODEL thread_local bool t_collector_call = false;

struct collector_call_scope {
  bool previous = t_collector_call;
  collector_call_scope() { t_collector_call = true; }
  ~collector_call_scope() { t_collector_call = previous; }
};

enum class handling : std::uint8_t {
  plain,
  launch_kernel,
  copy,
  fill,
  barrier,
  execute,
  synchronize_all,
  event_reset,
  event_pool_create,
  list_create,
  list_create_immediate,
  list_destroy,
  list_reset,
  queue_create,
  allocate_device,
  allocate_host,
  allocate_shared,
  release,
  kernel_create,
  kernel_destroy,
  kernel_group_size,
  queue_destroy,
  context_destroy,
};

struct call_kind {
  const char* name;
  api_effect effect;
  handling what;
};

#define FERRET_LEVEL_ZERO_KIND(group, member, params, name, effect, what) \
  call_kind{name, api_effect::effect, handling::what},
constexpr call_kind call_kinds[] = {FERRET_LEVEL_ZERO_CALLS(FERRET_LEVEL_ZERO_KIND)};
#undef FERRET_LEVEL_ZERO_KIND
constexpr std::size_t call_count = std::size(call_kinds);

// Each call's position in the table, for the callbacks' template argument.
struct call_index {
  enum : std::size_t {
#define FERRET_LEVEL_ZERO_INDEX(group, member, params, name, effect, what) group##_##member,
    FERRET_LEVEL_ZERO_CALLS(FERRET_LEVEL_ZERO_INDEX)
#undef FERRET_LEVEL_ZERO_INDEX
  };
};

struct device_state {
  std::uint32_t id;
  device_timer timer;
  clock_pair pair;
  std::uint32_t next_stream = 1;
};

// One device operation, from its append to its timestamps.
struct operation {
  gpu_activity activity;  // attributes known at the append; times and launch come later
  ze_event_handle_t event = nullptr;
  ze_context_handle_t context = nullptr;
  device_state* device = nullptr;
  bool own_event = false;
  bool recycle_event = false;  // own event of an immediate list: back to the free list
  std::int64_t submitted_ns = 0;
};

struct list_state {
  ze_context_handle_t context;
  device_state* device;
  bool immediate;
  std::uint32_t stream;          // immediate lists: their own
  std::vector<operation> recorded;  // regular lists: run at every execution
};

struct queue_state {
  device_state* device;
  std::uint32_t stream;
};

struct kernel_state {
  const char* name;  // interned
  std::uint32_t group_size[3] = {1, 1, 1};
  std::uint32_t simd_width = 0;
  std::uint32_t private_memory = 0;
  std::uint32_t local_memory = 0;
};

struct context_events {
  std::vector<ze_event_pool_handle_t> pools;
  std::vector<ze_event_handle_t> all;
  std::vector<ze_event_handle_t> free;
};

// What a prologue left for its epilogue (one call at a time per thread: the
// tracing layer does not trace calls made from callbacks). Scalars in
// initial-exec TLS: no TLS resolver call per callback.
FERRET_TLS_MODEL thread_local bool t_operation_prepared = false;  // added to pending_ or its list
FERRET_TLS_MODEL thread_local bool t_immediate = false;  // the prepared operation's list is immediate
FERRET_TLS_MODEL thread_local std::uint64_t t_correlation = 0;
FERRET_TLS_MODEL thread_local ze_event_pool_desc_t t_pool_desc{};

class level_zero_collector final : public runtime::collector {
 public:
  static level_zero_collector& instance() {
    // Leaked on purpose: the tracing layer may call back during static destruction.
    static auto* collector = new level_zero_collector;
    return *collector;
  }

  void prepare_environment();
  void start_tracing();

  void collect(std::vector<gpu_activity>& activities, std::vector<gpu_device_info>& new_devices,
               bool final) override;
  void add_metadata(runtime::metadata_list& metadata) const override;
  void abandon() noexcept override { active_.store(false); }

  template <std::size_t Index, typename Params>
  void enter(Params* params);
  template <std::size_t Index, typename Params>
  void leave(Params* params, ze_result_t result);

 private:
  level_zero_collector() = default;
  bool active() const noexcept { return active_.load(std::memory_order_relaxed) && !t_collector_call; }
  const detail::site* site_for(std::size_t index);
  void write_correlation(std::size_t index, std::uint64_t correlation);
  std::uint64_t new_correlation() noexcept { return next_correlation_.fetch_add(1, std::memory_order_relaxed); }

  device_state* device_of(ze_device_handle_t device);  // state_mutex_ held
  void refresh_pair(ze_device_handle_t handle, device_state& device);
  ze_event_handle_t own_event(ze_context_handle_t context);  // state_mutex_ held
  void release_own_event(ze_context_handle_t context, ze_event_handle_t event);
  std::int32_t memory_end(ze_context_handle_t context, const void* address, runtime::memory_kind* kind);
  // The operation an append adds, already pending (immediate lists) or recorded
  // in its list (regular lists), for the prologue to complete; nullptr if none.
  operation* prepare(ze_command_list_handle_t list, ze_event_handle_t* signal, gpu_operation kind);
  // The append failed: the operation prepare() added goes.
  void discard_prepared(ze_command_list_handle_t list, ze_event_handle_t signal);
  // Reads the timestamps of signalled pending operations; `only` limits it to one event.
  // `final`: the last drain, operations still running are counted and dropped.
  void harvest(bool final, ze_event_handle_t only = nullptr);  // state_mutex_ held
  void complete(operation& done, const ze_kernel_timestamp_result_t& times);

  std::atomic<bool> active_{false};
  runtime::api_recording recording_ = runtime::api_recording::work;
  zel_tracer_handle_t tracer_ = nullptr;

  std::atomic<const detail::site*> sites_[call_count] = {};
  std::atomic<std::uint64_t> counts_[call_count] = {};
  std::atomic<std::uint64_t> next_correlation_{first_correlation};

  std::mutex state_mutex_;
  std::unordered_map<ze_device_handle_t, device_state> devices_;
  std::vector<ze_device_handle_t> device_order_;
  std::vector<gpu_device_info> new_devices_;
  std::unordered_map<ze_command_list_handle_t, list_state> lists_;
  std::unordered_map<ze_command_queue_handle_t, queue_state> queues_;
  std::unordered_map<ze_kernel_handle_t, kernel_state> kernels_;
  std::set<std::string> kernel_names_;
  std::unordered_map<ze_context_handle_t, context_events> own_events_;
  std::deque<operation> pending_;
  std::vector<gpu_activity> completed_;

  std::atomic<std::uint64_t> operations_{0};
  std::atomic<std::uint64_t> untimed_{0};
  std::atomic<std::uint64_t> without_submission_{0};
  std::atomic<std::uint64_t> before_submission_{0};
  std::atomic<std::uint64_t> unfinished_at_exit_{0};
};

runtime::copy_kind copy_direction(std::int32_t source_device, std::int32_t destination_device) {
  if (source_device < 0) return destination_device < 0 ? runtime::copy_kind::host_to_host : runtime::copy_kind::host_to_device;
  if (destination_device < 0) return runtime::copy_kind::device_to_host;
  return source_device == destination_device ? runtime::copy_kind::device_to_device : runtime::copy_kind::peer_to_peer;
}

// ---------------------------------------------------------------------------
// Callbacks: one prologue and one epilogue per call of the table.

template <std::size_t Index, typename Params>
void ZE_APICALL on_enter(Params* params, ze_result_t, void*, void**) {
  level_zero_collector::instance().enter<Index>(params);
}

template <std::size_t Index, typename Params>
void ZE_APICALL on_leave(Params* params, ze_result_t result, void*, void**) {
  level_zero_collector::instance().leave<Index>(params, result);
}

// Fills the prologue and epilogue tables from FERRET_LEVEL_ZERO_CALLS: the
// calls the collector needs, and those the recording makes regions or counts.
void fill_callbacks(runtime::api_recording recording, zel_core_callbacks_t& prologues,
                    zel_core_callbacks_t& epilogues) {
#define FERRET_LEVEL_ZERO_SET(group, member, params, name, effect, what)                              \
  if (handling::what != handling::plain || runtime::subscribes(recording, api_effect::effect)) {     \
    prologues.group.member = &on_enter<call_index::group##_##member, params>;                       \
    epilogues.group.member = &on_leave<call_index::group##_##member, params>;                       \
  }
  FERRET_LEVEL_ZERO_CALLS(FERRET_LEVEL_ZERO_SET)
#undef FERRET_LEVEL_ZERO_SET
}

// ---------------------------------------------------------------------------

void level_zero_collector::prepare_environment() {
  if (!runtime::session_active()) return;
  // Loader 1.8 reads the variable in zeInit; a program's own setting wins
  // (ZE_ENABLE_TRACING_LAYER=0 leaves the program untraced, with one line).
  setenv("ZE_ENABLE_TRACING_LAYER", "1", 0);
  // The calling-context sources (Python call paths) before the loader loads
  // the tracing layer: a library with thread-local storage loaded after the
  // layer hides the layer's thread-local pointers to its enabled tracers from
  // LeakSanitizer, which then reports them as leaks.
  runtime::load_launch_context_sources();
}


void level_zero_collector::start_tracing() {
  if (!runtime::session_active() || tracer_ != nullptr) return;
  const char* requested = std::getenv("FERRET_LEVEL_ZERO_API");
  const std::optional<runtime::api_recording> recording =
      runtime::parse_api_recording(requested != nullptr ? requested : "work");
  if (!recording) {
    runtime::print_message(fmt::format("FERRET_LEVEL_ZERO_API='{}' is not valid (expected {}); running without "
                                       "Level Zero data",
                                       requested, runtime::api_recording_values));
    return;
  }
  recording_ = *recording;
  zel_tracer_desc_t desc{ZEL_STRUCTURE_TYPE_TRACER_DESC, nullptr, this};
  if (const ze_result_t result = zelTracerCreate(&desc, &tracer_); result != ZE_RESULT_SUCCESS) {
    tracer_ = nullptr;
    const char* layer = std::getenv("ZE_ENABLE_TRACING_LAYER");
    runtime::print_message(fmt::format(
        "the Level Zero tracing layer is not available (zelTracerCreate: 0x{:x}; ZE_ENABLE_TRACING_LAYER={}: "
        "it must be 1 before zeInit, and libze_tracing_layer.so.1 installed); running without Level Zero data",
        static_cast<unsigned>(result), layer != nullptr ? layer : "(unset)"));
    return;
  }
  zel_core_callbacks_t prologues{};
  zel_core_callbacks_t epilogues{};
  fill_callbacks(recording_, prologues, epilogues);
  zelTracerSetPrologues(tracer_, &prologues);
  zelTracerSetEpilogues(tracer_, &epilogues);
  active_.store(true);
  zelTracerSetEnabled(tracer_, 1);
  runtime::register_collector(this);
}

const detail::site* level_zero_collector::site_for(std::size_t index) {
  if (const detail::site* known = sites_[index].load(std::memory_order_acquire)) return known;
  const detail::runtime_api* api = detail::runtime();
  if (api == nullptr) return nullptr;
  const char* name = call_kinds[index].name;
  const detail::site* created = api->register_name(name, std::strlen(name), "level_zero");
  sites_[index].store(created, std::memory_order_release);
  return created;
}

// Inside the call's region: the Python frames behind it (when CPython runs
// the thread), then the correlation its device work carries.
void level_zero_collector::write_correlation(std::size_t index, std::uint64_t correlation) {
  runtime::record_launch_context();
  if (detail::recording())
    if (const detail::site* site = site_for(index))
      detail::write_with_payload(detail::word_of(site, detail::kind_correlation), correlation);
}

template <std::size_t Index, typename Params>
void level_zero_collector::enter(Params* params) {
  if (!active()) return;
  constexpr call_kind kind = call_kinds[Index];
  t_correlation = 0;
  t_operation_prepared = false;
  const bool as_region = runtime::records(recording_, kind.effect);
  if (!as_region && runtime::counts(recording_, kind.effect))
    counts_[Index].fetch_add(1, std::memory_order_relaxed);
  if (as_region && detail::recording())
    if (const detail::site* site = site_for(Index)) detail::write(detail::word_of(site, detail::kind_begin));

  if constexpr (kind.what == handling::launch_kernel) {
    std::lock_guard lock{state_mutex_};
    operation* launch = prepare(*params->phCommandList, params->phSignalEvent, gpu_operation::kernel);
    if (launch == nullptr) return;
    runtime::kernel_attributes& attributes = launch->activity.kernel;
    attributes.occupancy = -1;
    if (const auto it = kernels_.find(*params->phKernel); it != kernels_.end()) {
      const kernel_state& launched = it->second;
      launch->activity.name = launched.name;
      std::copy(std::begin(launched.group_size), std::end(launched.group_size), attributes.block);
      attributes.local_memory_per_thread = launched.private_memory;
      attributes.static_shared_memory = launched.local_memory;
      attributes.simd_width = launched.simd_width;
    }
    const ze_group_count_t* groups = nullptr;
    if constexpr (std::is_same_v<Params, ze_command_list_append_launch_kernel_indirect_params_t>)
      groups = nullptr;  // in device memory, filled by earlier work: not known at the append
    else
      groups = *params->ppLaunchFuncArgs;
    if (groups != nullptr) {
      attributes.grid[0] = groups->groupCountX;
      attributes.grid[1] = groups->groupCountY;
      attributes.grid[2] = groups->groupCountZ;
    }
  } else if constexpr (kind.what == handling::copy) {
    std::size_t bytes = 0;
    const void* source = nullptr;
    void* destination = nullptr;
    if constexpr (std::is_same_v<Params, ze_command_list_append_memory_copy_region_params_t>) {
      const ze_copy_region_t& region = **params->psrcRegion;
      bytes = std::size_t{region.width} * std::max(region.height, 1u) * std::max(region.depth, 1u);
      source = *params->psrcptr;
      destination = *params->pdstptr;
    } else {
      bytes = *params->psize;
      source = *params->psrcptr;
      destination = *params->pdstptr;
    }
    const std::uint64_t source_object = runtime::find_data_object_ref(source).id;
    const std::uint64_t destination_object = runtime::find_data_object_ref(destination).id;
    std::lock_guard lock{state_mutex_};
    operation* copy = prepare(*params->phCommandList, params->phSignalEvent, gpu_operation::memcpy);
    if (copy == nullptr) return;
    gpu_activity& activity = copy->activity;
    activity.bytes = bytes;
    activity.source_address = reinterpret_cast<std::uintptr_t>(source);
    activity.destination_address = reinterpret_cast<std::uintptr_t>(destination);
    activity.source_object_id = source_object;
    activity.destination_object_id = destination_object;
    // The source of a copy from another context is looked up in that context.
    ze_context_handle_t source_context = copy->context;
    if constexpr (std::is_same_v<Params, ze_command_list_append_memory_copy_from_context_params_t>)
      source_context = *params->phContextSrc;
    runtime::memory_kind ignored{};
    activity.source_device = memory_end(source_context, source, &ignored);
    activity.destination_device = memory_end(copy->context, destination, &ignored);
    activity.copy = copy_direction(activity.source_device, activity.destination_device);
  } else if constexpr (kind.what == handling::fill) {
    const std::uint64_t object = runtime::find_data_object_ref(*params->pptr).id;
    std::lock_guard lock{state_mutex_};
    operation* fill = prepare(*params->phCommandList, params->phSignalEvent, gpu_operation::memset);
    if (fill == nullptr) return;
    gpu_activity& activity = fill->activity;
    activity.bytes = *params->psize;
    activity.address = reinterpret_cast<std::uintptr_t>(*params->pptr);
    activity.destination_address = activity.address;
    runtime::memory_kind memory = runtime::memory_kind::host;
    memory_end(fill->context, *params->pptr, &memory);
    activity.memory = memory;
    activity.destination_object_id = object;
  } else if constexpr (kind.what == handling::barrier) {
    std::lock_guard lock{state_mutex_};
    operation* barrier = prepare(*params->phCommandList, params->phSignalEvent, gpu_operation::synchronization);
    if (barrier == nullptr) return;
    barrier->activity.detail = 2;  // the queue waits, as for a stream waiting on an event
  } else if constexpr (kind.what == handling::execute) {
    t_correlation = new_correlation();
    write_correlation(Index, t_correlation);
    const std::int64_t now = monotonic_raw_ns();
    std::lock_guard lock{state_mutex_};
    const auto queue = queues_.find(*params->phCommandQueue);
    bool harvested = false;
    for (std::uint32_t i = 0; i < *params->pnumCommandLists; ++i) {
      const auto list = lists_.find((*params->pphCommandLists)[i]);
      if (list == lists_.end() || queue == queues_.end()) {
        without_submission_.fetch_add(list == lists_.end() ? 0 : list->second.recorded.size(),
                                      std::memory_order_relaxed);
        continue;
      }
      for (const operation& recorded : list->second.recorded) {
        if (recorded.own_event && !harvested) {
          // Own events of an earlier run of this list: read before they signal again.
          harvest(false);
          harvested = true;
        }
        operation run = recorded;
        run.activity.launch.correlation = t_correlation;
        run.activity.stream = queue->second.stream;
        run.activity.device = queue->second.device->id;
        run.device = queue->second.device;
        run.submitted_ns = now;
        if (run.own_event) {
          // Still unread from an earlier run that has not finished: that run is lost.
          for (auto it = pending_.begin(); it != pending_.end();)
            if (it->event == run.event) {
              untimed_.fetch_add(1, std::memory_order_relaxed);
              it = pending_.erase(it);
            } else {
              ++it;
            }
        }
        pending_.push_back(run);
      }
    }
  } else if constexpr (kind.what == handling::event_reset) {
    // The program reuses or destroys the event: read it now.
    std::lock_guard lock{state_mutex_};
    harvest(false, *params->phEvent);
    for (auto it = pending_.begin(); it != pending_.end();)
      if (it->event == *params->phEvent && !it->own_event) {
        untimed_.fetch_add(1, std::memory_order_relaxed);
        it = pending_.erase(it);
      } else {
        ++it;
      }
  } else if constexpr (kind.what == handling::event_pool_create) {
    // Timestamps in the program's own events, as PTI does (IPC pools keep their flags).
    if ((*params->pdesc)->flags & ZE_EVENT_POOL_FLAG_IPC) return;
    t_pool_desc = **params->pdesc;
    t_pool_desc.flags |= ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
    *params->pdesc = &t_pool_desc;
  } else if constexpr (kind.what == handling::allocate_device || kind.what == handling::allocate_host ||
                       kind.what == handling::allocate_shared) {
    t_correlation = new_correlation();
    write_correlation(Index, t_correlation);
  } else if constexpr (kind.what == handling::release) {
    runtime::unregister_allocation(*params->pptr);
  } else if constexpr (kind.what == handling::list_destroy || kind.what == handling::list_reset) {
    std::lock_guard lock{state_mutex_};
    const auto list = lists_.find(*params->phCommandList);
    if (list == lists_.end()) return;
    for (const operation& recorded : list->second.recorded) {
      if (!recorded.own_event) continue;
      bool still_pending = false;
      for (operation& waiting : pending_)
        if (waiting.event == recorded.event) {
          waiting.recycle_event = true;
          still_pending = true;
        }
      if (!still_pending) release_own_event(recorded.context, recorded.event);
    }
    list->second.recorded.clear();
    if (kind.what == handling::list_destroy) lists_.erase(list);
  } else if constexpr (kind.what == handling::context_destroy) {
    // Own events go before their context does; what they hold is read first.
    std::lock_guard lock{state_mutex_};
    harvest(false);
    const auto events = own_events_.find(*params->phContext);
    if (events == own_events_.end()) return;
    for (auto it = pending_.begin(); it != pending_.end();)
      if (it->context == *params->phContext && it->own_event) {
        untimed_.fetch_add(1, std::memory_order_relaxed);
        it = pending_.erase(it);
      } else {
        ++it;
      }
    for (ze_event_handle_t event : events->second.all) zeEventDestroy(event);
    for (ze_event_pool_handle_t pool : events->second.pools) zeEventPoolDestroy(pool);
    own_events_.erase(events);
  } else if constexpr (kind.what == handling::kernel_destroy) {
    std::lock_guard lock{state_mutex_};
    kernels_.erase(*params->phKernel);
  } else if constexpr (kind.what == handling::queue_destroy) {
    std::lock_guard lock{state_mutex_};
    queues_.erase(*params->phCommandQueue);
  } else if constexpr (kind.what == handling::kernel_group_size) {
    std::lock_guard lock{state_mutex_};
    kernel_state& kernel = kernels_[*params->phKernel];
    kernel.group_size[0] = *params->pgroupSizeX;
    kernel.group_size[1] = *params->pgroupSizeY;
    kernel.group_size[2] = *params->pgroupSizeZ;
  }
  if constexpr (kind.what == handling::launch_kernel || kind.what == handling::copy ||
                kind.what == handling::fill || kind.what == handling::barrier) {
    // Immediate lists submit now: this call is the launch.
    if (t_operation_prepared && t_immediate) write_correlation(Index, t_correlation);
  }
}

template <std::size_t Index, typename Params>
void level_zero_collector::leave(Params* params, ze_result_t result) {
  if (!active()) return;
  constexpr call_kind kind = call_kinds[Index];
  const bool succeeded = result == ZE_RESULT_SUCCESS;
  if constexpr (kind.what == handling::launch_kernel || kind.what == handling::copy ||
                kind.what == handling::fill || kind.what == handling::barrier) {
    if (t_operation_prepared && !succeeded) {
      std::lock_guard lock{state_mutex_};
      discard_prepared(*params->phCommandList, *params->phSignalEvent);
    }
    t_operation_prepared = false;
  } else if constexpr (kind.what == handling::synchronize_all) {
    // The program waited: what it waited for is done, read it before it reuses events.
    if (succeeded) {
      std::lock_guard lock{state_mutex_};
      harvest(false);
    }
  } else if constexpr (kind.what == handling::list_create || kind.what == handling::list_create_immediate) {
    if (succeeded) {
      std::lock_guard lock{state_mutex_};
      device_state* device = device_of(*params->phDevice);
      const bool immediate = kind.what == handling::list_create_immediate;
      lists_[**params->pphCommandList] =
          list_state{*params->phContext, device, immediate, immediate ? device->next_stream++ : 0, {}};
    }
  } else if constexpr (kind.what == handling::queue_create) {
    if (succeeded) {
      std::lock_guard lock{state_mutex_};
      device_state* device = device_of(*params->phDevice);
      queues_[**params->pphCommandQueue] = queue_state{device, device->next_stream++};
    }
  } else if constexpr (kind.what == handling::kernel_create) {
    if (succeeded) {
      const ze_kernel_handle_t kernel = **params->pphKernel;
      ze_kernel_properties_t properties{};
      properties.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES;
      const bool described = zeKernelGetProperties(kernel, &properties) == ZE_RESULT_SUCCESS;
      const char* name = (*params->pdesc)->pKernelName;
      std::lock_guard lock{state_mutex_};
      kernel_state& state = kernels_[kernel] = kernel_state{};  // a handle may be reused
      state.name = kernel_names_.insert(name != nullptr ? name : "kernel").first->c_str();
      if (described) {
        state.simd_width = properties.maxSubgroupSize;
        state.private_memory = properties.privateMemSize;
        state.local_memory = properties.localMemSize;
      }
    }
  } else if constexpr (kind.what == handling::allocate_device || kind.what == handling::allocate_host ||
                       kind.what == handling::allocate_shared) {
    if (succeeded && **params->ppptr != nullptr) {
      std::int32_t device = -1;
      runtime::memory_kind memory = runtime::memory_kind::pinned;
      if constexpr (kind.what != handling::allocate_host) {
        std::lock_guard lock{state_mutex_};
        device = static_cast<std::int32_t>(device_of(*params->phDevice)->id);
        memory = kind.what == handling::allocate_device ? runtime::memory_kind::device : runtime::memory_kind::managed;
      }
      runtime::register_allocation(kind.name, t_correlation, **params->ppptr, *params->psize, memory, device);
    }
  }
  if (runtime::records(recording_, kind.effect) && detail::recording())
    if (const detail::site* site = site_for(Index)) detail::write(detail::word_of(site, detail::kind_end));
}


device_state* level_zero_collector::device_of(ze_device_handle_t handle) {
  const auto known = devices_.find(handle);
  if (known != devices_.end()) return &known->second;
  ze_device_properties_t properties{};
  properties.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2;
  zeDeviceGetProperties(handle, &properties);
  device_state& device = devices_[handle];
  device.id = first_device_id + static_cast<std::uint32_t>(device_order_.size());
  device.timer = {std::max<std::uint64_t>(properties.timerResolution, 1), properties.kernelTimestampValidBits};
  device_order_.push_back(handle);
  refresh_pair(handle, device);
  gpu_device_info info{};
  info.id = device.id;
  info.name = properties.name;
  info.multiprocessors = properties.numSlices * properties.numSubslicesPerSlice * properties.numEUsPerSubslice;
  ze_device_compute_properties_t compute{};
  compute.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  if (zeDeviceGetComputeProperties(handle, &compute) == ZE_RESULT_SUCCESS) {
    info.max_threads_per_block = compute.maxTotalGroupSize;
    info.max_shared_memory_per_block = compute.maxSharedLocalMemory;
  }
  new_devices_.push_back(std::move(info));
  return &device;
}

void level_zero_collector::refresh_pair(ze_device_handle_t handle, device_state& device) {
  // The driver reads both clocks together; the host's is CLOCK_MONOTONIC_RAW on Linux.
  std::uint64_t host = 0;
  std::uint64_t ticks = 0;
  if (zeDeviceGetGlobalTimestamps(handle, &host, &ticks) != ZE_RESULT_SUCCESS) return;
  device.pair = {static_cast<std::int64_t>(host), ticks & device.timer.mask()};
}

ze_event_handle_t level_zero_collector::own_event(ze_context_handle_t context) {
  context_events& events = own_events_[context];
  if (events.free.empty()) {
    ze_event_pool_desc_t desc{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr,
                              ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP | ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                              own_pool_events};
    ze_event_pool_handle_t pool = nullptr;
    if (zeEventPoolCreate(context, &desc, 0, nullptr, &pool) != ZE_RESULT_SUCCESS) return nullptr;
    events.pools.push_back(pool);
    for (std::uint32_t i = 0; i < own_pool_events; ++i) {
      ze_event_desc_t event_desc{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, i, ZE_EVENT_SCOPE_FLAG_HOST,
                                 ZE_EVENT_SCOPE_FLAG_HOST};
      ze_event_handle_t event = nullptr;
      if (zeEventCreate(pool, &event_desc, &event) != ZE_RESULT_SUCCESS) break;
      events.all.push_back(event);
      events.free.push_back(event);
    }
    if (events.free.empty()) return nullptr;
  }
  const ze_event_handle_t event = events.free.back();
  events.free.pop_back();
  return event;
}

void level_zero_collector::release_own_event(ze_context_handle_t context, ze_event_handle_t event) {
  const auto events = own_events_.find(context);
  if (events == own_events_.end()) return;
  zeEventHostReset(event);
  events->second.free.push_back(event);
}

std::int32_t level_zero_collector::memory_end(ze_context_handle_t context, const void* address,
                                              runtime::memory_kind* memory) {
  ze_memory_allocation_properties_t properties{};
  properties.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
  ze_device_handle_t device = nullptr;
  if (zeMemGetAllocProperties(context, address, &properties, &device) != ZE_RESULT_SUCCESS) return -1;
  switch (properties.type) {
    case ZE_MEMORY_TYPE_DEVICE: *memory = runtime::memory_kind::device; break;
    case ZE_MEMORY_TYPE_SHARED: *memory = runtime::memory_kind::managed; break;
    case ZE_MEMORY_TYPE_HOST: *memory = runtime::memory_kind::pinned; return -1;
    default: *memory = runtime::memory_kind::host; return -1;
  }
  if (device == nullptr) return -1;
  return static_cast<std::int32_t>(device_of(device)->id);
}

operation* level_zero_collector::prepare(ze_command_list_handle_t handle, ze_event_handle_t* signal,
                                         gpu_operation kind) {
  const auto list = lists_.find(handle);
  if (list == lists_.end()) {
    // Created before the tracer: no device, context or queue to give it.
    without_submission_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  list_state& target = list->second;
  operation made{};
  made.activity.operation = kind;
  made.activity.device = target.device->id;
  made.activity.stream = target.stream;
  made.activity.source_device = -1;
  made.activity.destination_device = -1;
  made.context = target.context;
  made.device = target.device;
  made.submitted_ns = monotonic_raw_ns();
  if (*signal == nullptr) {
    // The program waits for no event of its own: the operation signals one of ours.
    *signal = own_event(target.context);
    made.own_event = *signal != nullptr;
    made.recycle_event = target.immediate;
  }
  made.event = *signal;
  if (made.event == nullptr) {
    untimed_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  t_operation_prepared = true;
  t_immediate = target.immediate;
  if (!target.immediate) {
    target.recorded.push_back(made);
    return &target.recorded.back();
  }
  // An immediate list submits now: this call is the launch. Pending before the
  // driver has the event: unsignalled, the drain leaves it alone.
  t_correlation = new_correlation();
  made.activity.launch.correlation = t_correlation;
  pending_.push_back(made);
  return &pending_.back();
}

void level_zero_collector::discard_prepared(ze_command_list_handle_t handle, ze_event_handle_t signal) {
  const auto drop = [&](const operation& failed) {
    if (failed.own_event) release_own_event(failed.context, failed.event);
  };
  if (t_immediate) {
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it)
      if (it->event == signal) {
        drop(*it);
        pending_.erase(std::next(it).base());
        return;
      }
    return;
  }
  const auto list = lists_.find(handle);
  if (list == lists_.end() || list->second.recorded.empty()) return;
  drop(list->second.recorded.back());
  list->second.recorded.pop_back();
}

void level_zero_collector::harvest(bool final, ze_event_handle_t only) {
  const std::int64_t now = monotonic_raw_ns();
  for (auto it = pending_.begin(); it != pending_.end();) {
    operation& waiting = *it;
    if (only != nullptr && waiting.event != only) {
      ++it;
      continue;
    }
    if (zeEventQueryStatus(waiting.event) != ZE_RESULT_SUCCESS) {
      if (final) {
        unfinished_at_exit_.fetch_add(1, std::memory_order_relaxed);
        it = pending_.erase(it);
      } else {
        ++it;
      }
      continue;
    }
    ze_kernel_timestamp_result_t times{};
    if (zeEventQueryKernelTimestamp(waiting.event, &times) != ZE_RESULT_SUCCESS) {
      untimed_.fetch_add(1, std::memory_order_relaxed);
    } else {
      device_state& device = *waiting.device;
      if (now - device.pair.host_ns > pair_refresh_ns) refresh_pair(device_order_[device.id - first_device_id], device);
      complete(waiting, times);
    }
    if (waiting.own_event) {
      if (waiting.recycle_event)
        release_own_event(waiting.context, waiting.event);
      else
        zeEventHostReset(waiting.event);  // a regular list's: signalled again at its next run
    }
    it = pending_.erase(it);
  }
}

void level_zero_collector::complete(operation& done, const ze_kernel_timestamp_result_t& times) {
  const device_timer& timer = done.device->timer;
  const std::uint64_t mask = timer.mask();
  const std::uint64_t start_ticks = times.global.kernelStart & mask;
  const std::uint64_t end_ticks = times.global.kernelEnd & mask;
  gpu_activity activity = done.activity;
  activity.start_ns = timer.host_ns(done.device->pair, start_ticks);
  activity.end_ns = activity.start_ns + timer.nanoseconds(static_cast<std::int64_t>(timer.elapsed(start_ticks, end_ticks)));
  // One tick of slack: the conversion rounds, the submission time is read on the host.
  if (activity.start_ns + timer.nanoseconds(1) + 1 < done.submitted_ns)
    before_submission_.fetch_add(1, std::memory_order_relaxed);
  operations_.fetch_add(1, std::memory_order_relaxed);
  completed_.push_back(activity);
}

void level_zero_collector::collect(std::vector<gpu_activity>& activities, std::vector<gpu_device_info>& new_devices,
                                   bool final) {
  if (!active_.load()) return;
  collector_call_scope scope;
  std::lock_guard lock{state_mutex_};
  for (auto& [handle, device] : devices_) refresh_pair(handle, device);
  harvest(final);
  activities.insert(activities.end(), completed_.begin(), completed_.end());
  completed_.clear();
  new_devices.insert(new_devices.end(), new_devices_.begin(), new_devices_.end());
  new_devices_.clear();
}

void level_zero_collector::add_metadata(runtime::metadata_list& metadata) const {
  const auto count = [](const std::atomic<std::uint64_t>& value) {
    return static_cast<std::int64_t>(value.load(std::memory_order_relaxed));
  };
  metadata.emplace_back("level-zero-api", std::string{runtime::to_string(recording_)});
  metadata.emplace_back("level-zero-operations", count(operations_));
  metadata.emplace_back("level-zero-operations-untimed", count(untimed_));
  metadata.emplace_back("level-zero-operations-without-submission", count(without_submission_));
  metadata.emplace_back("level-zero-operations-unfinished-at-exit", count(unfinished_at_exit_));
  metadata.emplace_back("level-zero-timestamps-before-submission", count(before_submission_));
  for (std::size_t i = 0; i < call_count; ++i)
    if (const std::uint64_t calls = counts_[i].load(std::memory_order_relaxed); calls > 0)
      metadata.emplace_back(std::string{"level-zero"} + std::string{runtime::api_unrecorded_infix} + call_kinds[i].name,
                            static_cast<std::int64_t>(calls));
}

}  // namespace
}  // namespace ferret::level_zero

// The program's zeInit reaches the loader through this one (linked before the
// loader, or preloaded by ferret-run): the tracing layer is enabled before the
// loader initialises and the tracer created after.
extern "C" FERRET_EXPORT ze_result_t ZE_APICALL zeInit(ze_init_flags_t flags) {
  using init_function = ze_result_t(ZE_APICALL*)(ze_init_flags_t);
  static const auto loader_init = reinterpret_cast<init_function>(dlsym(RTLD_NEXT, "zeInit"));
  if (loader_init == nullptr) return ZE_RESULT_ERROR_UNINITIALIZED;
  auto& collector = ferret::level_zero::level_zero_collector::instance();
  collector.prepare_environment();
  const ze_result_t result = loader_init(flags);
  if (result == ZE_RESULT_SUCCESS) collector.start_tracing();
  return result;
}

// Referenced by code built against ferret::level_zero, so that --as-needed keeps it.
extern "C" FERRET_EXPORT const int ferret_level_zero_collector_v1 = 1;
