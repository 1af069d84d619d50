// synthetic_gpu_run DIRECTORY: feeds the summary and the report backends the
// same synthesised run of a two-GPU program — host regions with CUDA API
// calls inside them, kernels on several streams, copies in every direction,
// memsets, allocations, data objects (named, automatic, and with hostile
// names), instruction samples (PC sampling: by line, without line
// information, shared among launches in fractions over two drains),
// device-initiated traffic (a kernel's loads and stores to the other GPU's
// halo, host memory read without line information, an atomic whose launch
// was not seen; two drains), losses
// and unrecorded API calls — and writes DIRECTORY/synthetic.html
// and DIRECTORY/synthetic-summary.txt, for the browser test to compare.
// No GPU is needed: this is what the collectors would hand over.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <deque>
#include <string>
#include <vector>

#include "report_backend.hpp"
#include "summary_backend.hpp"
#include "support/backend_test_support.hpp"

namespace {

namespace rt = ferret::runtime;
using rt::copy_kind;
using rt::gpu_activity;
using rt::gpu_operation;
using rt::memory_kind;

constexpr std::uint32_t pid = 5150;
constexpr std::uint64_t main_tid = 5150;
constexpr std::int64_t us = 1000;
constexpr std::int64_t ms = 1000 * us;
constexpr std::uint64_t MiB = 1024 * 1024;

// Names a hostile program could give: markup, a script end, quotes, control
// bytes, invalid UTF-8, and one of 100 KB.
const std::string markup_name = "<img src=x onerror=\"document.body.dataset.pwned='img'\">";
const std::string script_name = "</script><script>document.body.dataset.pwned='script'</script>";
const std::string quotes_name = "a & b \"quoted\" 'single' \\ back";
const std::string bytes_name = std::string{"bytes \x1b[31m\xff\xfe\x01 end"};
const std::string huge_name = "huge " + std::string(100'000, 'x');

// The runtime's calling-context tree for the launches, mirroring the host
// regions below (the same name records).
class contexts {
 public:
  contexts() { nodes_.push_back(rt::context_node{0, 0, nullptr, nullptr}); }
  const rt::context_node* root() const { return &nodes_.front(); }
  const rt::context_node* child(const rt::context_node* parent, const rt::name_info* name) {
    nodes_.push_back(rt::context_node{static_cast<std::uint32_t>(nodes_.size()), parent->depth + 1,
                                      parent, name});
    return &nodes_.back();
  }

 private:
  std::deque<rt::context_node> nodes_;
};

rt::gpu_launch launch(const rt::context_node* context, std::int64_t time) {
  static std::uint64_t correlation = 0;
  return rt::gpu_launch{++correlation, main_tid, time, context};
}

gpu_activity kernel(const char* name, std::uint32_t device, std::uint32_t stream,
                    std::int64_t start, std::int64_t end, rt::gpu_launch from, double occupancy,
                    std::uint32_t registers) {
  gpu_activity a{};
  a.operation = gpu_operation::kernel;
  a.start_ns = start;
  a.end_ns = end;
  a.device = device;
  a.stream = stream;
  a.name = name;
  a.launch = from;
  a.kernel.grid[0] = 1024;
  a.kernel.block[0] = 256;
  a.kernel.registers_per_thread = registers;
  a.kernel.static_shared_memory = 4096;
  a.kernel.occupancy = occupancy;
  return a;
}

gpu_activity copy(copy_kind kind, std::uint32_t device, std::uint32_t stream, std::int32_t from,
                  std::int32_t to, std::uint64_t bytes, std::int64_t start, std::int64_t end,
                  rt::gpu_launch by, const rt::data_object_info* source,
                  std::uintptr_t source_address, const rt::data_object_info* destination,
                  std::uintptr_t destination_address) {
  gpu_activity a{};
  a.operation = gpu_operation::memcpy;
  a.start_ns = start;
  a.end_ns = end;
  a.device = device;
  a.stream = stream;
  a.copy = kind;
  a.source_device = from;
  a.destination_device = to;
  a.bytes = bytes;
  a.launch = by;
  a.source_object = source;
  a.source_object_id = source != nullptr ? source->id : 0;
  a.destination_object = destination;
  a.destination_object_id = destination != nullptr ? destination->id : 0;
  a.source_address = source_address;
  a.destination_address = destination_address;
  return a;
}

gpu_activity memory_change(gpu_operation operation, std::uint32_t device, std::uintptr_t address,
                           std::uint64_t bytes, std::int64_t time, rt::gpu_launch by) {
  gpu_activity a{};
  a.operation = operation;
  a.start_ns = a.end_ns = time;
  a.device = device;
  a.memory = memory_kind::device;
  a.address = address;
  a.bytes = bytes;
  a.launch = by;
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: synthetic_gpu_run DIRECTORY\n");
    return 2;
  }
  const std::string directory = argv[1];
  rt::session_info session = ferret::testing::make_session(pid);
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &now);
  // The run began 60 ms ago: its time axis is the synthesised activity's.
  session.start_monotonic_raw_ns = std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec - 60 * ms;
  std::string error;
  const rt::backend_context context{&session, directory + "/synthetic", false};
  const auto report = ferret::report::make_backend(context, error);
  if (report == nullptr) {
    std::fprintf(stderr, "synthetic_gpu_run: %s\n", error.c_str());
    return 1;
  }
  const std::string summary_path = directory + "/synthetic-summary.txt";
  const int summary_fd = ::open(summary_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (summary_fd < 0) {
    std::perror(summary_path.c_str());
    return 1;
  }
  const auto summary = ferret::summary::make_backend_writing_to(session, summary_fd);
  const std::vector<rt::backend*> backends{report.get(), summary.get()};

  ferret::testing::name_table names;
  const auto* main_region = names.add("main", "", "/src/solver/main.cpp", 12, "int main()");
  const auto* setup = names.add("setup", "", "/src/solver/solver.cpp", 40, "void setup()");
  const auto* solve = names.add("solve", "", "/src/solver/solver.cpp", 88, "void solve()");
  const auto* step = names.add("step", "", "/src/solver/solver.cpp", 97);
  const auto* hostile_region = names.add(markup_name);
  const auto* malloc_call = names.add("cudaMalloc", "cuda");
  const auto* launch_call = names.add("cudaLaunchKernel", "cuda");
  const auto* copy_call = names.add("cudaMemcpyAsync", "cuda");
  const auto* memset_call = names.add("cudaMemsetAsync", "cuda");
  const auto* sync_call = names.add("cudaDeviceSynchronize", "cuda");
  const auto* peer_call = names.add("cudaMemcpyPeerAsync", "cuda");

  contexts tree;
  const auto* in_main = tree.child(tree.root(), main_region);
  const auto* in_setup = tree.child(in_main, setup);
  const auto* setup_malloc = tree.child(in_setup, malloc_call);
  const auto* setup_copy = tree.child(in_setup, copy_call);
  const auto* setup_memset = tree.child(in_setup, memset_call);
  const auto* in_solve = tree.child(in_main, solve);
  const auto* in_step = tree.child(in_solve, step);
  const auto* step_launch = tree.child(in_step, launch_call);
  const auto* step_peer = tree.child(in_step, peer_call);
  const auto* solve_sync = tree.child(in_solve, sync_call);
  const auto* in_hostile = tree.child(in_main, hostile_region);
  const auto* hostile_copy = tree.child(in_hostile, copy_call);

  // The host side: regions, with the API calls nested as the collector writes them.
  using ferret::testing::begin;
  using ferret::testing::end;
  using ferret::testing::mark;
  using ferret::testing::sample;
  const std::vector<rt::record> host{
      begin(0, main_region),
      begin(1 * ms, setup),
      begin(1 * ms + 100 * us, malloc_call), end(1 * ms + 300 * us, malloc_call),
      begin(2 * ms, copy_call), end(2 * ms + 50 * us, copy_call),
      begin(3 * ms, memset_call), end(3 * ms + 20 * us, memset_call),
      end(5 * ms, setup),
      begin(5 * ms, solve),
      begin(6 * ms, step), begin(6 * ms + 10 * us, launch_call), end(6 * ms + 30 * us, launch_call),
      begin(7 * ms, peer_call), end(7 * ms + 40 * us, peer_call), end(20 * ms, step),
      begin(20 * ms, step), begin(20 * ms + 10 * us, launch_call), end(20 * ms + 30 * us, launch_call),
      end(30 * ms, step),
      begin(30 * ms, sync_call), end(38 * ms, sync_call),
      end(40 * ms, solve),
      begin(40 * ms, hostile_region), begin(41 * ms, copy_call), end(41 * ms + 30 * us, copy_call),
      end(45 * ms, hostile_region),
      end(50 * ms, main_region),
  };
  const rt::thread_info main_thread{pid, main_tid, "main", true};
  // Counters and marks on two threads: the last value is the latest sample's
  // (0.125 on the worker), not the last to arrive (0.25 on the main thread).
  const auto* residual = names.add("residual");
  const auto* hostile_counter = names.add(script_name, "solver");
  const auto* converged = names.add("converged");
  const std::vector<rt::record> worker{
      sample(2 * ms, residual, 0.5), sample(58 * ms, residual, 0.125), mark(59 * ms, converged),
      sample(59 * ms, hostile_counter, 1e21), sample(60 * ms, hostile_counter, -3.25)};
  const std::vector<rt::record> main_samples{sample(52 * ms, residual, 0.25), mark(55 * ms, converged),
                                             mark(56 * ms, hostile_region)};
  const rt::thread_info worker_thread{pid, main_tid + 1, "worker", false};
  const rt::thread_info main_again{pid, main_tid, "main", true};

  // Data objects: a program's host array, an allocation ferret named, and
  // objects with hostile names.
  rt::data_object_info grid{1, "grid", 0x10000, 8 * MiB, memory_kind::host, -1};
  rt::data_object_info device_grid{2, "cudaMalloc@main/setup", 0x7f0000000000, 8 * MiB,
                                   memory_kind::device, 0, setup_malloc};
  rt::data_object_info peer_grid{3, "halo on GPU 1", 0x7f1000000000, 2 * MiB, memory_kind::device, 1};
  std::vector<rt::data_object_info> hostile;
  std::uint64_t next_id = 10;
  for (const std::string* name : {&markup_name, &script_name, &quotes_name, &bytes_name, &huge_name})
    hostile.push_back(rt::data_object_info{next_id++, *name, 0x20000000 + next_id * 0x100000, MiB,
                                           memory_kind::host, -1});

  rt::gpu_device_info gpu0{0, "Synthetic GPU 0", 9, 0, 132, 80ULL << 30, 1024, 64, 32, 65536, 65536, 233472, 232448};
  rt::gpu_device_info gpu1 = gpu0;
  gpu1.id = 1;
  gpu1.name = "Synthetic GPU 1";

  const std::int64_t gpu_start = 1 * ms;
  std::vector<gpu_activity> first_drain{
      memory_change(gpu_operation::allocation, 0, device_grid.address, device_grid.bytes,
                    gpu_start + 200 * us, launch(setup_malloc, 0)),
      memory_change(gpu_operation::allocation, 1, peer_grid.address, peer_grid.bytes,
                    gpu_start + 250 * us, launch(setup_malloc, 0)),
      // The first half of the grid goes up, then all of it is cleared on the device.
      copy(copy_kind::host_to_device, 0, 7, -1, 0, 4 * MiB, 2 * ms + 100 * us, 2 * ms + 500 * us,
           launch(setup_copy, 0), &grid, grid.address, &device_grid, device_grid.address),
  };
  gpu_activity clear{};
  clear.operation = gpu_operation::memset;
  clear.start_ns = 3 * ms + 50 * us;
  clear.end_ns = 3 * ms + 90 * us;
  clear.device = 0;
  clear.stream = 7;
  clear.bytes = 2 * MiB;
  clear.memory = memory_kind::device;
  clear.launch = launch(setup_memset, 0);
  clear.destination_object = &device_grid;
  clear.destination_object_id = device_grid.id;
  clear.destination_address = device_grid.address + 6 * MiB;
  first_drain.push_back(clear);

  // Instruction samples: the stencil's launches share the samples of its
  // lines (fractions); the plain C kernel has no line information.
  const rt::gpu_stall_reason long_scoreboard{0, "long_scoreboard", rt::gpu_stall::gmem};
  const rt::gpu_stall_reason selected{1, "selected", rt::gpu_stall::none};
  const rt::gpu_stall_reason barrier{2, "barrier", rt::gpu_stall::sync};
  const rt::gpu_stall_reason wait{3, "wait", rt::gpu_stall::idep};
  rt::gpu_kernel_samples stencil_samples{};
  stencil_samples.samples = 100;
  stencil_samples.by_stall[static_cast<std::size_t>(rt::gpu_stall::gmem)] = 70;
  stencil_samples.by_stall[static_cast<std::size_t>(rt::gpu_stall::none)] = 20;
  stencil_samples.by_stall[static_cast<std::size_t>(rt::gpu_stall::sync)] = 10;
  stencil_samples.expected = 400;
  stencil_samples.period_cycles = 4096;
  stencil_samples.top_reasons[0] = &long_scoreboard;
  stencil_samples.top_reason_samples[0] = 70;
  const char* stencil_file = "/src/solver/stencil.cu";
  const auto at = [&](const rt::context_node* where, const char* function, std::uint64_t pc,
                      const char* file, std::uint32_t line, const rt::gpu_stall_reason& reason,
                      double samples) {
    return rt::gpu_instruction_sample{where, 0, function, pc, file, line, &reason, samples};
  };
  const std::vector<rt::gpu_instruction_sample> first_samples{
      at(step_launch, "_Z7stencilPKdPdi", 0x80, stencil_file, 42, long_scoreboard, 350.5),
      at(step_launch, "_Z7stencilPKdPdi", 0x88, stencil_file, 42, selected, 60),
      at(step_launch, "_Z7stencilPKdPdi", 0x100, stencil_file, 47, barrier, 60),
      at(step_launch, "_Z7stencilPKdPdi", 0x108, stencil_file, 47, selected, 40),
      at(step_launch, "plain_c_kernel", 0x1a0, nullptr, 0, wait, 30),
      at(tree.root(), "_Z7stencilPKdPdi", 0x80, stencil_file, 42, long_scoreboard, 9)};
  const std::vector<rt::gpu_instruction_sample> second_samples{
      at(step_launch, "_Z7stencilPKdPdi", 0x80, stencil_file, 42, long_scoreboard, 49.25)};

  // Device-initiated traffic: the stencil on GPU 0 loads and stores the halo
  // on GPU 1 (lines 44 and 45; a later drain adds to line 44), the plain C
  // kernel on GPU 1 reads the host grid, and an atomic update of the device
  // grid from GPU 1 whose launch the runtime did not find.
  const auto reached = [](const rt::context_node* where, std::uint32_t device, std::int32_t target,
                          rt::memory_access access, const char* function, std::uint64_t pc, const char* file,
                          std::uint32_t line, const rt::data_object_info& object, std::uint64_t bytes) {
    return rt::gpu_remote_access{where, device, target, access, function, pc, file, line,
                                 object.id, &object, bytes / 8, bytes};
  };
  const std::vector<rt::gpu_remote_access> first_remote{
      reached(step_launch, 0, 1, rt::memory_access::load, "_Z7stencilPKdPdi", 0x90, stencil_file, 44, peer_grid, 3 * MiB),
      reached(step_launch, 0, 1, rt::memory_access::store, "_Z7stencilPKdPdi", 0xa0, stencil_file, 45, peer_grid,
              256 * 1024),
      reached(step_launch, 1, rt::host_memory_device, rt::memory_access::load, "plain_c_kernel", 0x1c0, nullptr, 0,
              grid, 64 * 1024),
      reached(tree.root(), 1, 0, rt::memory_access::atomic, "plain_c_kernel", 0x1d0, nullptr, 0, device_grid, 4096)};
  const std::vector<rt::gpu_remote_access> second_remote{
      reached(step_launch, 0, 1, rt::memory_access::load, "_Z7stencilPKdPdi", 0x90, stencil_file, 44, peer_grid, MiB)};

  std::vector<gpu_activity> second_drain;
  for (int i = 0; i < 6; ++i) {
    const std::int64_t start = 6 * ms + i * 2 * ms;
    second_drain.push_back(kernel("_Z7stencilPKdPdi", 0, 7 + static_cast<std::uint32_t>(i % 2), start,
                                  start + 1500 * us, launch(step_launch, start), 0.5625, 64));
    second_drain.back().samples = &stencil_samples;
  }
  second_drain.push_back(kernel("plain_c_kernel", 1, 13, 21 * ms, 24 * ms, launch(step_launch, 20 * ms), -1.0, 32));
  second_drain.push_back(kernel(markup_name.c_str(), 1, 13, 25 * ms, 25 * ms + 62500, launch(step_launch, 20 * ms), 0.25, 16));
  // A halo exchange between the GPUs, and the results back to the host.
  second_drain.push_back(copy(copy_kind::peer_to_peer, 0, 8, 0, 1, MiB + 512 * 1024, 7 * ms + 100 * us,
                              7 * ms + 400 * us, launch(step_peer, 7 * ms), &device_grid,
                              device_grid.address + 2 * MiB, &peer_grid, peer_grid.address));
  second_drain.push_back(copy(copy_kind::device_to_host, 0, 7, 0, -1, 8 * MiB, 30 * ms, 30 * ms + 1280 * us,
                              launch(step_launch, 20 * ms), &device_grid, device_grid.address, &grid,
                              grid.address));
  second_drain.push_back(copy(copy_kind::device_to_device, 1, 13, 1, 1, 1280, 26 * ms, 26 * ms + 1500,
                              launch(step_launch, 20 * ms), &peer_grid, peer_grid.address, &peer_grid,
                              peer_grid.address + MiB));
  gpu_activity sync{};
  sync.operation = gpu_operation::synchronization;
  sync.start_ns = 30 * ms;
  sync.end_ns = 38 * ms;
  sync.detail = 4;
  sync.launch = launch(solve_sync, 30 * ms);
  second_drain.push_back(sync);
  for (const rt::data_object_info& object : hostile)
    second_drain.push_back(copy(copy_kind::host_to_host, 0, 0, -1, -1, 64 * 1024 + object.id, 41 * ms,
                                41 * ms + 20 * us, launch(hostile_copy, 41 * ms), &object,
                                object.address, nullptr, 0));
  second_drain.push_back(kernel("_Z7stencilPKdPdi", 0, 7, 44 * ms, 44 * ms + 100 * us,
                                rt::gpu_launch{999, 0, 0, nullptr}, 0.5, 64));  // launch not seen
  second_drain.push_back(memory_change(gpu_operation::release, 1, peer_grid.address, 0, 39 * ms,
                                       launch(solve_sync, 39 * ms)));

  const rt::metadata_list runtime_metadata{
      {"buffer-bytes", std::int64_t{67108864}},
      {"events-dropped-buffer-full", std::int64_t{5}},
      {"gpu-operations-without-launch", std::int64_t{1}},
      {"cupti-records-dropped", std::int64_t{2}},
      {"gpu-pc-sampling-period-cycles", std::int64_t{4096}},
      {"gpu-pc-samples", std::int64_t{640}},
      {"gpu-pc-samples-dropped", std::int64_t{12}},
      {"gpu-pc-samples-non-user", std::int64_t{30}},
      {"gpu-instruction-samples-without-launch", std::int64_t{9}},
      {"gpu-device-initiated-bytes", std::int64_t{4 * MiB + 256 * 1024 + 64 * 1024 + 4096}},
      {"gpu-device-initiated-bytes-without-launch", std::int64_t{4096}},
      {"cuda-api-unrecorded:cudaGetDevice", std::int64_t{4096}},
      {"cuda-api-unrecorded:cudaPeekAtLastError", std::int64_t{17}},
      {"level-zero-api-unrecorded:zeDeviceGet", std::int64_t{3}},
  };
  const rt::metadata_list user_metadata{{"grid-size", std::int64_t{1024}},
                                        {"note", std::string{script_name}}};

  for (rt::backend* backend : backends) {
    backend->thread_records(main_thread, host.data(), host.size());
    backend->thread_records(worker_thread, worker.data(), worker.size());
    backend->thread_records(main_again, main_samples.data(), main_samples.size());
    const auto announce = [&](const rt::data_object_info& object, std::int64_t time) {
      backend->data_object(rt::data_object_event{time, rt::data_object_change::registered, main_tid, &object});
    };
    announce(grid, 500 * us);
    announce(device_grid, 1 * ms + 300 * us);
    announce(peer_grid, 1 * ms + 300 * us);
    for (const rt::data_object_info& object : hostile) announce(object, 40 * ms);
    backend->gpu_device(gpu0);
    backend->gpu_device(gpu1);
    backend->gpu_activities(first_drain.data(), first_drain.size());
    backend->gpu_instruction_samples(first_samples.data(), first_samples.size());
    backend->gpu_remote_accesses(first_remote.data(), first_remote.size());
    backend->gpu_activities(second_drain.data(), second_drain.size());
    backend->gpu_instruction_samples(second_samples.data(), second_samples.size());
    backend->gpu_remote_accesses(second_remote.data(), second_remote.size());
    backend->data_object(rt::data_object_event{39 * ms, rt::data_object_change::unregistered, main_tid, &peer_grid});
    backend->flush(rt::session_status{&runtime_metadata, &user_metadata, 1000, 5, true});
  }
  ::close(summary_fd);
  std::printf("%s\n", report->describe().c_str());
  return report->describe().rfind("report: not written", 0) == 0 ? 1 : 0;
}
