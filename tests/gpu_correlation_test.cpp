// The runtime's side of GPU attribution, without a GPU: a fake collector hands
// over operations the way backends/collectors/cupti does, and the memory backend shows
// what the runtime made of them (launching thread and calling context, data
// objects, names of tracked allocations, clock, counts).
#include <doctest/doctest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ferret/ferret.hpp"
#include "ferret/runtime/runtime.hpp"
#include "support/memory_backend.hpp"

namespace {

using ferret::runtime::gpu_activity;
using ferret::runtime::gpu_operation;
using ferret::testing::capture;
using ferret::testing::memory_backend;

std::int64_t monotonic_raw_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::uint64_t this_tid() { return static_cast<std::uint64_t>(syscall(SYS_gettid)); }

class fake_collector final : public ferret::runtime::collector {
 public:
  std::vector<gpu_activity> queued;
  std::vector<ferret::runtime::gpu_sample_batch> queued_samples;
  std::vector<ferret::runtime::gpu_remote_access_batch> queued_remote;
  std::vector<ferret::runtime::gpu_metric_set> queued_metric_sets;
  std::vector<ferret::runtime::gpu_metric_batch> queued_metric_batches;
  int abandoned = 0;

  void collect_metric_intervals(std::vector<ferret::runtime::gpu_metric_set>& new_sets,
                                std::vector<ferret::runtime::gpu_metric_batch>& batches, bool) override {
    new_sets.insert(new_sets.end(), queued_metric_sets.begin(), queued_metric_sets.end());
    queued_metric_sets.clear();
    batches.insert(batches.end(), queued_metric_batches.begin(), queued_metric_batches.end());
    queued_metric_batches.clear();
  }

  void collect_remote_accesses(std::vector<ferret::runtime::gpu_remote_access_batch>& batches,
                               bool) override {
    batches.insert(batches.end(), queued_remote.begin(), queued_remote.end());
    queued_remote.clear();
  }

  void collect_samples(std::vector<ferret::runtime::gpu_sample_batch>& batches, bool) override {
    batches.insert(batches.end(), queued_samples.begin(), queued_samples.end());
    queued_samples.clear();
  }

  void collect(std::vector<gpu_activity>& activities,
               std::vector<ferret::runtime::gpu_device_info>& devices, bool) override {
    activities.insert(activities.end(), queued.begin(), queued.end());
    queued.clear();
    devices.insert(devices.end(), new_devices.begin(), new_devices.end());
    new_devices.clear();
  }
  void add_metadata(ferret::runtime::metadata_list& metadata) const override {
    metadata.emplace_back("fake-records-dropped", std::int64_t{3});
  }
  void abandon() noexcept override { ++abandoned; }

  std::vector<ferret::runtime::gpu_device_info> new_devices;
};

fake_collector& collector() {
  static fake_collector* instance = [] {
    auto* made = new fake_collector;
    REQUIRE(ferret::runtime::register_collector(made));
    return made;
  }();
  return *instance;
}

// What the CUPTI collector writes around an API call: the call as a region
// (domain "cuda") with the correlation event inside it.
void api_call(const char* name, std::uint64_t correlation) {
  const ferret::detail::runtime_api* api = ferret::detail::runtime();
  REQUIRE(api != nullptr);
  const ferret::detail::site* site = api->register_name(name, std::strlen(name), "cuda");
  REQUIRE(site != nullptr);
  ferret::detail::write(ferret::detail::word_of(site, ferret::detail::kind_begin));
  ferret::detail::write_with_payload(ferret::detail::word_of(site, ferret::detail::kind_correlation),
                                     correlation);
  ferret::detail::write(ferret::detail::word_of(site, ferret::detail::kind_end));
}

gpu_activity kernel(std::uint64_t correlation, std::int64_t start_raw) {
  gpu_activity activity{};
  activity.operation = gpu_operation::kernel;
  activity.start_ns = start_raw;
  activity.end_ns = start_raw + 1000;
  activity.stream = 7;
  activity.name = "_Z6kernelv";
  activity.launch.correlation = correlation;
  return activity;
}

const ferret::testing::captured_gpu_activity* find(const capture& c, std::uint64_t correlation) {
  for (const auto& a : c.gpu_activities)
    if (a.activity.launch.correlation == correlation) return &a;
  return nullptr;
}

std::int64_t metadata_count(const capture& c, const std::string& key) {
  for (const auto& [k, v] : c.runtime_metadata)
    if (k == key) return std::get<std::int64_t>(v);
  FAIL("no metadata ", key);
  return -1;
}

}  // namespace

