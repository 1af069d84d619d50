// The CUDA collector's API side without a GPU: CUPTI callbacks synthesised
// from the headers' structs drive api_calls (what a call's callback writes),
// CUPTI records synthesised the same way go through the record decoder and a
// fake collector to the runtime, and the memory backend shows what the trace
// holds: which calls became regions, which were counted, and whether every
// device record found the call that caused it.
#include <cupti.h>
#include <doctest/doctest.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "api_calls.hpp"
#include "api_table.hpp"
#include "ferret/ferret.hpp"
#include "ferret/runtime/api_policy.hpp"
#include "ferret/runtime/runtime.hpp"
#include "record_decoder.hpp"
#include "support/memory_backend.hpp"

namespace {

using ferret::cupti::api_call;
using ferret::cupti::api_calls;
using ferret::cupti::api_table;
using ferret::cupti::call_handling;
using ferret::runtime::api_effect;
using ferret::runtime::api_recording;
using ferret::runtime::gpu_activity;
using ferret::testing::capture;
using ferret::testing::memory_backend;

constexpr std::uint32_t cupti_13_0 = 130001;

std::int64_t monotonic_raw_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::uint64_t this_tid() { return static_cast<std::uint64_t>(syscall(SYS_gettid)); }

// Hands the runtime what the test decoded, as the CUDA collector does.
class fake_collector final : public ferret::runtime::collector {
 public:
  std::vector<gpu_activity> queued;
  void collect(std::vector<gpu_activity>& activities,
               std::vector<ferret::runtime::gpu_device_info>&, bool) override {
    activities.insert(activities.end(), queued.begin(), queued.end());
    queued.clear();
  }
  void add_metadata(ferret::runtime::metadata_list& metadata) const override {
    if (calls != nullptr) calls->add_metadata(metadata);
  }
  void abandon() noexcept override {}
  const api_calls* calls = nullptr;  // whose counts the metadata shows
};

fake_collector& collector() {
  static fake_collector* instance = [] {
    auto* made = new fake_collector;
    REQUIRE(ferret::runtime::register_collector(made));
    return made;
  }();
  return *instance;
}

std::uint32_t device_one(CUcontext) { return 1; }

// One API call as CUPTI reports it: an enter and an exit callback.
struct call_site {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId id;
  const char* name;
};
// The calls the cases make, named as in the CUDA headers.
namespace site {
constexpr call_site cudaLaunchKernel{CUPTI_CB_DOMAIN_RUNTIME_API,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                     "cudaLaunchKernel_v7000"};
constexpr call_site cuLaunchKernel{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                   "cuLaunchKernel"};
constexpr call_site cudaGetDevice{CUPTI_CB_DOMAIN_RUNTIME_API,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice_v3020"};
constexpr call_site cudaGetLastError{CUPTI_CB_DOMAIN_RUNTIME_API,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
                                     "cudaGetLastError_v3020"};
constexpr call_site cudaEventRecord{CUPTI_CB_DOMAIN_RUNTIME_API,
                                    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020,
                                    "cudaEventRecord_v3020"};
constexpr call_site cudaEventQuery{CUPTI_CB_DOMAIN_RUNTIME_API,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, "cudaEventQuery_v3020"};
constexpr call_site cuEventQuery{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuEventQuery,
                                 "cuEventQuery"};
constexpr call_site cudaStreamDestroy_v3020{CUPTI_CB_DOMAIN_RUNTIME_API,
                                            CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v3020,
                                            "cudaStreamDestroy_v3020"};
constexpr call_site cudaStreamDestroy_v5050{CUPTI_CB_DOMAIN_RUNTIME_API,
                                            CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050,
                                            "cudaStreamDestroy_v5050"};
constexpr call_site push_configuration{CUPTI_CB_DOMAIN_RUNTIME_API,
                                       CUPTI_RUNTIME_TRACE_CBID___cudaPushCallConfiguration_v13000,
                                       "__cudaPushCallConfiguration_v13000"};
}  // namespace site

CUpti_CallbackData callback_data(const call_site& site, CUpti_ApiCallbackSite where,
                                 std::uint32_t correlation, const void* params = nullptr,
                                 void* result = nullptr) {
  CUpti_CallbackData data{};
  data.callbackSite = where;
  data.functionName = site.name;
  data.functionParams = params;
  data.functionReturnValue = result;
  data.context = reinterpret_cast<CUcontext>(0x1000);
  data.correlationId = correlation;
  return data;
}

void enter(api_calls& calls, const call_site& site, std::uint32_t correlation,
           const void* params = nullptr) {
  calls.on_api(site.domain, site.id, callback_data(site, CUPTI_API_ENTER, correlation, params));
}

void leave(api_calls& calls, const call_site& site, std::uint32_t correlation,
           const void* params = nullptr, void* result = nullptr) {
  calls.on_api(site.domain, site.id,
               callback_data(site, CUPTI_API_EXIT, correlation, params, result));
}

// A whole call; `status` is what it returns (cudaSuccess unless given).
void call(api_calls& calls, const call_site& site, std::uint32_t correlation, int status = 0) {
  enter(calls, site, correlation);
  leave(calls, site, correlation, nullptr, &status);
}

// The records of this thread's cuda regions, in order ("name+" begin, "name-" end).
std::vector<std::string> cuda_regions(const capture& c) {
  std::vector<std::string> regions;
  const auto thread = c.threads.find(this_tid());
  if (thread == c.threads.end()) return regions;
  for (const auto& r : thread->second.records)
    if (r.domain == "cuda")
      regions.push_back(r.name + (r.kind == ferret::runtime::record_kind::region_begin ? "+" : "-"));
  return regions;
}

const ferret::runtime::metadata_value* metadata(const capture& c, const std::string& key) {
  for (const auto& [k, v] : c.runtime_metadata)
    if (k == key) return &v;
  return nullptr;
}

std::int64_t count_of(const capture& c, const std::string& call) {
  const auto* value = metadata(c, "cuda-api-unrecorded:" + call);
  return value != nullptr ? std::get<std::int64_t>(*value) : 0;
}

std::vector<std::string> counted_calls(const capture& c) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : c.runtime_metadata)
    if (k.rfind("cuda-api-unrecorded:", 0) == 0) keys.push_back(k.substr(20));
  return keys;
}

