// backends/writers/profile — the profile of a run: everything the summary
// (text on stderr) and the report (one HTML file) show, aggregated once, so
// that their numbers cannot disagree.
//
//   calling-context tree   host regions and GPU API calls of all threads,
//                          merged by name: calls, inclusive and exclusive
//                          host time, and the GPU work launched in each
//                          context (HPCToolkit's GKER, GXCOPY, GMSET, GMEM,
//                          GSYNC)
//   kernels                per device and kernel
//   copies, memsets        per device and direction
//   traffic matrices       bytes and operations from one end (host, GPU n)
//                          to another; "copies" today, more kinds may follow
//   data objects           lifetime, bytes in and out per direction and
//                          device, which contexts moved them, and which parts
//                          of their address range copies and memsets touched
//   memory                 allocations per device and memory kind; live
//                          bytes over time per device
//   streams                busy time over time per device and stream
//   counters, marks        per name: samples with min, mean, max and the
//                          last value; marks counted
//   losses, API calls the collectors counted without recording
//   GPU instruction samples (PC sampling): per calling context, kernel and
//                          GPU source line (an instruction where the kernel
//                          has no line information), by stall class
//                          (HPCToolkit's GINST:STL_*) and by the
//                          collector's own reason; per kernel the samples of
//                          its launches and what their duration allowed
//   device-initiated traffic (FERRET_CUDA_PEER_ACCESSES): kernels' own loads,
//                          stores and atomics that reached another device's
//                          memory or the host's, per calling context,
//                          kernel, GPU source line (an instruction without
//                          line information), data object, device pair and
//                          access; a second traffic matrix; per data object
//                          by device pair
//   sampled counters (FERRET_CUDA_METRICS_SAMPLING): per device and counter
//                          the total, mean and peak; NVLink and PCIe bytes
//                          attributed to the kernels that ran then, exact or
//                          shared, per kernel (link_attribution.hpp)
//
// Memory grows with distinct keys (contexts, kernels, objects, streams),
// never with the number of events; time series have a fixed number of
// buckets whose width doubles as the run grows.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ferret/runtime/backend.hpp"
#include "link_attribution.hpp"

namespace ferret::profile {

using runtime::copy_kind;
using runtime::memory_kind;

/// copy_kind's values, unknown (0) to peer_to_peer (5), index per-kind arrays.
inline constexpr std::size_t copy_kinds = 6;
/// The order in which directions are listed.
inline constexpr std::array<copy_kind, copy_kinds> listed_copy_kinds = {
    copy_kind::host_to_device, copy_kind::device_to_host, copy_kind::device_to_device,
    copy_kind::host_to_host,   copy_kind::peer_to_peer,   copy_kind::unknown};
/// A value from a newer collector counts as unknown.
std::size_t index_of(copy_kind kind) noexcept;

/// The host in device-indexed tables (traffic, object flows).
inline constexpr std::int32_t host_end = -1;

/// HPCToolkit's GPU metrics for the operations of one calling context.
struct gpu_metrics {
  std::int64_t kernel_ns = 0;  // GKER
  std::uint64_t kernels = 0;
  std::int64_t copy_ns = 0;  // GXCOPY
  std::uint64_t copies = 0;
  std::uint64_t copy_bytes = 0;
  std::int64_t memset_ns = 0;  // GMSET
  std::uint64_t memsets = 0;
  std::uint64_t memset_bytes = 0;
  std::uint64_t allocations = 0;  // GMEM
  std::uint64_t allocated_bytes = 0;
  std::int64_t sync_ns = 0;  // GSYNC
  std::uint64_t syncs = 0;

