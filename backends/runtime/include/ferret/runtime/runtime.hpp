// ferret/runtime/runtime.hpp — services the runtime offers to collectors and tools.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferret/runtime/backend.hpp"

namespace ferret::runtime {

/// The innermost live data object containing `address` (thread-safe), for
/// attributing transfers to the arrays they move.
FERRET_EXPORT std::optional<data_object_info> find_data_object(const void* address);

/// What collectors' API callbacks need of a data object: its id and memory.
struct data_object_ref {
  std::uint64_t id = 0;  // 0: no data object there
  memory_kind memory = memory_kind::host;
};
/// The innermost live data object containing `address` (id 0 if none).
/// Allocates nothing: for collectors' API callbacks.
FERRET_EXPORT data_object_ref find_data_object_ref(const void* address) noexcept;

/// Backends that FERRET_BACKEND may name: registered ones and the
/// libferret_<name>.so libraries installed beside the runtime.
FERRET_EXPORT std::vector<std::string> available_backends();

/// True when a session is recording into at least one backend: collectors
/// subscribe to vendor interfaces only then.
FERRET_EXPORT bool session_active() noexcept;

/// FERRET_VERBOSE (0, 1 or 2).
FERRET_EXPORT int verbosity() noexcept;

/// Writes one line on stderr, prefixed "ferret: ", in a single write.
FERRET_EXPORT void print_message(std::string_view line) noexcept;

/// Registers a device allocation made by the program through a vendor API as
/// an anonymous data object. `correlation` is the id the allocating call wrote
/// with detail::kind_correlation: the runtime names the object after that
/// call's calling context ("cudaMalloc@solve/setup"). Returns the object id,
/// 0 if refused (see register_data_object).
FERRET_EXPORT std::uint64_t register_allocation(std::string_view api, std::uint64_t correlation,
                                                const void* address, std::size_t bytes,
                                                memory_kind memory, int device) noexcept;
/// Ends the allocation's object (no-op for addresses that start none).
FERRET_EXPORT void unregister_allocation(const void* address) noexcept;

/// Instruction samples of one function on one device from one collection
/// interval, and the launches they are shared among: the runtime gives each
/// launch's calling context the share `weight / sum of weights` of every
/// instruction's samples (a collector that knows the launch exactly gives one).
struct gpu_sample_batch {
  struct instruction {
    std::uint64_t pc_offset;
    const char* file;  // nullptr without line information; lives as long as the session
    std::uint32_t line;
    const gpu_stall_reason* reason;  // lives as long as the session
    std::uint32_t samples;
  };
  struct share {
    std::uint64_t correlation;  // the launching call's, as in gpu_activity::launch
    double weight;              // e.g. the launch's time in the interval
  };
  std::uint32_t device = 0;
  const char* function = nullptr;  // mangled; lives as long as the session
  std::vector<instruction> instructions;
  std::vector<share> launches;  // empty: no launch known (the samples go to the root)
};

/// The device-initiated traffic of one kernel launch, counted on the device
/// per instruction and memory reached (exact: a collector that counts knows
/// its launch). The runtime gives each entry the launch's calling context and
/// resolves its object.
struct gpu_remote_access_batch {
  struct access {
    std::uint64_t pc_offset;
    const char* file;  // nullptr without line information; lives as long as the session
    std::uint32_t line;
    std::int32_t target_device;  // host_memory_device for host memory
    memory_access kind;
    std::uint64_t object_id;  // 0: in no data object ferret knows
    std::uint64_t accesses;
    std::uint64_t bytes;
  };
  std::uint64_t correlation = 0;  // the launching call's, as in gpu_activity::launch
  std::uint32_t device = 0;
  const char* function = nullptr;  // mangled; lives as long as the session
  std::vector<access> accesses;
};

/// Sampled hardware counters of one device since the last call: `values`
/// holds metric_count values per interval, interval after interval.
struct gpu_metric_batch {
  std::uint32_t device = 0;
  struct interval {
    std::uint64_t begin_ns;  // CLOCK_MONOTONIC_RAW, as gpu_activity's times
    std::uint64_t end_ns;
  };
  std::vector<interval> intervals;
  std::vector<double> values;  // intervals.size() × the device's metric count
};

/// A source of activity that happens outside the program's threads (a GPU).
/// The runtime calls it on the draining thread at the start of every drain,
/// before it drains the threads' buffers, so that the launch of every
/// operation a collector hands over has been drained when the runtime
/// correlates it.
class collector {
 public:
  virtual ~collector() = default;
  /// Appends the operations completed since the last call, with start_ns and
  /// end_ns on CLOCK_MONOTONIC_RAW (the runtime makes them relative to the
  /// session's start). `final`: the last call of the session (at exit).
  virtual void collect(std::vector<gpu_activity>& activities,
                       std::vector<gpu_device_info>& new_devices, bool final) = 0;
  /// Appends the communicators created and the communication events recorded
  /// since the last call, each event's time_ns holding a clock_reading() (the
  /// runtime converts it); parallel layers only. Called after the runtime has
  /// taken the point up to which it reads the threads' records in this drain
  /// (so an event recorded inside a call whose region ends before that point
  /// is among them); the backends get them before those records.
  virtual void collect_communication(std::vector<communicator_info>& /*new_communicators*/,
                                     std::vector<communication_event>& /*events*/,
                                     bool /*final*/) {}
  /// Appends the instruction samples taken since the last call (after
  /// collect() of the same drain); collectors that sample instructions only.
  virtual void collect_samples(std::vector<gpu_sample_batch>& /*batches*/, bool /*final*/) {}
  /// Appends the device-initiated traffic of the launches completed since the
  /// last call (after collect() of the same drain, which handed over their
  /// kernels); collectors that count peer accesses only.
  virtual void collect_remote_accesses(std::vector<gpu_remote_access_batch>& /*batches*/,
                                       bool /*final*/) {}
  /// Appends the sets of counters sampled on devices that started sampling
  /// since the last call, and the intervals sampled since then (after
  /// collect() of the same drain); collectors that sample counters only.
  virtual void collect_metric_intervals(std::vector<gpu_metric_set>& /*new_sets*/,
                                        std::vector<gpu_metric_batch>& /*batches*/,
                                        bool /*final*/) {}
  /// Adds the collector's counts (records, losses) to the output's metadata.
  virtual void add_metadata(metadata_list& metadata) const = 0;
  /// In a fork() child: stop without touching the parent's state.
  virtual void abandon() noexcept = 0;
};

/// CLOCK_MONOTONIC_RAW as the session's start (session_info) is given: for
/// collectors that stamp events themselves. FERRET_TEST_CLOCK_OFFSET_NS (tests
/// only) shifts both, as if this process's host clock were off by that much.
FERRET_EXPORT std::int64_t monotonic_raw_ns() noexcept;

/// A reading of the clock that stamps the threads' events (0 without a
/// session): events stamped with it order exactly with the regions around them.
FERRET_EXPORT std::uint64_t clock_reading() noexcept;

/// Appends one event (a region's begin or end, a mark) to the calling thread's
/// buffer with `time`, a clock_reading() taken earlier, for a collector that
/// learns when something happened only later (OMPT's ends of a worker's join
/// barrier). `slot` is the collector's own thread slot (&detail::t_buffer);
/// `time` must not be earlier than the thread's last event.
FERRET_EXPORT void write_event_at(detail::thread_buffer** slot, std::uint64_t word, std::uint64_t time) noexcept;

/// For the final drain (call it from collect() with `final`): the regions
/// thread `tid` still has open at exit ended at `time` (a clock_reading()),
/// not at exit, and are not counted as unfinished: a collector that knows when
/// the thread went idle says so (OMPT: a worker parked in the join barrier of
/// its last parallel region, whose end libomp reports only at its shutdown).
FERRET_EXPORT void set_thread_idle_since(std::uint64_t tid, std::uint64_t time) noexcept;

/// Adds a collector to the current session (it must outlive the process;
/// collectors are never removed). Returns false without a session.
FERRET_EXPORT bool register_collector(collector* source);

// ---------------------------------------------------------------------------
// Parallel runs: the processes of one run (MPI ranks) as a group.
//
// A parallel layer (backends/collectors/mpi, libferret_mpi.so) implements process_group
// over its runtime, so that the runtime and the backends need no MPI:
//   1. when its library is loaded (before the session starts), it calls
//      expect_process_group(): backends that write one output for all
//      processes then hold what they get until the group arrives;
//   2. when the parallel runtime is up (MPI_Init returned), it calls
//      join_process_group(): the runtime adds "<paradigm>-rank" and
//      "<paradigm>-size" to the run metadata and hands the group to every
//      backend (backend::join_process_group);
//   3. before the parallel runtime shuts down (in MPI_Finalize, before
//      PMPI_Finalize), it calls end_session(): final drain, the backends'
//      final flush (collective for those in the group), exit report. Events
//      after that are not recorded.

/// The processes of one run. Every collective must be called by all processes
/// of the group in the same order; each returns false when it failed or when
/// collectives_available() is false (nothing is sent then).
class process_group {
 public:
  virtual ~process_group() = default;
  /// Lower-case name of the parallel runtime ("mpi"), for metadata keys.
  virtual std::string_view paradigm() const noexcept = 0;
  virtual std::uint32_t rank() const noexcept = 0;
  virtual std::uint32_t size() const noexcept = 0;
  /// True when every process is known to call the same collectives now: inside
  /// join_process_group and end_session, on the thread that called them. False
  /// e.g. at an exit without MPI_Finalize, where a collective could hang.
  virtual bool collectives_available() const noexcept = 0;
  virtual bool barrier() = 0;
  virtual bool broadcast(void* data, std::size_t bytes, std::uint32_t root) = 0;
  /// `bytes` from every process; at `root`, `received` gets size() * bytes in rank order.
  virtual bool gather(const void* data, std::size_t bytes, void* received, std::uint32_t root) = 0;
  /// At `root`, rank r's `counts[r]` bytes land in `received` after those of ranks < r;
  /// `counts` and `received` are read at the root only.
  virtual bool gatherv(const void* data, std::size_t bytes, void* received,
                       const std::size_t* counts, std::uint32_t root) = 0;
  /// The root's `data` holds size() * bytes; every process receives its `bytes`.
  virtual bool scatter(const void* data, void* received, std::size_t bytes, std::uint32_t root) = 0;
  /// The root sends `counts[r]` bytes to rank r (consecutive in `data`, read at the root
  /// only); every process receives its `bytes` (= counts[rank]).
  virtual bool scatterv(const void* data, const std::size_t* counts, void* received,
                        std::size_t bytes, std::uint32_t root) = 0;
};

/// Announces that a process group will join (see above). Call it before the
/// session starts (from the parallel layer's static initialiser).
FERRET_EXPORT void expect_process_group() noexcept;
/// True after expect_process_group(): for backend factories.
FERRET_EXPORT bool process_group_expected() noexcept;
/// Hands `group` to the session's backends and records rank and size in the
/// run metadata. `group` must stay valid until end_session() returns.
FERRET_EXPORT void join_process_group(process_group& group) noexcept;
/// Ends the session now (as at exit): final drain and flush, exit report.
FERRET_EXPORT void end_session() noexcept;

}  // namespace ferret::runtime
