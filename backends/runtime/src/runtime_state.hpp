// runtime_state.hpp — the runtime's internal state, shared by its files:
//   session.cpp         start-up, the session (its backends and its memory), the mode flags
//   recording.cpp       the slow path of writing: binding threads, switching chunks
//   names.cpp           interned names, thread names, run metadata
//   data_objects.cpp    named memory ranges
//   drain.cpp           draining the buffers and delivering to the backends
//   process_events.cpp  exit, terminating signals, fork
//   api_table.cpp       the function table annotated code attaches to, the public functions
//
// Memory: one arena of FERRET_BUFFER_SIZE bytes cut into chunks. A thread
// writes into its current chunk without locks (the inline hot path in
// ferret/detail/recorder.hpp); when the chunk is full it takes a free one
// under a per-thread mutex. A drain (background thread, full pool,
// ferret::flush(), exit) reads every thread's published events, hands them to
// the backends and returns each chunk to the pool as soon as it is consumed.
// The background thread drains once half the chunks are taken, so a writer
// hands its full chunks over and goes on; only when no chunk is free does it
// wait, for one chunk, never for a whole drain (the waits are counted). Only
// what still cannot be stored is dropped, and it is counted.
#pragma once

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "clock.hpp"
#include "data_object_map.hpp"
#include "gpu_attribution.hpp"
#include "ferret/runtime/runtime.hpp"
#include "metadata_store.hpp"
#include "output_claim.hpp"
#include "registry.hpp"
#include "settings.hpp"

namespace ferret::runtime::internal {

using detail::event;
using detail::site;
using detail::thread_buffer;

// ---------------------------------------------------------------------------
// Small utilities

// Writing an output must not raise a signal into the program: SIGXFSZ (over a
// file-size limit, ulimit -f) and SIGPIPE (stderr's reader gone) would end it.
// For the life of this object both are blocked on the calling thread, so that
// write() fails with EFBIG or EPIPE instead (an output error, said like any
// other), and one that a write left pending is taken back before the mask is
// restored. The application's own dispositions are untouched. (The drainer
// thread blocks them for good; this is for writes on the application's threads.)
class output_signals_held {
 public:
  output_signals_held() noexcept;
  ~output_signals_held();
  output_signals_held(const output_signals_held&) = delete;
  output_signals_held& operator=(const output_signals_held&) = delete;

 private:
  sigset_t previous_mask_;
  sigset_t pending_before_;
};

inline std::uint64_t current_tid() noexcept { return static_cast<std::uint64_t>(syscall(SYS_gettid)); }

// One line on stderr in a single write, so lines from threads and processes
// do not interleave.
template <class... Args>
void message(fmt::format_string<Args...> format, Args&&... args) noexcept {
  const output_signals_held held;
  try {
    std::string line = "ferret: " + fmt::format(format, std::forward<Args>(args)...) + "\n";
    const char* data = line.data();
    std::size_t left = line.size();
    while (left > 0) {
      const ssize_t written = ::write(STDERR_FILENO, data, left);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) break;
      data += written;
      left -= static_cast<std::size_t>(written);
    }
  } catch (...) {
  }
}

// An empty or blank name would vanish (or break a reader: ParaProf drops the
// rest of a TAU file at an empty name): every backend gets one visible placeholder.
std::string visible_name(std::string name);

bool is_directory(const std::string& path);

// The file name of /proc/self/exe.
std::string executable_name();
/// The file names (no folder) of the shared objects loaded in this process.
std::vector<std::string> loaded_library_files();
/// Whether one of `files` starts with `prefix` ("libcuda.so").
bool library_loaded(const std::vector<std::string>& files, std::string_view prefix);
/// One line naming the vendor runtimes this process loaded without ferret's
/// collector for them (a program linked with ferret, not run under ferret-run);
/// empty when there are none.
std::string missing_collectors();

// ---------------------------------------------------------------------------
// Buffers

struct chunk {
  event* begin = nullptr;
  event* capacity_end = nullptr;
  event* filled = nullptr;  // end of its events once it stopped being current
  // The thread's next chunk (under the thread's mutex): a list that switching
  // chunks extends without allocating, which a signal handler may do.
  chunk* next = nullptr;
  bool pages_touched = false;  // its memory written once (see runtime_state::switch_chunk)
};

