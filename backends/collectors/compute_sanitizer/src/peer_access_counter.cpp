// peer_access_counter.cpp — see peer_access_counter.hpp.
#include "peer_access_counter.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <unordered_set>

#include <cupti.h>  // the driver calls' callback ids and parameters (types only)

#include "peer_access_patch_fatbin.h"  // ferret_peer_access_patch_fatbin: built by nvcc (CMakeLists.txt)

namespace ferret::compute_sanitizer {
namespace {

// Per context: this many launches in flight are counted at once (one more
// waits for a slot: not counted, said); each may count this many distinct
// (instruction, range, kind) keys before its accesses are counted lost.
constexpr std::uint32_t slots_per_context = 256;
constexpr std::uint32_t counters_per_launch = 4096;  // NCCL's kernels filled 1 024 (2×H200, NCCL 2.28)
constexpr std::size_t launch_struct_bytes = 64;
static_assert(sizeof(ferret_peer_launch) <= launch_struct_bytes);
constexpr std::size_t counters_bytes = sizeof(ferret_peer_counter) * counters_per_launch;
constexpr std::size_t slab_bytes = (launch_struct_bytes + counters_bytes) * slots_per_context;

// The counting function, or (FERRET_PEER_ACCESS_EMPTY_PATCH=1, for the
// benchmark's breakdown of the cost) one that returns at once.
const char* patch_function() {
  static const char* const chosen = [] {
    const char* empty = std::getenv("FERRET_PEER_ACCESS_EMPTY_PATCH");
    return empty != nullptr && std::string_view{empty} == "1" ? "ferret_peer_access_nothing" : "ferret_peer_access";
  }();
  return chosen;
}

// The driver calls the counter follows itself: host memory the device can reach.
constexpr std::uint32_t host_memory_calls[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister, CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister, CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
    CUPTI_DRIVER_TRACE_CBID_cuMemRelease, CUPTI_DRIVER_TRACE_CBID_cuMemMap,
    CUPTI_DRIVER_TRACE_CBID_cuMemUnmap};

thread_local std::uint64_t t_launch_correlation = 0;
// Set while ferret's own sanitizer or CUDA calls run on this thread: an
// allocation they report is ferret's (and its callback must not take the lock
// again), a driver call not the program's.
thread_local bool t_inside_counter = false;

// Where the library is looked for: FERRET_SANITIZER_LIBRARY, then beside the
// toolkits' usual homes, then the loader's path.
std::vector<std::string> library_candidates() {
  std::vector<std::string> candidates;
  if (const char* named = std::getenv("FERRET_SANITIZER_LIBRARY"); named != nullptr && *named != '\0')
    return {named};
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* home = std::getenv(variable); home != nullptr && *home != '\0')
      candidates.push_back(std::string{home} + "/compute-sanitizer/libsanitizer-public.so");
  candidates.emplace_back("/usr/local/cuda/compute-sanitizer/libsanitizer-public.so");
  candidates.emplace_back("libsanitizer-public.so");
  return candidates;
}

template <typename F>
bool look_up(void* library, const char* name, F& function) {
  function = reinterpret_cast<F>(dlsym(library, name));
  return function != nullptr;
}

}  // namespace

peer_access_counter::own_calls::own_calls() : outer_(t_inside_counter) { t_inside_counter = true; }
peer_access_counter::own_calls::~own_calls() { t_inside_counter = outer_; }

struct peer_access_counter::device_table {
  std::shared_ptr<const memory_ranges::table> ranges_on_host;  // the version it copies
  void* ranges;  // device memory (nullptr when the table is empty)
  std::uint32_t count;
  std::uint32_t launches = 0;  // in flight with this table
};

struct peer_access_counter::context_state {
  CUcontext context;
  char* slab = nullptr;  // device memory: launch structs, then counters
  bool patches_added = false;
  std::uint32_t in_hands = 0;  // launches taken out of launches_ and not yet finished
  std::vector<std::uint32_t> free_slots;
  std::vector<bool> dirty;  // by slot: counters to zero before its next launch
  std::deque<device_table> tables;  // the last is the current one
  void* launch_struct(std::uint32_t slot) const { return slab + launch_struct_bytes * slot; }
  void* counters(std::uint32_t slot) const {
    return slab + launch_struct_bytes * slots_per_context + counters_bytes * slot;
  }
};