  void add(const gpu_metrics& other) noexcept;
  bool empty() const noexcept;
};

/// Bytes and operations of one kind of traffic.
struct volume {
  std::uint64_t bytes = 0;
  std::uint64_t operations = 0;
  void add(std::uint64_t more_bytes) noexcept {
    bytes += more_bytes;
    ++operations;
  }
};

/// A node of the calling-context tree. Nodes are merged by (domain, name)
/// under their parent, over all threads; node 0 is the root (no name).
struct context {
  std::uint32_t parent = 0;  // the root is its own parent
  std::uint32_t depth = 0;
  std::string name;
  std::string domain;  // "" for the default domain; "cuda", "level_zero" for API calls
  std::string function, file;  // of the first site seen with a location
  std::uint32_t line = 0;
  bool api_call = false;  // a GPU API call's region (see is_api_domain)
  bool synthetic = false;  // stands for GPU work whose launch was not seen
  std::vector<std::uint32_t> children;
  // Host time, summed over the threads and the instances at this path.
  std::uint64_t calls = 0;
  std::int64_t inclusive_ns = 0;
  std::int64_t children_ns = 0;  // inclusive time of the children's instances
  gpu_metrics gpu;               // launched with this node innermost
  std::int64_t exclusive_ns() const noexcept { return inclusive_ns - children_ns; }
};

/// True for the domains in which collectors record API calls as regions.
bool is_api_domain(std::string_view domain) noexcept;

/// Instruction samples (GINST) by why the warp did not issue: per class and
/// per the collector's reason (an index into profile_model::stall_reasons()).
struct stall_samples {
  double samples = 0;  // GINST
  std::array<double, runtime::gpu_stall_classes> by_stall{};
  std::vector<std::pair<std::uint32_t, double>> by_reason;  // in order of first sample
  void add(std::uint32_t reason, runtime::gpu_stall stall, double more);
  void merge(const stall_samples& other);
  double of(runtime::gpu_stall stall) const noexcept {
    return by_stall[static_cast<std::size_t>(stall)];
  }
  /// GINST:STL_ANY: every sample of a warp that did not issue.
  double stalled() const noexcept { return samples - of(runtime::gpu_stall::none); }
};

/// A collector's stall reason ("long_scoreboard") and its class.
struct stall_reason {
  std::string name;
  runtime::gpu_stall stall;
};

/// Instruction samples at one GPU source line of one kernel, launched from
/// one calling context; at one instruction where the kernel has no line
/// information (file empty, line 0).
struct gpu_line {
  std::uint32_t context = 0;  // the launches' node; 0 when merged over contexts
  std::string function;       // mangled
  std::string file;           // "" without line information
  std::uint32_t line = 0;
  std::uint64_t pc_offset = 0;  // the instruction, without line information; else 0
  stall_samples samples;
  bool has_line() const noexcept { return !file.empty(); }
};

struct kernel_totals {
  std::string mangled_name;  // "" when the collector had none
  std::uint32_t device = 0;
  std::uint64_t calls = 0;
  std::int64_t total_ns = 0;
  std::int64_t min_ns = 0, max_ns = 0;
  // Occupancy in millionths, summed over the launches whose occupancy is
  // known: integers, so that every renderer rounds the mean the same way.
  std::uint64_t occupancy_ppm_sum = 0;
  std::uint64_t occupancy_launches = 0;
  std::uint32_t registers = 0;               // the most any launch used
  std::uint32_t shared_memory_per_block = 0; // static + dynamic, the most any launch used
  // Instruction sampling: the launches' samples (GINST), by class, and the
  // samples their durations allowed (GSAMP:EXP); zero without sampling.
  double samples = 0;
  std::array<double, runtime::gpu_stall_classes> by_stall{};
  double expected_samples = 0;
  // Sampled link bytes attributed to its launches (link_attribution.hpp):
  // from intervals in which a launch ran alone, and its part of shared ones.
  kernel_link_bytes link;
  std::uint64_t link_launches = 0;  // launches that overlapped a sampled interval
  void merge(const kernel_totals& other) noexcept;
};

/// One sampled counter of a device over the run (FERRET_CUDA_METRICS_SAMPLING).
struct sampled_metric_totals {
  std::string label, unit;
  bool accumulates = false;
  std::uint64_t intervals = 0;
  std::int64_t sampled_ns = 0;  // the intervals' lengths summed
  double sum = 0;               // accumulating: the count; a level: value × ns
  double peak = 0;              // accumulating: the highest rate (per second); a level: its highest
  void add(double value, std::int64_t ns) noexcept;
  /// Accumulating: the rate per second over the sampled time; a level: its time-weighted mean.
  double mean() const noexcept;
};

struct transfer_totals {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  std::int64_t ns = 0;
  void add(std::uint64_t more_bytes, std::int64_t more_ns) noexcept {
    ++count;
    bytes += more_bytes;
    ns += more_ns;
  }
  void merge(const transfer_totals& other) noexcept {
    count += other.count;
    bytes += other.bytes;
    ns += other.ns;
  }
};

/// Traffic between the ends of a run (host_end, GPU ids).
struct traffic_matrix {
  std::string name;  // "copies", "device-initiated"
  std::map<std::pair<std::int32_t, std::int32_t>, volume> cells;  // (from, to)
};

/// Device-initiated bytes and accesses, by what the access did
/// (runtime::memory_access). Loaded bytes flow from the memory's device to
/// the kernel's, stored ones (stores and atomics) the other way.
struct remote_volume {
  static constexpr std::size_t access_kinds = 3;  // load, store, atomic
  std::array<std::uint64_t, access_kinds> bytes{};
  std::array<std::uint64_t, access_kinds> accesses{};
  void add(runtime::memory_access access, std::uint64_t more_bytes, std::uint64_t more_accesses) noexcept;
  void merge(const remote_volume& other) noexcept;
  std::uint64_t loaded() const noexcept { return bytes[0]; }
  std::uint64_t stored() const noexcept { return bytes[1] + bytes[2]; }
  std::uint64_t total_bytes() const noexcept { return loaded() + stored(); }
  std::uint64_t total_accesses() const noexcept { return accesses[0] + accesses[1] + accesses[2]; }
};

/// Device-initiated traffic of one kernel's instructions at one GPU source
/// line (at one instruction where the kernel has no line information: file
/// empty, line 0), launched from one calling context, to one data object in
/// the memory of one other device (or the host's).
struct remote_line {
  std::uint32_t context = 0;  // the launches' node; 0 when merged over contexts
  std::string function;       // mangled
  std::string file;           // "" without line information
  std::uint32_t line = 0;
  std::uint64_t pc_offset = 0;  // the instruction, without line information; else 0
  std::uint64_t object_id = 0;  // the first object of that name; 0: in none ferret knows
  std::string object;           // its name; "" when none (rows are by name: see remote_line_of_)
  std::uint32_t device = 0;     // where the kernel ran
  std::int32_t target = -1;     // whose memory it reached: host_end for the host's
  remote_volume volume;
  bool has_line() const noexcept { return !file.empty(); }
};

/// The matrices of profile_model::traffic(), by index.
inline constexpr std::size_t copies_matrix = 0;
inline constexpr std::size_t device_initiated_matrix = 1;

/// A fixed number of buckets over the run's time; the bucket width doubles
/// (neighbours merge) whenever a time falls past the last bucket.
inline constexpr std::size_t time_buckets = 256;
inline constexpr std::int64_t first_bucket_ns = 1'000'000;  // 1 ms

/// How a data object's operations reached it.
enum class flow_direction : std::uint8_t { in, out, within, memset };

struct flow_key {
  flow_direction direction;
  copy_kind kind;  // memsets: unknown
  std::int32_t from, to;  // ends of the copy (host_end or a GPU); memsets: the device twice
  bool operator<(const flow_key& other) const noexcept {
    return std::tie(direction, kind, from, to) <
           std::tie(other.direction, other.kind, other.from, other.to);
  }
};

/// The object's address range in `heat_bins` equal parts: bytes copies and
/// memsets touched in each part.
inline constexpr std::size_t heat_bins = 64;

struct data_object_totals {
  std::uint64_t id = 0;
  std::string name;
  bool known = false;      // registration seen (else only the id is known)
  bool automatic = false;  // an allocation the runtime named (cudaMalloc@solve/setup)
  std::uintptr_t address = 0;
  std::uint64_t bytes = 0;
  memory_kind memory = memory_kind::host;
  std::int32_t device = host_end;
  std::optional<std::int64_t> registered_ns, unregistered_ns;
  std::map<flow_key, volume> flows;
  std::array<std::uint64_t, copy_kinds> copied{};  // by kind; copies within the object once
  volume memsets;
  std::uint64_t operations = 0;
  std::vector<std::uint64_t> heat;  // heat_bins entries once touched at a known address
  std::uint64_t bytes_not_placed = 0;  // no address known, or past the object's end
  std::map<std::uint32_t, volume> contexts;  // calling context -> what it moved here
  // Kernels' loads and stores that reached it from another device, by
  // (the kernel's device, the object's memory's device).
  std::map<std::pair<std::uint32_t, std::int32_t>, remote_volume> device_initiated;

