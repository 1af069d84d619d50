// The CUDA collector's API callbacks; see api_calls.hpp.
#include "api_calls.hpp"

#include "call_addresses.hpp"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <optional>

#include "ferret/runtime/context_source.hpp"
#include "ferret/runtime/runtime.hpp"

namespace ferret::cupti {
namespace {

using runtime::api_effect;

// Runtime API calls open on this thread (initial-exec: no TLS resolver call per callback).
FERRET_TLS_MODEL thread_local int t_runtime_depth = 0;
// The copy or memset call open on this thread whose objects were kept (its
// correlation id; 0: none): a graph node it makes while capturing gets them.
FERRET_TLS_MODEL thread_local std::uint32_t t_open_object_call = 0;

const void* as_pointer(CUdeviceptr address) { return reinterpret_cast<const void*>(address); }

struct allocation {
  const void* address;
  std::size_t bytes;
};

allocation allocation_of(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* params) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (id) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
        const auto* p = static_cast<const cudaMalloc_v3020_params*>(params);
        return {*p->devPtr, p->size};
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020: {
        const auto* p = static_cast<const cudaMallocAsync_v11020_params*>(params);
        return {*p->devPtr, p->size};
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020: {
        const auto* p = static_cast<const cudaMallocFromPoolAsync_v11020_params*>(params);
        return {*p->ptr, p->size};
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
        const auto* p = static_cast<const cudaMallocManaged_v6000_params*>(params);
        return {*p->devPtr, p->size};
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
        const auto* p = static_cast<const cudaMallocHost_v3020_params*>(params);
        return {*p->ptr, p->size};
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
        const auto* p = static_cast<const cudaHostAlloc_v3020_params*>(params);
        return {*p->pHost, p->size};
      }
      default: return {nullptr, 0};
    }
  }
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      const auto* p = static_cast<const cuMemAlloc_v2_params*>(params);
      return {as_pointer(*p->dptr), p->bytesize};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      const auto* p = static_cast<const cuMemAllocAsync_params*>(params);
      return {as_pointer(*p->dptr), p->bytesize};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      const auto* p = static_cast<const cuMemAllocFromPoolAsync_params*>(params);
      return {as_pointer(*p->dptr), p->bytesize};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      const auto* p = static_cast<const cuMemAllocManaged_params*>(params);
      return {as_pointer(*p->dptr), p->bytesize};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
      const auto* p = static_cast<const cuMemAllocHost_v2_params*>(params);
      return {*p->pp, p->bytesize};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
      const auto* p = static_cast<const cuMemHostAlloc_params*>(params);
      return {*p->pp, p->bytesize};
    }
    default: return {nullptr, 0};
  }
}

const void* released_address(CUpti_CallbackDomain domain, call_handling parameters,
                             const void* params) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (parameters == call_handling::release_host)
      return static_cast<const cudaFreeHost_v3020_params*>(params)->ptr;
    // cudaFree and cudaFreeAsync both start with devPtr.
    return static_cast<const cudaFree_v3020_params*>(params)->devPtr;
  }
  if (parameters == call_handling::release_host)
    return static_cast<const cuMemFreeHost_params*>(params)->p;
  // cuMemFree_v2 and cuMemFreeAsync both start with dptr.
  return as_pointer(static_cast<const cuMemFree_v2_params*>(params)->dptr);
}
static_assert(offsetof(cudaFreeAsync_v11020_params, devPtr) == 0 &&
                  offsetof(cuMemFreeAsync_params, dptr) == 0,
              "free parameters start with the pointer");

// Whether device records carry the call's correlation id at its entry: not a
// query's (at its return), an event record's, nor a graph node's (its records
// carry the graph launch's).
bool has_device_records(call_handling handling) {
  switch (handling) {
    case call_handling::query:
    case call_handling::marker:
    case call_handling::graph_copy:
    case call_handling::graph_copy_1d:
    case call_handling::graph_set:
    case call_handling::graph_node:
    case call_handling::graph_node_with_edges: return false;
    default: return true;
  }
}