struct peer_access_counter::launch_in_flight {
  context_state* context;
  std::uint32_t slot;
  std::shared_ptr<const memory_ranges::table> ranges;  // the table it was given, for decoding
  std::uint32_t device;
  std::uint64_t correlation;
  api::stream_handle stream;  // read back on it: in order after the kernel
  std::uint64_t order;        // launches_ are read back oldest first when slots run out
  bool graph;                 // a graph launch's kernels, all of them: no kernel event
  // For its kernel's event:
  std::int64_t submitted_ns;  // CLOCK_MONOTONIC_RAW, when the launch callback was done: before the kernel
  const char* name;           // mangled; interned
  std::uint32_t stream_id;
  runtime::kernel_attributes kernel;
};

std::unique_ptr<peer_access_counter> peer_access_counter::start(cubin_lines lines,
                                                                driver_call_handler on_driver_call,
                                                                std::string& error) {
  void* library = nullptr;
  std::string tried;
  for (const std::string& candidate : library_candidates()) {
    library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) break;
    tried += (tried.empty() ? "" : ", ") + candidate;
  }
  if (library == nullptr) {
    error = fmt::format("the Compute Sanitizer's library was not found (tried {}; set "
                        "FERRET_SANITIZER_LIBRARY to its path)",
                        tried);
    return nullptr;
  }
  api::functions f;
  const bool complete =
      look_up(library, "sanitizerSubscribe", f.subscribe) &&
      look_up(library, "sanitizerUnsubscribe", f.unsubscribe) &&
      look_up(library, "sanitizerEnableDomain", f.enable_domain) &&
      look_up(library, "sanitizerEnableCallback", f.enable_callback) &&
      look_up(library, "sanitizerAddPatches", f.add_patches) &&
      look_up(library, "sanitizerPatchInstructions", f.patch_instructions) &&
      look_up(library, "sanitizerPatchModule", f.patch_module) &&
      look_up(library, "sanitizerSetLaunchCallbackData", f.set_launch_callback_data) &&
      look_up(library, "sanitizerGetFunctionPcAndSize", f.get_function_pc_and_size) &&
      look_up(library, "sanitizerAlloc", f.alloc) && look_up(library, "sanitizerFree", f.free) &&
      look_up(library, "sanitizerMemcpyHostToDeviceAsync", f.memcpy_host_to_device_async) &&
      look_up(library, "sanitizerMemcpyDeviceToHost", f.memcpy_device_to_host) &&
      look_up(library, "sanitizerMemset", f.memset) &&
      look_up(library, "sanitizerGetResultString", f.get_result_string);
  if (!complete) {
    error = "the Compute Sanitizer's library lacks functions ferret needs (older than CUDA 12.4?)";
    return nullptr;
  }
  std::unique_ptr<peer_access_counter> counter{new peer_access_counter(f, std::move(lines), on_driver_call)};
  if (const api::result result = f.subscribe(&counter->subscriber_, on_callback, counter.get());
      result != api::success) {
    error = fmt::format("the Compute Sanitizer refused a subscriber ({}); is the program running "
                        "under compute-sanitizer?",
                        counter->error_text(result));
    return nullptr;
  }
  if (const api::result result = f.enable_domain(1, counter->subscriber_, api::domain_resource);
      result != api::success) {
    error = fmt::format("the Compute Sanitizer refused its resource callbacks ({})", counter->error_text(result));
    return nullptr;
  }
  if (const api::result result = f.enable_domain(1, counter->subscriber_, api::domain_launch);
      result != api::success) {
    error = fmt::format("the Compute Sanitizer refused its launch callbacks ({})", counter->error_text(result));
    return nullptr;
  }
  // Refused, host memory they make reachable stays in no range: counted there.
  for (const std::uint32_t id : host_memory_calls) f.enable_callback(1, counter->subscriber_, api::domain_driver_api, id);
  if (const api::result result =
          f.enable_callback(1, counter->subscriber_, api::domain_graphs, api::graph_node_launch_begin);
      result != api::success)
    runtime::print_message(fmt::format("FERRET_CUDA_PEER_ACCESSES=1: the Compute Sanitizer refused the "
                                       "callbacks of graph launches ({}); kernels of CUDA graphs are not counted",
                                       counter->error_text(result)));
  return counter;
}

peer_access_counter::peer_access_counter(api::functions functions, cubin_lines lines,
                                         driver_call_handler on_driver_call)
    : api_(functions), lines_from_cubins_(std::move(lines)), on_driver_call_(on_driver_call) {}