  std::uint64_t moved() const noexcept;
};

/// The order in which objects are shown: most bytes moved first, then the
/// largest, then the first registered.
bool shown_before(const data_object_totals& a, const data_object_totals& b) noexcept;

/// Released data objects the model keeps at least, the first by shown_before
/// (the report lists at most this many objects); the others are only counted,
/// so that memory follows the live objects, not how many came and went.
inline constexpr std::size_t released_objects_kept = 5'000;

struct memory_totals {
  std::uint64_t allocations = 0;
  std::uint64_t bytes_allocated = 0;
  std::uint64_t releases = 0;
  std::uint64_t live = 0;
  std::uint64_t peak = 0;
};

/// Live bytes of a device over time: per bucket the highest value and the
/// value at its end (no value: no change in the bucket).
struct memory_series {
  std::array<std::uint64_t, time_buckets> peak{};
  std::array<std::optional<std::uint64_t>, time_buckets> last{};
  std::uint64_t live = 0;
};

/// One stream's work over time: busy nanoseconds per bucket.
struct stream_totals {
  std::uint64_t operations = 0;
  std::int64_t busy_ns = 0;
  std::array<std::int64_t, time_buckets> busy{};
};

struct device_totals {
  std::uint32_t id = 0;
  std::optional<runtime::gpu_device_info> info;
  std::array<transfer_totals, copy_kinds> copies{};  // by kind, copies the device ran
  transfer_totals memsets;
  memory_series memory;
  std::map<std::uint32_t, stream_totals> streams;
  std::map<std::string, kernel_totals> kernels;  // by mangled name
  std::vector<sampled_metric_totals> sampled;    // in the order of the device's gpu_metric_set
  // Sampled link bytes by how they were attributed (link_share).
  std::array<link_bytes, 3> link_by_share{};
};

/// The samples of one counter (by domain and name), over all threads.
struct counter_totals {
  std::string name, domain;
  std::uint64_t samples = 0;
  double min = 0, max = 0, sum = 0;
  double last = 0;  // the value of the latest sample
  std::int64_t last_ns = 0;
  double mean() const noexcept { return sum / static_cast<double>(samples); }
};

/// The marks (instants) of one name, over all threads.
struct mark_totals {
  std::string name, domain;
  std::uint64_t count = 0;
};

struct unrecorded_api_calls {
  std::string collector;  // "cuda", "level-zero"
  std::string api;
  std::int64_t calls;
};

/// `<collector>-api-unrecorded:<api>` entries of the runtime's metadata.
std::vector<unrecorded_api_calls> find_unrecorded_api_calls(const runtime::metadata_list& metadata);

/// "<count> <key>" for dropped events and for every nonzero runtime count
/// whose key says something was dropped or is without its launch.
std::vector<std::string> find_losses(const runtime::session_status& status);

class profile_model {
 public:
  explicit profile_model(const runtime::session_info& session);
  // The link attribution calls back into the model it belongs to.
  profile_model(const profile_model&) = delete;
  profile_model& operator=(const profile_model&) = delete;