TEST_CASE("a GPU operation gets the launching thread, time and calling context") {
  fake_collector& source = collector();
  memory_backend::clear();
  const std::int64_t before = monotonic_raw_ns();
  {
    ferret::region solve{"solve"};
    ferret::region step{"step"};
    api_call("cudaLaunchKernel", 42);
  }
  source.queued.push_back(kernel(42, before + 5000));
  ferret::flush();

  const capture c = memory_backend::snapshot();
  const auto* op = find(c, 42);
  REQUIRE(op != nullptr);
  CHECK(op->activity.launch.tid == this_tid());
  CHECK(op->context == "solve/step/cudaLaunchKernel");
  // Times become session-relative like the host records.
  const auto& records = c.threads.at(this_tid()).records;
  const auto launch = std::find_if(records.begin(), records.end(),
                                   [](const auto& r) { return r.name == "cudaLaunchKernel"; });
  REQUIRE(launch != records.end());
  CHECK(launch->domain == "cuda");
  CHECK(op->activity.launch.time_ns >= launch->time_ns);
  CHECK(op->activity.start_ns > 0);
  CHECK(op->activity.end_ns - op->activity.start_ns == 1000);
  CHECK(std::abs(op->activity.start_ns - (launch->time_ns + 5000)) < 50'000'000);
  // The correlation event itself is not a record.
  CHECK(std::count_if(records.begin(), records.end(),
                      [](const auto& r) { return r.name == "cudaLaunchKernel"; }) == 2);
  CHECK(metadata_count(c, "fake-records-dropped") == 3);
}

TEST_CASE("instruction samples: each launch's context gets its share, summed per instruction") {
  fake_collector& source = collector();
  memory_backend::clear();
  const std::int64_t before = monotonic_raw_ns();
  {
    ferret::region solve{"solve"};
    api_call("cudaLaunchKernel", 61);
    api_call("cudaLaunchKernel", 62);  // same context: the two pool their weights
  }
  {
    ferret::region other{"other"};
    api_call("cudaLaunchKernel", 63);
  }
  for (std::uint64_t correlation = 61; correlation <= 63; ++correlation)
    source.queued.push_back(kernel(correlation, before + 5000));
  static const ferret::runtime::gpu_stall_reason wait{0, "long_scoreboard", ferret::runtime::gpu_stall::gmem};
  ferret::runtime::gpu_sample_batch batch;
  batch.function = "_Z6kernelv";
  batch.instructions = {{0x40, "/src/k.cu", 12, &wait, 100}, {0x50, "/src/k.cu", 13, &wait, 40}};
  batch.launches = {{61, 1.0}, {62, 1.0}, {63, 2.0}};
  source.queued_samples.push_back(batch);
  // Another batch of the same drain at the same instruction: summed; one with
  // an unknown launch: to the root, counted.
  ferret::runtime::gpu_sample_batch again = batch;
  again.instructions = {{0x40, "/src/k.cu", 12, &wait, 20}};
  again.launches = {{63, 1.0}};
  source.queued_samples.push_back(again);
  ferret::runtime::gpu_sample_batch lost = batch;
  lost.instructions = {{0x40, "/src/k.cu", 12, &wait, 8}};
  lost.launches = {{999, 1.0}};
  source.queued_samples.push_back(lost);
  ferret::flush();

  const capture c = memory_backend::snapshot();
  const auto samples_at = [&](const std::string& context, std::uint64_t pc) {
    double total = 0;
    int entries = 0;
    for (const auto& s : c.instruction_samples)
      if (s.context == context && s.pc_offset == pc) {
        total += s.samples;
        ++entries;
        CHECK(s.reason == "long_scoreboard");
        CHECK(s.function == "_Z6kernelv");
      }
    CHECK(entries <= 1);  // one entry per key in a drain
    return total;
  };
  CHECK(samples_at("solve/cudaLaunchKernel", 0x40) == doctest::Approx(50));
  CHECK(samples_at("solve/cudaLaunchKernel", 0x50) == doctest::Approx(20));
  CHECK(samples_at("other/cudaLaunchKernel", 0x40) == doctest::Approx(50 + 20));
  CHECK(samples_at("other/cudaLaunchKernel", 0x50) == doctest::Approx(20));
  CHECK(samples_at("", 0x40) == doctest::Approx(8));
  for (const auto& s : c.instruction_samples) {
    CHECK(s.file == "/src/k.cu");
    CHECK(s.line == (s.pc_offset == 0x40 ? 12u : 13u));
  }
  CHECK(metadata_count(c, "gpu-instruction-samples-without-launch") == 8);
}