// A shared object's thread slot (its t_buffer) bound to a thread's state,
// and what it pointed to first: the object's own unbound buffer, which tells
// whose slot it is when that object is unloaded (the slot then lives in freed
// TLS and must not be written again).
struct bound_slot {
  thread_buffer** slot;
  const void* origin;
};

// Slots of exited threads point here: pos == end sends late events to the
// slow path, which counts them instead of writing into a retired buffer.
extern thread_buffer g_retired_buffer;
// Slots of a fork child's thread point here until it records again.
extern thread_buffer g_rebind_buffer;

struct thread_state : thread_buffer {
  thread_state() : thread_buffer{} {}

  std::uint64_t tid = 0;
  bool is_main = false;
  // Whether the hot path writes events (with its own clock reading). Without
  // (the session's clock is not the hot path's), every event comes to the
  // runtime: pos and end stay nullptr, so the hot path always calls it and a
  // signal handler's event between the hot path's reads of them changes
  // neither, and the position is `cursor`.
  bool hot_path_writes = true;
  std::atomic<event*> cursor{nullptr};
  // Where the thread writes next: published for the drainer.
  std::atomic<event*>& position() noexcept { return hot_path_writes ? pos : cursor; }
  // Owner only.
  event* capacity_end = nullptr;  // end of the current chunk
  std::chrono::steady_clock::time_point starved_until{};

  // Guarded by `mutex` (the owner switching chunks, the drainer reading).
  std::mutex mutex;
  chunk* oldest = nullptr;  // its chunks, oldest first (through chunk::next);
  chunk* newest = nullptr;  // the newest is current unless retired
  std::vector<bound_slot> slots;  // every shared object's slot bound to this state
  std::string name;
  bool retired = false;
  std::uint64_t exit_raw = 0;  // clock reading when the thread exited (retired only)
  // A collector's word that the regions the thread has open at exit ended
  // then (a clock reading; 0: not known): runtime::set_thread_idle_since.
  std::atomic<std::uint64_t> idle_since{0};

  // Drainer only: consumed up to here in the oldest chunk (nullptr: its begin),
  // and the calling context after the last drained event (nullptr: the root).
  event* drained = nullptr;
  const context_node* context = nullptr;
  // The interpreted call stack written inside the open API call, for its
  // correlation (see launch_context).
  const detail::call_stack* call_stack = nullptr;
  // The context "(thread <name>)" for work this thread launches outside every
  // region, made for the name `thread_context_name`.
  const context_node* thread_context = nullptr;
  std::string thread_context_name;
  // The open regions are the path of `context`. Begins past max_open_regions
  // are not delivered: `hidden_open` counts those still open, whose ends are
  // not delivered either. Once an end did not end the innermost region,
  // `open_names` counts the open regions per name identity until none is
  // open, so that each such end finds its region, or none, without a walk up
  // the path (a walk per end is quadratic in the depth).
  std::uint64_t hidden_open = 0;
  bool names_counted = false;
  std::unordered_map<const name_info*, std::uint32_t> open_names;
  std::int64_t last_ns = 0;  // time of the newest record delivered
};

// Trivially destructible, so still readable while the thread's TLS
// destructors run.
extern thread_local thread_state* t_state;
extern thread_local bool t_exiting;
extern thread_local bool t_in_drain;
// The thread is starting a session (under init_mutex_): a call back into the
// runtime from what that runs must not wait for the lock.
extern thread_local bool t_starting;
struct starting_scope {
  starting_scope() noexcept { t_starting = true; }
  ~starting_scope() { t_starting = false; }
  starting_scope(const starting_scope&) = delete;
  starting_scope& operator=(const starting_scope&) = delete;
};
// Nonzero while this thread runs the runtime's code (an API call, a drain):
// an annotation that enters then can only come from a signal handler that
// interrupted it (or a backend annotating while it writes), and must not
// take the locks or the allocator the interrupted code may hold. See
// runtime_section.
extern thread_local unsigned t_runtime_busy;
// The drainer thread (it blocks the asynchronous signals for good).
extern thread_local bool t_is_drainer;