bool peer_access_counter::forward_driver_call(std::uint32_t cbid) {
  if (cbid >= most_driver_calls) return false;
  if (api_.enable_callback(1, subscriber_, api::domain_driver_api, cbid) != api::success) return false;
  forwarded_[cbid].store(true, std::memory_order_relaxed);
  return true;
}

std::uint32_t peer_access_counter::device_of(CUcontext context) const {
  std::lock_guard lock{mutex_};
  const auto it = devices_.find(context);
  return it != devices_.end() ? it->second : 0;
}

peer_access_counter::~peer_access_counter() {
  if (subscriber_ != nullptr) api_.unsubscribe(subscriber_);
}

void peer_access_counter::note_launch_call(std::uint64_t correlation) noexcept {
  // The outermost launch call's: a runtime launch's own driver call comes
  // inside it, and the kernel's record carries the runtime call's id.
  if (t_launch_correlation == 0) t_launch_correlation = correlation;
}

void peer_access_counter::end_launch_call(std::uint64_t correlation) noexcept {
  // Also a call that failed before it launched: its id must not go to the next launch.
  if (t_launch_correlation == correlation) t_launch_correlation = 0;
}

std::string peer_access_counter::error_text(api::result result) const {
  const char* text = nullptr;
  if (api_.get_result_string != nullptr) api_.get_result_string(result, &text);
  return text != nullptr ? std::string{text} : fmt::format("error {}", result);
}

void peer_access_counter::on_callback(void* self, int domain, api::callback_id id, const void* data) {
  auto* counter = static_cast<peer_access_counter*>(self);
  if (domain == api::domain_driver_api) {
    if (t_inside_counter) return;
    const auto& call = *static_cast<const api::callback_data*>(data);
    if (std::find(std::begin(host_memory_calls), std::end(host_memory_calls), id) != std::end(host_memory_calls))
      counter->on_host_memory_call(id, call);
    if (counter->on_driver_call_ != nullptr && id < most_driver_calls &&
        counter->forwarded_[id].load(std::memory_order_relaxed))
      counter->on_driver_call_(id, call);
  } else if (domain == api::domain_resource) {
    counter->on_resource(id, data);
  } else if (domain == api::domain_launch) {
    if (id == api::launch_begin) counter->on_launch_begin(*static_cast<const api::launch_data*>(data), false);
    if (id == api::launch_end) t_launch_correlation = 0;
  } else if (domain == api::domain_graphs && id == api::graph_node_launch_begin) {
    // Each kernel node of a graph launch, inside the graph's launch call.
    const auto& node = *static_cast<const api::graph_node_launch_data*>(data);
    if (node.node_type == CU_GRAPH_NODE_TYPE_KERNEL && node.is_graph_upload == 0)
      counter->on_launch_begin(node.launch, true);
  }
}

