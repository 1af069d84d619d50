// sanitizer_layouts.cpp — ferret's declarations of the Compute Sanitizer API
// (backends/collectors/compute_sanitizer/src/sanitizer_api.hpp) against the
// real headers: compiled (-fsyntax-only) by tests/gpu/run.sh on the GPU
// machine, where the toolkit has compute-sanitizer/include; every layout,
// value and signature ferret relies on is a static_assert here.
#include <sanitizer.h>

#include <cstddef>
#include <type_traits>

#include "sanitizer_api.hpp"

namespace api = ferret::compute_sanitizer::api;

#define SAME_OFFSET(ours, theirs, our_field, their_field) \
  static_assert(offsetof(ours, our_field) == offsetof(theirs, their_field), #ours "::" #our_field)

static_assert(api::domain_driver_api == SANITIZER_CB_DOMAIN_DRIVER_API);
static_assert(api::domain_resource == SANITIZER_CB_DOMAIN_RESOURCE);
static_assert(api::domain_launch == SANITIZER_CB_DOMAIN_LAUNCH);
static_assert(api::domain_graphs == SANITIZER_CB_DOMAIN_GRAPHS);
static_assert(api::graph_node_launch_begin == SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN);
static_assert(api::context_creation_finished == SANITIZER_CBID_RESOURCE_CONTEXT_CREATION_FINISHED);
static_assert(api::context_destroy_starting == SANITIZER_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
static_assert(api::stream_destroy_starting == SANITIZER_CBID_RESOURCE_STREAM_DESTROY_STARTING);
static_assert(api::module_loaded == SANITIZER_CBID_RESOURCE_MODULE_LOADED);
static_assert(api::module_unload_starting == SANITIZER_CBID_RESOURCE_MODULE_UNLOAD_STARTING);
static_assert(api::device_memory_alloc == SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC);
static_assert(api::device_memory_free == SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_FREE);
static_assert(api::host_memory_alloc == SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC);
static_assert(api::host_memory_free == SANITIZER_CBID_RESOURCE_HOST_MEMORY_FREE);
static_assert(api::memory_alloc_async == SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC);
static_assert(api::memory_free_async == SANITIZER_CBID_RESOURCE_MEMORY_FREE_ASYNC);
static_assert(api::launch_begin == SANITIZER_CBID_LAUNCH_BEGIN);
static_assert(api::launch_end == SANITIZER_CBID_LAUNCH_END);
static_assert(api::instruction_block_enter == SANITIZER_INSTRUCTION_BLOCK_ENTER);
static_assert(api::instruction_block_exit == SANITIZER_INSTRUCTION_BLOCK_EXIT);
static_assert(api::instruction_global_memory_access == SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS);
static_assert(api::memory_flag_managed == SANITIZER_MEMORY_FLAG_MANAGED);
static_assert(api::memory_flag_peer == SANITIZER_MEMORY_FLAG_PEER);
static_assert(api::success == SANITIZER_SUCCESS);

static_assert(api::api_enter == SANITIZER_API_ENTER);
static_assert(sizeof(api::callback_data) == sizeof(Sanitizer_CallbackData));
SAME_OFFSET(api::callback_data, Sanitizer_CallbackData, callback_site, callbackSite);
SAME_OFFSET(api::callback_data, Sanitizer_CallbackData, function_name, functionName);
SAME_OFFSET(api::callback_data, Sanitizer_CallbackData, function_params, functionParams);
SAME_OFFSET(api::callback_data, Sanitizer_CallbackData, function_return_value, functionReturnValue);
SAME_OFFSET(api::callback_data, Sanitizer_CallbackData, symbol_name, symbolName);
SAME_OFFSET(api::callback_data, Sanitizer_CallbackData, context, context);

static_assert(sizeof(api::resource_stream_data) == sizeof(Sanitizer_ResourceStreamData));
SAME_OFFSET(api::resource_stream_data, Sanitizer_ResourceStreamData, context, context);
SAME_OFFSET(api::resource_stream_data, Sanitizer_ResourceStreamData, stream_handle_, hStream);

static_assert(sizeof(api::resource_context_data) == sizeof(Sanitizer_ResourceContextData));
SAME_OFFSET(api::resource_context_data, Sanitizer_ResourceContextData, device, device);

static_assert(sizeof(api::resource_module_data) == sizeof(Sanitizer_ResourceModuleData));
SAME_OFFSET(api::resource_module_data, Sanitizer_ResourceModuleData, module, module);
SAME_OFFSET(api::resource_module_data, Sanitizer_ResourceModuleData, cubin_size, cubinSize);
SAME_OFFSET(api::resource_module_data, Sanitizer_ResourceModuleData, cubin, pCubin);

static_assert(sizeof(api::resource_memory_data) == sizeof(Sanitizer_ResourceMemoryData));
SAME_OFFSET(api::resource_memory_data, Sanitizer_ResourceMemoryData, address, address);
SAME_OFFSET(api::resource_memory_data, Sanitizer_ResourceMemoryData, size, size);
SAME_OFFSET(api::resource_memory_data, Sanitizer_ResourceMemoryData, device, device);
SAME_OFFSET(api::resource_memory_data, Sanitizer_ResourceMemoryData, flags, flags);

static_assert(sizeof(api::launch_data) == sizeof(Sanitizer_LaunchData));
SAME_OFFSET(api::launch_data, Sanitizer_LaunchData, context, context);
SAME_OFFSET(api::launch_data, Sanitizer_LaunchData, stream_handle_, hStream);
SAME_OFFSET(api::launch_data, Sanitizer_LaunchData, module, module);
SAME_OFFSET(api::launch_data, Sanitizer_LaunchData, function, function);
SAME_OFFSET(api::launch_data, Sanitizer_LaunchData, function_name, functionName);
SAME_OFFSET(api::launch_data, Sanitizer_LaunchData, grid_dim, gridDim_x);
SAME_OFFSET(api::launch_data, Sanitizer_LaunchData, block_dim, blockDim_x);
SAME_OFFSET(api::launch_data, Sanitizer_LaunchData, launch, hLaunch);
SAME_OFFSET(api::launch_data, Sanitizer_LaunchData, device, device);

static_assert(sizeof(api::graph_node_launch_data) == sizeof(Sanitizer_GraphNodeLaunchData));
SAME_OFFSET(api::graph_node_launch_data, Sanitizer_GraphNodeLaunchData, node, node);
SAME_OFFSET(api::graph_node_launch_data, Sanitizer_GraphNodeLaunchData, node_type, nodeType);
SAME_OFFSET(api::graph_node_launch_data, Sanitizer_GraphNodeLaunchData, launch, launchData);
SAME_OFFSET(api::graph_node_launch_data, Sanitizer_GraphNodeLaunchData, is_graph_upload, isGraphUpload);
static_assert(sizeof(api::graph_node_launch_data::other_operation) == sizeof(Sanitizer_MemcpyData));

// The functions: the same number of parameters and the same sizes (ferret's
// declarations use int for the API's enums and its own opaque handle types).
static_assert(sizeof(SanitizerResult) == sizeof(api::result));
static_assert(sizeof(Sanitizer_CallbackDomain) == sizeof(int));
static_assert(sizeof(Sanitizer_InstructionId) == sizeof(int));

template <typename T>
constexpr std::size_t size_of() {
  if constexpr (std::is_void_v<T>)
    return 0;
  else
    return sizeof(T);
}
template <typename R1, typename... A1, typename R2, typename... A2>
constexpr bool same_abi(R1 (*)(A1...), R2 (*)(A2...)) {
  if constexpr (sizeof...(A1) != sizeof...(A2))
    return false;
  else
    return size_of<R1>() == size_of<R2>() && ((sizeof(A1) == sizeof(A2)) && ...);
}
#define SAME_FUNCTION(member, real) \
  static_assert(same_abi(static_cast<decltype(api::functions::member)>(nullptr), &real), #real)
SAME_FUNCTION(subscribe, sanitizerSubscribe);
SAME_FUNCTION(unsubscribe, sanitizerUnsubscribe);
SAME_FUNCTION(enable_domain, sanitizerEnableDomain);
SAME_FUNCTION(enable_callback, sanitizerEnableCallback);
SAME_FUNCTION(add_patches, sanitizerAddPatches);
SAME_FUNCTION(patch_instructions, sanitizerPatchInstructions);
SAME_FUNCTION(patch_module, sanitizerPatchModule);
SAME_FUNCTION(set_launch_callback_data, sanitizerSetLaunchCallbackData);
SAME_FUNCTION(get_function_pc_and_size, sanitizerGetFunctionPcAndSize);
SAME_FUNCTION(alloc, sanitizerAlloc);
SAME_FUNCTION(free, sanitizerFree);
SAME_FUNCTION(memcpy_host_to_device_async, sanitizerMemcpyHostToDeviceAsync);
SAME_FUNCTION(memcpy_device_to_host, sanitizerMemcpyDeviceToHost);
SAME_FUNCTION(memset, sanitizerMemset);
SAME_FUNCTION(get_result_string, sanitizerGetResultString);

// The callback the sanitizer calls: (void*, domain, id, const void*).
static_assert(same_abi(static_cast<api::callback_fn>(nullptr), static_cast<Sanitizer_CallbackFunc>(nullptr)));
