// sanitizer_api.hpp — the few types and functions of NVIDIA's Compute
// Sanitizer API (sanitizer.h, shipped with the toolkit under
// compute-sanitizer/, not with the CUDA wheels ferret builds against) that
// the peer-access counter uses, declared here and loaded at run time from
// libsanitizer-public.so. The layouts mirror the CUDA 12.4+ headers;
// tests/gpu/sanitizer_layouts.cpp compares each against the real header on
// the GPU machine.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace ferret::compute_sanitizer::api {

using result = int;  // SanitizerResult
inline constexpr result success = 0;

using subscriber_handle = struct subscriber_st*;  // Sanitizer_SubscriberHandle
using stream_handle = struct stream_st*;          // Sanitizer_StreamHandle
using launch_handle = struct launch_st*;          // Sanitizer_LaunchHandle
using callback_id = std::uint32_t;                // Sanitizer_CallbackId

// Sanitizer_CallbackDomain
inline constexpr int domain_driver_api = 1;
inline constexpr int domain_resource = 3;
inline constexpr int domain_launch = 5;
inline constexpr int domain_graphs = 10;

// Sanitizer_CallbackIdResource
inline constexpr callback_id context_creation_finished = 3;
inline constexpr callback_id context_destroy_starting = 4;
inline constexpr callback_id stream_destroy_starting = 7;
inline constexpr callback_id module_loaded = 9;
inline constexpr callback_id module_unload_starting = 10;
inline constexpr callback_id device_memory_alloc = 11;
inline constexpr callback_id device_memory_free = 12;
inline constexpr callback_id host_memory_alloc = 13;
inline constexpr callback_id host_memory_free = 14;
inline constexpr callback_id memory_alloc_async = 15;
inline constexpr callback_id memory_free_async = 16;

// Sanitizer_CallbackIdLaunch
inline constexpr callback_id launch_begin = 1;
inline constexpr callback_id launch_end = 3;

// Sanitizer_CallbackIdGraphs
inline constexpr callback_id graph_node_launch_begin = 4;

// Sanitizer_InstructionId
inline constexpr int instruction_block_enter = 1;
inline constexpr int instruction_block_exit = 2;
inline constexpr int instruction_global_memory_access = 3;

// Sanitizer_ResourceMemoryFlags
inline constexpr std::uint32_t memory_flag_managed = 0x2;
inline constexpr std::uint32_t memory_flag_peer = 0x10;

// Sanitizer_ApiCallbackSite
inline constexpr int api_enter = 0;
inline constexpr int api_exit = 1;

struct callback_data {  // Sanitizer_CallbackData
  int callback_site;    // Sanitizer_ApiCallbackSite
  const char* function_name;
  const void* function_params;
  const void* function_return_value;
  const char* symbol_name;
  CUcontext context;
};

struct resource_stream_data {  // Sanitizer_ResourceStreamData
  CUcontext context;
  CUstream stream;
  stream_handle stream_handle_;
};

struct resource_context_data {  // Sanitizer_ResourceContextData
  CUcontext context;
  CUdevice device;
};

struct resource_module_data {  // Sanitizer_ResourceModuleData
  CUcontext context;
  CUmodule module;
  std::size_t cubin_size;
  const char* cubin;
  CUlibrary library;
};

struct resource_memory_data {  // Sanitizer_ResourceMemoryData
  std::uint64_t address;
  std::uint64_t size;
  CUcontext context;
  CUdevice device;
  CUstream stream;
  stream_handle stream_handle_;
  CUmemoryPool memory_pool;
  std::uint32_t flags;
  std::uint32_t permissions;
  int visibility;  // Sanitizer_MemoryVisibility
  CUdevice source_device;
};

struct launch_data {  // Sanitizer_LaunchData
  CUcontext context;
  CUstream stream;
  stream_handle stream_handle_;
  CUmodule module;
  CUfunction function;
  const char* function_name;
  std::uint32_t grid_dim[3];
  std::uint32_t block_dim[3];
  std::uint32_t cluster_dim[3];
  std::uint64_t grid_id;
  launch_handle launch;
  CUdevice device;
  CUcontext api_context;
  CUstream api_stream;
  stream_handle api_stream_handle;
};

struct graph_node_launch_data {  // Sanitizer_GraphNodeLaunchData
  CUgraphExec graph_exec;
  std::uint32_t launch_id;
  CUgraphNode node;
  CUgraphNodeType node_type;
  union {
    launch_data launch;                  // kernel nodes
    unsigned char other_operation[144];  // the union's largest member, Sanitizer_MemcpyData
  };
  std::uint32_t is_graph_upload;
};

using callback_fn = void (*)(void* userdata, int domain, callback_id id, const void* data);

/// The functions, looked up in libsanitizer-public.so.
struct functions {
  result (*subscribe)(subscriber_handle*, callback_fn, void*) = nullptr;
  result (*unsubscribe)(subscriber_handle) = nullptr;
  result (*enable_domain)(std::uint32_t enable, subscriber_handle, int domain) = nullptr;
  result (*enable_callback)(std::uint32_t enable, subscriber_handle, int domain, callback_id) = nullptr;
  result (*add_patches)(const void* image, CUcontext) = nullptr;
  result (*patch_instructions)(int instruction, CUmodule, const char* device_function) = nullptr;
  result (*patch_module)(CUmodule) = nullptr;
  result (*set_launch_callback_data)(launch_handle, CUfunction, stream_handle, const void*) = nullptr;
  result (*get_function_pc_and_size)(CUmodule, const char*, std::uint64_t*, std::uint64_t*) = nullptr;
  result (*alloc)(CUcontext, void**, std::size_t) = nullptr;
  result (*free)(CUcontext, void*) = nullptr;
  result (*memcpy_host_to_device_async)(void* dst, void* src, std::size_t, stream_handle) = nullptr;
  result (*memcpy_device_to_host)(void* dst, void* src, std::size_t, stream_handle) = nullptr;
  result (*memset)(void*, int, std::size_t, stream_handle) = nullptr;
  result (*get_result_string)(result, const char**) = nullptr;
};

}  // namespace ferret::compute_sanitizer::api