void peer_access_counter::on_resource(api::callback_id id, const void* data) {
  if (t_inside_counter) return;
  switch (id) {
    case api::context_creation_finished: {
      const auto& context = *static_cast<const api::resource_context_data*>(data);
      std::lock_guard lock{mutex_};
      devices_[context.context] = static_cast<std::uint32_t>(context.device);
      break;
    }
    case api::context_destroy_starting: {
      // Its launches are read back while it still exists: here, and by any
      // other thread that has taken some out already (the drain).
      const auto& context = *static_cast<const api::resource_context_data*>(data);
      std::vector<launch_in_flight> going;
      const context_state* which = nullptr;
      {
        std::lock_guard lock{mutex_};
        const auto state = contexts_.find(context.context);
        if (state == contexts_.end()) break;
        which = state->second.get();
        going = take_launches([which](const launch_in_flight& launch) { return launch.context == which; });
      }
      finish(going);
      std::unique_lock lock{mutex_};
      launches_finished_.wait(lock, [which] { return which->in_hands == 0; });
      // Its memory goes with it; a context created later may get its handle
      // and starts afresh.
      contexts_.erase(context.context);
      break;
    }
    case api::stream_destroy_starting: {
      // Its launches are read back on it while it still exists.
      const auto& stream = *static_cast<const api::resource_stream_data*>(data);
      std::vector<launch_in_flight> going;
      {
        std::lock_guard lock{mutex_};
        going = take_launches([&](const launch_in_flight& launch) { return launch.stream == stream.stream_handle_; });
        stream_ids_.erase(stream.stream_handle_);  // a stream created later may get its handle
      }
      finish(going);
      break;
    }
    case api::module_loaded: module_loaded(*static_cast<const api::resource_module_data*>(data)); break;
    case api::module_unload_starting: {
      const auto& module = *static_cast<const api::resource_module_data*>(data);
      std::lock_guard lock{mutex_};
      if (const auto it = module_ids_.find(module.module); it != module_ids_.end()) {
        functions_.remove_module(it->second);
        cubins_.erase(it->second);
        module_ids_.erase(it);
        lines_.clear();  // keyed by code address, which a module loaded later may reuse
        function_resources_.clear();  // a module loaded later may reuse its functions' handles
      }
      break;
    }
    case api::device_memory_alloc:
    case api::memory_alloc_async:
    case api::host_memory_alloc: {
      const auto& memory = *static_cast<const api::resource_memory_data*>(data);
      // A peer's view of another device's memory: at the owner's own address
      // (one process, peer access enabled) the owner reported it; at an
      // address of its own (a mapping imported from another process, or
      // NCCL's in one) it is the only report, naming the owner as its source.
      if ((memory.flags & api::memory_flag_peer) != 0) {
        std::lock_guard lock{mutex_};
        if (ranges_.viewed(memory.address, memory.size, static_cast<std::int32_t>(memory.source_device)))
          peer_views_.insert(memory.address);
        break;
      }
      const bool host = id == api::host_memory_alloc || (memory.flags & api::memory_flag_managed) != 0;
      std::lock_guard lock{mutex_};
      own_range(memory.address, memory.size,
                host ? runtime::host_memory_device : static_cast<std::int32_t>(memory.device));
      break;
    }
    case api::device_memory_free:
    case api::memory_free_async:
    case api::host_memory_free: {
      const auto& memory = *static_cast<const api::resource_memory_data*>(data);
      std::lock_guard lock{mutex_};
      // A view goes without its owner's allocation, unless it was the only report.
      if ((memory.flags & api::memory_flag_peer) != 0 && peer_views_.erase(memory.address) == 0) break;
      ranges_.released(memory.address);
      break;
    }
    default: break;
  }
}

void peer_access_counter::own_range(std::uint64_t address, std::uint64_t bytes, std::int32_t device) {
  peer_views_.erase(address);
  ranges_.allocated(address, bytes, device);
}

void peer_access_counter::on_host_memory_call(api::callback_id id, const api::callback_data& call) {
  if (call.callback_site != api::api_exit || call.function_params == nullptr ||
      call.function_return_value == nullptr ||
      *static_cast<const CUresult*>(call.function_return_value) != CUDA_SUCCESS)
    return;
  const auto host_location = [](CUmemLocationType type) {
    return type == CU_MEM_LOCATION_TYPE_HOST || type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
           type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
  };
  const void* params = call.function_params;
  std::lock_guard lock{mutex_};
  const auto map_host = [this](std::uint64_t address, std::uint64_t bytes) {
    own_range(address, bytes, runtime::host_memory_device);
    host_mappings_.insert(address);
  };
  const auto unmap_host = [this](std::uint64_t address) {
    if (host_mappings_.erase(address) != 0) ranges_.released(address);
  };
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2: {
      const auto& p = *static_cast<const cuMemHostRegister_v2_params*>(params);
      map_host(reinterpret_cast<std::uint64_t>(p.p), p.bytesize);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
      unmap_host(reinterpret_cast<std::uint64_t>(static_cast<const cuMemHostUnregister_params*>(params)->p));
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
      const auto& p = *static_cast<const cuMemCreate_params*>(params);
      if (p.handle != nullptr && p.prop != nullptr && host_location(p.prop->location.type))
        host_handles_.insert(*p.handle);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
      host_handles_.erase(static_cast<const cuMemRelease_params*>(params)->handle);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      const auto& p = *static_cast<const cuMemMap_params*>(params);
      if (host_handles_.count(p.handle) != 0) map_host(p.ptr, p.size);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
      unmap_host(static_cast<const cuMemUnmap_params*>(params)->ptr);
      break;
    default: break;
  }
}

