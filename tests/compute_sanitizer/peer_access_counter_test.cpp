// The peer-access counter's host side (FERRET_CUDA_PEER_ACCESSES) against a
// fake Compute Sanitizer (fake_sanitizer.cpp), without a GPU: counter slots
// handed to launches and read back, joined to their launch calls; a stream or
// a context going; every slot in flight; a context handle reused. The "kernel"
// fills its counters as the device patch does (patch_on_host.hpp). What the
// GPU machine checks against real kernels is in tests/gpu/peer_access_check.sh.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <cupti.h>

#include "patch_on_host.hpp"
#include "peer_access_counter.hpp"

namespace api = ferret::compute_sanitizer::api;

extern "C" {
void fake_sanitizer_callback(int domain, api::callback_id id, const void* data);
const void* fake_sanitizer_launch_data(api::launch_handle launch);
void fake_sanitizer_define_function(CUmodule module, const char* name, std::uint64_t pc, std::uint64_t size);
void fake_sanitizer_context_gone(CUcontext context);
std::size_t fake_sanitizer_allocations(CUcontext context);
void fake_sanitizer_read_back_takes(int milliseconds);
}

namespace {

using ferret::compute_sanitizer::peer_access_counter;

// Handles are opaque to the counter: distinct values do.
template <typename Handle>
Handle handle(std::uintptr_t value) {
  return reinterpret_cast<Handle>(value);
}

const CUcontext context_a = handle<CUcontext>(0x100);
const CUmodule module_a = handle<CUmodule>(0x200);
const api::stream_handle stream_a = handle<api::stream_handle>(0x300);
const api::stream_handle stream_b = handle<api::stream_handle>(0x301);
constexpr const char* kernel_name = "_Z4halov";
constexpr std::uint64_t kernel_pc = 0x7000'0000;
constexpr std::uint64_t local_buffer = 0x1'0000'0000;  // on device 0, where the kernels run
constexpr std::uint64_t peer_buffer = 0x2'0000'0000;   // on device 1

// The driver calls forwarded to the collector's handler, by callback id.
std::vector<std::uint32_t> g_forwarded_calls;
void note_forwarded_call(std::uint32_t cbid, const api::callback_data&) { g_forwarded_calls.push_back(cbid); }

// One process: contexts on device 0, each with the module of one kernel that
// loads floats from a buffer on device 1 (and from its own device's memory,
// which is not counted).
class process {
 public:
  process() {
    setenv("FERRET_SANITIZER_LIBRARY", FERRET_FAKE_SANITIZER, 1);
    std::string error;
    g_forwarded_calls.clear();
    counter_ = peer_access_counter::start({}, note_forwarded_call, error);
    REQUIRE_MESSAGE(counter_ != nullptr, error);
  }
  peer_access_counter& counter() { return *counter_; }

  // A driver call the program makes, returning `result`: its callbacks at entry and exit.
  template <typename Params>
  void driver_call(std::uint32_t cbid, const Params& params, CUresult result = CUDA_SUCCESS) {
    api::callback_data call{};
    call.function_params = &params;
    call.function_return_value = &result;
    call.callback_site = api::api_enter;
    fake_sanitizer_callback(api::domain_driver_api, cbid, &call);
    call.callback_site = api::api_exit;
    fake_sanitizer_callback(api::domain_driver_api, cbid, &call);
  }
  ~process() {
    counter_.reset();
    for (const CUcontext context : contexts_) fake_sanitizer_context_gone(context);
  }
  process(const process&) = delete;
  process& operator=(const process&) = delete;