bool allocates(call_handling parameters) {
  return parameters == call_handling::allocate_device ||
         parameters == call_handling::allocate_managed ||
         parameters == call_handling::allocate_pinned;
}

// cudaSuccess and CUDA_SUCCESS are both 0; the value is there on exit only.
bool succeeded(const CUpti_CallbackData& call) {
  return call.functionReturnValue != nullptr &&
         *static_cast<const int*>(call.functionReturnValue) == 0;
}

// Calls whose device records the runtime joins to them (by correlation id).
bool does_gpu_work(api_effect effect) {
  return effect != api_effect::other && effect != api_effect::internal;
}

}  // namespace

std::string api_name(const char* function) {
  std::string name = function != nullptr ? function : "cuda?";
  const std::size_t suffix = name.rfind("_v");
  if (suffix != std::string::npos && suffix + 2 < name.size() &&
      std::all_of(name.begin() + static_cast<std::ptrdiff_t>(suffix) + 2, name.end(),
                  [](unsigned char c) { return c >= '0' && c <= '9'; }))
    name.erase(suffix);
  return name;
}

api_calls::api_calls(cuda_api_setting setting, services needs)
    : setting_(setting), services_(needs) {}

void api_calls::on_api(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                       const CUpti_CallbackData& call) {
  const bool runtime_call = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  const bool entering = call.callbackSite == CUPTI_API_ENTER;
  if (runtime_call) {
    t_runtime_depth += entering ? 1 : -1;
  } else if (t_runtime_depth > 0) {
    // A driver call inside a runtime call is the runtime's implementation:
    // the device work carries the runtime call's correlation id.
    return;
  }
  const api_call& kind = runtime_call ? table_.runtime_call(id) : table_.driver_call(id);
  if (!runtime::records(recording_, kind.effect)) {
    if (entering && runtime_call && runtime::counts(recording_, kind.effect))
      count(id, call.functionName);
    return;
  }
  if (entering)
    enter(domain, id, kind, call);
  else
    leave(domain, id, kind, call);
}

void api_calls::enter(CUpti_CallbackDomain domain, CUpti_CallbackId id, const api_call& kind,
                      const CUpti_CallbackData& call) {
  if (does_gpu_work(kind.effect)) {
    enter_work_call(domain, id, kind, call);
    return;
  }
  if (detail::recording())
    if (const detail::site* site = site_for(domain, id, call.functionName))
      detail::write(detail::word_of(site, detail::kind_begin));
}

// The one place where a call that starts, waits for or orders GPU work is
// entered: everything the trace later ties to its device records is taken
// here, on the calling thread, before the call runs.
void api_calls::enter_work_call(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                const api_call& kind, const CUpti_CallbackData& call) {
  if (kind.handling == call_handling::reset && services_.deliver_records != nullptr)
    services_.deliver_records();
  if (kind.handling == call_handling::release_device ||
      kind.handling == call_handling::release_host)
    runtime::unregister_allocation(released_address(domain, kind.handling, call.functionParams));
  if (kind.handling == call_handling::unmap_range)
    runtime::unregister_allocation(
        as_pointer(static_cast<const cuMemUnmap_params*>(call.functionParams)->ptr));
  if (kind.handling == call_handling::release_physical) {
    std::lock_guard lock{calls_mutex_};
    physical_by_handle_.erase(static_cast<const cuMemRelease_params*>(call.functionParams)->handle);
  }
  if (detail::recording())
    if (const detail::site* site = site_for(domain, id, call.functionName)) {
      detail::write(detail::word_of(site, detail::kind_begin));
      // The Python frames (or other sources' context) behind this call, as
      // context of its GPU work (a query's correlation follows at its return,
      // under the same stack).
      if (kind.handling != call_handling::marker) runtime::record_launch_context();
      if (has_device_records(kind.handling))
        detail::write_with_payload(detail::word_of(site, detail::kind_correlation),
                                   call.correlationId);
    }
  if (!names_objects(kind.handling)) return;
  const call_addresses addresses = addresses_of(domain, kind.handling, call.functionParams);
  const runtime::data_object_ref destination = runtime::find_data_object_ref(addresses.destination);
  const runtime::data_object_ref source =
      addresses.source != nullptr ? runtime::find_data_object_ref(addresses.source) : runtime::data_object_ref{};
  if (destination.id != 0 || source.id != 0) {
    const auto on_device = [](const runtime::data_object_ref& object) {
      return object.id != 0 && object.memory == runtime::memory_kind::device;
    };
    t_open_object_call = call.correlationId;
    std::lock_guard lock{calls_mutex_};
    objects_by_call_[call.correlationId] = {
        source.id, destination.id, cycle_,
        reinterpret_cast<std::uintptr_t>(addresses.source),
        reinterpret_cast<std::uintptr_t>(addresses.destination),
        on_device(source) && on_device(destination)};
  }
}