TEST_CASE("device-initiated traffic: each launch's context, its objects, summed per instruction") {
  using ferret::runtime::memory_access;
  fake_collector& source = collector();
  memory_backend::clear();
  static char peer[1 << 12];
  const std::uint64_t halo = ferret::register_data_object("halo", peer, sizeof peer,
                                                          ferret::memory_kind::device, 1);
  {
    ferret::region solve{"solve"};
    api_call("cudaLaunchKernel", 71);
    api_call("cudaLaunchKernel", 72);
  }
  ferret::runtime::gpu_kernel_remote_traffic totals{};
  totals.target_count = 1;
  totals.targets[0] = {1, 4096, 512};
  gpu_activity first = kernel(71, monotonic_raw_ns());
  first.remote = &totals;
  source.queued.push_back(first);
  source.queued.push_back(kernel(72, monotonic_raw_ns()));
  ferret::runtime::gpu_remote_access_batch batch;
  batch.correlation = 71;
  batch.function = "_Z7stencilPf";
  batch.accesses = {{0x80, "/src/s.cu", 21, 1, memory_access::load, halo, 1024, 4096},
                    {0x90, "/src/s.cu", 22, 1, memory_access::store, halo, 128, 512},
                    {0xa0, nullptr, 0, ferret::runtime::host_memory_device, memory_access::load, 0, 2, 8}};
  source.queued_remote.push_back(batch);
  batch.correlation = 72;  // the same context: summed
  batch.accesses.resize(1);
  source.queued_remote.push_back(batch);
  batch.correlation = 999;  // no launch seen: the root, counted
  source.queued_remote.push_back(batch);
  ferret::unregister_data_object(halo);  // released before the drain: still named
  ferret::flush();

  const capture c = memory_backend::snapshot();
  const auto* launched = find(c, 71);
  REQUIRE(launched != nullptr);
  REQUIRE(launched->remote.has_value());
  CHECK(launched->remote->target_count == 1);
  CHECK(launched->remote->targets[0].loaded_bytes == 4096);
  CHECK(!find(c, 72)->remote.has_value());
  const auto entry = [&](const std::string& context, std::uint64_t pc) {
    const ferret::testing::captured_remote_access* found = nullptr;
    for (const auto& a : c.remote_accesses)
      if (a.context == context && a.pc_offset == pc) {
        CHECK(found == nullptr);  // one entry per key in a drain
        found = &a;
      }
    return found;
  };
  const auto* load = entry("solve/cudaLaunchKernel", 0x80);
  REQUIRE(load != nullptr);
  CHECK(load->bytes == 2 * 4096);
  CHECK(load->accesses == 2 * 1024);
  CHECK(load->object == "halo");
  CHECK(load->target_device == 1);
  CHECK(load->access == memory_access::load);
  CHECK(load->file == "/src/s.cu");
  CHECK(load->line == 21);
  const auto* store = entry("solve/cudaLaunchKernel", 0x90);
  REQUIRE(store != nullptr);
  CHECK(store->bytes == 512);
  CHECK(store->access == memory_access::store);
  const auto* host = entry("solve/cudaLaunchKernel", 0xa0);
  REQUIRE(host != nullptr);
  CHECK(host->target_device == ferret::runtime::host_memory_device);
  CHECK(host->object.empty());
  CHECK(host->file.empty());
  const auto* lost = entry("", 0x80);
  REQUIRE(lost != nullptr);
  CHECK(lost->bytes == 4096);
  CHECK(metadata_count(c, "gpu-device-initiated-bytes") == 4096 + 512 + 8 + 4096 + 4096);
  CHECK(metadata_count(c, "gpu-device-initiated-bytes-without-launch") == 4096);
}