void peer_access_counter::module_loaded(const api::resource_module_data& module) {
  std::lock_guard lock{mutex_};
  const own_calls inside;
  context_state* state = context_of(module.context);
  if (!state->patches_added) {
    const api::result added = api_.add_patches(ferret_peer_access_patch_fatbin, module.context);
    if (added != api::success) {
      ++modules_refused_;
      if (!said_refusal_)
        runtime::print_message(fmt::format("the Compute Sanitizer did not take ferret's patch ({}); "
                                           "device-initiated traffic is not counted",
                                           error_text(added)));
      said_refusal_ = true;
      return;
    }
    state->patches_added = true;
  }
  if (api_.patch_instructions(api::instruction_global_memory_access, module.module, patch_function()) != api::success ||
      api_.patch_instructions(api::instruction_block_enter, module.module, "ferret_peer_block_enter") != api::success ||
      api_.patch_instructions(api::instruction_block_exit, module.module, "ferret_peer_block_exit") != api::success ||
      api_.patch_module(module.module) != api::success) {
    ++modules_refused_;
    return;
  }
  ++modules_patched_;
  const std::uint64_t id = next_module_id_++;
  module_ids_[module.module] = id;
  if (module.cubin != nullptr && module.cubin_size != 0 && lines_from_cubins_.function_names) {
    unmapped_functions_[id].names = lines_from_cubins_.function_names(module.cubin, module.cubin_size);
    map_functions(module.module, id);
  }
  if (module.cubin != nullptr && module.cubin_size != 0 && lines_from_cubins_.has_lines &&
      lines_from_cubins_.has_lines(module.cubin, module.cubin_size))
    cubins_.emplace(id, std::string{module.cubin, module.cubin_size});
}

bool peer_access_counter::map_function(CUmodule module, const char* name, std::uint64_t module_id) {
  std::uint64_t pc = 0, size = 0;
  if (api_.get_function_pc_and_size(module, name, &pc, &size) != api::success || size == 0) return false;
  const function_map::function* known = functions_.find(pc);
  if (known == nullptr || known->start != pc)
    functions_.add({pc, size, interned_names_.emplace(name).first->c_str(), module_id});
  return true;
}

void peer_access_counter::map_functions(CUmodule module, std::uint64_t module_id) {
  constexpr std::uint32_t most_tries = 16;
  const auto pending = unmapped_functions_.find(module_id);
  if (pending == unmapped_functions_.end()) return;
  std::vector<std::string>& names = pending->second.names;
  names.erase(std::remove_if(names.begin(), names.end(),
                             [&](const std::string& name) { return map_function(module, name.c_str(), module_id); }),
              names.end());
  if (names.empty() || ++pending->second.tries == most_tries) unmapped_functions_.erase(pending);
}

peer_access_counter::context_state* peer_access_counter::context_of(CUcontext context) {
  std::unique_ptr<context_state>& state = contexts_[context];
  if (state == nullptr) {
    state = std::make_unique<context_state>();
    state->context = context;
  }
  return state.get();
}

bool peer_access_counter::prepare_slab(context_state& state, CUcontext context) {
  void* slab = nullptr;
  if (api_.alloc(context, &slab, slab_bytes) != api::success || slab == nullptr) return false;
  if (api_.memset(slab, 0, slab_bytes, nullptr) != api::success) {
    api_.free(context, slab);
    return false;
  }
  state.slab = static_cast<char*>(slab);
  for (std::uint32_t slot = slots_per_context; slot > 0; --slot) state.free_slots.push_back(slot - 1);
  state.dirty.assign(slots_per_context, false);
  return true;
}

peer_access_counter::device_table* peer_access_counter::current_table(context_state& state,
                                                                     api::stream_handle stream) {
  const std::shared_ptr<const memory_ranges::table> current = ranges_.current();
  if (!state.tables.empty() && state.tables.back().ranges_on_host == current) return &state.tables.back();
  device_table made{current, nullptr, static_cast<std::uint32_t>(current->ranges.size())};
  if (!current->ranges.empty()) {
    const std::size_t bytes = current->ranges.size() * sizeof(ferret_peer_range);
    if (api_.alloc(state.context, &made.ranges, bytes) != api::success) return nullptr;
    // Async on the launch's stream: in order before the kernel that reads it.
    api_.memcpy_host_to_device_async(made.ranges, const_cast<ferret_peer_range*>(current->ranges.data()),
                                     bytes, stream);
  }
  state.tables.push_back(made);
  release_tables(state);
  return &state.tables.back();
}

void peer_access_counter::release_tables(context_state& state) {
  // Tables no launch in flight uses, but the current one.
  for (auto it = state.tables.begin(); it != state.tables.end() && std::next(it) != state.tables.end();) {
    if (it->launches != 0) {
      ++it;
      continue;
    }
    if (it->ranges != nullptr) api_.free(state.context, it->ranges);
    it = state.tables.erase(it);
  }
}