  // --- fed by a backend, in the order the runtime calls it ---------------------
  void add_records(const runtime::thread_info& thread, const runtime::record* records,
                   std::size_t count);
  void add_data_object(const runtime::data_object_event& event);
  void add_device(const runtime::gpu_device_info& device);
  void add_activities(const runtime::gpu_activity* activities, std::size_t count);
  /// Instruction samples of one drain; a later drain may add to the same keys.
  void add_instruction_samples(const runtime::gpu_instruction_sample* samples, std::size_t count);
  /// Device-initiated traffic of one drain; a later drain may add to the same keys.
  void add_remote_accesses(const runtime::gpu_remote_access* accesses, std::size_t count);
  /// Sampled hardware counters (FERRET_CUDA_METRICS_SAMPLING) and their intervals.
  void add_metric_set(const runtime::gpu_metric_set& set);
  void add_metric_intervals(const runtime::gpu_metric_interval* intervals, std::size_t count);
  /// After every drain: settles the link attribution that drain allows.
  void end_drain();
  /// MPI communication: bytes per call, and this rank's row of the rank x rank
  /// message matrix (point to point, by MPI_COMM_WORLD rank).
  void add_communication(const runtime::communication_event* events, std::size_t count);
  /// The run's rank and size, when a process group joined.
  void set_process(std::uint32_t rank, std::uint32_t size) noexcept;
  /// Adds a cell of another rank's row of the message matrix (gathered at the end).
  void add_message(std::uint32_t from, std::uint32_t to, const volume& messages);
  /// At the final flush: closes regions still open at the latest time seen,
  /// and notes the losses and counts of the session's last status.
  void finish(const runtime::session_status& status, std::int64_t end_ns);