TEST_CASE("work a named thread launches outside every region has the thread as its context") {
  fake_collector& source = collector();
  memory_backend::clear();
  const std::int64_t before = monotonic_raw_ns();
  std::thread{[] {
    pthread_setname_np(pthread_self(), "pt_autograd_0");
    api_call("cudaLaunchKernel", 51);  // outside every region: the thread
    ferret::region step{"step"};
    api_call("cudaLaunchKernel", 52);  // in a region: the region, as on any thread
  }}.join();
  std::thread{[] { api_call("cudaLaunchKernel", 53); }}.join();  // unnamed: no context
  api_call("cudaLaunchKernel", 54);  // the main thread outside every region
  for (std::uint64_t correlation = 51; correlation <= 54; ++correlation)
    source.queued.push_back(kernel(correlation, before + 5000));
  ferret::flush();

  const capture c = memory_backend::snapshot();
  const auto context_of = [&](std::uint64_t correlation) {
    const auto* op = find(c, correlation);
    return op != nullptr ? op->context : std::string{"(missing)"};
  };
  CHECK(context_of(51) == "(thread pt_autograd_0)/cudaLaunchKernel");
  CHECK(context_of(52) == "step/cudaLaunchKernel");
  CHECK(context_of(53) == "cudaLaunchKernel");
  CHECK(context_of(54) == "cudaLaunchKernel");
}

TEST_CASE("a launch drained earlier still matches operations that come later") {
  fake_collector& source = collector();
  memory_backend::clear();
  {
    ferret::region r{"early"};
    api_call("cudaLaunchKernel", 100);
  }
  ferret::flush();  // the launch is drained, its operation not yet in
  source.queued.push_back(kernel(100, monotonic_raw_ns()));
  source.queued.push_back(kernel(100, monotonic_raw_ns() + 2000));  // one call, two operations
  ferret::flush();
  const capture c = memory_backend::snapshot();
  REQUIRE(c.gpu_activities.size() == 2);
  for (const auto& op : c.gpu_activities) {
    CHECK(op.activity.launch.tid == this_tid());
    CHECK(op.context == "early/cudaLaunchKernel");
  }
}

TEST_CASE("an operation whose launch was never seen is counted, not guessed") {
  fake_collector& source = collector();
  memory_backend::clear();
  const std::int64_t before = metadata_count(memory_backend::snapshot(), "gpu-operations-without-launch");
  source.queued.push_back(kernel(999999, monotonic_raw_ns()));
  ferret::flush();
  const capture c = memory_backend::snapshot();
  const auto* op = find(c, 999999);
  REQUIRE(op != nullptr);
  CHECK(op->activity.launch.tid == 0);
  CHECK(op->context.empty());
  CHECK(metadata_count(c, "gpu-operations-without-launch") == before + 1);
}

TEST_CASE("copies name their data objects, also ones released before the drain") {
  fake_collector& source = collector();
  memory_backend::clear();
  static char host[4096];
  static char device[4096];
  const std::uint64_t a = ferret::register_data_object("A", host, sizeof host);
  const std::uint64_t b = ferret::register_data_object("B", device, sizeof device,
                                                       ferret::memory_kind::device, 0);
  CHECK(ferret::runtime::find_data_object_ref(host + 100).id == a);
  CHECK(ferret::runtime::find_data_object_ref(device).id == b);
  CHECK(ferret::runtime::find_data_object_ref(device).memory == ferret::runtime::memory_kind::device);
  CHECK(ferret::runtime::find_data_object_ref(host + sizeof host).id == 0);
  api_call("cudaMemcpy", 200);
  ferret::unregister_data_object(b);  // released before the operation is delivered
  gpu_activity copy = kernel(200, monotonic_raw_ns());
  copy.operation = gpu_operation::memcpy;
  copy.copy = ferret::runtime::copy_kind::host_to_device;
  copy.bytes = 4096;
  copy.source_object_id = a;
  copy.destination_object_id = b;
  source.queued.push_back(copy);
  ferret::flush();
  const capture c = memory_backend::snapshot();
  ferret::unregister_data_object(a);
  ferret::flush();
  const auto* op = find(c, 200);
  REQUIRE(op != nullptr);
  CHECK(op->source_object == "A");
  CHECK(op->destination_object == "B");
}