void api_calls::leave(CUpti_CallbackDomain domain, CUpti_CallbackId id, const api_call& kind,
                      const CUpti_CallbackData& call) {
  if (t_open_object_call == call.correlationId) t_open_object_call = 0;
  if (allocates(kind.handling) && succeeded(call)) {
    const allocation made = allocation_of(domain, id, call.functionParams);
    const bool on_device = kind.handling != call_handling::allocate_pinned;
    const std::uint32_t device = on_device && call.context != nullptr && services_.device_of != nullptr
                                     ? services_.device_of(call.context)
                                     : 0;
    const runtime::memory_kind memory =
        kind.handling == call_handling::allocate_managed  ? runtime::memory_kind::managed
        : kind.handling == call_handling::allocate_pinned ? runtime::memory_kind::pinned
                                                              : runtime::memory_kind::device;
    if (made.address != nullptr && made.bytes > 0)
      runtime::register_allocation(api_name(call.functionName), call.correlationId, made.address,
                                   made.bytes, memory, on_device ? static_cast<int>(device) : -1);
  }
  if (kind.handling == call_handling::create_physical && succeeded(call)) {
    const auto* p = static_cast<const cuMemCreate_params*>(call.functionParams);
    const bool on_device = p->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    std::lock_guard lock{calls_mutex_};
    physical_by_handle_[*p->handle] = {on_device ? runtime::memory_kind::device : runtime::memory_kind::pinned,
                                       on_device ? p->prop->location.id : -1};
  }
  if (kind.handling == call_handling::map_range && succeeded(call)) {
    // The mapped range is what copies and kernels address: an object like a
    // cudaMalloc's, where the physical memory lives (the current context's
    // device when the handle was created before ferret subscribed).
    const auto* p = static_cast<const cuMemMap_params*>(call.functionParams);
    physical_memory where{runtime::memory_kind::device,
                          call.context != nullptr && services_.device_of != nullptr
                              ? static_cast<int>(services_.device_of(call.context))
                              : 0};
    {
      std::lock_guard lock{calls_mutex_};
      if (const auto it = physical_by_handle_.find(p->handle); it != physical_by_handle_.end())
        where = it->second;
    }
    if (p->ptr != 0 && p->size > 0)
      runtime::register_allocation(api_name(call.functionName), call.correlationId, as_pointer(p->ptr),
                                   p->size, where.memory, where.device);
  }
  if (detail::recording())
    if (const detail::site* site = site_for(domain, id, call.functionName)) {
      // A query that found the work done: its synchronisation record comes.
      if (kind.handling == call_handling::query && succeeded(call))
        detail::write_with_payload(detail::word_of(site, detail::kind_correlation),
                                   call.correlationId);
      detail::write(detail::word_of(site, detail::kind_end));
    }
}

void api_calls::count(CUpti_CallbackId id, const char* function) noexcept {
  if (id >= counts_.size()) return;
  // The thread that counts a call first names it; functionName is a constant.
  if (counted_names_[id].load(std::memory_order_relaxed) == nullptr)
    counted_names_[id].store(function, std::memory_order_relaxed);
  counts_[id].fetch_add(1, std::memory_order_relaxed);
}