  // --- read by the renderers ----------------------------------------------------
  const runtime::session_info& session() const noexcept { return session_; }
  std::int64_t end_ns() const noexcept { return end_ns_; }  // run time at finish
  std::uint64_t gpu_operations() const noexcept { return gpu_operations_; }
  const std::vector<context>& contexts() const noexcept { return contexts_; }
  /// The regions of a node's path from the root, API calls left out, joined
  /// by '/'; "" for the root.
  std::string region_path(std::uint32_t node) const;
  /// Inclusive GPU metrics of every node (its own and its descendants').
  std::vector<gpu_metrics> inclusive_gpu() const;

  /// GPU work per calling context as the summary lists it: one row per
  /// region path, with API calls folded into the region that made them;
  /// the path is "(no region)" for the root, "(launch not seen)" for work
  /// whose launch was not seen. Rows without GPU work are left out.
  struct path_row {
    std::string path;
    gpu_metrics gpu;
    std::vector<std::uint32_t> nodes;  // contexts folded into the row
  };
  std::vector<path_row> gpu_by_region_path() const;

  /// Host regions by name (domain and name): calls over all paths, and
  /// inclusive time counted once where a region is nested in itself.
  struct region_row {
    std::string name, domain;
    std::uint64_t calls = 0;
    std::int64_t inclusive_ns = 0;
  };
  std::vector<region_row> regions_by_name() const;

  const std::map<std::uint32_t, device_totals>& devices() const noexcept { return devices_; }
  /// Kernels of all devices merged by name.
  std::map<std::string, kernel_totals> kernels() const;
  /// Copies of all devices by kind.
  std::array<transfer_totals, copy_kinds> copies() const;
  const std::vector<traffic_matrix>& traffic() const noexcept { return traffic_; }
  /// MPI: per call, what it sent and received (point to point: messages;
  /// collectives: this rank's bytes).
  struct mpi_call_totals {
    volume sent, received;
  };
  const std::map<std::string, mpi_call_totals>& mpi_calls() const noexcept { return mpi_calls_; }
  /// (from, to) MPI_COMM_WORLD ranks -> point-to-point messages; this rank's
  /// row, or every rank's on rank 0 after the gather.
  const std::map<std::pair<std::uint32_t, std::uint32_t>, volume>& messages() const noexcept {
    return messages_;
  }
  std::optional<std::uint32_t> rank() const noexcept { return rank_; }
  std::uint32_t size() const noexcept { return size_; }
  /// The ends of the traffic: the host, then every GPU seen, in order.
  std::vector<std::int32_t> ends() const;
  /// Every live data object and the released ones kept (released_objects_kept).
  const std::unordered_map<std::uint64_t, data_object_totals>& objects() const noexcept {
    return objects_;
  }
  /// Released objects left out of objects().
  std::uint64_t objects_not_kept() const noexcept { return objects_not_kept_; }
  const std::map<std::pair<std::uint32_t, memory_kind>, memory_totals>& memory() const noexcept {
    return memory_;
  }
  /// What each calling context moved per data object and per pair of ends.
  const std::map<std::pair<std::uint32_t, std::uint64_t>, volume>& context_objects() const noexcept {
    return context_objects_;
  }
  const std::map<std::tuple<std::uint32_t, std::int32_t, std::int32_t>, volume>& context_traffic()
      const noexcept {
    return context_traffic_;
  }
  std::int64_t bucket_ns() const noexcept { return bucket_ns_; }
  /// Counters and marks by (domain, name), in name order.
  std::vector<counter_totals> counters() const;
  std::vector<mark_totals> marks() const;