TEST_CASE("allocations the collector tracks are named after their calling context") {
  collector();
  memory_backend::clear();
  static char block[1 << 12];
  {
    ferret::region setup{"setup"};
    api_call("cudaMalloc", 300);
    CHECK(ferret::runtime::register_allocation("cudaMalloc", 300, block, sizeof block,
                                               ferret::memory_kind::device, 0) != 0);
  }
  static char outside[64];
  api_call("cudaMallocHost", 301);
  ferret::runtime::register_allocation("cudaMallocHost", 301, outside, sizeof outside,
                                       ferret::memory_kind::pinned, -1);
  ferret::runtime::unregister_allocation(block);
  ferret::runtime::unregister_allocation(outside);
  ferret::flush();
  const capture c = memory_backend::snapshot();
  std::vector<std::string> registered, released;
  for (const auto& event : c.objects) {
    (event.change == ferret::runtime::data_object_change::registered ? registered : released)
        .push_back(event.object.name);
    CHECK(event.object.allocated_in != nullptr);
  }
  CHECK(registered == std::vector<std::string>{"cudaMalloc@setup", "cudaMallocHost"});
  // The release carries the name the registration was announced with.
  CHECK(released == std::vector<std::string>{"cudaMalloc@setup", "cudaMallocHost"});
}

TEST_CASE("allocations of one call site alive together are told apart by a number") {
  collector();
  memory_backend::clear();
  static char blocks[4][256];
  const auto allocate = [](std::uint64_t correlation, char* block) {
    api_call("zeMemAllocDevice", correlation);
    CHECK(ferret::runtime::register_allocation("zeMemAllocDevice", correlation, block, 256,
                                               ferret::memory_kind::device, 64) != 0);
  };
  {
    ferret::region setup{"setup"};
    allocate(400, blocks[0]);
    allocate(401, blocks[1]);  // while the first lives
    allocate(402, blocks[2]);
  }
  ferret::flush();
  ferret::runtime::unregister_allocation(blocks[1]);  // its number is free again
  {
    ferret::region setup{"setup"};
    allocate(403, blocks[3]);
  }
  for (char* block : {blocks[0], blocks[2], blocks[3]}) ferret::runtime::unregister_allocation(block);
  {
    // Allocated and freed in a loop: one name throughout.
    ferret::region setup{"setup"};
    for (std::uint64_t i = 0; i < 3; ++i) {
      allocate(410 + i, blocks[0]);
      ferret::runtime::unregister_allocation(blocks[0]);
    }
  }
  ferret::flush();
  const capture c = memory_backend::snapshot();
  std::vector<std::string> registered;
  for (const auto& event : c.objects)
    if (event.change == ferret::runtime::data_object_change::registered)
      registered.push_back(event.object.name);
  CHECK(registered == std::vector<std::string>{
                          "zeMemAllocDevice@setup", "zeMemAllocDevice@setup #2",
                          "zeMemAllocDevice@setup #3", "zeMemAllocDevice@setup #2",
                          "zeMemAllocDevice@setup", "zeMemAllocDevice@setup", "zeMemAllocDevice@setup"});
}

TEST_CASE("devices reach the backends before their operations") {
  fake_collector& source = collector();
  memory_backend::clear();
  ferret::runtime::gpu_device_info device{};
  device.id = 3;
  device.name = "Test GPU";
  source.new_devices.push_back(device);
  ferret::flush();
  const capture c = memory_backend::snapshot();
  REQUIRE(c.gpu_devices.size() == 1);
  CHECK(c.gpu_devices[0].name == "Test GPU");
}

TEST_CASE("work the driver starts by itself has no launch to find and is not counted missing") {
  fake_collector& source = collector();
  memory_backend::clear();
  ferret::flush();
  const capture before = memory_backend::snapshot();
  gpu_activity module_memory = kernel(0, monotonic_raw_ns());
  module_memory.operation = gpu_operation::allocation;
  module_memory.bytes = 2304;
  source.queued.push_back(module_memory);
  ferret::flush();
  const capture c = memory_backend::snapshot();
  REQUIRE(c.gpu_activities.size() == 1);
  CHECK(c.gpu_activities[0].activity.launch.tid == 0);
  CHECK(metadata_count(c, "gpu-operations-without-launch") ==
        metadata_count(before, "gpu-operations-without-launch"));
  CHECK(metadata_count(c, "gpu-operations-without-api-call") ==
        metadata_count(before, "gpu-operations-without-api-call") + 1);
}

