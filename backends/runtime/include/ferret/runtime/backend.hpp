// ferret/runtime/backend.hpp — what a backend (an output format) implements.
//
// The runtime drains the per-thread buffers (in its background thread, when a
// buffer fills, at ferret::flush() and at exit), converts timestamps to
// nanoseconds since the process start, resolves names, and hands each backend
// batches of records. All calls into one backend are serialised by the runtime:
// a backend needs no locking of its own.
//
// A backend registers a factory under its name from a static initializer of its
// shared library (see FERRET_REGISTER_BACKEND); FERRET_BACKEND selects it.
#pragma once

#include "ferret/detail/abi.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ferret/runtime/settings.hpp"  // FERRET_EXPORT

namespace ferret::runtime {

using ferret::detail::memory_kind;

class process_group;  // runtime.hpp

FERRET_EXPORT std::string_view to_string(memory_kind memory) noexcept;

/// A region, mark or counter name with where it came from. `id` is dense
/// (0, 1, 2, ... in order of first appearance), for backends that keep tables.
struct name_info {
  std::uint32_t id;
  std::string name;
  std::string domain;    // empty for the default domain
  std::string function;  // empty unless from FERRET_FUNCTION/FERRET_REGION
  std::string file;
  std::uint32_t line;
};

enum class record_kind : std::uint8_t { region_begin, region_end, mark, counter };

/// Who ended a region: the program, or the runtime on its behalf.
enum class region_close : std::uint8_t {
  by_program,    // the program's own end
  at_exit,       // still open when its thread or the process ended: ended then
  by_outer_end,  // opened inside a region whose end came first: ended with it
};

/// One event of one thread. Records of a thread arrive in the order the
/// thread wrote them (which is time order), and their regions nest: a
/// region_end ends the innermost open region and carries that region's
/// begin name. The runtime makes it so (a backend keeps a plain stack): it
/// matches the program's ends to its begins by name and domain, drops an end
/// that matches no open region (counted: unmatched-region-ends), ends the
/// regions an outer region's end leaves open (region_close::by_outer_end), and
/// ends what is still open when a thread or the process ends
/// (region_close::at_exit), so that no region is open at the final flush.
/// Regions nested deeper than max_open_regions are not delivered (counted:
/// events-dropped-nested-too-deep).
struct record {
  std::int64_t time_ns;  // since the process start (session_info::start_monotonic_raw_ns)
  record_kind kind;
  region_close closed;    // region_end only; region_close::by_program otherwise
  const name_info* name;  // never nullptr (the writers' inner loops rely on it)
  double value;  // counters only
};

/// The deepest a thread's regions nest in what backends receive, so that the
/// memory open regions cost (a node of the calling-context tree each, a frame
/// in each backend: about 250 bytes with chrome, 600 with summary) stays bounded
/// however many a program leaves open. Deep enough for deep recursion (Perfetto
/// shows 512 levels, TAU's call paths fold at 32).
inline constexpr std::uint32_t max_open_regions = 131'072;

struct thread_info {
  std::uint32_t pid;
  std::uint64_t tid;     // kernel thread id (never 0)
  std::string_view name; // set with ferret::set_thread_name, else empty
  bool is_main;          // tid == pid
};

/// The name every output gives a thread that has none of its own: "main" for
/// the process's main thread, "thread <tid>" for the others.
inline std::string unnamed_thread_label(std::uint64_t tid, bool is_main) {
  return is_main ? std::string{"main"} : "thread " + std::to_string(tid);
}

struct data_object_info {
  std::uint64_t id;
  std::string name;
  std::uintptr_t address;
  std::size_t bytes;
  memory_kind memory;
  int device;  // -1 for host memory
  // Objects the runtime tracks by itself (device allocations made through the
  // CUDA API): the calling context of the allocating call; nullptr for objects
  // the program registered.
  const struct context_node* allocated_in = nullptr;
};

enum class data_object_change : std::uint8_t { registered, unregistered };

struct data_object_event {
  std::int64_t time_ns;
  data_object_change change;
  std::uint64_t tid;  // thread that (un)registered it
  const data_object_info* object;
};

// Integers are exact: std::uint64_t holds only values above INT64_MAX.
using metadata_value = std::variant<std::string, std::int64_t, double, std::uint64_t>;
using metadata_list = std::vector<std::pair<std::string, metadata_value>>;

/// Facts fixed when the session starts.
struct session_info {
  std::uint32_t pid;
  std::string hostname;
  std::string executable;     // base name of /proc/self/exe
  std::string command_line;   // arguments joined by spaces
  std::string clock_source;   // "tsc", "cntvct" or "CLOCK_MONOTONIC_RAW"
  std::int64_t start_monotonic_raw_ns;  // time zero: the runtime's load (process start, or
                                        // the fork in a child) on CLOCK_MONOTONIC_RAW
  std::int64_t start_realtime_ns;       // the same instant on CLOCK_REALTIME
  std::string ferret_version;
};

/// What the runtime knows at a flush: run metadata and loss accounting.
/// Every flush passes the latest values.
struct session_status {
  const metadata_list* runtime_metadata;  // clock frequency, buffer size, ...
  const metadata_list* user_metadata;     // from ferret::set_metadata, unique keys
  std::uint64_t events_recorded;
  std::uint64_t events_dropped;  // events that could not be kept (see docs)
  bool final;                    // true for the last call: close the output
};

// ---------------------------------------------------------------------------
// GPU activity, from collectors such as backends/collectors/cupti.

/// A node of the calling-context tree: the annotated regions (and, as leaves,
/// the GPU API calls) open on a thread. The root has no name. Nodes live as
/// long as the session; `id` is dense, in order of creation.
struct context_node {
  std::uint32_t id;
  std::uint32_t depth;  // 0 for the root
  const context_node* parent;
  const name_info* name;  // nullptr for the root
};

/// Names from the root down, joined by `separator`; API calls (domain "cuda", "level_zero")
/// are left out unless `with_api_calls`. "" for the root.
FERRET_EXPORT std::string context_path(const context_node* node, std::string_view separator = "/",
                                       bool with_api_calls = false);

/// The API call an operation was launched from: the innermost node of `node`'s
/// path in the "cuda" or "level_zero" domain; nullptr if there is none.
FERRET_EXPORT const name_info* launching_call(const context_node* node) noexcept;

enum class gpu_operation : std::uint8_t { kernel, memcpy, memset, allocation, release, synchronization };

enum class copy_kind : std::uint8_t {
  unknown,
  host_to_device,
  device_to_host,
  device_to_device,  // within one device
  host_to_host,
  peer_to_peer,  // between two devices
};

FERRET_EXPORT std::string_view to_string(gpu_operation operation) noexcept;
/// "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "unknown".
FERRET_EXPORT std::string_view to_string(copy_kind kind) noexcept;

/// A kernel's source-level name; the name itself when it does not demangle
/// (extern "C" kernels), "kernel" for nullptr.
FERRET_EXPORT std::string demangled_kernel_name(const char* mangled);

/// What a device can hold, for occupancy and for naming its tracks.
struct gpu_device_info {
  std::uint32_t id;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  std::uint32_t compute_major, compute_minor;
  std::uint32_t multiprocessors;
  std::uint64_t global_memory_bytes;
  std::uint32_t max_threads_per_block;
  std::uint32_t max_warps_per_multiprocessor;
  std::uint32_t max_blocks_per_multiprocessor;
  std::uint32_t max_registers_per_multiprocessor;
  std::uint32_t max_registers_per_block;
  std::uint32_t max_shared_memory_per_multiprocessor;  // bytes
  std::uint32_t max_shared_memory_per_block;           // bytes
};

/// Kernel launch attributes. occupancy: theoretical, active warps per SM over
/// the maximum (0..1); negative when the device's limits are unknown.
struct kernel_attributes {
  std::uint32_t grid[3];
  std::uint32_t block[3];
  std::uint32_t registers_per_thread;
  std::uint32_t static_shared_memory;   // bytes per block
  std::uint32_t dynamic_shared_memory;  // bytes per block
  std::uint32_t local_memory_per_thread;
  std::uint32_t shared_memory_executed;  // carveout the kernel ran with (bytes per SM), 0 if unknown
  double occupancy;
  std::uint32_t simd_width;  // Level Zero: SIMD width (the kernel's maxSubgroupSize); 0 for CUDA
};

/// The host side of a GPU operation: the API call that launched it, on which
/// thread, when, and in which calling context. tid == 0 when no launch was
/// seen for the correlation id (counted, never guessed).
struct gpu_launch {
  std::uint64_t correlation;
  std::uint64_t tid;
  std::int64_t time_ns;  // inside the API call
  const context_node* context;
};

/// One GPU operation, on the runtime's clock. Fields a kind does not use are zero.
struct gpu_activity {
  gpu_operation operation;
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::uint32_t device;
  std::uint32_t stream;  // 0 when the operation has none
  const char* name;      // kernel name as the compiler emitted it (mangled), or nullptr
  gpu_launch launch;     // the collector sets launch.correlation, the runtime the rest
  std::uint64_t bytes;   // copies, memsets, allocations
  copy_kind copy;
  std::int32_t source_device;       // copies: -1 for host memory
  std::int32_t destination_device;  // copies: -1 for host memory
  memory_kind memory;               // allocations and memsets
  std::uintptr_t address;           // allocations, memsets: the device address
  kernel_attributes kernel;
  std::uint32_t detail;  // synchronization: 1 event, 2 stream wait event, 3 stream, 4 context, 0 unknown
  // Data objects the operation reads and writes: the collector sets the ids
  // (0: none), the runtime the pointers (valid for the call).
  std::uint64_t source_object_id;
  std::uint64_t destination_object_id;
  const data_object_info* source_object;
  const data_object_info* destination_object;
  // Copies and memsets: the first byte read and written, as the launching
  // call named them (0: not known), so that a backend can tell which part of
  // a data object an operation touched.
  std::uintptr_t source_address;
  std::uintptr_t destination_address;
  // Kernels, copies, memsets replayed from a CUDA graph: the graph node (0: none).
  std::uint64_t graph_node;
  // Kernels, with instruction sampling on (FERRET_CUDA_PC_SAMPLING): the samples
  // attributed to this launch; nullptr otherwise. Valid for the call.
  const struct gpu_kernel_samples* samples;
  // Kernels, with peer accesses counted (FERRET_CUDA_PEER_ACCESSES): the launch's
  // device-initiated traffic; nullptr otherwise or when it reached no other
  // memory. Valid for the call.
  const struct gpu_kernel_remote_traffic* remote;
};

// ---------------------------------------------------------------------------
// Inside GPU kernels: instruction samples (CUPTI's PC sampling). At a fixed
// period of cycles each SM's sampler picks a warp and notes the instruction it
// is at and why it did not issue; summed per instruction, the samples say
// where a kernel spends its time and what it waits for.

/// Why a sampled warp did not issue, in the classes of HPCToolkit's GPU
/// instruction metrics (GINST:STL_*). Vendors name their reasons per GPU
/// generation; a collector maps each of its own onto a class and keeps its name
/// beside it (gpu_stall_reason). docs/gpu-inside.md has the table.
enum class gpu_stall : std::uint8_t {
  none,  // STL_NONE: issued (the warp was selected)
  ifet,  // STL_IFET: instruction fetch, branch resolving
  idep,  // STL_IDEP: waiting for an earlier instruction's result (execution dependency)
  gmem,  // STL_GMEM: waiting for global or local memory
  tmem,  // STL_TMEM: texture unit queue full
  sync,  // STL_SYNC: barrier or memory barrier
  cmem,  // STL_CMEM: constant memory (immediate constant cache miss)
  pipe,  // STL_PIPE: the execution pipe is busy
  mthr,  // STL_MTHR: memory throttle (too many memory requests in flight)
  nsel,  // STL_NSEL: eligible, but another warp was selected
  othr,  // STL_OTHR: other reasons
  slp,   // STL_SLP: sleeping
};
inline constexpr std::size_t gpu_stall_classes = 12;
/// HPCToolkit's metric name: "GINST:STL_NONE", "GINST:STL_IFET", ...
FERRET_EXPORT std::string_view metric_name(gpu_stall stall) noexcept;
/// A few words for a table's heading: "issued", "instruction fetch", ...
FERRET_EXPORT std::string_view describe(gpu_stall stall) noexcept;

/// A stall reason as the vendor names it, with its class. Lives as long as the session.
struct gpu_stall_reason {
  std::uint32_t id;  // dense, in order of first use
  std::string name;  // CUPTI's name without its metric prefix: "long_scoreboard", "selected"
  gpu_stall stall;
};

/// Samples at one instruction with one stall reason, from the launches of one
/// calling context: what a source view shows. Samples are counts, fractional
/// where one interval's samples of a function were shared among several
/// launches of it (continuous sampling does not say which launch a sample
/// came from; docs/gpu-inside.md says how they are shared).
struct gpu_instruction_sample {
  const context_node* context;  // the launches' calling context; the root when not known
  std::uint32_t device;
  const char* function;  // the function holding the instruction (mangled); lives as long as the session
  std::uint64_t pc_offset;  // of the instruction in its function
  const char* file;  // source file from the cubin's line table; nullptr without line information
  std::uint32_t line;  // 0 without line information
  const gpu_stall_reason* reason;
  double samples;
};

/// One kernel launch's samples, for a trace event's arguments (gpu_activity::samples).
struct gpu_kernel_samples {
  double samples;                      // GINST: every sample attributed to the launch
  double by_stall[gpu_stall_classes];  // per class, indexed by gpu_stall; they sum to `samples`
  // GSAMP:EXP: the samples the launch's duration allows (every SM busy, one per
  // period); samples / expected is its GSAMP:UTIL.
  double expected;
  std::uint32_t period_cycles;  // GSAMP:PER: cycles between two samples of an SM
  // Its most sampled stall reasons (not "selected"), most first; nullptr past the last.
  const gpu_stall_reason* top_reasons[3];
  double top_reason_samples[3];
};

// ---------------------------------------------------------------------------
// Device-initiated traffic: a kernel's own loads and stores that reach memory
// outside the device it runs on (another GPU's, through peer access, NVSHMEM
// or NCCL's kernels; host memory, zero-copy or managed), counted exactly on
// the device per instruction (FERRET_CUDA_PEER_ACCESSES, docs/gpu-inside.md).

/// What a device-initiated access did at the memory it reached. Bytes of a
/// load flow from the memory's device to the kernel's, of a store or an atomic
/// from the kernel's device to the memory's.
enum class memory_access : std::uint8_t { load, store, atomic };
/// "load", "store", "atomic".
FERRET_EXPORT std::string_view to_string(memory_access access) noexcept;

/// The device id that stands for host memory in target_device and in a
/// copy's source or destination device.
inline constexpr std::int32_t host_memory_device = -1;
/// How every output names a memory end: "host" (host_memory_device, or any
/// negative id) or "GPU <n>".
FERRET_EXPORT std::string memory_end_name(std::int64_t device);

/// Accesses of one instruction to one data object on one other device, from
/// the launches of one calling context: a row of the "device-initiated
/// traffic" table. Counts are exact.
struct gpu_remote_access {
  const context_node* context;  // the launches' calling context; the root when not known
  std::uint32_t device;         // where the kernel ran
  std::int32_t target_device;   // whose memory it reached; host_memory_device for host memory
  memory_access access;
  const char* function;     // the function holding the instruction (mangled); lives as long as the session
  std::uint64_t pc_offset;  // of the instruction in its function
  const char* file;         // from the cubin's line table; nullptr without line information
  std::uint32_t line;       // 0 without line information
  std::uint64_t object_id;  // the data object the addresses fall in; 0: none ferret knows
  const data_object_info* object;  // valid for the call; nullptr when object_id is 0 or forgotten
  std::uint64_t accesses;   // thread-level: each active thread of a warp counts one
  std::uint64_t bytes;
};

/// One kernel launch's device-initiated traffic, per memory it reached, for a
/// trace event's arguments (gpu_activity::remote).
struct gpu_kernel_remote_traffic {
  struct target {
    std::int32_t device;  // host_memory_device for host memory
    std::uint64_t loaded_bytes;
    std::uint64_t stored_bytes;  // stores and atomics
  };
  static constexpr std::size_t max_targets = 16;
  std::uint32_t target_count;  // entries used in `targets`, most bytes first
  target targets[max_targets];
};

// ---------------------------------------------------------------------------
// Hardware counters of a GPU sampled at a fixed interval while the program runs
// (FERRET_CUDA_METRICS_SAMPLING: CUPTI's PM sampling), e.g. the bytes its NVLink
// and PCIe links sent and received, DRAM traffic, SM activity. Nothing is
// replayed: the counters cover whatever ran on the GPU in each interval.

/// One sampled counter of a device.
struct gpu_metric {
  const char* name;   // the vendor's metric ("nvltx__bytes.sum"); lives as long as the session
  const char* label;  // for people: "NVLink bytes sent"; lives as long as the session
  const char* unit;   // "bytes", "cycles", "percent", ...; lives as long as the session
  bool accumulates;   // a count over the interval (bytes, cycles): its rate is value / length;
                      // false: a level or ratio that holds over the interval (percent)
};

/// The counters sampled on one device, announced once before its first interval.
struct gpu_metric_set {
  std::uint32_t device;
  std::vector<gpu_metric> metrics;  // the order of gpu_metric_interval::values
  std::int64_t interval_ns;         // the sampling interval asked for
};

/// One sampling interval of one device: each counter's value over
/// [begin_ns, end_ns) (nanoseconds since the session's start, like records).
struct gpu_metric_interval {
  std::uint32_t device;
  std::int64_t begin_ns;
  std::int64_t end_ns;
  const double* values;  // one per metric of the device's gpu_metric_set, in its order
};

// ---------------------------------------------------------------------------
// Communication between the processes of a run, from parallel layers such as
// backends/collectors/mpi. The kinds follow OTF2's MPI event records, so that a backend
// can write them one to one.

enum class communication_kind : std::uint8_t {
  send,              // a blocking send: at its call's start
  isend,             // a non-blocking send posted (`request` pairs it with its completion)
  isend_complete,    // that send completed, in the Wait/Test call that saw it
  receive,           // a blocking receive: at its call's end, with the message received
  irecv_request,     // a non-blocking receive posted
  irecv,             // that receive completed, with the message received
  collective_begin,  // at a collective call's start
  collective_end,    // at its end, with its kind, root and bytes
};

/// Collective operations, numbered as OTF2_CollectiveOp.
enum class collective_kind : std::uint8_t {
  barrier, broadcast, gather, gatherv, scatter, scatterv, allgather, allgatherv, alltoall,
  alltoallv, alltoallw, allreduce, reduce, reduce_scatter, scan, exscan, reduce_scatter_block,
};

FERRET_EXPORT std::string_view to_string(communication_kind kind) noexcept;
/// The MPI call's name without "MPI_": "Bcast", "Allreduce", ...
FERRET_EXPORT std::string_view to_string(collective_kind kind) noexcept;

inline constexpr std::uint32_t no_rank = 0xffffffffu;

/// A communicator: its members as ranks of the process group (rank order).
/// Announced before the first event that names it. Ids are the same on every
/// process (the group's rank-0 creator picks them).
struct communicator_info {
  std::uint64_t id;
  std::string name;  // "MPI_COMM_WORLD", "MPI_COMM_SELF", "MPI_Comm_split 1", ...
  std::vector<std::uint32_t> members;
};

/// One communication event of one thread.
struct communication_event {
  std::int64_t time_ns;  // since the process start, like records
  std::uint64_t tid;
  communication_kind kind;
  collective_kind collective;  // collective_end only
  std::uint64_t communicator;  // communicator_info::id
  // Point to point: the other process, as its rank in the communicator and in
  // the group; rooted collectives: the root; otherwise no_rank.
  std::uint32_t peer;
  std::uint32_t peer_process;
  std::int32_t tag;
  std::uint64_t bytes;           // point to point: the message; collectives: bytes sent
  std::uint64_t bytes_received;  // collectives
  std::uint64_t request;         // isend, isend_complete, irecv_request, irecv
  const char* call;              // the call that recorded it ("MPI_Isend"): static, or nullptr
};

/// Everything a factory needs to create a backend.
struct backend_context {
  const session_info* session;
  // The output path from FERRET_OUTPUT, with %p/%h/%e expanded; a directory
  // when it ends in '/' or names an existing directory. Use output_file().
  std::string output;
  bool output_is_directory;
};

/// The file a backend writes: `<directory>/ferret-<exe>-<pid><extension>` for
/// a directory; the path itself if it already ends in `extension` (in any
/// case); otherwise the path with its extension replaced by (or extended
/// with) `extension`.
FERRET_EXPORT std::string output_file(const backend_context& context, std::string_view extension);

/// The directory a backend that writes several files (an OTF2 archive, a TAU
/// profile) writes into: output_file(context, "") without trailing slashes
/// and without an extension of letters and digits, so that FERRET_OUTPUT=run.json
/// or run.otf2 gives "run" whichever backends are on, beside chrome's run.json.
/// "ferret-a.out-42" and "data.2024" keep their dots.
FERRET_EXPORT std::string output_directory(const backend_context& context);

/// Opens `path` for writing, created or emptied, without ever blocking: a
/// FIFO, a device or anything else that is not a regular file is refused
/// (neither written, emptied nor removed). Returns the descriptor
/// (close-on-exec), or -1 with `reason` saying why (for "cannot write ... to
/// '<path>': <reason>"; a directory that could not be made is named) and errno
/// set (EINVAL for a file that is not a regular one).
FERRET_EXPORT int open_output_file(const std::string& path, std::string& reason) noexcept;

/// Which file a descriptor is open on. A program may close every descriptor
/// (daemons do) and reuse the numbers for its own files: a backend that keeps
/// a file open checks, before it writes or closes, that the descriptor is
/// still open on its file.
struct file_identity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;  // 0: not open
};
FERRET_EXPORT file_identity identity_of(int fd) noexcept;
FERRET_EXPORT bool still_open_on(int fd, const file_identity& file) noexcept;
/// Closes `fd` only if it is still open on `file`.
FERRET_EXPORT void close_if_open_on(int fd, const file_identity& file) noexcept;