  const std::vector<std::string>& losses() const noexcept { return losses_; }
  const std::vector<unrecorded_api_calls>& unrecorded_api() const noexcept { return unrecorded_; }
  /// Instruction samples, by (context, kernel, line or instruction), in order
  /// of first sample; empty without sampling.
  const std::vector<gpu_line>& gpu_lines() const noexcept { return gpu_lines_; }
  /// The same merged over calling contexts (context 0), most samples first.
  std::vector<gpu_line> gpu_lines_over_contexts() const;
  /// The collectors' stall reasons, in order of first sample.
  const std::vector<stall_reason>& stall_reasons() const noexcept { return stall_reasons_; }
  /// Every instruction sample attributed (to a context or to the launch not seen).
  double instruction_samples() const noexcept { return instruction_samples_; }
  /// Instruction samples per region path (as gpu_by_region_path folds API
  /// calls) and kernel, most samples first.
  struct stall_row {
    std::string path;
    std::string function;  // mangled
    stall_samples samples;
    std::vector<std::uint32_t> nodes;  // contexts folded into the row
  };
  std::vector<stall_row> gpu_stalls_by_region_path() const;
  /// The sampling facts: the collector's counts from the runtime's metadata
  /// (after finish) and the kernels' expected samples.
  struct sampling_totals {
    std::int64_t period_cycles = 0;  // GSAMP:PER; 0 when not said
    std::int64_t total = 0;          // GSAMP:TOT, every sample the collector counted
    std::int64_t dropped = 0;        // GSAMP:DRP
    std::int64_t non_user = 0;       // outside the program's kernels
    double attributed = 0;           // instruction_samples()
    double kernel_samples = 0;       // the kernels' GINST
    double expected = 0;             // the kernels' GSAMP:EXP
  };
  sampling_totals sampling() const;
  /// Device-initiated traffic by (context, kernel, line or instruction,
  /// object, device pair), in order of first access; empty without.
  const std::vector<remote_line>& remote_lines() const noexcept { return remote_lines_; }
  /// The same merged over calling contexts (context 0), most bytes first.
  std::vector<remote_line> remote_lines_over_contexts() const;
  /// Device-initiated traffic per region path (as gpu_by_region_path folds
  /// API calls) and kernel, most bytes first.
  struct remote_row {
    std::string path;
    std::string function;  // mangled
    remote_volume volume;
    std::vector<std::uint32_t> nodes;  // contexts folded into the row
  };
  std::vector<remote_row> remote_by_region_path() const;
  /// Every device-initiated byte seen (rows and the matrix agree).
  const remote_volume& remote_total() const noexcept { return remote_total_; }
  /// True when a device announced sampled counters.
  bool has_sampled_counters() const noexcept;
  /// Kernels that arrived after the link bytes of their time were attributed.
  std::uint64_t link_late_kernels() const noexcept { return link_attribution_.late_kernels(); }
  /// Kernels and intervals whose attribution was settled early at the window's limit.
  std::uint64_t link_settled_at_limit() const noexcept { return link_attribution_.settled_at_limit(); }
  const runtime::metadata_list& user_metadata() const noexcept { return user_metadata_; }
  const runtime::metadata_list& runtime_metadata() const noexcept { return runtime_metadata_; }

 private:
  template <typename Row, typename Line, typename Merge>
  std::vector<Row> fold_by_region_path(const std::vector<Line>& lines, Merge merge) const;
  struct open_region {
    std::int64_t begin_ns;
    std::uint32_t node;
  };

  std::uint32_t name_index(const runtime::name_info* name);
  std::uint32_t child(std::uint32_t parent, std::uint32_t name, const runtime::name_info* info);
  void close_top(std::vector<open_region>& stack, std::int64_t end_ns);
  void add_sample(std::uint32_t name, std::int64_t time_ns, double value);
  template <typename Totals>
  std::vector<Totals> named_rows(const std::map<std::uint32_t, Totals>& by_name) const;
  std::uint32_t context_of(const runtime::gpu_launch& launch);
  std::uint32_t launch_not_seen();
  std::uint32_t text_index(const char* text);
  std::uint32_t string_index(std::string_view text);
  std::uint32_t node_of(const runtime::context_node* node);
  data_object_totals* object_of(std::uint64_t id, const runtime::data_object_info* info,
                                bool registering = false);
  void keep_released_objects();
  device_totals& device(std::uint32_t id);
  void fit_time(std::int64_t ns);
  std::size_t bucket_of(std::int64_t ns) const noexcept;

  void add_kernel(const runtime::gpu_activity& kernel, std::uint32_t node);
  void add_copy(const runtime::gpu_activity& copy, std::uint32_t node);
  void add_memset(const runtime::gpu_activity& memset, std::uint32_t node);
  void add_allocation(const runtime::gpu_activity& allocation, std::uint32_t node);
  void add_release(const runtime::gpu_activity& release);
  void add_busy(const runtime::gpu_activity& activity);
  void touch(data_object_totals& object, std::uintptr_t address, std::uint64_t bytes);
  void note_memory(std::uint32_t device_id, std::uint64_t before, std::int64_t ns);