// A CUPTI synchronisation record (the 13.0 layout) of an event query or wait.
CUpti_ActivitySynchronization2 event_synchronization(std::uint32_t correlation, std::int64_t start) {
  CUpti_ActivitySynchronization2 record{};
  record.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  record.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
  record.start = static_cast<std::uint64_t>(start);
  record.end = static_cast<std::uint64_t>(start + 800);
  record.correlationId = correlation;
  record.contextId = 1;
  record.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  record.cudaEventId = 3;
  return record;
}

gpu_activity decoded_activity(const CUpti_ActivitySynchronization2& record) {
  ferret::cupti::record_decoder decoder;
  std::string error;
  REQUIRE(decoder.select_version(cupti_13_0, error));
  ferret::cupti::decoded out{};
  REQUIRE(decoder.decode(reinterpret_cast<const CUpti_Activity*>(&record), out) ==
          ferret::cupti::decoded_kind::activity);
  return out.activity;
}

}  // namespace

TEST_CASE("policy: which effects become regions, counts, or nothing, per FERRET_CUDA_API") {
  using ferret::runtime::counts;
  using ferret::runtime::records;
  using ferret::runtime::subscribes;
  for (const api_effect work : {api_effect::launch, api_effect::copy, api_effect::set,
                                api_effect::allocate, api_effect::release,
                                api_effect::synchronize, api_effect::order}) {
    for (const api_recording recording :
         {api_recording::work, api_recording::work_uncounted, api_recording::all}) {
      CHECK(records(recording, work));
      CHECK_FALSE(counts(recording, work));
    }
  }
  CHECK_FALSE(records(api_recording::work, api_effect::other));
  CHECK(counts(api_recording::work, api_effect::other));
  CHECK(subscribes(api_recording::work, api_effect::other));
  CHECK_FALSE(subscribes(api_recording::work_uncounted, api_effect::other));
  CHECK_FALSE(subscribes(api_recording::work, api_effect::internal));
  CHECK(records(api_recording::all, api_effect::other));
  CHECK(records(api_recording::all, api_effect::internal));
  CHECK_FALSE(counts(api_recording::all, api_effect::other));

  CHECK(ferret::runtime::parse_api_recording("work") == api_recording::work);
  CHECK(ferret::runtime::parse_api_recording(" all ") == api_recording::all);
  CHECK(ferret::runtime::parse_api_recording("work-uncounted") == api_recording::work_uncounted);
  CHECK_FALSE(ferret::runtime::parse_api_recording("ALL").has_value());
  CHECK_FALSE(ferret::runtime::parse_api_recording("").has_value());
  CHECK(ferret::runtime::to_string(api_recording::work_uncounted) == "work-uncounted");

  // FERRET_CUDA_API: the vendor-neutral values, and driver.
  const auto driver = ferret::cupti::parse_cuda_api(" driver ");
  REQUIRE(driver.has_value());
  CHECK(driver->driver_only);
  CHECK(driver->recording == api_recording::work_uncounted);
  CHECK(ferret::cupti::to_string(*driver) == "driver");
  const auto work = ferret::cupti::parse_cuda_api("work");
  REQUIRE(work.has_value());
  CHECK_FALSE(work->driver_only);
  CHECK(ferret::cupti::to_string(*work) == "work");
  CHECK_FALSE(ferret::cupti::parse_cuda_api("Driver").has_value());
}