void peer_access_counter::on_launch_begin(const api::launch_data& launch, bool graph_node) {
  const std::uint64_t correlation = t_launch_correlation;
  if (correlation == 0) {
    std::lock_guard lock{mutex_};
    ++launches_without_call_;  // no launch call seen: nothing to join the counts with
    return;
  }
  const own_calls inside;
  std::unique_lock lock{mutex_};
  context_state* state = context_of(launch.context);
  if (graph_node) {
    // The kernels of one graph launch run with the data given to its last
    // node, whatever each node is given (seen on an H200, CUDA 13.0): they
    // share one counter slot, their accesses told apart by instruction.
    for (const auto& [order, known] : launches_)
      if (known.graph && known.correlation == correlation && known.context == state) {
        api_.set_launch_callback_data(launch.launch, launch.function, launch.stream_handle_,
                                      state->launch_struct(known.slot));
        ++graph_kernel_nodes_;
        return;
      }
  }
  if (state->slab == nullptr && !prepare_slab(*state, launch.context)) {
    ++launches_without_slot_;
    return;
  }
  if (state->free_slots.empty()) {
    // Every slot in flight (no drain since): the oldest launch's counters are
    // read back here, waiting for its kernel, rather than lose this launch's.
    const launch_in_flight* oldest = nullptr;
    for (const auto& [id, known] : launches_)
      if (known.context == state && (oldest == nullptr || known.order < oldest->order)) oldest = &known;
    if (oldest == nullptr) {
      ++launches_without_slot_;
      return;
    }
    const std::uint64_t oldest_order = oldest->order;
    std::vector<launch_in_flight> waited =
        take_launches([oldest_order](const launch_in_flight& known) { return known.order == oldest_order; });
    lock.unlock();
    finish(waited);
    lock.lock();
    ++launches_waited_for_slot_;
    if (state->free_slots.empty()) {
      ++launches_without_slot_;
      return;
    }
  }
  device_table* table = current_table(*state, launch.stream_handle_);
  if (table == nullptr) {
    ++launches_without_slot_;
    return;
  }
  const std::uint32_t slot = state->free_slots.back();
  state->free_slots.pop_back();
  ++table->launches;
  // Zeroed on the launch's stream, so in order before the kernel whatever
  // stream the slot's last launch ran on.
  if (state->dirty[slot]) {
    api_.memset(state->counters(slot), 0, counters_bytes, launch.stream_handle_);
    state->dirty[slot] = false;
  }
  ferret_peer_launch given{static_cast<const ferret_peer_range*>(table->ranges), table->count,
                           static_cast<std::int32_t>(launch.device),
                           static_cast<ferret_peer_counter*>(state->counters(slot)),
                           counters_per_launch, 0, {0, 0}, 0, 0};
  api_.memcpy_host_to_device_async(state->launch_struct(slot), &given, sizeof given, launch.stream_handle_);
  api_.set_launch_callback_data(launch.launch, launch.function, launch.stream_handle_,
                                state->launch_struct(slot));
  if (const auto module = module_ids_.find(launch.module); module != module_ids_.end()) {
    map_functions(launch.module, module->second);  // functions loaded lazily since
    if (launch.function_name != nullptr) map_function(launch.module, launch.function_name, module->second);
  }
  const auto [stream, first_launch] = stream_ids_.try_emplace(launch.stream_handle_, next_stream_id_);
  next_stream_id_ += first_launch ? 1 : 0;
  const std::uint32_t stream_id = stream->second;
  const char* name = launch.function_name != nullptr ? interned_names_.emplace(launch.function_name).first->c_str()
                                                     : nullptr;
  runtime::kernel_attributes kernel = resources_of(launch.function);
  std::copy(std::begin(launch.grid_dim), std::end(launch.grid_dim), kernel.grid);
  std::copy(std::begin(launch.block_dim), std::end(launch.block_dim), kernel.block);
  const std::uint64_t order = launch_order_++;
  launches_[order] = launch_in_flight{state,
                                            slot,
                                            table->ranges_on_host,
                                            static_cast<std::uint32_t>(launch.device),
                                            correlation,
                                            launch.stream_handle_,
                                            order,
                                            graph_node,
                                            runtime::monotonic_raw_ns(),
                                            name,
                                            stream_id,
                                            kernel};
  ++launches_counted_;
  graph_kernel_nodes_ += graph_node ? 1 : 0;
}