TEST_CASE("sampled counters: each device's set once and first, intervals on the session's clock, "
          "the malformed dropped and counted") {
  using ferret::runtime::gpu_metric_batch;
  fake_collector& source = collector();
  memory_backend::clear();
  const std::int64_t start = monotonic_raw_ns();
  {
    ferret::region sampled{"sampled"};
    ferret::flush();  // the region's begin, before the intervals' times
  }
  const auto raw = [&](std::int64_t offset) { return static_cast<std::uint64_t>(start + offset); };
  ferret::runtime::gpu_metric_set set{2, {{"nvltx__bytes.sum", "NVLink bytes sent", "bytes", true},
                                          {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
                                           "SMs active", "percent", false}},
                                      1'000'000};
  source.queued_metric_sets.push_back(set);
  gpu_metric_batch batch;
  batch.device = 2;
  batch.intervals = {{raw(0), raw(1000)}, {raw(1000), raw(2000)}, {raw(2000), raw(3000)}};
  batch.values = {10, 50, 20, 60, 30, 70};
  source.queued_metric_batches.push_back(batch);
  gpu_metric_batch no_set = batch;  // device 9 was never announced
  no_set.device = 9;
  source.queued_metric_batches.push_back(no_set);
  gpu_metric_batch short_values = batch;  // a value missing
  short_values.values.pop_back();
  source.queued_metric_batches.push_back(short_values);
  ferret::flush();

  capture c = memory_backend::snapshot();
  REQUIRE(c.metric_sets.size() == 1);
  CHECK(c.metric_sets[0].device == 2);
  CHECK(c.metric_sets[0].interval_ns == 1'000'000);
  REQUIRE(c.metric_calls.size() == 2);
  CHECK(c.metric_calls[0] == "set 2");
  CHECK(c.metric_calls[1] == "intervals 2 2 2");
  REQUIRE(c.metric_intervals.size() == 3);
  const auto& records = c.threads.at(this_tid()).records;
  const auto sampled = std::find_if(records.begin(), records.end(),
                                    [](const auto& r) { return r.name == "sampled"; });
  REQUIRE(sampled != records.end());
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& interval = c.metric_intervals[i];
    CHECK(interval.device == 2);
    CHECK(interval.end_ns - interval.begin_ns == 1000);
    CHECK(interval.values == std::vector<double>{10.0 * static_cast<double>(i + 1), 50.0 + 10.0 * static_cast<double>(i)});
  }
  // Session-relative like the records: not before the region that began earlier.
  CHECK(c.metric_intervals[0].begin_ns <= sampled->time_ns);
  CHECK(c.metric_intervals[0].begin_ns > sampled->time_ns - 1'000'000'000);
  CHECK(c.metric_intervals[1].begin_ns == c.metric_intervals[0].end_ns);
  CHECK(metadata_count(c, "gpu-metric-intervals") == 3);
  CHECK(metadata_count(c, "gpu-metric-intervals-dropped") == 6);

  // The next drain continues: the set again is not announced again; an
  // interval before the device's last end is dropped.
  source.queued_metric_sets.push_back(set);
  batch.intervals = {{raw(2500), raw(3500)}, {raw(3000), raw(4000)}};
  batch.values = {1, 2, 3, 4};
  source.queued_metric_batches.push_back(batch);
  ferret::flush();
  c = memory_backend::snapshot();
  CHECK(c.metric_sets.size() == 1);
  REQUIRE(c.metric_intervals.size() == 4);
  CHECK(c.metric_intervals[3].values == std::vector<double>{3, 4});
  CHECK(c.metric_calls.back() == "intervals 2");
  CHECK(metadata_count(c, "gpu-metric-intervals") == 4);
  CHECK(metadata_count(c, "gpu-metric-intervals-dropped") == 7);
}