// Marks the runtime's code on this thread for its scope (see t_runtime_busy).
struct runtime_section {
  runtime_section() noexcept { ++t_runtime_busy; }
  ~runtime_section() { --t_runtime_busy; }
  runtime_section(const runtime_section&) = delete;
  runtime_section& operator=(const runtime_section&) = delete;
};
// A fork child's slots as the fork left them (pointing to g_rebind_buffer),
// with their origins, for the child's first bind.
extern thread_local std::vector<bound_slot> t_rebound_slots;

struct pending_object_event {
  std::uint64_t raw_time;
  data_object_change change;
  std::uint64_t tid;
  data_object_info object;
  // Allocations the runtime tracks itself: the allocating call, for the name.
  std::uint64_t correlation = 0;
  std::string api{};
};

struct session;
extern thread_local session* t_owner;

// ---------------------------------------------------------------------------
// A session: one process's recording with its backends. Sessions are never
// freed: a thread may still hold a pointer while the process exits, and a
// fork child abandons its parent's without touching its locks.

struct session {
  settings config;
  session_info info;
  host_clock clock;
  std::vector<std::unique_ptr<backend>> backends;

  std::size_t chunk_events = 0;
  std::vector<chunk> chunk_storage;
  std::mutex pool_mutex;
  std::vector<chunk*> free_chunks;
  std::atomic<std::uint64_t> chunks_returned{0};  // progress measure for writers waiting on space
  // With pool_mutex: a chunk came back, or a drain ended (see wait_for_chunk).
  std::condition_variable pool_changed;
  std::uint64_t drains_completed = 0;  // guarded by pool_mutex
  // Application threads that found no free chunk and waited for one.
  std::atomic<std::uint64_t> application_waits{0};
  std::atomic<std::uint64_t> application_wait_ns{0};
  // Application threads that found the data objects' queue full and waited.
  std::atomic<std::uint64_t> object_waits{0};
  std::atomic<std::uint64_t> object_wait_ns{0};

  std::mutex threads_mutex;
  std::vector<thread_state*> threads;

  std::mutex pending_mutex;
  std::vector<pending_object_event> pending_objects;
  // Data objects' lifetime events queued for the next drain: from this many
  // on, the threads that add more wait for the drain (see queue_object_event).
  static constexpr std::size_t pending_objects_limit = 8192;
  void queue_object_event(pending_object_event event);

  std::mutex drain_mutex;
  bool closed = false;  // the final drain is done (guarded by drain_mutex)
  std::thread drainer;
  // Set before the session is published, never changed: false when no thread
  // could be started (the writers then drain themselves, see switch_chunk).
  bool drainer_started = false;
  // The drainer sleeps on this word (a futex: no descriptor, which a program
  // that closes every descriptor would take away); each wake adds one.
  std::atomic<std::uint32_t> wake_word{0};
  std::atomic<bool> wake_pending{false};  // woken and not yet awake: later wakes add nothing
  std::atomic<bool> stopping{false};
  std::atomic<bool> finished{false};

  std::atomic<std::uint64_t> dropped_full{0};
  std::atomic<std::uint64_t> dropped_late{0};
  // Buffered when a terminating signal's wait ran out (FERRET_SIGNAL_WAIT).
  std::atomic<std::uint64_t> dropped_unwritten{0};
  // Annotations that entered the runtime while it was busy on their thread (a
  // signal handler that interrupted it): dropped rather than deadlock.
  std::atomic<std::uint64_t> dropped_reentrant{0};
  // Said by the next drain (a message allocates: not from a writer that may be
  // in a signal handler).
  std::atomic<bool> buffers_were_full{false};
  bool said_full = false;  // drainer only
  // Regions made to nest (drainer only; see record in backend.hpp).
  std::uint64_t dropped_too_deep = 0;  // begins past max_open_regions and their ends
  std::uint64_t unmatched_region_ends = 0;
  std::uint64_t unbalanced_region_ends = 0;
  std::uint64_t unfinished_regions = 0;  // ended at their thread's or the process's exit