peer_access_counter::read_result peer_access_counter::read_back(const launch_in_flight& launch,
                                                                ferret_peer_launch& header,
                                                                std::vector<ferret_peer_counter>& counters) const {
  counters.clear();
  const context_state& state = *launch.context;
  // On the launch's stream: the copy waits for the kernel, and for nothing else.
  if (api_.memcpy_device_to_host(&header, state.launch_struct(launch.slot), sizeof header, launch.stream) !=
      api::success) {
    header = ferret_peer_launch{};
    return read_result::failed;
  }
  if (header.used_slots == 0) return read_result::no_counter_used;
  counters.resize(counters_per_launch);
  if (api_.memcpy_device_to_host(counters.data(), state.counters(launch.slot), counters_bytes, launch.stream) !=
      api::success) {
    counters.clear();
    return read_result::failed;
  }
  return read_result::counters;
}

template <typename Predicate>
std::vector<peer_access_counter::launch_in_flight> peer_access_counter::take_launches(Predicate which) {
  std::vector<launch_in_flight> taken;
  for (auto it = launches_.begin(); it != launches_.end();)
    if (which(it->second)) {
      taken.push_back(it->second);
      ++it->second.context->in_hands;
      it = launches_.erase(it);
    } else {
      ++it;
    }
  std::sort(taken.begin(), taken.end(), [](const auto& a, const auto& b) { return a.order < b.order; });
  return taken;
}

void peer_access_counter::collect(bool /*final*/) {
  std::vector<launch_in_flight> in_flight;
  {
    std::lock_guard lock{mutex_};
    in_flight = take_launches([](const launch_in_flight&) { return true; });
  }
  finish(in_flight);
}

void peer_access_counter::finish(std::vector<launch_in_flight>& launches) {
  const own_calls inside;
  std::vector<ferret_peer_counter> counters;
  for (launch_in_flight& launch : launches) {
    ferret_peer_launch header{};
    const read_result read = read_back(launch, header, counters);
    std::lock_guard lock{mutex_};
    if (read == read_result::failed) ++read_failures_;
    // A failed copy may have come after the kernel wrote some counters.
    if (read != read_result::no_counter_used) launch.context->dirty[launch.slot] = true;
    const std::size_t first_batch = batches_.size();
    decode_launch(counters.data(), counters.size(), header.lost, *launch.ranges, launch.correlation, launch.device,
                  functions_, [this](const function_map::function& function, std::uint64_t offset) {
                    return line_of(function, offset);
                  },
                  [](std::uint64_t lowest, std::uint64_t highest, bool& spans) {
                    const std::uint64_t low = runtime::find_data_object_ref(reinterpret_cast<const void*>(lowest)).id;
                    const std::uint64_t high = runtime::find_data_object_ref(reinterpret_cast<const void*>(highest)).id;
                    spans = low != 0 && high != 0 && low != high;
                    return low == high ? low : 0;
                  },
                  batches_, losses_);
    if (read != read_result::failed)
      add_kernel(launch, header, batches_.data() + first_batch, batches_.size() - first_batch);
    // The slot and its table are free again.
    launch.context->free_slots.push_back(launch.slot);
    for (device_table& kept : launch.context->tables)
      if (kept.ranges_on_host == launch.ranges && kept.launches > 0) --kept.launches;
    if (--launch.context->in_hands == 0) launches_finished_.notify_all();
  }
}

void peer_access_counter::add_kernel(const launch_in_flight& launch, const ferret_peer_launch& header,
                                     const runtime::gpu_remote_access_batch* batches, std::size_t batch_count) {
  if (launch.graph) return;  // its times span the graph's kernels: none of them alone
  const std::uint64_t entered = ~header.first_entry_inverted;
  if (header.first_entry_inverted == 0 || header.last_exit < entered) {
    ++kernels_untimed_;  // no block ran it, or a patch that did not time it
    return;
  }
  global_timer_clock& clock = timer_clocks_[launch.device];
  clock.bound(launch.submitted_ns, entered);
  timed_kernel& kernel = kernels_.emplace_back();
  runtime::gpu_activity& activity = kernel.activity;
  activity.operation = runtime::gpu_operation::kernel;
  activity.start_ns = clock.to_host(entered);
  activity.end_ns = clock.to_host(header.last_exit);
  activity.device = launch.device;
  activity.stream = launch.stream_id;
  activity.name = launch.name;
  activity.launch.correlation = launch.correlation;
  activity.kernel = launch.kernel;
  if (runtime::gpu_kernel_remote_traffic totals = kernel_remote_traffic(batches, batch_count); totals.target_count > 0)
    kernel.remote = std::make_unique<runtime::gpu_kernel_remote_traffic>(totals);
}

