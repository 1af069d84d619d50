// nccl_plugin_driver — plays NCCL for the profiler plugin, without a GPU: loads
// the plugin as NCCL 2.28 does (dlopen, ncclProfiler_v5 or, with --interface 4,
// ncclProfiler_v4), and calls init, startEvent, stopEvent, recordEventState and
// finalize in the order and from the threads NCCL's enqueue.cc and group.cc do
// for the scenes below. tests/nccl/check_outputs.py checks what ferret wrote.
//
//   main thread, inside the program's own region "training step":
//     1. ncclAllReduce of 1024 ncclFloat32 (NCCL's implicit group, one plan)
//     2. ncclGroupStart; ncclAllGather 256 ncclFloat16; ncclSend 100 ncclInt8 to 1;
//        ncclRecv 100 ncclInt8 from 1; ncclGroupEnd (one plan: three operations
//        started in one loop, stopped in the next)
//     3. ncclBroadcast of 64 ncclFloat64 from root 1
//   second thread, second communicator: ncclReduce of 8 ncclInt64 to root 0
// Usage: nccl_plugin_driver [--interface 4|5] [plugin path]; without a path,
// NCCL_PROFILER_PLUGIN names the library, as for NCCL.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "ferret/ferret.hpp"
#include "nccl_profiler_api.hpp"

namespace api = ferret::nccl::api;

namespace {

// NCCL's strings are literals of its own (ncclFuncToString, ...).
constexpr const char* all_reduce = "AllReduce";
constexpr const char* all_gather = "AllGather";
constexpr const char* broadcast = "Broadcast";
constexpr const char* reduce = "Reduce";
constexpr const char* send = "Send";
constexpr const char* receive = "Recv";

int failures = 0;
void expect(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "nccl_plugin_driver: %s\n", what);
    ++failures;
  }
}

// The plugin's version-independent face, as NCCL's profiler.cc sees it.
class plugin {
 public:
  virtual ~plugin() = default;
  virtual void* init(const char* name, std::uint64_t hash, int ranks, int rank, int* mask) = 0;
  // v5 descriptors; the v4 face translates them as NCCL's profiler_v4.cc does.
  virtual void* start(void* context, api::event_descr_v5& descr) = 0;
  virtual void stop(void* handle) = 0;
  virtual void state(void* handle, api::event_state state) = 0;
  virtual void finalize(void* context) = 0;
};

class plugin_v5 final : public plugin {
 public:
  explicit plugin_v5(api::profiler_v5* table) : table_(table) {}
  void* init(const char* name, std::uint64_t hash, int ranks, int rank, int* mask) override {
    void* context = nullptr;
    expect(table_->init(&context, hash, mask, name, 1, ranks, rank, nullptr) == api::success, "v5 init failed");
    return context;
  }
  void* start(void* context, api::event_descr_v5& descr) override {
    void* handle = nullptr;
    table_->start_event(context, &handle, &descr);
    return handle;
  }
  void stop(void* handle) override { table_->stop_event(handle); }
  void state(void* handle, api::event_state s) override { table_->record_event_state(handle, s, nullptr); }
  void finalize(void* context) override { table_->finalize(context); }

 private:
  api::profiler_v5* table_;
};

class plugin_v4 final : public plugin {
 public:
  explicit plugin_v4(api::profiler_v4* table) : table_(table) {}
  void* init(const char* name, std::uint64_t hash, int ranks, int rank, int* mask) override {
    void* context = nullptr;
    expect(table_->init(&context, mask, name, hash, 1, ranks, rank, nullptr) == api::success, "v4 init failed");
    return context;
  }
  void* start(void* context, api::event_descr_v5& descr) override {
    // NCCL hands a v4 plugin only its own event types.
    if (descr.type != api::coll && descr.type != api::p2p && descr.type != api::group) return nullptr;
    api::event_descr_v4 old{};
    old.type = static_cast<std::uint8_t>(descr.type);
    old.rank = descr.rank;
    if (descr.type == api::coll) {
      const auto& c = descr.coll;
      old.coll = {c.sequence, c.func, c.send_buffer, c.receive_buffer, c.count, c.root, c.datatype,
                  c.channels, c.warps, c.algorithm, c.protocol};
    } else if (descr.type == api::p2p) {
      const auto& p = descr.p2p;
      old.p2p = {p.func, p.buffer, p.datatype, p.count, p.peer, p.channels};
    }
    void* handle = nullptr;
    table_->start_event(context, &handle, &old);
    return handle;
  }
  void stop(void* handle) override { table_->stop_event(handle); }
  void state(void* handle, api::event_state s) override { table_->record_event_state(handle, s, nullptr); }
  void finalize(void* context) override { table_->finalize(context); }