  // Drainer only (under drain_mutex).
  std::uint64_t recorded = 0;
  // Said at exit: counter samples that are NaN or infinite (each backend
  // counts its own in its metadata).
  std::uint64_t nonfinite_counter_samples = 0;
  std::unordered_map<const site*, std::unique_ptr<name_info>> names;
  // Names of sites in unloaded shared objects: backends may still hold them,
  // but a new object mapped at the same address must not find them.
  std::vector<std::unique_ptr<name_info>> unloaded_names;
  static constexpr std::size_t name_cache_size = 64;
  std::pair<const site*, const name_info*> name_cache[name_cache_size] = {};
  std::vector<record> scratch;  // one chunk's records
  // Name identity: by name_info::id, the first name with the same text and
  // domain. begin("x") and end("x") in two shared objects are two sites, and
  // two names, of one region.
  std::vector<const name_info*> name_identity;
  struct text_hash {
    std::size_t operator()(const std::pair<std::string_view, std::string_view>& key) const noexcept {
      return std::hash<std::string_view>{}(key.first) * 31 + std::hash<std::string_view>{}(key.second);
    }
  };
  std::unordered_map<std::pair<std::string_view, std::string_view>, const name_info*, text_hash>
      names_by_text;  // (name, domain) → identity; views into the name_info
  const name_info* identity(const name_info* name) const noexcept { return name_identity[name->id]; }
  // What a drain reads of each thread, taken before the MPI events are collected
  // (see drain_locked); the vectors keep their capacity from drain to drain.
  struct thread_snapshot {
    thread_state* state = nullptr;
    std::vector<chunk*> chunks;
    event* published = nullptr;
    bool retired = false;
    std::uint64_t exit_raw = 0;
    std::string name;
  };
  std::vector<thread_snapshot> thread_snapshots;
  // The name of a site from the cache runtime_state::name_of fills, or nullptr.
  // A hit's name is never nullptr (sites are never nullptr).
  const std::pair<const site*, const name_info*>& cached_name(const site* record_site) const noexcept {
    return name_cache[(reinterpret_cast<std::uintptr_t>(record_site) >> 3) % name_cache_size];
  }
  // GPU attribution (see gpu_attribution.hpp).
  std::uint64_t cycle = 0;
  metadata_list final_metadata;  // for the exit report
  // The user's metadata as the backends get it, copied when it changed.
  metadata_list user_metadata;
  std::uint64_t user_metadata_version = 0;
  context_tree contexts;
  launch_table launches;
  object_history objects;
  allocation_names allocations;  // the names of the objects the runtime names itself
  std::vector<gpu_activity> gpu_batch;
  std::vector<gpu_device_info> gpu_devices;
  std::vector<gpu_sample_batch> sample_batches;  // this drain's, from the collectors
  instruction_samples gpu_samples;
  std::vector<gpu_remote_access_batch> remote_batches;  // this drain's, from the collectors
  remote_accesses gpu_remote;
  // Sampled counters (FERRET_CUDA_METRICS_SAMPLING): this drain's, from the
  // collectors; each announced device's set and where its intervals reached.
  std::vector<gpu_metric_set> new_metric_sets;
  std::vector<gpu_metric_batch> metric_batches;
  struct sampled_device {
    std::size_t metric_count;
    std::int64_t last_end_ns;  // session-relative
  };
  std::unordered_map<std::uint32_t, sampled_device> sampled_devices;
  std::vector<gpu_metric_interval> metric_intervals;  // one drain's, handed over
  std::uint64_t gpu_metric_intervals = 0;
  std::uint64_t gpu_metric_intervals_dropped = 0;  // no set, values missing, out of order
  std::vector<communicator_info> new_communicators;
  std::vector<communication_event> communication_batch;
  std::uint64_t gpu_operations = 0;
  std::uint64_t gpu_without_launch = 0;  // a correlation id no drained call carried
  std::uint64_t gpu_without_call = 0;    // no correlation id: the driver's own work