const detail::site* api_calls::site_for(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                        const char* function) {
  auto& sites = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_sites_ : driver_sites_;
  if (id >= sites.size()) return nullptr;
  if (const detail::site* known = sites[id].load(std::memory_order_acquire)) return known;
  // Racing threads get the same record: the runtime interns names.
  const detail::runtime_api* api = detail::runtime();
  if (api == nullptr) return nullptr;
  const std::string name = api_name(function);
  const detail::site* created = api->register_name(name.data(), name.size(), "cuda");
  sites[id].store(created, std::memory_order_release);
  return created;
}

void api_calls::name_objects(std::vector<runtime::gpu_activity>& activities) {
  std::lock_guard lock{calls_mutex_};
  ++cycle_;
  for (runtime::gpu_activity& activity : activities) {
    if (activity.operation != runtime::gpu_operation::memcpy &&
        activity.operation != runtime::gpu_operation::memset)
      continue;
    const objects_of_call* found = nullptr;
    if (const auto it = objects_by_call_.find(static_cast<std::uint32_t>(activity.launch.correlation));
        it != objects_by_call_.end())
      found = &it->second;
    else if (activity.graph_node != 0)
      if (const auto node = objects_by_graph_node_.find(activity.graph_node); node != objects_by_graph_node_.end()) {
        node->second.cycle = cycle_;
        found = &node->second;
      }
    if (found == nullptr) continue;
    const objects_of_call& objects = *found;
    const bool staged_to_host = objects.between_devices && activity.copy == runtime::copy_kind::device_to_host;
    const bool staged_from_host = objects.between_devices && activity.copy == runtime::copy_kind::host_to_device;
    if (!staged_from_host) {
      activity.source_object_id = objects.source;
      activity.source_address = objects.source_address;
    }
    if (!staged_to_host) {
      activity.destination_object_id = objects.destination;
      activity.destination_address = objects.destination_address;
    }
  }
  // Calls whose records are in: a few drains later nothing refers to them.
  for (auto it = objects_by_call_.begin(); it != objects_by_call_.end();)
    it = cycle_ > it->second.cycle + 50 ? objects_by_call_.erase(it) : std::next(it);
  // Graph nodes: CUPTI says a node is destroyed when cudaGraphInstantiate
  // turns it into another, and its records still carry its id (seen on an
  // H100): a node is forgotten when no record used it for 1000 drains.
  if (cycle_ % 100 == 0)
    for (auto it = objects_by_graph_node_.begin(); it != objects_by_graph_node_.end();)
      it = cycle_ > it->second.cycle + 1000 ? objects_by_graph_node_.erase(it) : std::next(it);
}

void api_calls::graph_node_created(std::uint64_t node) {
  if (t_open_object_call == 0) return;
  std::lock_guard lock{calls_mutex_};
  if (const auto it = objects_by_call_.find(t_open_object_call); it != objects_by_call_.end()) {
    objects_of_call& kept = objects_by_graph_node_[node];
    kept = it->second;
    kept.cycle = cycle_;
  }
}

void api_calls::graph_node_cloned(std::uint64_t original, std::uint64_t clone) {
  std::lock_guard lock{calls_mutex_};
  if (const auto it = objects_by_graph_node_.find(original); it != objects_by_graph_node_.end()) {
    objects_of_call copied = it->second;
    copied.cycle = cycle_;
    objects_by_graph_node_[clone] = copied;
  }
}

void api_calls::add_metadata(runtime::metadata_list& metadata) const {
  metadata.emplace_back("cuda-api", std::string{to_string(setting_)});
  // Versions of one call ("cudaStreamDestroy_v3020", "_v5050") add up under its name.
  std::map<std::string, std::uint64_t> by_name;
  for (std::size_t id = 0; id < counts_.size(); ++id)
    if (const std::uint64_t calls = counts_[id].load(std::memory_order_relaxed); calls > 0)
      by_name[api_name(counted_names_[id].load(std::memory_order_relaxed))] += calls;
  for (const auto& [name, calls] : by_name)
    metadata.emplace_back(std::string{"cuda"} + std::string{runtime::api_unrecorded_infix} + name,
                          static_cast<std::int64_t>(calls));
}

}  // namespace ferret::cupti