TEST_CASE("table: calls classified by what they do to GPU work") {
  const api_table& table = api_table::cuda();
  const auto runtime_effect = [&](CUpti_CallbackId id) { return table.runtime_call(id).effect; };
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) == api_effect::launch);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000) == api_effect::launch);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000) == api_effect::launch);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020) == api_effect::copy);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020) == api_effect::copy);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020) == api_effect::set);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020) == api_effect::allocate);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020) == api_effect::release);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020) == api_effect::synchronize);
  // Polling is waiting: a query's synchronisation record needs its call.
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020) == api_effect::synchronize);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020) == api_effect::synchronize);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020) == api_effect::order);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020) == api_effect::order);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000) == api_effect::order);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020) == api_effect::other);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020) == api_effect::other);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020) == api_effect::other);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID___cudaPushCallConfiguration_v13000) ==
        api_effect::internal);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID___cudaRegisterFunction_v13000) == api_effect::internal);
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_SIZE + 10) == api_effect::other);  // a newer CUDA's
  CHECK(table.runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000).handling ==
        call_handling::copy_peer);
  CHECK(table.runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020).handling ==
        call_handling::reset);
  CHECK(table.runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020).handling ==
        call_handling::query);
  CHECK(table.driver_call(CUPTI_DRIVER_TRACE_CBID_cuStreamQuery).handling == call_handling::query);
  CHECK(table.runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020).handling ==
        call_handling::marker);
  CHECK(table.runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020).handling ==
        call_handling::plain);
  // Building a graph orders work; adding a copy or memset node reads its addresses.
  CHECK(runtime_effect(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNode_v10000) == api_effect::order);
  CHECK(table.runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemsetNode_v10000).handling ==
        call_handling::graph_set);
  CHECK(table.driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2).handling ==
        call_handling::graph_node_with_edges);
  CHECK(table.runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_v3020).handling == call_handling::set);

  // Driver calls: only work, each listed once.
  const auto& driver = table.driver_calls();
  CHECK(std::set<CUpti_CallbackId>(driver.begin(), driver.end()).size() == driver.size());
  for (const CUpti_CallbackId id : driver) {
    CAPTURE(id);
    CHECK(table.driver_call(id).effect != api_effect::other);
    CHECK(table.driver_call(id).effect != api_effect::internal);
  }
  CHECK(table.driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx).effect == api_effect::launch);
  CHECK(table.driver_call(CUPTI_DRIVER_TRACE_CBID_cuEventQuery).effect == api_effect::synchronize);
  CHECK(table.driver_call(CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent).effect == api_effect::other);
  CHECK(std::find(driver.begin(), driver.end(), CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent) ==
        driver.end());

  // Subscriptions: recorded and counted calls, never the internal ones.
  const auto subscribed = [&](api_recording recording, CUpti_CallbackId id) {
    const auto ids = table.runtime_subscriptions(recording);
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  CHECK(subscribed(api_recording::work, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  CHECK(subscribed(api_recording::work, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
  CHECK_FALSE(subscribed(api_recording::work, CUPTI_RUNTIME_TRACE_CBID___cudaPushCallConfiguration_v13000));
  CHECK(subscribed(api_recording::work_uncounted, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020));
  CHECK_FALSE(subscribed(api_recording::work_uncounted, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
  CHECK_FALSE(subscribed(api_recording::work, CUPTI_RUNTIME_TRACE_CBID_INVALID));
}

TEST_CASE("work: launches are regions with their correlation, getters only counts") {
  fake_collector& source = collector();
  api_calls calls{api_recording::work, {device_one, nullptr}};
  source.calls = &calls;
  memory_backend::clear();
  const std::int64_t launched = monotonic_raw_ns();
  {
    ferret::region step{"step"};
    for (int i = 0; i < 6; ++i) call(calls, site::cudaGetDevice, 10 + i);
    call(calls, site::push_configuration, 20);  // not subscribed in this mode; ignored if it came
    enter(calls, site::cudaLaunchKernel, 21);
    call(calls, site::cuLaunchKernel, 22);  // the runtime's implementation: skipped
    leave(calls, site::cudaLaunchKernel, 21);
    call(calls, site::cudaGetLastError, 23);
    call(calls, site::cudaStreamDestroy_v3020, 24);
    call(calls, site::cudaStreamDestroy_v5050, 25);
  }
  gpu_activity kernel{};
  kernel.operation = ferret::runtime::gpu_operation::kernel;
  kernel.start_ns = launched + 4000;
  kernel.end_ns = launched + 5000;
  kernel.launch.correlation = 21;
  source.queued.push_back(kernel);
  ferret::flush();
  const capture c = memory_backend::snapshot();
  source.calls = nullptr;

  CHECK(cuda_regions(c) == std::vector<std::string>{"cudaLaunchKernel+", "cudaLaunchKernel-"});
  REQUIRE(c.gpu_activities.size() == 1);
  CHECK(c.gpu_activities[0].activity.launch.tid == this_tid());
  CHECK(c.gpu_activities[0].context == "step/cudaLaunchKernel");
  CHECK(count_of(c, "cudaGetDevice") == 6);
  CHECK(count_of(c, "cudaGetLastError") == 1);
  CHECK(count_of(c, "cudaStreamDestroy") == 2);  // both versions under one name
  CHECK(counted_calls(c) ==
        std::vector<std::string>{"cudaGetDevice", "cudaGetLastError", "cudaStreamDestroy"});
  const auto* mode = metadata(c, "cuda-api");
  REQUIRE(mode != nullptr);
  CHECK(std::get<std::string>(*mode) == "work");
}

TEST_CASE("all: every call a region, only work with a correlation, nothing counted") {
  fake_collector& source = collector();
  api_calls calls{api_recording::all, {device_one, nullptr}};
  source.calls = &calls;
  memory_backend::clear();
  call(calls, site::cudaGetDevice, 30);
  call(calls, site::push_configuration, 31);
  call(calls, site::cudaLaunchKernel, 32);
  ferret::flush();
  const capture c = memory_backend::snapshot();
  source.calls = nullptr;
  CHECK(cuda_regions(c) ==
        std::vector<std::string>{"cudaGetDevice+", "cudaGetDevice-", "__cudaPushCallConfiguration+",
                                 "__cudaPushCallConfiguration-", "cudaLaunchKernel+",
                                 "cudaLaunchKernel-"});
  CHECK(counted_calls(c).empty());
  CHECK(std::get<std::string>(*metadata(c, "cuda-api")) == "all");
}

TEST_CASE("work-uncounted: the same regions, no counts") {
  fake_collector& source = collector();
  api_calls calls{api_recording::work_uncounted, {device_one, nullptr}};
  source.calls = &calls;
  memory_backend::clear();
  call(calls, site::cudaGetDevice, 40);  // would not even be subscribed to
  call(calls, site::cudaLaunchKernel, 41);
  ferret::flush();
  const capture c = memory_backend::snapshot();
  source.calls = nullptr;
  CHECK(cuda_regions(c) == std::vector<std::string>{"cudaLaunchKernel+", "cudaLaunchKernel-"});
  CHECK(counted_calls(c).empty());
}

// The event-polling pattern (cudaEventRecord, then cudaEventQuery until the
// event is reached): CUPTI reports the successful query as a synchronisation
// record carrying the query's correlation id. Before queries were classified
// as waits, the query was a region without a correlation id, and 1448 of 1457
// operations of such a program came out "without launch".
TEST_CASE("event polling: the query's synchronisation record joins its cudaEventQuery") {
  fake_collector& source = collector();
  api_calls calls{api_recording::work, {device_one, nullptr}};
  source.calls = &calls;
  memory_backend::clear();
  const std::int64_t start = monotonic_raw_ns();
  {
    ferret::region wait{"wait for results"};
    call(calls, site::cudaEventRecord, 50);
    for (std::uint32_t poll = 51; poll <= 54; ++poll) {  // three not ready, then ready
      int status = poll < 54 ? cudaErrorNotReady : cudaSuccess;
      enter(calls, site::cudaEventQuery, poll);
      call(calls, site::cuEventQuery, poll + 100, status);  // inside the runtime call: skipped
      leave(calls, site::cudaEventQuery, poll, nullptr, &status);
    }
  }
  source.queued.push_back(decoded_activity(event_synchronization(54, start + 1000)));
  ferret::flush();
  const capture c = memory_backend::snapshot();
  // The turns that found the event not reached left nothing to join: CUPTI
  // sends them no record (the collector asks it not to), and a record that
  // came anyway would be counted as without launch, not guessed.
  source.queued.push_back(decoded_activity(event_synchronization(52, start + 500)));
  ferret::flush();
  const capture after = memory_backend::snapshot();
  source.calls = nullptr;

  std::vector<std::string> expected{"cudaEventRecord+", "cudaEventRecord-"};
  for (int poll = 0; poll < 4; ++poll) {
    expected.push_back("cudaEventQuery+");
    expected.push_back("cudaEventQuery-");
  }
  CHECK(cuda_regions(c) == expected);
  REQUIRE(c.gpu_activities.size() == 1);
  const auto& sync = c.gpu_activities[0];
  CHECK(sync.activity.operation == ferret::runtime::gpu_operation::synchronization);
  CHECK(sync.activity.detail == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE);
  CHECK(sync.activity.launch.tid == this_tid());
  CHECK(sync.context == "wait for results/cudaEventQuery");
  CHECK(counted_calls(c).empty());
  const auto without_launch = [](const capture& at) {
    return std::get<std::int64_t>(*metadata(at, "gpu-operations-without-launch"));
  };
  CHECK(without_launch(c) == 0);
  CHECK(without_launch(after) == without_launch(c) + 1);
}

TEST_CASE("a driver-only program: its own queries and launches are recorded") {
  fake_collector& source = collector();
  api_calls calls{api_recording::work, {device_one, nullptr}};
  source.calls = &calls;
  memory_backend::clear();
  const std::int64_t start = monotonic_raw_ns();
  call(calls, site::cuLaunchKernel, 60);
  call(calls, site::cuEventQuery, 61, CUDA_SUCCESS);
  source.queued.push_back(decoded_activity(event_synchronization(61, start + 1000)));
  ferret::flush();
  const capture c = memory_backend::snapshot();
  source.calls = nullptr;
  CHECK(cuda_regions(c) ==
        std::vector<std::string>{"cuLaunchKernel+", "cuLaunchKernel-", "cuEventQuery+", "cuEventQuery-"});
  REQUIRE(c.gpu_activities.size() == 1);
  CHECK(c.gpu_activities[0].context == "cuEventQuery");
}

// FERRET_CUDA_API=driver: the collector subscribes to no runtime call, so the
// runtime's launch reaches it only as the driver call the runtime makes; its
// kernel carries that call's correlation id (seen on an H200, 2026-11-28: 100 000
// of 100 000 kernel records joined) and is joined to it.
TEST_CASE("driver: a runtime launch's kernel is joined to the driver call it made") {
  fake_collector& source = collector();
  api_calls calls{ferret::cupti::cuda_api_setting{api_recording::work_uncounted, true}, {device_one, nullptr}};
  source.calls = &calls;
  memory_backend::clear();
  {
    ferret::region step{"step"};
    call(calls, site::cuLaunchKernel, 90);
  }
  gpu_activity kernel{};
  kernel.operation = ferret::runtime::gpu_operation::kernel;
  kernel.start_ns = monotonic_raw_ns();
  kernel.end_ns = kernel.start_ns + 100;
  kernel.launch.correlation = 90;
  source.queued.push_back(kernel);
  ferret::flush();
  const capture c = memory_backend::snapshot();
  source.calls = nullptr;
  CHECK(cuda_regions(c) == std::vector<std::string>{"cuLaunchKernel+", "cuLaunchKernel-"});
  REQUIRE(c.gpu_activities.size() == 1);
  CHECK(c.gpu_activities[0].context == "step/cuLaunchKernel");
  const auto* setting = metadata(c, "cuda-api");
  REQUIRE(setting != nullptr);
  CHECK(std::get<std::string>(*setting) == "driver");
}

TEST_CASE("allocations become data objects, copies name them, releases end them") {
  fake_collector& source = collector();
  api_calls calls{api_recording::work, {device_one, nullptr}};
  source.calls = &calls;
  memory_backend::clear();
  static char device_block[4096];
  static char host_block[4096];
  const call_site malloc_call{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                             "cudaMalloc_v3020"};
  const call_site copy_call{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
                             "cudaMemcpy_v3020"};
  const call_site free_call{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
                           "cudaFree_v3020"};
  const std::uint64_t host_object = ferret::register_data_object("x", host_block, sizeof host_block);
  {
    ferret::region setup{"setup"};
    void* allocated = device_block;
    cudaMalloc_v3020_params malloc_params{&allocated, sizeof device_block};
    int success = 0;
    enter(calls, malloc_call, 70, &malloc_params);
    leave(calls, malloc_call, 70, &malloc_params, &success);
    cudaMemcpy_v3020_params copy_params{device_block, host_block, 1024, cudaMemcpyHostToDevice};
    enter(calls, copy_call, 71, &copy_params);
    leave(calls, copy_call, 71, &copy_params);
  }
  gpu_activity copy{};
  copy.operation = ferret::runtime::gpu_operation::memcpy;
  copy.start_ns = monotonic_raw_ns();
  copy.end_ns = copy.start_ns + 100;
  copy.bytes = 1024;
  copy.launch.correlation = 71;
  std::vector<gpu_activity> batch{copy};
  calls.name_objects(batch);
  CHECK(batch[0].source_object_id == host_object);
  CHECK(batch[0].destination_object_id != 0);
  source.queued = batch;
  cudaFree_v3020_params free_params{device_block};
  enter(calls, free_call, 72, &free_params);
  leave(calls, free_call, 72, &free_params);
  ferret::flush();
  const capture c = memory_backend::snapshot();
  source.calls = nullptr;
  ferret::unregister_data_object(host_object);

  REQUIRE(c.gpu_activities.size() == 1);
  CHECK(c.gpu_activities[0].source_object == "x");
  CHECK(c.gpu_activities[0].destination_object == "cudaMalloc@setup");
  std::vector<std::string> changes;
  for (const auto& event : c.objects)
    changes.push_back(std::string{event.change == ferret::runtime::data_object_change::registered
                                      ? "+"
                                      : "-"} +
                      event.object.name);
  CHECK(std::count(changes.begin(), changes.end(), "+cudaMalloc@setup") == 1);
  CHECK(std::count(changes.begin(), changes.end(), "-cudaMalloc@setup") == 1);
  for (const auto& event : c.objects)
    if (event.object.name == "cudaMalloc@setup") {
      CHECK(event.object.device == 1);
      CHECK(event.object.bytes == sizeof device_block);
    }
}

// Virtual memory management, as NVIDIA's vectorAddMMAP sample, PyTorch's
// expandable segments and JAX allocate: physical memory made on device 2 with
// cuMemCreate, mapped into a reserved range with cuMemMap, unmapped and
// released. The mapped range is a data object on the device its memory lives
// on (not the context's, device 1 here); copies into it name it; every step is
// a region, whichever call CUPTI ties an allocation record to.
TEST_CASE("virtual memory management: a mapped range is a data object on its memory's device") {
  fake_collector& source = collector();
  api_calls calls{api_recording::work, {device_one, nullptr}};
  source.calls = &calls;
  memory_backend::clear();
  static char mapped_block[8192];
  static char host_block[4096];
  const auto driver = [](CUpti_CallbackId id, const char* name) {
    return call_site{CUPTI_CB_DOMAIN_DRIVER_API, id, name};
  };
  const call_site reserve = driver(CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, "cuMemAddressReserve");
  const call_site create = driver(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, "cuMemCreate");
  const call_site map = driver(CUPTI_DRIVER_TRACE_CBID_cuMemMap, "cuMemMap");
  const call_site set_access = driver(CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess, "cuMemSetAccess");
  const call_site unmap = driver(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, "cuMemUnmap");
  const call_site release = driver(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, "cuMemRelease");
  const call_site address_free = driver(CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree, "cuMemAddressFree");
  const call_site copy_call{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
                            "cuMemcpyHtoD_v2"};
  const auto address = reinterpret_cast<CUdeviceptr>(mapped_block);
  int success = 0;
  CUmemGenericAllocationHandle handle = 0x77;
  CUmemAllocationProp properties{};
  properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  properties.location.id = 2;
  {
    ferret::region setup{"vmm setup"};
    call(calls, reserve, 80);
    cuMemCreate_params create_params{&handle, sizeof mapped_block, &properties, 0};
    enter(calls, create, 81, &create_params);
    leave(calls, create, 81, &create_params, &success);
    cuMemMap_params map_params{address, sizeof mapped_block, 0, handle, 0};
    enter(calls, map, 82, &map_params);
    leave(calls, map, 82, &map_params, &success);
    call(calls, set_access, 83);
    cuMemcpyHtoD_v2_params copy_params{address + 4096, host_block, 1024};
    enter(calls, copy_call, 84, &copy_params);
    leave(calls, copy_call, 84, &copy_params, &success);
  }
  gpu_activity copy{};
  copy.operation = ferret::runtime::gpu_operation::memcpy;
  copy.start_ns = monotonic_raw_ns();
  copy.end_ns = copy.start_ns + 100;
  copy.bytes = 1024;
  copy.launch.correlation = 84;
  std::vector<gpu_activity> batch{copy};
  calls.name_objects(batch);
  CHECK(batch[0].destination_object_id != 0);
  source.queued = batch;
  cuMemUnmap_params unmap_params{address, sizeof mapped_block};
  enter(calls, unmap, 85, &unmap_params);
  leave(calls, unmap, 85, &unmap_params, &success);
  cuMemRelease_params release_params{handle};
  enter(calls, release, 86, &release_params);
  leave(calls, release, 86, &release_params, &success);
  call(calls, address_free, 87);
  CHECK_FALSE(ferret::runtime::find_data_object(mapped_block).has_value());
  ferret::flush();
  const capture c = memory_backend::snapshot();
  source.calls = nullptr;

  const std::vector<std::string> regions = cuda_regions(c);
  for (const char* name : {"cuMemAddressReserve", "cuMemCreate", "cuMemMap", "cuMemSetAccess",
                           "cuMemUnmap", "cuMemRelease", "cuMemAddressFree"}) {
    CAPTURE(name);
    CHECK(std::count(regions.begin(), regions.end(), std::string{name} + "+") == 1);
  }
  REQUIRE(c.gpu_activities.size() == 1);
  CHECK(c.gpu_activities[0].destination_object == "cuMemMap@vmm setup");
  std::size_t registered = 0, ended = 0;
  for (const auto& event : c.objects) {
    if (event.object.name != "cuMemMap@vmm setup") continue;
    CHECK(event.object.device == 2);
    CHECK(event.object.memory == ferret::runtime::memory_kind::device);
    CHECK(event.object.bytes == sizeof mapped_block);
    (event.change == ferret::runtime::data_object_change::registered ? registered : ended)++;
  }
  CHECK(registered == 1);
  CHECK(ended == 1);
}

// Peer access off: the driver stages a copy between two devices through host
// memory, and CUPTI reports a DtoH and an HtoD record with the call's
// correlation (seen on two H200s, 2026-11-26). Each half touches only the
// object on its device side; a real peer copy touches both.
TEST_CASE("a copy between devices staged through the host: each half names its device's object") {
  api_calls calls{api_recording::work, {device_one, nullptr}};
  static char on_device_zero[4096];
  static char on_device_one[4096];
  const std::uint64_t from = ferret::register_data_object(
      "from", on_device_zero, sizeof on_device_zero, ferret::memory_kind::device, 0);
  const std::uint64_t to = ferret::register_data_object(
      "to", on_device_one, sizeof on_device_one, ferret::memory_kind::device, 1);
  const call_site peer_call{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000,
                            "cudaMemcpyPeer_v4000"};
  cudaMemcpyPeer_v4000_params params{on_device_one, 1, on_device_zero, 0, 1024};
  enter(calls, peer_call, 80, &params);
  leave(calls, peer_call, 80, &params);
  const auto half = [](ferret::runtime::copy_kind kind) {
    gpu_activity copy{};
    copy.operation = ferret::runtime::gpu_operation::memcpy;
    copy.copy = kind;
    copy.bytes = 1024;
    copy.launch.correlation = 80;
    return copy;
  };
  std::vector<gpu_activity> batch{half(ferret::runtime::copy_kind::device_to_host),
                                  half(ferret::runtime::copy_kind::host_to_device),
                                  half(ferret::runtime::copy_kind::peer_to_peer)};
  calls.name_objects(batch);
  CHECK(batch[0].source_object_id == from);
  CHECK(batch[0].destination_object_id == 0);
  CHECK(batch[1].source_object_id == 0);
  CHECK(batch[1].destination_object_id == to);
  CHECK(batch[2].source_object_id == from);
  CHECK(batch[2].destination_object_id == to);
  ferret::unregister_data_object(from);
  ferret::unregister_data_object(to);
}

// A CUDA graph replays copies under its cudaGraphLaunch's correlation id: the
// objects come from the call that was captured into the node (CUPTI's resource
// callback for the node comes inside that call), through the clone that
// cudaGraphInstantiate makes.
TEST_CASE("a copy replayed from a CUDA graph names the objects of the call captured into its node") {
  api_calls calls{api_recording::work, {device_one, nullptr}};
  static char source_block[4096];
  static char destination_block[4096];
  const std::uint64_t from = ferret::register_data_object(
      "B", source_block, sizeof source_block, ferret::memory_kind::device, 0);
  const std::uint64_t to = ferret::register_data_object(
      "C", destination_block, sizeof destination_block, ferret::memory_kind::device, 0);
  const call_site copy_call{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                            "cudaMemcpyAsync_v3020"};
  cudaMemcpyAsync_v3020_params params{destination_block, source_block, 1024, cudaMemcpyDeviceToDevice,
                                      nullptr};
  calls.graph_node_created(5);  // outside any copy call: nothing to take
  enter(calls, copy_call, 90, &params);
  calls.graph_node_created(6);  // captured: the node of this call
  leave(calls, copy_call, 90, &params);
  calls.graph_node_created(7);  // after the call: nothing
  calls.graph_node_cloned(6, 60);
  const auto replayed = [](std::uint64_t node) {
    gpu_activity copy{};
    copy.operation = ferret::runtime::gpu_operation::memcpy;
    copy.copy = ferret::runtime::copy_kind::device_to_device;
    copy.bytes = 1024;
    copy.launch.correlation = 91;  // the graph launch's, which names no objects
    copy.graph_node = node;
    return copy;
  };
  std::vector<gpu_activity> batch{replayed(60), replayed(6), replayed(5), replayed(7), replayed(0)};
  calls.name_objects(batch);
  for (std::size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    CHECK(batch[i].source_object_id == from);
    CHECK(batch[i].destination_object_id == to);
    CHECK(batch[i].source_address == reinterpret_cast<std::uintptr_t>(source_block));
  }
  for (std::size_t i = 2; i < batch.size(); ++i) {
    CAPTURE(i);
    CHECK(batch[i].source_object_id == 0);
    CHECK(batch[i].destination_object_id == 0);
  }
  // CUPTI reports a node destroyed when instantiation converts it, and its
  // records keep its id: a node is forgotten only when unused for 1000 drains.
  std::vector<gpu_activity> none;
  for (int drain = 0; drain < 999; ++drain) calls.name_objects(none);
  std::vector<gpu_activity> later{replayed(60)};
  calls.name_objects(later);
  CHECK(later[0].source_object_id == from);
  for (int drain = 0; drain < 1101; ++drain) calls.name_objects(none);
  std::vector<gpu_activity> after{replayed(60), replayed(6)};
  calls.name_objects(after);
  CHECK(after[0].source_object_id == 0);
  CHECK(after[1].source_object_id == 0);
  ferret::unregister_data_object(from);
  ferret::unregister_data_object(to);
}

// Graphs built node by node (XLA's command buffers, cudaGraphAdd*Node and
// cuGraphAdd*Node) and pitched copies (2D, 3D, peer): the addresses are read
// from each call's own descriptor, an offset inside an object still names it,
// and an array side names nothing.
TEST_CASE("graph nodes added explicitly and pitched copies name the objects they address") {
  api_calls calls{api_recording::work, {device_one, nullptr}};
  static char source_block[1 << 16];
  static char destination_block[1 << 16];
  const std::uint64_t from = ferret::register_data_object(
      "A", source_block, sizeof source_block, ferret::memory_kind::device, 0);
  const std::uint64_t to = ferret::register_data_object(
      "B", destination_block, sizeof destination_block, ferret::memory_kind::device, 0);
  const auto device = [](const char* block) { return reinterpret_cast<CUdeviceptr>(block); };
  const auto runtime_call = [](CUpti_CallbackId id, const char* name) {
    return call_site{CUPTI_CB_DOMAIN_RUNTIME_API, id, name};
  };
  const auto driver_call = [](CUpti_CallbackId id, const char* name) {
    return call_site{CUPTI_CB_DOMAIN_DRIVER_API, id, name};
  };
  // Planes of 4 rows of 256 bytes; the copies start at (x 16, y 2, z 1).
  cudaMemcpy3DParms pitched{};
  pitched.srcPtr = cudaPitchedPtr{source_block, 256, 256, 4};
  pitched.srcPos = cudaPos{16, 2, 1};
  pitched.dstPtr = cudaPitchedPtr{destination_block, 256, 256, 4};
  pitched.dstPos = cudaPos{16, 2, 1};
  pitched.extent = cudaExtent{64, 2, 2};
  pitched.kind = cudaMemcpyDeviceToDevice;
  cudaMemcpy3DParms from_array = pitched;
  from_array.srcArray = reinterpret_cast<cudaArray_t>(0x10);
  CUDA_MEMCPY3D descriptor{};
  descriptor.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  descriptor.srcDevice = device(source_block);
  descriptor.srcXInBytes = 16;
  descriptor.srcY = 2;
  descriptor.srcZ = 1;
  descriptor.srcPitch = 256;
  descriptor.srcHeight = 4;
  descriptor.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  descriptor.dstDevice = device(destination_block);
  descriptor.dstPitch = 256;
  descriptor.dstHeight = 4;
  descriptor.WidthInBytes = 64;
  descriptor.Height = 2;
  descriptor.Depth = 2;
  CUDA_MEMCPY2D flat{};
  flat.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  flat.srcDevice = device(source_block);
  flat.srcY = 3;
  flat.srcPitch = 256;
  flat.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  flat.dstArray = reinterpret_cast<CUarray>(0x20);
  flat.WidthInBytes = 64;
  flat.Height = 2;

  cudaMemsetParams set_params{};
  set_params.dst = destination_block + 512;
  set_params.elementSize = 4;
  set_params.width = 16;
  set_params.height = 1;
  CUDA_MEMSET_NODE_PARAMS driver_set{};
  driver_set.dst = device(destination_block);
  driver_set.elementSize = 1;
  driver_set.width = 64;
  driver_set.height = 1;
  cudaGraphNodeParams generic_copy{};
  generic_copy.type = cudaGraphNodeTypeMemcpy;
  generic_copy.memcpy.copyParams = pitched;
  CUgraphNodeParams generic_set{};
  generic_set.type = CU_GRAPH_NODE_TYPE_MEMSET;
  generic_set.memset.dst = device(destination_block) + 64;
  CUgraphNodeParams generic_kernel{};
  generic_kernel.type = CU_GRAPH_NODE_TYPE_KERNEL;

  cudaGraphAddMemcpyNode1D_v11010_params add_1d{nullptr, nullptr, nullptr, 0, destination_block + 8,
                                                 source_block + 8, 64, cudaMemcpyDeviceToDevice};
  cudaGraphAddMemcpyNode_v10000_params add_3d{nullptr, nullptr, nullptr, 0, &pitched};
  cudaGraphAddMemcpyNode_v10000_params add_from_array{nullptr, nullptr, nullptr, 0, &from_array};
  cudaGraphAddMemsetNode_v10000_params add_set{nullptr, nullptr, nullptr, 0, &set_params};
  cudaGraphAddNode_v12030_params add_node{nullptr, nullptr, nullptr, nullptr, 0, &generic_copy};
  cuGraphAddMemcpyNode_params add_driver_copy{nullptr, nullptr, nullptr, 0, &descriptor, nullptr};
  cuGraphAddMemsetNode_params add_driver_set{nullptr, nullptr, nullptr, 0, &driver_set, nullptr};
  cuGraphAddNode_params add_driver_node{nullptr, nullptr, nullptr, 0, &generic_set};
  cuGraphAddNode_v2_params add_driver_kernel{nullptr, nullptr, nullptr, nullptr, 0, &generic_kernel};
  struct node_call {
    call_site site;
    const void* params;
    std::uint64_t expected_source;
    std::uint64_t expected_destination;
  };
  const node_call nodes[] = {
      {runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNode1D_v11010, "cudaGraphAddMemcpyNode1D_v11010"),
       &add_1d, from, to},
      {runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNode_v10000, "cudaGraphAddMemcpyNode_v10000"),
       &add_3d, from, to},
      {runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNode_v10000, "cudaGraphAddMemcpyNode_v10000"),
       &add_from_array, 0, to},
      {runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemsetNode_v10000, "cudaGraphAddMemsetNode_v10000"),
       &add_set, 0, to},
      {runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddNode_v12030, "cudaGraphAddNode_v12030"), &add_node,
       from, to},
      {driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemcpyNode, "cuGraphAddMemcpyNode"), &add_driver_copy, from,
       to},
      {driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemsetNode, "cuGraphAddMemsetNode"), &add_driver_set, 0, to},
      {driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode, "cuGraphAddNode"), &add_driver_node, 0, to},
      {driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2, "cuGraphAddNode_v2"), &add_driver_kernel, 0, 0},
  };
  std::vector<gpu_activity> replayed;
  std::uint32_t correlation = 200;
  std::uint64_t node = 1000;
  for (const node_call& added : nodes) {
    enter(calls, added.site, ++correlation, added.params);
    calls.graph_node_created(++node);
    leave(calls, added.site, correlation, added.params);
    gpu_activity record{};
    record.operation = ferret::runtime::gpu_operation::memcpy;
    record.launch.correlation = 9000;  // the graph launch's
    record.graph_node = node;
    replayed.push_back(record);
  }
  calls.name_objects(replayed);
  for (std::size_t i = 0; i < replayed.size(); ++i) {
    const std::string call_name = nodes[i].site.name;
    CAPTURE(call_name);
    CHECK(replayed[i].source_object_id == nodes[i].expected_source);
    CHECK(replayed[i].destination_object_id == nodes[i].expected_destination);
  }
  CHECK(replayed[1].source_address == reinterpret_cast<std::uintptr_t>(source_block + 256 * 4 + 2 * 256 + 16));
  CHECK(replayed[3].destination_address == reinterpret_cast<std::uintptr_t>(destination_block + 512));

  // Pitched and peer copies run at once: their records carry the call's id.
  cudaMemcpy3D_v3020_params copy_3d{&pitched};
  cuMemcpy3D_v2_params driver_copy_3d{&descriptor};
  cuMemcpy2D_v2_params driver_copy_2d{&flat};
  cuMemcpyPeer_params driver_peer{device(destination_block), nullptr, device(source_block), nullptr, 64};
  const node_call copies[] = {
      {runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020, "cudaMemcpy3D_v3020"), &copy_3d, from, to},
      {driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2, "cuMemcpy3D_v2"), &driver_copy_3d, from, to},
      {driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2, "cuMemcpy2D_v2"), &driver_copy_2d, from, 0},
      {driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer, "cuMemcpyPeer"), &driver_peer, from, to},
  };
  std::vector<gpu_activity> direct;
  for (const node_call& copy : copies) {
    enter(calls, copy.site, ++correlation, copy.params);
    leave(calls, copy.site, correlation, copy.params);
    gpu_activity record{};
    record.operation = ferret::runtime::gpu_operation::memcpy;
    record.launch.correlation = correlation;
    direct.push_back(record);
  }
  calls.name_objects(direct);
  for (std::size_t i = 0; i < direct.size(); ++i) {
    const std::string call_name = copies[i].site.name;
    CAPTURE(call_name);
    CHECK(direct[i].source_object_id == copies[i].expected_source);
    CHECK(direct[i].destination_object_id == copies[i].expected_destination);
  }
  CHECK(direct[2].source_address == reinterpret_cast<std::uintptr_t>(source_block + 3 * 256));
  ferret::unregister_data_object(from);
  ferret::unregister_data_object(to);
}

TEST_CASE("names of calls lose their version suffix, not their entry point") {
  CHECK(ferret::cupti::api_name("cudaLaunchKernel_v7000") == "cudaLaunchKernel");
  CHECK(ferret::cupti::api_name("cudaMemcpyAsync_ptsz_v7000") == "cudaMemcpyAsync_ptsz");
  CHECK(ferret::cupti::api_name("cuMemcpyHtoD_v2") == "cuMemcpyHtoD");
  CHECK(ferret::cupti::api_name("cuLaunchKernel") == "cuLaunchKernel");
  CHECK(ferret::cupti::api_name("cudaGetDevice_v") == "cudaGetDevice_v");
  CHECK(ferret::cupti::api_name(nullptr) == "cuda?");
}