  // Once half the chunks are taken the drainer runs, so the full chunks
  // writers hand over are drained while they go on in free ones.
  bool pool_low() const noexcept { return free_chunks.size() < chunk_storage.size() / 2; }
  chunk* take_chunk() {
    std::lock_guard lock{pool_mutex};
    if (free_chunks.empty()) return nullptr;
    chunk* c = free_chunks.back();
    free_chunks.pop_back();
    if (pool_low()) wake();
    return c;
  }
  chunk* wait_for_chunk();
  void give_back(chunk* c) {
    c->filled = nullptr;
    {
      std::lock_guard lock{pool_mutex};
      free_chunks.push_back(c);
      chunks_returned.fetch_add(1, std::memory_order_relaxed);
    }
    pool_changed.notify_one();
  }
  void drain_completed() {
    {
      std::lock_guard lock{pool_mutex};
      ++drains_completed;
    }
    pool_changed.notify_all();
  }
  // Async-signal-safe (the terminating-signal handler calls it).
  void wake() noexcept {
    if (wake_pending.exchange(true)) return;
    wake_word.fetch_add(1);
    syscall(SYS_futex, &wake_word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  }
  // The drainer: until woken, or for timeout_ms (-1: no limit).
  void sleep_until_woken(int timeout_ms) noexcept;
  bool has_drainer() const noexcept { return drainer_started; }
  std::uint64_t dropped() const noexcept {
    return dropped_full + dropped_late + dropped_unwritten + dropped_reentrant + dropped_too_deep;
  }
};

// ---------------------------------------------------------------------------
// The process-wide runtime: survives fork and outlives every session.

class runtime_state {
 public:
  static runtime_state& instance() {
    // Leaked on purpose: annotations in static destructors may still call in.
    static runtime_state* state = new runtime_state;
    return *state;
  }

  const detail::runtime_api* attach(std::atomic<std::uint8_t>* flag);
  void detach(std::atomic<std::uint8_t>* flag);
  // `time`: a clock_reading() taken earlier, else (nullptr) now.
  void write(thread_buffer** slot, std::uint64_t word, std::uint64_t extra, unsigned slots,
             const std::uint64_t* time = nullptr);
  // An annotation that found the runtime busy on its thread: counted, not written.
  void drop_reentrant() noexcept;
  const site* intern_literal(thread_buffer** slot, const char* literal, const char* domain);
  const site* register_name(std::string_view text, const char* domain);
  void set_thread_name(thread_buffer** slot, std::string_view name);
  void set_metadata(std::string_view key, metadata_value value);
  // `correlation`: the allocating call of an allocation the runtime tracks
  // itself (named after the call's context once the drain knows it).
  std::uint64_t register_object(std::string_view name, const void* address, std::size_t bytes,
                                memory_kind memory, int device, std::uint64_t correlation = 0);
  void announce_removal(std::optional<data_object_info> removed);
  void unregister_object(std::uint64_t id);
  void unregister_object_at(const void* address);
  std::optional<data_object_info> find_object(const void* address);
  data_object_ref find_object_ref(const void* address);
  std::uint64_t clock_reading() noexcept;
  void set_thread_idle_since(std::uint64_t tid, std::uint64_t time);
  std::uint64_t register_allocation(std::string_view api, std::uint64_t correlation,
                                    const void* address, std::size_t bytes, memory_kind memory,
                                    int device);
  bool session_active();
  // Reads the settings and starts the session once, on the first call.
  void ensure_initialized();
  bool add_collector(collector* source);
  void join_process_group(process_group& group);
  const settings& configuration() const noexcept { return config_; }
  // What this process asked of the runtime so far (for ferret-run's report).
  struct asked {
    bool attached;         // annotated code (or the C API) attached
    bool tried_recording;  // a session started, or a line said why not
  };
  asked asked_so_far() const noexcept { return {attached_.load(), tried_recording_.load()}; }
  void flush();
  void set_recording(bool on);

  void finish(bool from_drainer);
  void on_signal();
  void fork_prepare();
  void fork_parent();
  void fork_child();

 private:
  // What the start needs that may load libraries (FERRET_BACKEND's), made
  // with no lock held.
  struct startup {
    settings config;
    backend_selection selection;
  };