  void create_context(CUcontext context) {
    api::resource_context_data created{context, 0};
    fake_sanitizer_callback(api::domain_resource, api::context_creation_finished, &created);
    api::resource_module_data loaded{context, module_a, 0, nullptr, nullptr};
    fake_sanitizer_callback(api::domain_resource, api::module_loaded, &loaded);
    fake_sanitizer_define_function(module_a, kernel_name, kernel_pc, 0x1000);
    allocate(context, local_buffer, 0);
    allocate(context, peer_buffer, 1);
    contexts_.push_back(context);
  }
  void destroy_context(CUcontext context) {
    api::resource_context_data going{context, 0};
    fake_sanitizer_callback(api::domain_resource, api::context_destroy_starting, &going);
    fake_sanitizer_context_gone(context);
  }
  void destroy_stream(CUcontext context, api::stream_handle stream) {
    api::resource_stream_data going{context, nullptr, stream};
    fake_sanitizer_callback(api::domain_resource, api::stream_destroy_starting, &going);
  }
  // A launch from the call `correlation` (0: from no launch call) whose
  // kernel loads `peer_loads` floats from device 1 and as many from device 0,
  // and `other_loads` from `other`.
  void launch(CUcontext context, api::stream_handle stream, std::uint64_t correlation,
              std::uint32_t peer_loads, std::uint64_t other = 0, std::uint32_t other_loads = 0) {
    api::launch_data data{};
    data.context = context;
    data.stream_handle_ = stream;
    data.module = module_a;
    data.function = handle<CUfunction>(0x400);
    data.function_name = kernel_name;
    data.launch = handle<api::launch_handle>(next_launch_++);
    data.device = 0;
    if (correlation != 0) peer_access_counter::note_launch_call(correlation);
    fake_sanitizer_callback(api::domain_launch, api::launch_begin, &data);
    fake_sanitizer_callback(api::domain_launch, api::launch_end, &data);
    if (correlation != 0) peer_access_counter::end_launch_call(correlation);
    auto* given = static_cast<ferret_peer_launch*>(const_cast<void*>(fake_sanitizer_launch_data(data.launch)));
    last_launch_ = given;
    if (given == nullptr) return;  // not counted: the patch returns at once
    for (std::uint32_t i = 0; i < peer_loads; ++i) {
      ferret::testing::count_access(*given, kernel_pc + 0x80, peer_buffer + 4 * i, 4, FERRET_PEER_FLAG_READ);
      ferret::testing::count_access(*given, kernel_pc + 0x90, local_buffer + 4 * i, 4, FERRET_PEER_FLAG_READ);
    }
    for (std::uint32_t i = 0; i < other_loads; ++i)
      ferret::testing::count_access(*given, kernel_pc + 0xa0, other + 4 * i, 4, FERRET_PEER_FLAG_READ);
  }
  // A graph launch from the call `correlation`: per node a callback, as the
  // sanitizer makes them; kernel nodes load `peer_loads` floats from device 1.
  struct graph_node {
    std::uintptr_t handle;
    CUgraphNodeType type;
    bool upload;
  };
  void graph_launch(CUcontext context, api::stream_handle stream, std::uint64_t correlation,
                    const std::vector<graph_node>& nodes, std::uint32_t peer_loads) {
    peer_access_counter::note_launch_call(correlation);
    for (const graph_node& node : nodes) {
      api::graph_node_launch_data data{};
      data.node = handle<CUgraphNode>(node.handle);
      data.node_type = node.type;
      data.is_graph_upload = node.upload ? 1 : 0;
      data.launch.context = context;
      data.launch.stream_handle_ = stream;
      data.launch.module = module_a;
      data.launch.function = handle<CUfunction>(0x400);
      data.launch.function_name = kernel_name;
      data.launch.launch = handle<api::launch_handle>(next_launch_++);
      fake_sanitizer_callback(api::domain_graphs, api::graph_node_launch_begin, &data);
      auto* given = static_cast<ferret_peer_launch*>(const_cast<void*>(fake_sanitizer_launch_data(data.launch.launch)));
      if (given == nullptr) continue;
      for (std::uint32_t i = 0; i < peer_loads; ++i)
        ferret::testing::count_access(*given, kernel_pc + 0x80, peer_buffer + 4 * i, 4, FERRET_PEER_FLAG_READ);
      given->first_entry_inverted = ~std::uint64_t{1'000'000};
      given->last_exit = 1'001'000;
    }
    peer_access_counter::end_launch_call(correlation);
  }
  // The last launch's kernel ran from `entered` to `exited` on the device's global timer.
  void time_last_launch(std::uint64_t entered, std::uint64_t exited) {
    REQUIRE(last_launch_ != nullptr);
    last_launch_->first_entry_inverted = ~entered;
    last_launch_->last_exit = exited;
  }
  std::vector<ferret::runtime::gpu_activity> kernels() {
    std::vector<ferret::runtime::gpu_activity> handed;
    counter_->hand_over_kernels(handed);
    return handed;
  }
  // Bytes loaded per launch call and device reached, of the launches read
  // back since the last call; `collect`: the drain's read-back first.
  std::map<std::pair<std::uint64_t, std::int32_t>, std::uint64_t> bytes(bool collect = true) {
    if (collect) counter_->collect(false);
    std::vector<ferret::runtime::gpu_remote_access_batch> batches;
    counter_->hand_over(batches);
    std::map<std::pair<std::uint64_t, std::int32_t>, std::uint64_t> loaded;
    for (const auto& batch : batches) {
      CHECK(std::string{batch.function} == kernel_name);
      for (const auto& access : batch.accesses) {
        CHECK(access.pc_offset == (access.target_device == 1 ? 0x80 : 0xa0));
        loaded[{batch.correlation, access.target_device}] += access.bytes;
      }
    }
    return loaded;
  }
  // Those loaded from device 1, per launch call.
  std::map<std::uint64_t, std::uint64_t> peer_bytes(bool collect = true) {
    std::map<std::uint64_t, std::uint64_t> from_peer;
    for (const auto& [key, loaded] : bytes(collect)) {
      CHECK(key.second == 1);
      from_peer[key.first] += loaded;
    }
    return from_peer;
  }
  std::int64_t metadata(const std::string& key) const {
    ferret::runtime::metadata_list list;
    counter_->add_metadata(list);
    for (const auto& [name, value] : list)
      if (name == key) return std::get<std::int64_t>(value);
    FAIL("no metadata ", key);
    return -1;
  }