 private:
  api::profiler_v4* table_;
};

// NCCL starts and stops only what the plugin's activation mask asks for, and
// skips stopEvent for null handles.
struct nccl_stand_in {
  plugin& profiler;
  void* context;
  int mask;
  int rank;

  void* start(api::event_descr_v5 descr) {
    if ((mask & static_cast<int>(descr.type)) == 0) return nullptr;
    descr.rank = rank;
    return profiler.start(context, descr);
  }
  void stop(void* handle) {
    if (handle != nullptr) profiler.stop(handle);
  }

  struct operation {
    api::event_descr_v5 api_call;  // coll_api or p2p_api
    api::event_descr_v5 task;      // coll or p2p
  };

  // One ncclGroupStart..ncclGroupEnd (depth 2) or one implicit group (depth 1)
  // holding `operations`, launched as one plan (enqueue.cc, group.cc). The
  // regions "NVTX range ..." stand for NCCL's own NVTX ranges of its API calls
  // (ferret-run makes them regions): the group API event starts inside the
  // first call's range and ends in ncclGroupEnd's, so it cannot nest with them.
  void group(int depth, const operation* operations, int count) {
    api::event_descr_v5 group_api{};
    group_api.type = api::group_api;
    group_api.group_api.group_depth = depth;
    void* group_handle = nullptr;
    if (depth == 1) {  // ncclAllReduce alone: everything inside the call
      FERRET_REGION("NVTX range of the call");
      group_handle = start(group_api);
      enqueue(operations[0], group_handle);
      launch(operations, count);
      stop(group_handle);
      return;
    }
    for (int i = 0; i < count; ++i) {
      FERRET_REGION("NVTX range of the call");
      if (i == 0) {
        group_handle = start(group_api);
        if (group_handle != nullptr) profiler.state(group_handle, 23);  // ncclGroupStart returned
      }
      enqueue(operations[i], group_handle);
    }
    FERRET_REGION("NVTX range of ncclGroupEnd");
    if (group_handle != nullptr) profiler.state(group_handle, 24);  // ncclGroupEnd called
    launch(operations, count);
    stop(group_handle);
  }

  // taskAppend: the API event spans the enqueue.
  void enqueue(const operation& op, void* group_handle) {
    api::event_descr_v5 call = op.api_call;
    call.parent = group_handle;
    stop(start(call));
  }

  // ncclLaunchKernel, then hostStreamPlanTask: the plan's group, its tasks
  // started in one loop and stopped in another.
  void launch(const operation* operations, int count) {
    api::event_descr_v5 kernel{};
    kernel.type = api::kernel_launch;
    void* launch_handle = start(kernel);
    {
      FERRET_REGION("cuLaunchKernel stand-in");  // where the CUDA collector writes the launch
    }
    stop(launch_handle);
    api::event_descr_v5 plan{};
    plan.type = api::group;
    void* plan_handle = start(plan);
    void* tasks[8] = {};
    for (int i = 0; i < count; ++i) tasks[i] = start(operations[i].task);
    for (int i = 0; i < count; ++i) stop(tasks[i]);
    stop(plan_handle);
  }
};