  runtime_state() = default;
  static startup prepare_startup();
  void initialize(startup prepared);
  bool start_session();
  void publish_mode();
  thread_state* bind(thread_buffer** slot);
  bool switch_chunk(session& s, thread_state& state);
  void retire(thread_state& state);
  void drain(session& s, bool final);
  void drain_locked(session& s, bool final);
  void forget_unloaded_names(session& s, std::uintptr_t low, std::uintptr_t high);
  // A copy of text that lives as long as the process (under sites_mutex_).
  const char* stored(std::string_view text);
  const char* stored(const char* text);
  void deliver_objects(session& s);
  void deliver_gpu_activity(session& s);
  void deliver_metric_intervals(session& s);
  void deliver_communication(session& s);
  void snapshot_threads(session& s);
  bool drain_thread(session& s, const session::thread_snapshot& snapshot, std::optional<std::int64_t> exit_ns);
  // The uncommon cases of nesting (see record in backend.hpp), on state.context.
  // They return where the next record of `first`'s batch goes.
  record* begin_region_slowly(session& s, thread_state& state, const name_info* name,
                              std::int64_t time_ns, record* out);
  record* end_region_slowly(session& s, thread_state& state, const thread_info& thread,
                            const name_info* name, std::int64_t time_ns, record* first, record* out);
  // `closed`: at_exit (counted as unfinished), or by_program when a collector
  // said when they ended.
  void end_open_regions(session& s, thread_state& state, const thread_info& thread,
                        std::int64_t time_ns, region_close closed = region_close::at_exit);
  const context_node* launch_context(session& s, thread_state& state, const std::string& thread_name);
  const name_info* name_of(session& s, const site* record_site);
  void drainer_loop(session& s);
  // Starts s.drainer; says so when no thread can be had (s.drainer then stays empty).
  void start_drainer(session& s);
  void report(session& s);

  friend struct thread_exit_hook;

  std::mutex init_mutex_;
  std::atomic<bool> initialized_{false};
  settings config_{};
  // FERRET_BACKEND's backends, found at the start (a fork child's session
  // uses them again: nothing is loaded under init_mutex_).
  std::vector<std::pair<std::string, backend_factory>> backend_factories_;
  std::atomic<bool> attached_{false};
  std::atomic<bool> tried_recording_{false};
  std::atomic<session*> current_{nullptr};
  // Sessions a fork child inherited and dropped, kept reachable on purpose.
  std::vector<session*> abandoned_;
  // A fork child starts its own session at its first event, so that children
  // that only exec() leave no empty output behind.
  std::atomic<bool> restart_on_first_event_{false};
  std::atomic<bool> recording_requested_{true};
  // FERRET_OUTPUT named a directory before the session wrote into it: fork
  // children then write there too (see fork_child).
  bool output_was_directory_ = false;
  // This process's hold on a FERRET_OUTPUT shared by several processes.
  output_claim output_claim_;

  std::mutex flags_mutex_;
  std::vector<std::atomic<std::uint8_t>*> flags_;

  std::mutex sites_mutex_;
  std::map<std::pair<const char*, const char*>, std::unique_ptr<site>> literal_sites_;
  std::map<std::pair<std::string, const char*>, std::unique_ptr<site>> named_sites_;
  std::deque<std::string> site_names_;  // copies of every interned name and domain
  // Sites keyed by addresses in unloaded shared objects, kept for the events
  // that still refer to them.
  std::vector<std::unique_ptr<site>> unloaded_sites_;

  std::shared_mutex objects_mutex_;
  data_object_map objects_;
  std::atomic<std::uint64_t> next_object_id_{1};
  std::atomic<std::uint64_t> objects_refused_{0};

  std::mutex metadata_mutex_;
  metadata_store user_metadata_;
  metadata_list process_metadata_;  // rank and size once a process group joined

  std::mutex collectors_mutex_;
  std::vector<collector*> collectors_;
};

// Runs the thread's retirement when it exits; odr-used on first bind.
struct thread_exit_hook {
  bool armed = false;
  ~thread_exit_hook() {
    t_exiting = true;
    if (t_state != nullptr) runtime_state::instance().retire(*t_state);
  }
};

void on_process_exit();

// Time zero of the traces: when the runtime was loaded, before main() (or the
// fork, in a child).
extern std::int64_t g_process_start_ns;

// The terminating-signal handshake between the handler and the drainer thread.
extern std::atomic<bool> g_signal_pending;
extern std::atomic<bool> g_signal_flush_done;
extern std::atomic<session*> g_signal_session;
// Once a terminating signal arrived: when drains stop delivering events
// (CLOCK_MONOTONIC_RAW ns; 0: no signal), so the outputs can still be closed
// within FERRET_SIGNAL_WAIT.
extern std::atomic<std::int64_t> g_signal_write_deadline_ns;

void install_signal_handlers();

}  // namespace ferret::runtime::internal