 private:
  void allocate(CUcontext context, std::uint64_t address, CUdevice device) {
    api::resource_memory_data memory{};
    memory.address = address;
    memory.size = 1 << 20;
    memory.context = context;
    memory.device = device;
    fake_sanitizer_callback(api::domain_resource, api::device_memory_alloc, &memory);
  }

  std::unique_ptr<peer_access_counter> counter_;
  std::vector<CUcontext> contexts_;
  std::uintptr_t next_launch_ = 0x1000;
  ferret_peer_launch* last_launch_ = nullptr;
};

using bytes_by_call = std::map<std::uint64_t, std::uint64_t>;

}  // namespace

TEST_CASE("each launch's loads from the peer come back once, joined to its launch call") {
  process p;
  p.create_context(context_a);
  p.launch(context_a, stream_a, 7, 100);
  p.launch(context_a, stream_b, 8, 50);
  p.launch(context_a, stream_a, 0, 10);  // no launch call seen: not counted, said
  CHECK(p.peer_bytes() == bytes_by_call{{7, 400}, {8, 200}});
  CHECK(p.peer_bytes().empty());
  CHECK(p.metadata("peer-access-launches-counted") == 2);
  CHECK(p.metadata("peer-access-launches-dropped-no-call") == 1);
}

TEST_CASE("each launch read back is a kernel on the host's clock, with its stream, size and bytes") {
  process p;
  p.create_context(context_a);
  const std::uint64_t timer = 1'795'925'722'000'000'000;  // the device's global timer, far from the host's clock
  const std::int64_t before_first = ferret::runtime::monotonic_raw_ns();
  p.launch(context_a, stream_a, 7, 100);
  const std::int64_t after_first = ferret::runtime::monotonic_raw_ns();
  p.time_last_launch(timer, timer + 50'000);
  p.launch(context_a, stream_b, 8, 0);
  p.time_last_launch(timer + 900'000'000, timer + 900'020'000);  // 0.9 s later on the timer
  p.launch(context_a, stream_a, 9, 10);                           // not timed: no block ran it
  p.bytes();
  const std::vector<ferret::runtime::gpu_activity> kernels = p.kernels();
  REQUIRE(kernels.size() == 2);
  const ferret::runtime::gpu_activity& first = kernels[0];
  CHECK(first.operation == ferret::runtime::gpu_operation::kernel);
  CHECK(first.launch.correlation == 7);
  CHECK(std::string{first.name} == kernel_name);
  CHECK(first.device == 0);
  CHECK(first.stream == 1);
  // The first launch bounds the timer: its kernel begins when it was launched.
  CHECK(first.start_ns >= before_first);
  CHECK(first.start_ns <= after_first);
  CHECK(first.end_ns - first.start_ns == 50'000);
  REQUIRE(first.remote != nullptr);
  REQUIRE(first.remote->target_count == 1);
  CHECK(first.remote->targets[0].device == 1);
  CHECK(first.remote->targets[0].loaded_bytes == 400);
  CHECK(first.remote->targets[0].stored_bytes == 0);
  const ferret::runtime::gpu_activity& second = kernels[1];
  CHECK(second.launch.correlation == 8);
  CHECK(second.stream == 2);
  CHECK(second.start_ns - first.start_ns == 900'000'000);
  CHECK(second.end_ns - second.start_ns == 20'000);
  CHECK(second.remote == nullptr);  // it reached no other memory
  CHECK(p.metadata("peer-access-kernels-untimed") == 1);
  CHECK(p.kernels().empty());
  // A stream created after one went, at its handle, is another stream.
  p.destroy_stream(context_a, stream_a);
  p.launch(context_a, stream_a, 10, 0);
  p.time_last_launch(timer + 1'000'000'000, timer + 1'000'001'000);
  p.bytes();
  const std::vector<ferret::runtime::gpu_activity> later = p.kernels();
  REQUIRE(later.size() == 1);
  CHECK(later[0].stream == 3);
}

TEST_CASE("a graph launch's kernel nodes share one counter slot, joined to the graph's launch call") {
  process p;
  p.create_context(context_a);
  p.graph_launch(context_a, stream_a, 11,
                 {{0x900, CU_GRAPH_NODE_TYPE_KERNEL, false},
                  {0x901, CU_GRAPH_NODE_TYPE_MEMSET, false},  // not a kernel: nothing to count
                  {0x902, CU_GRAPH_NODE_TYPE_KERNEL, false},
                  {0x902, CU_GRAPH_NODE_TYPE_KERNEL, true}},  // cuGraphUpload: nothing runs
                 25);
  p.graph_launch(context_a, stream_a, 12, {{0x900, CU_GRAPH_NODE_TYPE_KERNEL, false}}, 5);  // the graph again
  // Both kernel nodes of the first launch counted into one slot: 2 × 25 floats.
  CHECK(p.peer_bytes() == bytes_by_call{{11, 200}, {12, 20}});
  CHECK(p.kernels().empty());  // one slot's times span the graph's kernels: no kernel events
  CHECK(p.metadata("peer-access-launches-counted") == 2);
  CHECK(p.metadata("peer-access-graph-kernel-nodes") == 3);
  CHECK(p.metadata("peer-access-kernels-untimed") == 0);
}

TEST_CASE("a stream's launches are read back before the stream goes") {
  process p;
  p.create_context(context_a);
  p.launch(context_a, stream_a, 1, 10);
  p.launch(context_a, stream_b, 2, 20);
  p.destroy_stream(context_a, stream_a);
  CHECK(p.peer_bytes(false) == bytes_by_call{{1, 40}});
  CHECK(p.peer_bytes() == bytes_by_call{{2, 80}});
}

TEST_CASE("with every slot in flight a launch waits for the oldest one's counters, and a reused slot starts at zero") {
  process p;
  p.create_context(context_a);
  constexpr std::uint64_t slots = 256;  // per context (peer_access_counter.cpp)
  for (std::uint64_t call = 1; call <= slots + 1; ++call)
    p.launch(context_a, stream_a, call, static_cast<std::uint32_t>(call));
  const bytes_by_call bytes = p.peer_bytes();
  REQUIRE(bytes.size() == slots + 1);
  for (const auto& [call, loaded] : bytes) CHECK(loaded == 4 * call);
  CHECK(p.metadata("peer-access-launches-waited-for-a-slot") == 1);
  CHECK(p.metadata("peer-access-launches-dropped-no-slot") == 0);
}

TEST_CASE("a context's launches are read back before it goes, and a new context at its handle counts afresh") {
  process p;
  p.create_context(context_a);
  p.launch(context_a, stream_a, 1, 10);
  p.destroy_context(context_a);
  CHECK(p.peer_bytes(false) == bytes_by_call{{1, 40}});
  CHECK(fake_sanitizer_allocations(context_a) == 0);
  // The driver may hand the next context the handle of the one destroyed.
  p.create_context(context_a);
  p.launch(context_a, stream_a, 2, 20);
  CHECK(fake_sanitizer_allocations(context_a) > 0);  // memory of its own
  CHECK(p.peer_bytes() == bytes_by_call{{2, 80}});
  CHECK(p.metadata("peer-access-launches-counted") == 2);
}

TEST_CASE("a context going waits for the launches of it that the drain is reading back") {
  process p;
  p.create_context(context_a);
  p.launch(context_a, stream_a, 1, 10);
  fake_sanitizer_read_back_takes(200);
  bytes_by_call drained;
  std::thread drain{[&] { drained = p.peer_bytes(); }};
  std::this_thread::sleep_for(std::chrono::milliseconds{50});  // the drain is in its read-back
  p.destroy_context(context_a);  // frees the context's memory once the callback returns
  drain.join();
  fake_sanitizer_read_back_takes(0);
  CHECK(drained == bytes_by_call{{1, 40}});
  CHECK(p.metadata("peer-access-launches-dropped-read-failed") == 0);
}

TEST_CASE("host memory registered, or mapped from a cuMemCreate in host memory, is host memory until it goes") {
  // The sanitizer reports neither (NCCL's shared memory segments and cuMem
  // host allocations: their accesses were in no range, 2026-11-28).
  process p;
  p.create_context(context_a);
  const std::uint64_t registered = 0x5'0000'0000, mapped = 0x6'0000'0000, device_mapped = 0x7'0000'0000;
  p.driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2,
                cuMemHostRegister_v2_params{reinterpret_cast<void*>(registered), 4096, 0});
  p.driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2,  // failed: nothing registered
                cuMemHostRegister_v2_params{reinterpret_cast<void*>(0x8'0000'0000), 4096, 0},
                CUDA_ERROR_INVALID_VALUE);
  CUmemAllocationProp host{}, device{};
  host.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  device.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  CUmemGenericAllocationHandle host_handle = 11, device_handle = 12;
  p.driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, cuMemCreate_params{&host_handle, 1 << 21, &host, 0});
  p.driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, cuMemCreate_params{&device_handle, 1 << 21, &device, 0});
  p.driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemMap, cuMemMap_params{mapped, 1 << 21, 0, host_handle, 0});
  p.driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemMap, cuMemMap_params{device_mapped, 1 << 21, 0, device_handle, 0});

  p.launch(context_a, stream_a, 1, 0, registered, 8);
  p.launch(context_a, stream_a, 2, 0, mapped, 16);
  p.launch(context_a, stream_a, 3, 0, device_mapped, 4);  // the sanitizer reports device mappings: not here
  p.launch(context_a, stream_a, 4, 0, 0x8'0000'0000, 2);
  using key = std::pair<std::uint64_t, std::int32_t>;
  const std::int32_t host_memory = ferret::runtime::host_memory_device;
  CHECK(p.bytes() == std::map<key, std::uint64_t>{{{1, host_memory}, 32}, {{2, host_memory}, 64}});
  CHECK(p.metadata("peer-accesses-dropped-in-no-range") == 4 + 2);

  p.driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister,
                cuMemHostUnregister_params{reinterpret_cast<void*>(registered)});
  p.driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, cuMemUnmap_params{mapped, 1 << 21});
  p.launch(context_a, stream_a, 5, 0, registered, 8);
  p.launch(context_a, stream_a, 6, 0, mapped, 8);
  CHECK(p.bytes().empty());
  CHECK(p.metadata("peer-accesses-dropped-in-no-range") == 6 + 16);
}

TEST_CASE("the handler gets the driver calls it asked for, and not those the counter follows itself") {
  process p;
  REQUIRE(p.counter().forward_driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2));
  CHECK_FALSE(p.counter().forward_driver_call(4096));  // beyond the ids the driver has
  p.driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, cuMemAlloc_v2_params{});
  p.driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister, cuMemHostUnregister_params{});
  CHECK(g_forwarded_calls ==
        std::vector<std::uint32_t>{CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2});
}