  runtime::session_info session_;
  bool finished_ = false;
  std::int64_t latest_ns_ = 0;  // latest host time seen
  std::int64_t end_ns_ = 0;
  std::uint64_t gpu_operations_ = 0;

  std::vector<context> contexts_;
  static constexpr std::uint32_t no_name = ~std::uint32_t{0};
  std::vector<std::uint32_t> node_name_;  // interned name per node; no_name for root, synthetic
  std::vector<std::pair<std::string, std::string>> names_;  // interned (domain, name)
  std::map<std::pair<std::string, std::string>, std::uint32_t> name_of_text_;
  std::vector<std::pair<const runtime::name_info*, std::uint32_t>> name_of_info_;  // by info id
  std::unordered_map<std::uint64_t, std::uint32_t> child_of_;  // (parent << 32 | name) -> node
  std::unordered_map<std::uint64_t, std::vector<open_region>> stacks_;  // by tid
  std::map<std::uint32_t, counter_totals> counters_;  // by interned name
  std::map<std::uint32_t, mark_totals> marks_;        // by interned name
  std::unordered_map<const runtime::context_node*, std::uint32_t> node_of_context_;
  std::optional<std::uint32_t> launch_not_seen_;

  std::map<std::uint32_t, device_totals> devices_;
  // The copies, then the kernels' device-initiated traffic.
  std::vector<traffic_matrix> traffic_{traffic_matrix{"copies", {}},
                                       traffic_matrix{"device-initiated", {}}};
  std::map<std::string, mpi_call_totals> mpi_calls_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, volume> messages_;
  std::optional<std::uint32_t> rank_;
  std::uint32_t size_ = 1;
  std::unordered_map<std::uint64_t, data_object_totals> objects_;
  // Objects of objects_ that are released (or were never seen registered):
  // past twice released_objects_kept, only the first by shown_before stay.
  std::vector<std::uint64_t> released_;
  std::uint64_t objects_not_kept_ = 0;
  std::map<std::pair<std::uint32_t, memory_kind>, memory_totals> memory_;
  struct live_allocation {
    memory_kind memory;
    std::uint64_t bytes;
  };
  std::map<std::pair<std::uint32_t, std::uintptr_t>, live_allocation> live_allocations_;
  std::map<std::pair<std::uint32_t, std::uint64_t>, volume> context_objects_;
  std::map<std::tuple<std::uint32_t, std::int32_t, std::int32_t>, volume> context_traffic_;
  std::int64_t bucket_ns_ = first_bucket_ns;

  // Instruction samples: rows by (context, function, file, line, pc offset),
  // texts interned (the collector's pointers may differ for one text).
  std::vector<gpu_line> gpu_lines_;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t, std::uint64_t>,
           std::size_t>
      gpu_line_of_;
  std::unordered_map<const char*, std::uint32_t> text_of_pointer_;
  std::map<std::string, std::uint32_t, std::less<>> text_of_string_;
  std::unordered_map<const runtime::gpu_stall_reason*, std::uint32_t> reason_of_pointer_;
  std::vector<stall_reason> stall_reasons_;
  double instruction_samples_ = 0;
  std::uint32_t period_cycles_ = 0;  // from the kernels' samples, when the metadata says none

  // Device-initiated traffic: rows by (context, function, file, line, pc
  // offset, object, device, target), texts interned as for the samples.
  // Objects by name, not id: a buffer allocated anew in every step is one
  // row (its automatic name is its call path), so rows grow with the code.
  std::vector<remote_line> remote_lines_;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t, std::uint64_t,
                      std::uint32_t, std::uint32_t, std::int32_t>,
           std::size_t>
      remote_line_of_;
  remote_volume remote_total_;

  // Sampled link bytes, attributed to kernels (kernel_totals::link) through
  // keys that are the kernel_totals' addresses (map nodes do not move).
  class link_sink final : public link_attribution::handler {
   public:
    explicit link_sink(profile_model& model) : model_(model) {}
    void kernel_done(std::uint64_t key, const kernel_link_bytes* bytes) override;
    void interval_done(std::uint32_t device, link_share share, const link_bytes& bytes) override;

   private:
    profile_model& model_;
  };
  link_sink link_sink_{*this};
  link_attribution link_attribution_{link_sink_};

  std::vector<std::string> losses_;
  std::vector<unrecorded_api_calls> unrecorded_;
  runtime::metadata_list user_metadata_, runtime_metadata_;
};

}  // namespace ferret::profile