runtime::kernel_attributes peer_access_counter::resources_of(CUfunction function) {
  runtime::kernel_attributes kernel{};
  kernel.occupancy = -1.0;  // the launch's dynamic shared memory is not known here
  if (get_function_attribute_ == nullptr) {
    // The driver the program loaded (not loaded here: the counter may start before it).
    if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD); cuda != nullptr)
      get_function_attribute_ = reinterpret_cast<function_attribute_fn>(dlsym(cuda, "cuFuncGetAttribute"));
    if (get_function_attribute_ == nullptr) return kernel;
  }
  const auto [known, added] = function_resources_.try_emplace(function);
  if (added) {
    const own_calls own;
    const auto attribute = [&](CUfunction_attribute which) {
      int value = 0;
      return get_function_attribute_(&value, which, function) == CUDA_SUCCESS ? static_cast<std::uint32_t>(std::max(value, 0)) : 0u;
    };
    known->second.registers_per_thread = attribute(CU_FUNC_ATTRIBUTE_NUM_REGS);
    known->second.static_shared_memory = attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    known->second.local_memory_per_thread = attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  }
  kernel.registers_per_thread = known->second.registers_per_thread;
  kernel.static_shared_memory = known->second.static_shared_memory;
  kernel.local_memory_per_thread = known->second.local_memory_per_thread;
  return kernel;
}

void peer_access_counter::hand_over_kernels(std::vector<runtime::gpu_activity>& kernels) {
  std::lock_guard lock{mutex_};
  kernels_handed_ = std::move(kernels_);
  kernels_.clear();
  for (timed_kernel& kernel : kernels_handed_) {
    kernel.activity.remote = kernel.remote.get();
    kernels.push_back(kernel.activity);
  }
}

source_line peer_access_counter::line_of(const function_map::function& function, std::uint64_t offset) {
  const auto key = std::make_pair(function.start, offset);
  if (const auto it = lines_.find(key); it != lines_.end()) return it->second;
  source_line found{nullptr, 0};
  if (const auto cubin = cubins_.find(function.module); cubin != cubins_.end() && lines_from_cubins_.line_of) {
    if (const auto resolved = lines_from_cubins_.line_of(cubin->second, function.name, offset))
      found = {interned_names_.emplace(resolved->first).first->c_str(), resolved->second};
  }
  lines_.emplace(key, found);
  return found;
}

void peer_access_counter::hand_over(std::vector<runtime::gpu_remote_access_batch>& batches) {
  std::lock_guard lock{mutex_};
  for (auto& batch : batches_) batches.push_back(std::move(batch));
  batches_.clear();
}

void peer_access_counter::add_metadata(runtime::metadata_list& metadata) const {
  std::lock_guard lock{mutex_};
  const auto count = [](std::uint64_t value) { return static_cast<std::int64_t>(value); };
  metadata.emplace_back("peer-access-modules-patched", count(modules_patched_));
  metadata.emplace_back("peer-access-modules-refused", count(modules_refused_));
  metadata.emplace_back("peer-access-launches-counted", count(launches_counted_));
  metadata.emplace_back("peer-access-launches-dropped-no-slot", count(launches_without_slot_));
  metadata.emplace_back("peer-access-launches-waited-for-a-slot", count(launches_waited_for_slot_));
  metadata.emplace_back("peer-access-launches-dropped-no-call", count(launches_without_call_));
  metadata.emplace_back("peer-access-launches-dropped-read-failed", count(read_failures_));
  metadata.emplace_back("peer-access-kernels-untimed", count(kernels_untimed_));
  metadata.emplace_back("peer-access-graph-kernel-nodes", count(graph_kernel_nodes_));
  metadata.emplace_back("peer-accesses-dropped-table-full", count(losses_.accesses_lost_table_full));
  metadata.emplace_back("peer-accesses-dropped-key-overflow", count(losses_.accesses_lost_key_overflow));
  metadata.emplace_back("peer-accesses-dropped-in-no-range", count(losses_.accesses_in_no_range));
  if (losses_.accesses_in_no_range > 0)
    metadata.emplace_back("peer-accesses-in-no-range-addresses",
                          fmt::format("{:#x}-{:#x}", losses_.no_range_lowest, losses_.no_range_highest));
  metadata.emplace_back("peer-accesses-dropped-outside-functions", count(losses_.accesses_outside_functions));
  metadata.emplace_back("peer-access-bytes-spanning-objects", count(losses_.bytes_spanning_objects));
}

}  // namespace ferret::compute_sanitizer