api::event_descr_v5 coll_api(const char* func, std::size_t count, const char* datatype, int root) {
  api::event_descr_v5 d{};
  d.type = api::coll_api;
  d.coll_api.func = func;
  d.coll_api.count = count;
  d.coll_api.datatype = datatype;
  d.coll_api.root = root;
  return d;
}
api::event_descr_v5 p2p_api(const char* func, std::size_t count, const char* datatype) {
  api::event_descr_v5 d{};
  d.type = api::p2p_api;
  d.p2p_api.func = func;
  d.p2p_api.count = count;
  d.p2p_api.datatype = datatype;
  return d;
}
api::event_descr_v5 coll(const char* func, std::size_t count, const char* datatype, int root,
                         std::uint8_t channels, const char* algorithm, const char* protocol) {
  api::event_descr_v5 d{};
  d.type = api::coll;
  d.coll.func = func;
  d.coll.count = count;
  d.coll.datatype = datatype;
  d.coll.root = root;
  d.coll.channels = channels;
  d.coll.algorithm = algorithm;
  d.coll.protocol = protocol;
  return d;
}
api::event_descr_v5 p2p(const char* func, std::size_t count, const char* datatype, int peer, std::uint8_t channels) {
  api::event_descr_v5 d{};
  d.type = api::p2p;
  d.p2p.func = func;
  d.p2p.count = count;
  d.p2p.datatype = datatype;
  d.p2p.peer = peer;
  d.p2p.channels = channels;
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  int version = 5;
  const char* path = std::getenv("NCCL_PROFILER_PLUGIN");
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--interface") == 0 && i + 1 < argc)
      version = std::atoi(argv[++i]);
    else
      path = argv[i];
  }
  if (path == nullptr) {
    std::fprintf(stderr, "nccl_plugin_driver: no plugin (argument or NCCL_PROFILER_PLUGIN)\n");
    return 2;
  }
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);  // as NCCL's plugin_open.cc
  if (library == nullptr) {
    std::fprintf(stderr, "nccl_plugin_driver: %s\n", dlerror());
    return 2;
  }
  const std::string symbol = "ncclProfiler_v" + std::to_string(version);
  void* table = dlsym(library, symbol.c_str());
  if (table == nullptr) {
    std::fprintf(stderr, "nccl_plugin_driver: no %s in %s\n", symbol.c_str(), path);
    return 2;
  }
  plugin_v5 v5{static_cast<api::profiler_v5*>(table)};
  plugin_v4 v4{static_cast<api::profiler_v4*>(table)};
  plugin& profiler = version == 4 ? static_cast<plugin&>(v4) : v5;
  {
    const char* name = version == 4 ? static_cast<api::profiler_v4*>(table)->name
                                    : static_cast<api::profiler_v5*>(table)->name;
    expect(name != nullptr && std::strcmp(name, "ferret") == 0, "the plugin's name is ferret");
  }

  int mask = 0;
  void* world = profiler.init("world", 0x1234abcdULL, 2, 0, &mask);
  nccl_stand_in nccl{profiler, world, mask, 0};
  std::printf("activation mask 0x%x\n", static_cast<unsigned>(mask));
  {
    FERRET_REGION("training step");
    const nccl_stand_in::operation single[] = {
        {coll_api(all_reduce, 1024, "ncclFloat32", 0), coll(all_reduce, 1024, "ncclFloat32", 0, 2, "RING", "LL")}};
    nccl.group(1, single, 1);
    // NCCL enqueues AllGather as bytes (count × size, ncclInt8).
    const nccl_stand_in::operation grouped[] = {
        {coll_api(all_gather, 256, "ncclFloat16", 0), coll(all_gather, 512, "ncclInt8", 0, 4, "RING", "Simple")},
        {p2p_api(send, 100, "ncclInt8"), p2p(send, 100, "ncclInt8", 1, 1)},
        {p2p_api(receive, 100, "ncclInt8"), p2p(receive, 100, "ncclInt8", 1, 1)}};
    nccl.group(2, grouped, 3);
  }
  const nccl_stand_in::operation rooted[] = {
      {coll_api(broadcast, 64, "ncclFloat64", 1), coll(broadcast, 512, "ncclInt8", 1, 1, "RING", "LL128")}};
  nccl.group(1, rooted, 1);

  std::thread other([&] {
    int other_mask = 0;
    void* second = profiler.init("", 0x5678ULL, 2, 1, &other_mask);
    nccl_stand_in second_nccl{profiler, second, other_mask, 1};
    const nccl_stand_in::operation reduction[] = {
        {coll_api(reduce, 8, "ncclInt64", 0), coll(reduce, 8, "ncclInt64", 0, 1, "TREE", "Simple")}};
    second_nccl.group(1, reduction, 1);
    profiler.finalize(second);
  });
  other.join();
  profiler.finalize(world);
  dlclose(library);  // NCCL unloads the plugin after the last communicator
  return failures == 0 ? 0 : 1;
}
