// api_table.hpp — the Level Zero calls the collector subscribes to (through
// the loader's tracing layer), each with what it does to device work
// (ferret/runtime/api_policy.hpp) and what the collector does with it.
//
// X(group in ze_callbacks_t, callback member, parameter struct, name, effect, handling)
#pragma once

#define FERRET_LEVEL_ZERO_CALLS(X)                                                                              \
  X(CommandList, pfnAppendLaunchKernelCb, ze_command_list_append_launch_kernel_params_t,                        \
    "zeCommandListAppendLaunchKernel", launch, launch_kernel)                                                   \
  X(CommandList, pfnAppendLaunchCooperativeKernelCb, ze_command_list_append_launch_cooperative_kernel_params_t, \
    "zeCommandListAppendLaunchCooperativeKernel", launch, launch_kernel)                                        \
  X(CommandList, pfnAppendLaunchKernelIndirectCb, ze_command_list_append_launch_kernel_indirect_params_t,       \
    "zeCommandListAppendLaunchKernelIndirect", launch, launch_kernel)                                           \
  X(CommandList, pfnAppendMemoryCopyCb, ze_command_list_append_memory_copy_params_t,                            \
    "zeCommandListAppendMemoryCopy", copy, copy)                                                                \
  X(CommandList, pfnAppendMemoryCopyRegionCb, ze_command_list_append_memory_copy_region_params_t,               \
    "zeCommandListAppendMemoryCopyRegion", copy, copy)                                                          \
  X(CommandList, pfnAppendMemoryCopyFromContextCb, ze_command_list_append_memory_copy_from_context_params_t,    \
    "zeCommandListAppendMemoryCopyFromContext", copy, copy)                                                     \
  X(CommandList, pfnAppendMemoryFillCb, ze_command_list_append_memory_fill_params_t,                            \
    "zeCommandListAppendMemoryFill", set, fill)                                                                 \
  X(CommandList, pfnAppendBarrierCb, ze_command_list_append_barrier_params_t, "zeCommandListAppendBarrier",      \
    order, barrier)                                                                                             \
  X(CommandList, pfnAppendMemoryPrefetchCb, ze_command_list_append_memory_prefetch_params_t,                    \
    "zeCommandListAppendMemoryPrefetch", copy, plain)                                                           \
  X(CommandList, pfnAppendSignalEventCb, ze_command_list_append_signal_event_params_t,                          \
    "zeCommandListAppendSignalEvent", order, plain)                                                             \
  X(CommandList, pfnAppendWaitOnEventsCb, ze_command_list_append_wait_on_events_params_t,                       \
    "zeCommandListAppendWaitOnEvents", order, plain)                                                            \
  X(CommandList, pfnAppendEventResetCb, ze_command_list_append_event_reset_params_t,                            \
    "zeCommandListAppendEventReset", order, plain)                                                              \
  X(CommandList, pfnCreateCb, ze_command_list_create_params_t, "zeCommandListCreate", other, list_create)       \
  X(CommandList, pfnCreateImmediateCb, ze_command_list_create_immediate_params_t,                               \
    "zeCommandListCreateImmediate", other, list_create_immediate)                                               \
  X(CommandList, pfnDestroyCb, ze_command_list_destroy_params_t, "zeCommandListDestroy", other, list_destroy)   \
  X(CommandList, pfnResetCb, ze_command_list_reset_params_t, "zeCommandListReset", other, list_reset)           \
  X(CommandList, pfnCloseCb, ze_command_list_close_params_t, "zeCommandListClose", other, plain)                \
  X(CommandQueue, pfnCreateCb, ze_command_queue_create_params_t, "zeCommandQueueCreate", other, queue_create)   \
  X(CommandQueue, pfnDestroyCb, ze_command_queue_destroy_params_t, "zeCommandQueueDestroy", other, queue_destroy) \
  X(CommandQueue, pfnExecuteCommandListsCb, ze_command_queue_execute_command_lists_params_t,                    \
    "zeCommandQueueExecuteCommandLists", launch, execute)                                                       \
  X(CommandQueue, pfnSynchronizeCb, ze_command_queue_synchronize_params_t, "zeCommandQueueSynchronize",         \
    synchronize, synchronize_all)                                                                               \
  X(Event, pfnHostSynchronizeCb, ze_event_host_synchronize_params_t, "zeEventHostSynchronize", synchronize,     \
    synchronize_all)                                                                                            \
  X(Event, pfnQueryStatusCb, ze_event_query_status_params_t, "zeEventQueryStatus", synchronize, plain)          \
  X(Event, pfnHostSignalCb, ze_event_host_signal_params_t, "zeEventHostSignal", order, plain)                   \
  X(Event, pfnHostResetCb, ze_event_host_reset_params_t, "zeEventHostReset", other, event_reset)                \
  X(Event, pfnDestroyCb, ze_event_destroy_params_t, "zeEventDestroy", other, event_reset)                       \
  X(Event, pfnCreateCb, ze_event_create_params_t, "zeEventCreate", other, plain)                                \
  X(Event, pfnQueryKernelTimestampCb, ze_event_query_kernel_timestamp_params_t, "zeEventQueryKernelTimestamp",  \
    other, plain)                                                                                               \
  X(EventPool, pfnCreateCb, ze_event_pool_create_params_t, "zeEventPoolCreate", other, event_pool_create)       \
  X(EventPool, pfnDestroyCb, ze_event_pool_destroy_params_t, "zeEventPoolDestroy", other, plain)                \
  X(Mem, pfnAllocDeviceCb, ze_mem_alloc_device_params_t, "zeMemAllocDevice", allocate, allocate_device)         \
  X(Mem, pfnAllocHostCb, ze_mem_alloc_host_params_t, "zeMemAllocHost", allocate, allocate_host)                 \
  X(Mem, pfnAllocSharedCb, ze_mem_alloc_shared_params_t, "zeMemAllocShared", allocate, allocate_shared)         \
  X(Mem, pfnFreeCb, ze_mem_free_params_t, "zeMemFree", release, release)                                        \
  X(Mem, pfnGetAllocPropertiesCb, ze_mem_get_alloc_properties_params_t, "zeMemGetAllocProperties", other,       \
    plain)                                                                                                      \
  X(Kernel, pfnCreateCb, ze_kernel_create_params_t, "zeKernelCreate", other, kernel_create)                     \
  X(Kernel, pfnDestroyCb, ze_kernel_destroy_params_t, "zeKernelDestroy", other, kernel_destroy)                 \
  X(Kernel, pfnSetGroupSizeCb, ze_kernel_set_group_size_params_t, "zeKernelSetGroupSize", other,                \
    kernel_group_size)                                                                                          \
  X(Kernel, pfnSetArgumentValueCb, ze_kernel_set_argument_value_params_t, "zeKernelSetArgumentValue", other,    \
    plain)                                                                                                      \
  X(Kernel, pfnSuggestGroupSizeCb, ze_kernel_suggest_group_size_params_t, "zeKernelSuggestGroupSize", other,    \
    plain)                                                                                                      \
  X(Kernel, pfnGetPropertiesCb, ze_kernel_get_properties_params_t, "zeKernelGetProperties", other, plain)       \
  X(Module, pfnCreateCb, ze_module_create_params_t, "zeModuleCreate", other, plain)                             \
  X(Module, pfnDestroyCb, ze_module_destroy_params_t, "zeModuleDestroy", other, plain)                          \
  X(Context, pfnCreateCb, ze_context_create_params_t, "zeContextCreate", other, plain)                          \
  X(Context, pfnDestroyCb, ze_context_destroy_params_t, "zeContextDestroy", other, context_destroy)             \
  X(Device, pfnGetCb, ze_device_get_params_t, "zeDeviceGet", other, plain)                                      \
  X(Device, pfnGetPropertiesCb, ze_device_get_properties_params_t, "zeDeviceGetProperties", other, plain)       \
  X(Driver, pfnGetCb, ze_driver_get_params_t, "zeDriverGet", other, plain)
