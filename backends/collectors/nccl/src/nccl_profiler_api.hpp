// nccl_profiler_api.hpp — NCCL's profiler plugin interface, versions 5 (the
// newest NCCL 2.28 offers) and 4 (what it falls back to), declared from NCCL's
// ext-profiler/example/nccl/profiler_v5.h, profiler_v4.h and profiler.h
// (NCCL 2.28.9). NCCL does not install these headers; its README asks plugins
// to carry their own copy of the definitions. The static_asserts at the end pin
// the layouts NCCL 2.28's headers give on LP64 (x86-64, AArch64), checked
// against those headers once by compiling both side by side.
//
//   NCCL (ncclCommInitRank) ── dlopen(NCCL_PROFILER_PLUGIN) ── dlsym("ncclProfiler_v5"),
//   else "ncclProfiler_v4", ... ── init per communicator ── startEvent / stopEvent /
//   recordEventState from the threads that do the work ── finalize per communicator
#pragma once

#include <sys/types.h>  // pid_t

#include <cstddef>
#include <cstdint>

namespace ferret::nccl::api {

// ncclResult_t (nccl.h): an enum of int size; plugins return ncclSuccess only,
// except from init, where anything else makes NCCL disable the plugin.
enum result : int { success = 0, internal_error = 3 };

// Event types (profiler.h); a plugin asks for some of them at init.
enum event_type : std::uint64_t {
  group = 1u << 0,          // a kernel plan's group (no attributes)
  coll = 1u << 1,           // a collective enqueued (algorithm, protocol, channels, buffers)
  p2p = 1u << 2,            // a send or receive enqueued
  proxy_op = 1u << 3,
  proxy_step = 1u << 4,
  proxy_ctrl = 1u << 5,
  kernel_ch = 1u << 6,
  net_plugin = 1u << 7,
  group_api = 1u << 8,      // v5: ncclGroupStart..ncclGroupEnd (or NCCL's implicit group)
  coll_api = 1u << 9,       // v5: the collective's API call
  p2p_api = 1u << 10,       // v5: ncclSend / ncclRecv
  kernel_launch = 1u << 11, // v5: NCCL launching its kernel
};

// ncclProfilerEventState_t (profiler.h): the same numbers in every version.
using event_state = int;

using debug_logger = void (*)(int level, unsigned long flags, const char* file, int line,
                              const char* format, ...);

struct event_descr_v5 {
  std::uint64_t type;
  void* parent;
  int rank;
  union {
    struct {
      int graph_captured;
      int group_depth;  // 1: NCCL's implicit group around one call; more: the program's
    } group_api;
    struct {
      const char* func;
      std::size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graph_captured;
    } coll_api;
    struct {
      const char* func;
      std::size_t count;
      const char* datatype;
      void* stream;
      bool graph_captured;
    } p2p_api;
    struct {
      void* stream;
    } kernel_launch;
    struct {
      std::uint64_t sequence;
      const char* func;
      const void* send_buffer;
      void* receive_buffer;
      std::size_t count;
      int root;
      const char* datatype;
      std::uint8_t channels;
      std::uint8_t warps;
      const char* algorithm;
      const char* protocol;
      void* parent_group;  // the v4 group parent
    } coll;
    struct {
      const char* func;
      void* buffer;
      const char* datatype;
      std::size_t count;
      int peer;
      std::uint8_t channels;
      void* parent_group;
    } p2p;
    struct {
      pid_t pid;
      std::uint8_t channel;
      int peer;
      int steps;
      int chunk_size;
      int is_send;
    } proxy_op;
    struct {
      int step;
    } proxy_step;
    struct {
      std::uint8_t channel;
      std::uint64_t gpu_timer;
    } kernel_ch;
    struct {
      std::int64_t id;
      void* data;
    } net_plugin;
  };
};

struct event_descr_v4 {
  std::uint8_t type;
  void* parent;
  int rank;
  union {
    struct {
      std::uint64_t sequence;
      const char* func;
      const void* send_buffer;
      void* receive_buffer;
      std::size_t count;
      int root;
      const char* datatype;
      std::uint8_t channels;
      std::uint8_t warps;
      const char* algorithm;
      const char* protocol;
    } coll;
    struct {
      const char* func;
      void* buffer;
      const char* datatype;
      std::size_t count;
      int peer;
      std::uint8_t channels;
    } p2p;
    struct {
      pid_t pid;
      std::uint8_t channel;
      int peer;
      int steps;
      int chunk_size;
      int is_send;
    } proxy_op;
    struct {
      int step;
    } proxy_step;
    struct {
      std::uint8_t channel;
      std::uint64_t gpu_timer;
    } kernel_ch;
    struct {
      std::int64_t id;
      void* data;
    } net_plugin;
  };
};

// ncclProfilerEventStateArgs_v4_t and _v5_t: the same union.
union event_state_args {
  struct {
    std::size_t transfer_size;
  } proxy_step;
  struct {
    int appended_proxy_ops;
  } proxy_ctrl;
  struct {
    void* data;
  } net_plugin;
  struct {
    std::uint64_t gpu_timer;
  } kernel_ch;
};

struct profiler_v5 {
  const char* name;
  result (*init)(void** context, std::uint64_t communicator_id, int* activation_mask,
                 const char* communicator_name, int nodes, int ranks, int rank, debug_logger log);
  result (*start_event)(void* context, void** handle, event_descr_v5* descr);
  result (*stop_event)(void* handle);
  result (*record_event_state)(void* handle, event_state state, event_state_args* args);
  result (*finalize)(void* context);
};

// v4's init takes the communicator's name before its hash.
struct profiler_v4 {
  const char* name;
  result (*init)(void** context, int* activation_mask, const char* communicator_name,
                 std::uint64_t communicator_hash, int nodes, int ranks, int rank, debug_logger log);
  result (*start_event)(void* context, void** handle, event_descr_v4* descr);
  result (*stop_event)(void* handle);
  result (*record_event_state)(void* handle, event_state state, event_state_args* args);
  result (*finalize)(void* context);
};

// The layouts of NCCL 2.28's structs on LP64.
static_assert(sizeof(result) == 4);
static_assert(sizeof(event_descr_v5) == 112 && offsetof(event_descr_v5, parent) == 8 &&
              offsetof(event_descr_v5, rank) == 16 && offsetof(event_descr_v5, coll) == 24);
static_assert(offsetof(event_descr_v5, coll.root) == 64 && offsetof(event_descr_v5, coll.datatype) == 72 &&
              offsetof(event_descr_v5, coll.channels) == 80 && offsetof(event_descr_v5, coll.algorithm) == 88 &&
              offsetof(event_descr_v5, coll.protocol) == 96 && offsetof(event_descr_v5, coll.parent_group) == 104);
static_assert(offsetof(event_descr_v5, coll_api.root) == 48 && offsetof(event_descr_v5, coll_api.stream) == 56 &&
              offsetof(event_descr_v5, coll_api.graph_captured) == 64);
static_assert(offsetof(event_descr_v5, p2p_api.stream) == 48 && offsetof(event_descr_v5, group_api.group_depth) == 28);
static_assert(offsetof(event_descr_v5, p2p.peer) == 56 && offsetof(event_descr_v5, p2p.channels) == 60 &&
              offsetof(event_descr_v5, p2p.parent_group) == 64);
static_assert(sizeof(event_descr_v4) == 104 && offsetof(event_descr_v4, parent) == 8 &&
              offsetof(event_descr_v4, rank) == 16 && offsetof(event_descr_v4, coll) == 24);
static_assert(offsetof(event_descr_v4, coll.channels) == 80 && offsetof(event_descr_v4, coll.protocol) == 96 &&
              offsetof(event_descr_v4, p2p.peer) == 56 && offsetof(event_descr_v4, p2p.channels) == 60);
static_assert(sizeof(event_state_args) == 8);
static_assert(sizeof(profiler_v5) == 48 && offsetof(profiler_v5, finalize) == 40);
static_assert(sizeof(profiler_v4) == 48 && offsetof(profiler_v4, finalize) == 40);

}  // namespace ferret::nccl::api