class backend {
 public:
  virtual ~backend() = default;
  /// Records of one thread, in its order. `records` is valid for the call only.
  virtual void thread_records(const thread_info& thread, const record* records,
                              std::size_t count) = 0;
  /// Data-object lifetimes, in the order they happened.
  virtual void data_object(const data_object_event& event) = 0;
  /// Called after every drain: write what is buffered so that the output on
  /// disk is as complete as it can be; with status.final, finish and close.
  virtual void flush(const session_status& status) = 0;
  /// In a fork() child: release resources without writing anything (the
  /// parent owns the output).
  virtual void abandon() noexcept = 0;
  /// One line for the exit summary, e.g. "chrome trace: ferret-app-42.json".
  virtual std::string describe() const = 0;
  /// A GPU, before the first activity on it. Backends without GPU output ignore it.
  virtual void gpu_device(const gpu_device_info& /*device*/) {}
  /// GPU operations of one drain, in no particular order.
  virtual void gpu_activities(const gpu_activity* /*activities*/, std::size_t /*count*/) {}
  /// GPU instruction samples of one drain (FERRET_CUDA_PC_SAMPLING), after that
  /// drain's activities; one entry per (context, device, function, instruction,
  /// reason) in a call, but a later drain may add to the same key.
  virtual void gpu_instruction_samples(const gpu_instruction_sample* /*samples*/,
                                       std::size_t /*count*/) {}
  /// Device-initiated traffic of one drain (FERRET_CUDA_PEER_ACCESSES), after
  /// that drain's activities (whose kernels carry their launch's totals); one
  /// entry per (context, device, target, access, function, instruction, object)
  /// in a call, but a later drain may add to the same key.
  virtual void gpu_remote_accesses(const gpu_remote_access* /*accesses*/, std::size_t /*count*/) {}
  /// A device's sampled counters (FERRET_CUDA_METRICS_SAMPLING), once, before
  /// the first gpu_metric_intervals call that has an interval of that device.
  virtual void gpu_sampled_metrics(const gpu_metric_set& /*set*/) {}
  /// Counter intervals of one drain, each device's in time order (a later
  /// drain continues where this one ended); `values` are valid for the call only.
  virtual void gpu_metric_intervals(const gpu_metric_interval* /*intervals*/, std::size_t /*count*/) {}
  /// The processes of the run know each other now (MPI_Init returned, see
  /// runtime.hpp): a backend that writes one output for all processes agrees on
  /// it here, collectively. Called once, on the thread that initialised the
  /// parallel runtime; `group` stays valid until the final flush returns.
  virtual void join_process_group(process_group& /*group*/) {}
  /// A communicator, before the first communication event naming it.
  virtual void communicator(const communicator_info& /*communicator*/) {}
  /// Communication events of one drain, each thread's in its order.
  virtual void communication(const communication_event* /*events*/, std::size_t /*count*/) {}
};

/// Creates a backend; on failure returns nullptr and sets `error` to one line.
using backend_factory = std::unique_ptr<backend> (*)(const backend_context& context,
                                                     std::string& error);

/// Makes a backend selectable by name. Returns true (for static initialisers).
FERRET_EXPORT bool register_backend(std::string_view name, std::string_view description,
                      backend_factory factory);

}  // namespace ferret::runtime

/// Registers `factory` under `name` when the backend's library is loaded.
#define FERRET_REGISTER_BACKEND(name, description, factory)                          \
  [[maybe_unused]] static const bool FERRET_CONCAT(ferret_backend_registered_, __LINE__) = \
      ::ferret::runtime::register_backend(name, description, factory)
