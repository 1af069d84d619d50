// tool.cpp — the OpenMP collector: an OMPT tool (OpenMP 5.1).
//
//   OpenMP runtime (libomp, libomptarget)        ferret
//   ─────────────────────────────────────        ──────
//   host callbacks (parallel, tasks, work,  ─▶   regions and marks of domain "openmp"
//   sync, mutexes) on the thread they concern    written into that thread's own event
//                                                buffer: they nest with annotations
//   target EMI callbacks on the host thread ─▶   regions ("target [device 0]",
//   (target, data op, submit)                    "transfer to device", ...) and, for
//                                                data operations, a correlation id
//                                                + runtime::gpu_activity (collect())
//   device trace buffers (where provided)   ─▶   gpu_activity with device timestamps
//
// Every callback does constant work: a per-thread cache lookup for the site,
// a push or pop on a per-thread stack of open regions, one or two buffer
// writes. No lock and no allocation, except on the first sight of a construct
// by a thread (site registry), one small record per parallel region (its join
// time, below), and for target data operations, which hand their activity to
// the collector under its mutex.
//
// The join barrier's end on a worker: libomp (LLVM 19, also Intel's) reports
// it, and the end of the worker's implicit task, only when the worker is
// released for its next parallel region (or at the runtime's shutdown), so a
// worker would seem to wait in each region's barrier through the serial code
// after it. The team's primary thread leaves the join barrier when every
// thread has arrived: its time is kept in the team's record, and a worker's
// late ends are written at that time (runtime::write_event_at).
#include <omp-tools.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "device_trace.hpp"
#include "ferret/ferret.hpp"
#include "ferret/runtime/runtime.hpp"
#include "code_sites.hpp"

namespace ferret::ompt {
namespace {

using runtime::gpu_activity;
using runtime::gpu_device_info;
using runtime::monotonic_raw_ns;

// What an open region is, so that an end finds its begin even when the
// runtime passes a different code address (or none) at the end.
enum class scope : std::uint8_t {
  parallel,
  implicit_task,
  work,
  masked,
  sync,
  sync_wait,
  task,
  mutex_wait,
  mutex_held,
  target,
  data_op,
  submit,
};

struct open_region {
  const detail::site* site;
  scope kind;
  bool written;            // recording was on at the begin
  std::int64_t start_ns;   // data operations: CLOCK_MONOTONIC_RAW at the begin
};

constexpr unsigned max_open_regions = 64;

// A thread's open OpenMP regions. OpenMP constructs nest per thread, but the
// runtime reports some ends out of order (e.g. a worker's implicit task can
// end before its implicit barrier's wait does): an end closes the most recent
// open region of its kind, wherever it is.
struct thread_regions {
  open_region entries[max_open_regions];
  unsigned depth = 0;
};

// A team of a parallel region, shared by its threads through the parallel's
// and the implicit tasks' ompt_data_t: when the primary thread left the join
// barrier. Freed by the last of the parallel region and its implicit tasks.
struct team_record {
  const void* primary;  // the primary thread's thread_state
  std::atomic<std::uint64_t> join_end{0};  // runtime::clock_reading(); 0 until then
  std::atomic<unsigned> references{1};     // the parallel region's, then one per implicit task

  void release() {
    if (references.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
};

// libomp hands a parallel region's data to the team's threads through a copy
// in its own memory, synchronised by the fork in code that ThreadSanitizer
// does not see: the record's handover says so itself.
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* address);
extern "C" void __tsan_release(void* address);
void handed_to_team(team_record* team) { __tsan_release(team); }
void taken_from_team(team_record* team) { __tsan_acquire(team); }
#else
void handed_to_team(team_record*) {}
void taken_from_team(team_record*) {}
#endif

// A thread's state lives on the heap, allocated at its first callback, and
// is reached through one initial-exec TLS pointer (a single %fs-relative
// load): the library may be dlopen'ed (OMP_TOOL_LIBRARIES), where static TLS
// is scarce, and a thread_local with a destructor would add a call to every
// access. A pthread key frees it when the thread exits.
struct thread_state {
  thread_regions regions;
  code_sites::site_cache sites;
  std::uint64_t tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  // A worker's team from its arrival at the join barrier until libomp reports
  // the barrier's end (the implicit task's reference keeps it): parked there
  // at exit, its regions end with the team's (set_thread_idle_since).
  std::atomic<team_record*> parked_in{nullptr};
};

// Set while the final drain reads the parked workers' teams: a worker leaving
// its barrier then waits before it lets go of its team (see unpark).
std::atomic<bool> g_reading_parked{false};

// Every thread's state, for the final drain (parked workers).
std::mutex g_states_mutex;
std::vector<thread_state*>* g_states = new std::vector<thread_state*>;  // leaked: read at exit
FERRET_TLS_MODEL thread_local thread_state* t_state = nullptr;

pthread_key_t g_state_key;
pthread_once_t g_state_key_once = PTHREAD_ONCE_INIT;

FERRET_NOINLINE thread_state* create_thread_state() noexcept {
  pthread_once(&g_state_key_once, [] {
    pthread_key_create(&g_state_key, [](void* state) {
      t_state = nullptr;
      auto* ending = static_cast<thread_state*>(state);
      {
        std::lock_guard lock{g_states_mutex};
        g_states->erase(std::remove(g_states->begin(), g_states->end(), ending), g_states->end());
      }
      delete ending;
    });
  });
  auto* state = new (std::nothrow) thread_state;
  if (state != nullptr) {
    pthread_setspecific(g_state_key, state);
    std::lock_guard lock{g_states_mutex};
    g_states->push_back(state);
  }
  t_state = state;
  return state;
}

// Counts of what could not be recorded as reported.
struct loss_counts {
  std::atomic<std::uint64_t> too_deep{0};       // begins past max_open_regions
  std::atomic<std::uint64_t> unmatched_ends{0}; // ends without an open region of their kind
  std::atomic<std::uint64_t> out_of_order_ends{0};
  std::atomic<std::uint64_t> no_thread_state{0};  // events of threads whose state could not be allocated
};

class openmp_collector final : public runtime::collector {
 public:
  static openmp_collector& instance() {
    // Leaked on purpose: the runtime calls collectors until the process ends.
    static openmp_collector* collector = new openmp_collector;
    return *collector;
  }

  // Registers with the runtime once, when the OpenMP runtime starts the tool.
  void attach() {
    bool expected = false;
    if (runtime::session_active() && attached_.compare_exchange_strong(expected, true))
      runtime::register_collector(this);
  }

  ompt_start_tool_result_t* start_tool(unsigned int omp_version, const char* runtime_version);

  // -- host -----------------------------------------------------------------
  thread_state* state() {
    thread_state* current = t_state;
    if (FERRET_UNLIKELY(current == nullptr)) {
      current = create_thread_state();
      if (current == nullptr) losses_.no_thread_state.fetch_add(1, std::memory_order_relaxed);
    }
    return current;
  }

  const detail::site* site_for(const char* label, const void* code, int device = -1) {
    thread_state* thread = state();
    if (thread == nullptr) return sites_.find_or_add(label, code, device);
    return thread->sites.find_or_add(sites_, label, code, device);
  }

  void begin(scope kind, const detail::site* site) {
    thread_state* thread = state();
    if (thread == nullptr) return;
    thread_regions& open = thread->regions;
    if (open.depth == max_open_regions) {
      losses_.too_deep.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const bool written = detail::recording();
    open.entries[open.depth++] = {site, kind, written, 0};
    if (written) detail::write(detail::word_of(site, detail::kind_begin));
  }

  // Data operations: their device activity starts after their launch (the
  // correlation event), as the runtime and the flows of the trace expect.
  void stamp_start_of_innermost() {
    thread_state* thread = state();
    if (thread != nullptr && thread->regions.depth > 0)
      thread->regions.entries[thread->regions.depth - 1].start_ns = monotonic_raw_ns();
  }

  // Ends the most recent open region of `kind` (copied to `ended`); false if
  // the thread has none open. `time`: when it ended (a clock_reading()), else now.
  bool end(scope kind, open_region* ended = nullptr, std::uint64_t time = 0) {
    thread_state* thread = state();
    if (thread == nullptr) return false;
    thread_regions& open = thread->regions;
    unsigned at = open.depth;
    while (at > 0 && open.entries[at - 1].kind != kind) --at;
    if (at == 0) {
      losses_.unmatched_ends.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    const open_region region = open.entries[at - 1];
    if (at != open.depth) losses_.out_of_order_ends.fetch_add(1, std::memory_order_relaxed);
    std::copy(open.entries + at, open.entries + open.depth, open.entries + at - 1);
    --open.depth;
    if (region.written) {
      const std::uint64_t word = detail::word_of(region.site, detail::kind_end);
      if (time != 0)
        runtime::write_event_at(&detail::t_buffer, word, time);
      else
        detail::write(word);
    }
    if (ended != nullptr) *ended = region;
    return true;
  }

  void mark(const detail::site* site) {
    if (detail::recording()) detail::write(detail::word_of(site, detail::kind_mark));
  }

  void sample(const detail::site* counter, double value) {
    if (counter != nullptr && detail::recording())
      detail::write_with_payload(detail::word_of(counter, detail::kind_counter),
                                 detail::bits_of(value));
  }

  const detail::site* team_size_counter() const { return team_size_; }
  const detail::site* requested_teams_counter() const { return requested_teams_; }
  std::uint32_t next_worker_number() { return worker_numbers_.fetch_add(1) + 1; }
  std::uint64_t next_id() { return ids_.fetch_add(1, std::memory_order_relaxed) + 1; }
  void set_refused_callbacks(std::string numbers) {
    std::lock_guard lock{devices_mutex_};
    refused_callbacks_ = std::move(numbers);
  }
  void trace_buffer_refused() { trace_buffers_refused_.fetch_add(1, std::memory_order_relaxed); }

  // -- target ---------------------------------------------------------------
  void device_initialized(int device_num, const char* type, ompt_device_t* device,
                          ompt_function_lookup_t lookup);
  void device_finalized(int device_num);
  void data_op_ended(ompt_target_data_op_t optype, const open_region& region, ompt_id_t op_id,
                     void* source, int source_device, void* destination, int destination_device,
                     std::size_t bytes);
  bool forward_data_ops(int device_num);
  bool cuda_collector_loaded();
  void trace_buffer_completed(int device_num, ompt_buffer_t* buffer, std::size_t bytes,
                              ompt_buffer_cursor_t begin, int buffer_owned);

  // -- runtime::collector ---------------------------------------------------
  void collect(std::vector<gpu_activity>& activities, std::vector<gpu_device_info>& new_devices,
               bool final) override;
  void add_metadata(runtime::metadata_list& metadata) const override;
  void abandon() noexcept override { abandoned_.store(true); }

  // At exit: a tracing run whose OpenMP runtime never started the tool.
  void say_why_not_started();
  // At exit: workers parked in a join barrier whose end libomp has not
  // reported went idle when their team's primary thread left it.
  void say_when_parked_workers_went_idle();

 private:
  openmp_collector() = default;

  std::atomic<bool> attached_{false};
  std::atomic<bool> tool_started_{false};
  std::atomic<bool> abandoned_{false};
  std::string runtime_version_;
  std::string refused_callbacks_;  // under devices_mutex_
  code_sites::site_registry sites_{"openmp"};
  loss_counts losses_;
  const detail::site* team_size_ = nullptr;
  const detail::site* requested_teams_ = nullptr;
  std::atomic<std::uint32_t> worker_numbers_{0};
  std::atomic<std::uint64_t> ids_{0};
  double wtime_offset_s_ = 0;

  // Target devices, data operations and trace buffers (not the hot path).
  struct device_state {
    int number;
    ompt_device_t* device;
    trace_entry_points entry;
    ompt_flush_trace_t flush_trace;
    bool traced;
  };
  mutable std::mutex devices_mutex_;
  std::vector<device_state> devices_;
  std::vector<gpu_activity> completed_;
  std::vector<gpu_device_info> new_devices_;
  trace_counts trace_counts_{};
  std::uint64_t data_ops_ = 0;
  std::atomic<std::uint64_t> trace_buffers_refused_{0};
  int cuda_collector_loaded_ = -1;  // unknown until the first device or data operation
  std::atomic<bool> said_no_tracing_{false};
};

openmp_collector& collector() { return openmp_collector::instance(); }

// ---------------------------------------------------------------------------
// Labels (site names). Their addresses are part of a site's key.

const char* work_label(ompt_work_t work) {
  switch (work) {
    case ompt_work_loop: return "loop";
    case ompt_work_loop_static: return "loop (static)";
    case ompt_work_loop_dynamic: return "loop (dynamic)";
    case ompt_work_loop_guided: return "loop (guided)";
    case ompt_work_loop_other: return "loop (other schedule)";
    case ompt_work_sections: return "sections";
    case ompt_work_single_executor: return "single";
    case ompt_work_single_other: return "single (skipped)";
    case ompt_work_workshare: return "workshare";
    case ompt_work_distribute: return "distribute";
    case ompt_work_taskloop: return "taskloop";
    case ompt_work_scope: return "scope";
  }
  return "worksharing";
}

const char* sync_label(ompt_sync_region_t kind, bool wait) {
  switch (kind) {
    case ompt_sync_region_barrier:
    case ompt_sync_region_barrier_explicit: return wait ? "barrier wait" : "barrier";
    case ompt_sync_region_barrier_implicit:
    case ompt_sync_region_barrier_implicit_workshare:
    case ompt_sync_region_barrier_implicit_parallel:
      return wait ? "implicit barrier wait" : "implicit barrier";
    case ompt_sync_region_barrier_teams: return wait ? "teams barrier wait" : "teams barrier";
    case ompt_sync_region_barrier_implementation:
      return wait ? "runtime barrier wait" : "runtime barrier";
    case ompt_sync_region_taskwait: return wait ? "taskwait wait" : "taskwait";
    case ompt_sync_region_taskgroup: return wait ? "taskgroup wait" : "taskgroup";
    case ompt_sync_region_reduction: return wait ? "reduction wait" : "reduction";
  }
  return wait ? "synchronization wait" : "synchronization";
}

const char* target_label(ompt_target_t kind) {
  switch (kind) {
    case ompt_target: return "target";
    case ompt_target_nowait: return "target nowait";
    case ompt_target_enter_data: return "target enter data";
    case ompt_target_enter_data_nowait: return "target enter data nowait";
    case ompt_target_exit_data: return "target exit data";
    case ompt_target_exit_data_nowait: return "target exit data nowait";
    case ompt_target_update: return "target update";
    case ompt_target_update_nowait: return "target update nowait";
  }
  return "target construct";
}

const char* data_op_label(ompt_target_data_op_t op) {
  switch (op) {
    case ompt_target_data_alloc: return "alloc";
    case ompt_target_data_alloc_async: return "alloc async";
    case ompt_target_data_transfer_to_device: return "transfer to device";
    case ompt_target_data_transfer_to_device_async: return "transfer to device async";
    case ompt_target_data_transfer_from_device: return "transfer from device";
    case ompt_target_data_transfer_from_device_async: return "transfer from device async";
    case ompt_target_data_delete: return "delete";
    case ompt_target_data_delete_async: return "delete async";
    case ompt_target_data_associate: return "associate";
    case ompt_target_data_disassociate: return "disassociate";
  }
  return "data operation";
}

// Mutexes held in lexical scope; locks may be released out of order, so for
// them only the wait is a region.
bool held_as_region(ompt_mutex_t kind) {
  return kind == ompt_mutex_critical || kind == ompt_mutex_ordered;
}

const char* mutex_label(ompt_mutex_t kind, bool wait) {
  switch (kind) {
    case ompt_mutex_critical: return wait ? "critical wait" : "critical";
    case ompt_mutex_ordered: return wait ? "ordered wait" : "ordered";
    case ompt_mutex_nest_lock: return "nest lock wait";
    default: return "lock wait";
  }
}

// Explicit tasks keep their site in the task's data (set at creation, read
// where the task runs: another thread, synchronised by the runtime in code
// that ThreadSanitizer does not see, hence atomic accesses). The low bits say
// whether the task's region is open. Implicit tasks keep their team's record,
// tagged: a task switch back to an implicit task opens no region.
constexpr std::uint64_t task_started = 1;
constexpr std::uint64_t implicit_task_team = 2;
constexpr std::uint64_t task_flag_bits = 7;

std::uint64_t load_task(const ompt_data_t* data) {
  return __atomic_load_n(&data->value, __ATOMIC_ACQUIRE);
}
void store_task(ompt_data_t* data, std::uint64_t value) {
  __atomic_store_n(&data->value, value, __ATOMIC_RELEASE);
}

// ---------------------------------------------------------------------------
// Host callbacks

void on_thread_begin(ompt_thread_t type, ompt_data_t* /*thread_data*/) {
  if (type != ompt_thread_worker) return;
  const std::string name = fmt::format("OpenMP worker {}", collector().next_worker_number());
  ferret::set_thread_name(name);
}

// The team of an implicit task (set at its begin), or nullptr.
team_record* team_of(const ompt_data_t* task) {
  const std::uint64_t value = task != nullptr ? load_task(task) : 0;
  return (value & implicit_task_team) != 0 ? reinterpret_cast<team_record*>(value & ~task_flag_bits) : nullptr;
}

// When a worker's late end of its join barrier (or of its implicit task) in
// `team` happened: when the primary thread left that barrier, if it has; 0
// (now) otherwise, and for the primary thread or no team.
std::uint64_t worker_join_end(const team_record* team) {
  thread_state* thread = t_state;
  if (team == nullptr || thread == nullptr || team->primary == thread) return 0;
  // After the worker's arrival: the barrier ended once all had arrived.
  return team->join_end.load(std::memory_order_acquire);
}

// A worker leaves its join barrier, before it lets go of its team: not while
// the final drain reads the team (either the drain sees it gone, or it waits).
void unpark(thread_state* thread) {
  if (thread == nullptr) return;
  thread->parked_in.store(nullptr, std::memory_order_seq_cst);
  while (g_reading_parked.load(std::memory_order_seq_cst)) sched_yield();
}

void on_parallel_begin(ompt_data_t* /*encountering_task*/, const ompt_frame_t* /*frame*/,
                       ompt_data_t* parallel, unsigned int /*requested*/, int flags,
                       const void* codeptr) {
  const bool league = (flags & ompt_parallel_league) != 0;
  openmp_collector& c = collector();
  c.begin(scope::parallel, c.site_for(league ? "teams" : "parallel", codeptr));
  if (parallel == nullptr) return;
  auto* team = new (std::nothrow) team_record{c.state(), {0}, {1}};
  if (team != nullptr) handed_to_team(team);
  store_task(parallel, reinterpret_cast<std::uint64_t>(team));
}

void on_parallel_end(ompt_data_t* parallel, ompt_data_t* /*encountering_task*/, int /*flags*/,
                     const void* /*codeptr*/) {
  collector().end(scope::parallel);
  if (parallel == nullptr) return;
  if (auto* team = reinterpret_cast<team_record*>(load_task(parallel))) {
    store_task(parallel, 0);
    team->release();
  }
}

void on_implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t* parallel, ompt_data_t* task,
                      unsigned int actual_parallelism, unsigned int index, int flags) {
  // The initial task spans the program: nothing to show.
  if ((flags & ompt_task_initial) != 0) return;
  openmp_collector& c = collector();
  if (endpoint == ompt_scope_begin) {
    static const char* const label = "implicit task";
    c.begin(scope::implicit_task, c.site_for(label, nullptr));
    // The team's size, once per team (by its primary thread).
    if (index == 0) c.sample(c.team_size_counter(), actual_parallelism);
    auto* team = parallel != nullptr ? reinterpret_cast<team_record*>(load_task(parallel)) : nullptr;
    if (team != nullptr && task != nullptr) {
      taken_from_team(team);
      team->references.fetch_add(1, std::memory_order_relaxed);
      store_task(task, reinterpret_cast<std::uint64_t>(team) | implicit_task_team);
    }
  } else {
    team_record* team = team_of(task);
    c.end(scope::implicit_task, nullptr, worker_join_end(team));
    if (team != nullptr) {
      if (team->primary != t_state) unpark(t_state);
      store_task(task, 0);
      team->release();
    }
  }
}

void on_work(ompt_work_t work, ompt_scope_endpoint_t endpoint, ompt_data_t* /*parallel*/,
             ompt_data_t* /*task*/, uint64_t /*count*/, const void* codeptr) {
  openmp_collector& c = collector();
  if (endpoint == ompt_scope_begin)
    c.begin(scope::work, c.site_for(work_label(work), codeptr));
  else
    c.end(scope::work);
}

void on_masked(ompt_scope_endpoint_t endpoint, ompt_data_t* /*parallel*/, ompt_data_t* /*task*/,
               const void* codeptr) {
  openmp_collector& c = collector();
  if (endpoint == ompt_scope_begin)
    c.begin(scope::masked, c.site_for("masked", codeptr));
  else
    c.end(scope::masked);
}

void on_sync_region(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint,
                    ompt_data_t* /*parallel*/, ompt_data_t* task, const void* codeptr) {
  openmp_collector& c = collector();
  if (endpoint == ompt_scope_begin)
    c.begin(scope::sync, c.site_for(sync_label(kind, false), codeptr));
  else
    c.end(scope::sync, nullptr,
          kind == ompt_sync_region_barrier_implicit_parallel ? worker_join_end(team_of(task)) : 0);
}

void on_sync_region_wait(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint,
                         ompt_data_t* /*parallel*/, ompt_data_t* task, const void* codeptr) {
  openmp_collector& c = collector();
  const bool join = kind == ompt_sync_region_barrier_implicit_parallel;
  if (endpoint == ompt_scope_begin) {
    c.begin(scope::sync_wait, c.site_for(sync_label(kind, true), codeptr));
    thread_state* thread = t_state;
    if (join && thread != nullptr) {
      team_record* team = team_of(task);
      if (team != nullptr && team->primary != thread) thread->parked_in.store(team, std::memory_order_release);
    }
    return;
  }
  team_record* team = join ? team_of(task) : nullptr;
  if (team != nullptr && team->primary == t_state) {
    // Every thread of the team has arrived: the join barrier's end for all of them.
    team->join_end.store(runtime::clock_reading(), std::memory_order_release);
    c.end(scope::sync_wait);
    return;
  }
  c.end(scope::sync_wait, nullptr, worker_join_end(team));
}

void on_task_create(ompt_data_t* /*encountering_task*/, const ompt_frame_t* /*frame*/,
                    ompt_data_t* new_task, int flags, int /*has_dependences*/,
                    const void* codeptr) {
  if ((flags & ompt_task_explicit) == 0 || new_task == nullptr) return;
  openmp_collector& c = collector();
  c.mark(c.site_for("task create", codeptr));
  store_task(new_task, reinterpret_cast<std::uint64_t>(c.site_for("task", codeptr)));
}

void on_task_schedule(ompt_data_t* prior_task, ompt_task_status_t prior_status,
                      ompt_data_t* next_task) {
  openmp_collector& c = collector();
  // A task suspended (yield, switch at a taskwait) keeps its region open:
  // what runs meanwhile on this thread nests inside it, as tied tasks do.
  const bool prior_done = prior_status == ompt_task_complete || prior_status == ompt_task_cancel ||
                          prior_status == ompt_task_detach ||
                          prior_status == ompt_task_late_fulfill;
  if (prior_done && prior_task != nullptr) {
    const std::uint64_t value = load_task(prior_task);
    if ((value & implicit_task_team) == 0 && (value & task_started) != 0) {
      c.end(scope::task);
      store_task(prior_task, value & ~task_flag_bits);
    }
  }
  if (next_task != nullptr && (load_task(next_task) & implicit_task_team) == 0) {
    const std::uint64_t value = load_task(next_task);
    const auto* site = reinterpret_cast<const detail::site*>(value & ~task_flag_bits);
    if (site != nullptr && (value & task_started) == 0) {
      store_task(next_task, value | task_started);
      c.begin(scope::task, site);
    }
  }
}

void on_mutex_acquire(ompt_mutex_t kind, unsigned int /*hint*/, unsigned int /*impl*/,
                      ompt_wait_id_t /*wait_id*/, const void* codeptr) {
  // A test lock is not waited for, and reports no acquisition when it fails.
  if (kind == ompt_mutex_test_lock || kind == ompt_mutex_test_nest_lock || kind == ompt_mutex_atomic)
    return;
  openmp_collector& c = collector();
  c.begin(scope::mutex_wait, c.site_for(mutex_label(kind, true), codeptr));
}

void on_mutex_acquired(ompt_mutex_t kind, ompt_wait_id_t /*wait_id*/, const void* codeptr) {
  if (kind == ompt_mutex_test_lock || kind == ompt_mutex_test_nest_lock || kind == ompt_mutex_atomic)
    return;
  openmp_collector& c = collector();
  c.end(scope::mutex_wait);
  if (held_as_region(kind)) c.begin(scope::mutex_held, c.site_for(mutex_label(kind, false), codeptr));
}

void on_mutex_released(ompt_mutex_t kind, ompt_wait_id_t /*wait_id*/, const void* /*codeptr*/) {
  if (held_as_region(kind)) collector().end(scope::mutex_held);
}

void on_nest_lock(ompt_scope_endpoint_t endpoint, ompt_wait_id_t /*wait_id*/,
                  const void* /*codeptr*/) {
  // Acquired again by its owner: the acquire's wait ends here.
  if (endpoint == ompt_scope_begin) collector().end(scope::mutex_wait);
}

// ---------------------------------------------------------------------------
// Target callbacks (EMI)

void on_device_initialize(int device_num, const char* type, ompt_device_t* device,
                          ompt_function_lookup_t lookup, const char* /*documentation*/) {
  collector().device_initialized(device_num, type, device, lookup);
}

void on_device_finalize(int device_num) { collector().device_finalized(device_num); }

void on_target_emi(ompt_target_t kind, ompt_scope_endpoint_t endpoint, int device_num,
                   ompt_data_t* /*task*/, ompt_data_t* /*target_task*/, ompt_data_t* target_data,
                   const void* codeptr) {
  openmp_collector& c = collector();
  if (endpoint == ompt_scope_begin) {
    // The target id links this region's operations in the runtime's own
    // records (and in device trace records, as target_id).
    if (target_data != nullptr) target_data->value = c.next_id();
    c.begin(scope::target, c.site_for(target_label(kind), codeptr, device_num));
  } else {
    c.end(scope::target);
  }
}

void on_target_data_op_emi(ompt_scope_endpoint_t endpoint, ompt_data_t* /*target_task*/,
                           ompt_data_t* /*target_data*/, ompt_id_t* host_op_id,
                           ompt_target_data_op_t optype, void* source, int source_device,
                           void* destination, int destination_device, size_t bytes,
                           const void* codeptr) {
  openmp_collector& c = collector();
  if (endpoint == ompt_scope_begin) {
    const ompt_id_t op_id = c.next_id();
    if (host_op_id != nullptr) *host_op_id = op_id;
    if (optype == ompt_target_data_delete || optype == ompt_target_data_delete_async)
      runtime::unregister_allocation(source != nullptr ? source : destination);
    const detail::site* site = c.site_for(data_op_label(optype), codeptr);
    c.begin(scope::data_op, site);
    // Inside the operation's region: the runtime maps the id to this calling
    // context, for the activity collect() hands over.
    if (detail::recording())
      detail::write_with_payload(detail::word_of(site, detail::kind_correlation),
                                 correlation_of(op_id));
    c.stamp_start_of_innermost();
    return;
  }
  open_region region{};
  if (!c.end(scope::data_op, &region)) return;
  c.data_op_ended(optype, region, host_op_id != nullptr ? *host_op_id : 0, source, source_device,
                  destination, destination_device, bytes);
}

void on_target_submit_emi(ompt_scope_endpoint_t endpoint, ompt_data_t* /*target_data*/,
                          ompt_id_t* host_op_id, unsigned int requested_num_teams) {
  openmp_collector& c = collector();
  if (endpoint == ompt_scope_begin) {
    const ompt_id_t op_id = c.next_id();
    if (host_op_id != nullptr) *host_op_id = op_id;
    static const char* const label = "kernel submission";
    c.begin(scope::submit, c.site_for(label, nullptr));
    c.sample(c.requested_teams_counter(), requested_num_teams);
    if (detail::recording())
      detail::write_with_payload(
          detail::word_of(c.site_for(label, nullptr), detail::kind_correlation),
          correlation_of(op_id));
  } else {
    c.end(scope::submit);
  }
}

// ---------------------------------------------------------------------------
// Device trace buffers

constexpr std::size_t trace_buffer_bytes = std::size_t{1} << 20;

void on_trace_buffer_request(int /*device_num*/, ompt_buffer_t** buffer, size_t* bytes) {
  *buffer = ::operator new(trace_buffer_bytes, std::nothrow);
  *bytes = *buffer != nullptr ? trace_buffer_bytes : 0;
  // The runtime drops (and should count) records while it has no buffer.
  if (*buffer == nullptr) collector().trace_buffer_refused();
}

void on_trace_buffer_complete(int device_num, ompt_buffer_t* buffer, size_t bytes,
                              ompt_buffer_cursor_t begin, int buffer_owned) {
  collector().trace_buffer_completed(device_num, buffer, bytes, begin, buffer_owned);
}

// ---------------------------------------------------------------------------
// Tool start

template <class Callback>
void set_callback(ompt_set_callback_t set, ompt_callbacks_t which, Callback function,
                  std::string& refused) {
  const ompt_set_result_t result = set(which, reinterpret_cast<ompt_callback_t>(function));
  if (result == ompt_set_never || result == ompt_set_error)
    refused += fmt::format("{}{}", refused.empty() ? "" : ", ", static_cast<int>(which));
}

int on_initialize(ompt_function_lookup_t lookup, int initial_device_num, ompt_data_t* /*tool_data*/) {
  const auto set = reinterpret_cast<ompt_set_callback_t>(lookup("ompt_set_callback"));
  if (set == nullptr) return 0;
  std::string refused;
  set_callback(set, ompt_callback_thread_begin, &on_thread_begin, refused);
  set_callback(set, ompt_callback_parallel_begin, &on_parallel_begin, refused);
  set_callback(set, ompt_callback_parallel_end, &on_parallel_end, refused);
  set_callback(set, ompt_callback_implicit_task, &on_implicit_task, refused);
  set_callback(set, ompt_callback_work, &on_work, refused);
  set_callback(set, ompt_callback_masked, &on_masked, refused);
  set_callback(set, ompt_callback_sync_region, &on_sync_region, refused);
  set_callback(set, ompt_callback_sync_region_wait, &on_sync_region_wait, refused);
  set_callback(set, ompt_callback_task_create, &on_task_create, refused);
  set_callback(set, ompt_callback_task_schedule, &on_task_schedule, refused);
  set_callback(set, ompt_callback_mutex_acquire, &on_mutex_acquire, refused);
  set_callback(set, ompt_callback_mutex_acquired, &on_mutex_acquired, refused);
  set_callback(set, ompt_callback_mutex_released, &on_mutex_released, refused);
  set_callback(set, ompt_callback_nest_lock, &on_nest_lock, refused);
  // Target callbacks: a runtime without offloading support refuses them.
  set_callback(set, ompt_callback_device_initialize, &on_device_initialize, refused);
  set_callback(set, ompt_callback_device_finalize, &on_device_finalize, refused);
  set_callback(set, ompt_callback_target_emi, &on_target_emi, refused);
  set_callback(set, ompt_callback_target_data_op_emi, &on_target_data_op_emi, refused);
  set_callback(set, ompt_callback_target_submit_emi, &on_target_submit_emi, refused);
  static_cast<void>(initial_device_num);  // data operations say which side is the host
  collector().set_refused_callbacks(std::move(refused));
  return 1;  // nonzero: keep the tool
}

void on_finalize(ompt_data_t* /*tool_data*/) {}

ompt_start_tool_result_t* openmp_collector::start_tool(unsigned int /*omp_version*/,
                                                        const char* runtime_version) {
  if (!runtime::session_active()) return nullptr;  // FERRET_BACKEND unset: stay out of the way
  // Everything the drain thread reads is set before the collector is registered.
  runtime_version_ = runtime_version != nullptr ? runtime_version : "";
  if (const detail::runtime_api* api = detail::runtime()) {
    constexpr std::string_view team_size = "team size";
    constexpr std::string_view requested_teams = "requested teams";
    team_size_ = api->register_name(team_size.data(), team_size.size(), "openmp");
    requested_teams_ = api->register_name(requested_teams.data(), requested_teams.size(), "openmp");
  }
  // omp_get_wtime()'s clock (device trace timestamps translate to it)
  // against CLOCK_MONOTONIC_RAW.
  using wtime_query = double (*)();
  if (const auto wtime = reinterpret_cast<wtime_query>(dlsym(RTLD_DEFAULT, "omp_get_wtime"))) {
    const std::int64_t before = monotonic_raw_ns();
    const double now = wtime();
    const std::int64_t after = monotonic_raw_ns();
    wtime_offset_s_ = static_cast<double>(before + (after - before) / 2) * 1e-9 - now;
  }
  attach();
  if (!attached_.load()) return nullptr;
  tool_started_.store(true);
  static ompt_start_tool_result_t result{&on_initialize, &on_finalize, ompt_data_t{0}};
  return &result;
}

// ---------------------------------------------------------------------------
// Target devices and data operations

void openmp_collector::device_initialized(int device_num, const char* type, ompt_device_t* device,
                                          ompt_function_lookup_t lookup) {
  const auto find = [&](const char* name) {
    return lookup != nullptr ? lookup(name) : nullptr;
  };
  device_state state{device_num, device, {}, nullptr, false};
  state.entry.get_record = reinterpret_cast<ompt_get_record_ompt_t>(find("ompt_get_record_ompt"));
  state.entry.advance_cursor =
      reinterpret_cast<ompt_advance_buffer_cursor_t>(find("ompt_advance_buffer_cursor"));
  state.entry.translate_time = reinterpret_cast<ompt_translate_time_t>(find("ompt_translate_time"));
  state.flush_trace = reinterpret_cast<ompt_flush_trace_t>(find("ompt_flush_trace"));
  const auto set_trace = reinterpret_cast<ompt_set_trace_ompt_t>(find("ompt_set_trace_ompt"));
  const auto start_trace = reinterpret_cast<ompt_start_trace_t>(find("ompt_start_trace"));
  const bool can_trace = set_trace != nullptr && start_trace != nullptr &&
                         state.entry.get_record != nullptr && state.entry.advance_cursor != nullptr &&
                         state.entry.translate_time != nullptr;
  if (can_trace) {
    // Data operations and kernels; target regions come from the host callbacks.
    set_trace(device, 1, ompt_callback_target_data_op_emi);
    set_trace(device, 1, ompt_callback_target_submit_emi);
    set_trace(device, 1, ompt_callback_target_data_op);
    set_trace(device, 1, ompt_callback_target_submit);
    state.traced = start_trace(device, &on_trace_buffer_request, &on_trace_buffer_complete) != 0;
  }
  if (!state.traced && !said_no_tracing_.exchange(true) && runtime::verbosity() >= 1)
    runtime::print_message(fmt::format(
        "the OpenMP runtime offers no device tracing interface (device {}, {}): target regions, "
        "data transfers and kernel submissions are recorded from host callbacks",
        device_num, type != nullptr ? type : "unknown type"));
  gpu_device_info info{};
  info.id = static_cast<std::uint32_t>(std::max(device_num, 0));
  info.name = fmt::format("OpenMP device {} ({})", device_num, type != nullptr ? type : "unknown");
  std::lock_guard lock{devices_mutex_};
  // Settled now, before any drain can hand the device's name over (collect()).
  cuda_collector_loaded();
  devices_.push_back(state);
  new_devices_.push_back(std::move(info));
}

void openmp_collector::device_finalized(int device_num) {
  ompt_flush_trace_t flush = nullptr;
  ompt_device_t* device = nullptr;
  {
    std::lock_guard lock{devices_mutex_};
    for (device_state& state : devices_)
      if (state.number == device_num && state.traced) {
        flush = state.flush_trace;
        device = state.device;
        state.traced = false;
      }
  }
  // What the device still holds, before it goes: the runtime hands it to the
  // completion callback, which takes the mutex.
  if (flush != nullptr) flush(device);
}

// Host-side data operations become GPU activity unless the device's own
// trace records deliver them, or CUDA's collector (CUPTI) sees the copies the
// runtime makes: then its records are the device's truth and ours would
// count every byte twice.
bool openmp_collector::forward_data_ops(int device_num) {
  std::lock_guard lock{devices_mutex_};
  if (cuda_collector_loaded()) return false;
  for (const device_state& state : devices_)
    if (state.number == device_num && state.traced) return false;
  return true;
}

// Whether CUDA's collector is in the process, asked once (devices_mutex_
// held): at the first device, since CUDA loads it at cuInit, before
// libomptarget's CUDA plugin initialises a device. Its devices are CUPTI's to
// name (CUDA's numbering and names); a drain between a device's initialisation
// and its first data operation must not name it "OpenMP device N" meanwhile.
bool openmp_collector::cuda_collector_loaded() {
  if (cuda_collector_loaded_ < 0) {
    void* cuda = dlopen("libferret_cupti.so", RTLD_NOLOAD | RTLD_LAZY);
    cuda_collector_loaded_ = cuda != nullptr ? 1 : 0;
    if (cuda != nullptr) dlclose(cuda);
  }
  return cuda_collector_loaded_ == 1;
}

void openmp_collector::data_op_ended(ompt_target_data_op_t optype, const open_region& region,
                                     ompt_id_t op_id, void* source, int source_device,
                                     void* destination, int destination_device, std::size_t bytes) {
  gpu_activity activity{};
  if (!activity_of_data_op(optype, source, source_device, destination, destination_device, bytes,
                           activity))
    return;
  activity.start_ns = region.start_ns;
  activity.end_ns = monotonic_raw_ns();
  activity.launch.correlation = correlation_of(op_id);
  const bool forwarded = forward_data_ops(static_cast<int>(activity.device));
  if (activity.operation == runtime::gpu_operation::memcpy) {
    activity.source_object_id = runtime::find_data_object_ref(source).id;
    activity.destination_object_id = runtime::find_data_object_ref(destination).id;
    activity.source_address = reinterpret_cast<std::uintptr_t>(source);
    activity.destination_address = reinterpret_cast<std::uintptr_t>(destination);
  } else if (activity.operation == runtime::gpu_operation::allocation && forwarded &&
             destination != nullptr && bytes > 0) {
    // The runtime's device copy of mapped data: an anonymous data object
    // named after the calling context ("alloc@main/target enter data ..."),
    // as CUDA allocations are; with CUDA's collector, it registers them.
    runtime::register_allocation("target alloc", activity.launch.correlation, destination, bytes,
                                 runtime::memory_kind::device, static_cast<int>(activity.device));
  }
  std::lock_guard lock{devices_mutex_};
  ++data_ops_;
  if (forwarded) completed_.push_back(activity);
}

void openmp_collector::trace_buffer_completed(int device_num, ompt_buffer_t* buffer,
                                              std::size_t bytes, ompt_buffer_cursor_t begin,
                                              int buffer_owned) {
  if (buffer == nullptr) return;
  {
    std::lock_guard lock{devices_mutex_};
    const auto state = std::find_if(devices_.begin(), devices_.end(),
                                    [&](const device_state& d) { return d.number == device_num; });
    if (state != devices_.end())
      decode_trace_buffer(state->entry, {wtime_offset_s_}, device_num,
                          state->device, buffer, bytes, begin, completed_, trace_counts_);
  }
  if (buffer_owned != 0) ::operator delete(buffer);
}

// ---------------------------------------------------------------------------
// Collector

void openmp_collector::say_when_parked_workers_went_idle() {
  std::lock_guard lock{g_states_mutex};
  g_reading_parked.store(true, std::memory_order_seq_cst);
  for (thread_state* thread : *g_states) {
    const team_record* team = thread->parked_in.load(std::memory_order_seq_cst);
    const std::uint64_t join_end = team != nullptr ? team->join_end.load(std::memory_order_acquire) : 0;
    if (join_end != 0) runtime::set_thread_idle_since(thread->tid, join_end);
  }
  g_reading_parked.store(false, std::memory_order_seq_cst);
}

void openmp_collector::collect(std::vector<gpu_activity>& activities,
                               std::vector<gpu_device_info>& new_devices, bool final) {
  if (abandoned_.load()) return;
  sites_.drain_started();
  // Flushing calls the completion callback, which takes the mutex.
  std::vector<device_state> traced;
  {
    std::lock_guard lock{devices_mutex_};
    for (const device_state& state : devices_)
      if (state.traced && state.flush_trace != nullptr) traced.push_back(state);
  }
  for (const device_state& state : traced) state.flush_trace(state.device);
  if (final) say_when_parked_workers_went_idle();
  std::lock_guard lock{devices_mutex_};
  activities.insert(activities.end(), completed_.begin(), completed_.end());
  completed_.clear();
  if (cuda_collector_loaded_ != 1) new_devices.insert(new_devices.end(), new_devices_.begin(), new_devices_.end());
  new_devices_.clear();
  if (final && tool_started_.load() && devices_.empty() &&
      dlsym(RTLD_DEFAULT, "__tgt_target_kernel") != nullptr && runtime::verbosity() >= 1)
    // libomptarget connects to the tool interface by dlopen("libomp.so"),
    // which Debian's libomp-19-dev installs only in /usr/lib/llvm-19/lib.
    runtime::print_message(
        "libomptarget is loaded but reported no device to the OpenMP tool interface: if target "
        "regions ran, it could not open \"libomp.so\" to connect (put the directory of the "
        "OpenMP runtime, e.g. /usr/lib/llvm-19/lib, on LD_LIBRARY_PATH; ferret-run does)");
}

void openmp_collector::say_why_not_started() {
  if (tool_started_.load() || abandoned_.load()) return;
  // Which runtime is in the process: LLVM's exports its own entry points
  // (and GNU's, for compatibility); GNU's libgomp only its own.
  const bool llvm_runtime = dlsym(RTLD_DEFAULT, "__kmpc_fork_call") != nullptr;
  const bool gnu_runtime = dlsym(RTLD_DEFAULT, "GOMP_parallel") != nullptr;
  if (!llvm_runtime && gnu_runtime) {
    runtime::print_message(
        "no OMPT support in this OpenMP runtime (GNU libgomp): OpenMP events are not traced");
  } else if (llvm_runtime && runtime::verbosity() >= 2) {
    // Also a program that never ran an OpenMP construct (the runtime starts
    // tools lazily), so only when asked.
    runtime::print_message(
        "the OpenMP runtime did not start ferret's OMPT tool (no OpenMP construct ran, "
        "OMP_TOOL=disabled, or another tool was chosen): OpenMP events are not traced");
  }
}

void openmp_collector::add_metadata(runtime::metadata_list& metadata) const {
  // Called by the runtime after each drain: sites born from now on wait for
  // the next drain's collect() to be symbolized.
  const_cast<code_sites::site_registry&>(sites_).drain_finished();
  const auto count = [](std::uint64_t value) { return static_cast<std::int64_t>(value); };
  metadata.emplace_back("ompt-tool", tool_started_.load() ? std::string{"started"}
                                                          : std::string{"not started"});
  if (!runtime_version_.empty()) metadata.emplace_back("ompt-runtime", runtime_version_);
  metadata.emplace_back("ompt-symbolizer", std::string{code_sites::symbolizer::method()});
  metadata.emplace_back("ompt-sites", count(sites_.size()));
  metadata.emplace_back("ompt-regions-dropped-too-deep",
                        count(losses_.too_deep.load(std::memory_order_relaxed)));
  metadata.emplace_back("ompt-region-ends-unmatched",
                        count(losses_.unmatched_ends.load(std::memory_order_relaxed)));
  metadata.emplace_back("ompt-region-ends-out-of-order",
                        count(losses_.out_of_order_ends.load(std::memory_order_relaxed)));
  metadata.emplace_back("ompt-threads-without-state",
                        count(losses_.no_thread_state.load(std::memory_order_relaxed)));
  std::lock_guard lock{devices_mutex_};
  if (!refused_callbacks_.empty()) metadata.emplace_back("ompt-callbacks-refused", refused_callbacks_);
  metadata.emplace_back("ompt-target-data-operations", count(data_ops_));
  metadata.emplace_back("ompt-trace-records", count(trace_counts_.records));
  metadata.emplace_back("ompt-trace-records-bad-timestamps-dropped", count(trace_counts_.bad_time));
  metadata.emplace_back("ompt-trace-buffers-refused",
                        count(trace_buffers_refused_.load(std::memory_order_relaxed)));
}

}  // namespace
}  // namespace ferret::ompt

// The OpenMP runtime looks this up at its initialisation: in the program's
// global scope when the library is linked in, or in the libraries that
// OMP_TOOL_LIBRARIES names (tools/ferret-run sets it).
extern "C" ompt_start_tool_result_t* ompt_start_tool(unsigned int omp_version,
                                                     const char* runtime_version) {
  return ferret::ompt::collector().start_tool(omp_version, runtime_version);
}

// Referenced by code built against ferret::ompt (see ferret/detail/abi.hpp).
extern "C" FERRET_EXPORT const int ferret_ompt_collector_v1 = 1;

namespace {
// A tracing run (FERRET_BACKEND set) whose OpenMP runtime never starts the
// tool (GNU libgomp) is told so at exit. Nothing else happens at load: the
// session starts with the tool, after the program's own static initialisers
// (which may register backends).
[[maybe_unused]] const bool checked_at_exit = [] {
  const char* backends = std::getenv("FERRET_BACKEND");
  if (backends != nullptr && *backends != '\0' && std::strcmp(backends, "none") != 0)
    std::atexit([] { ferret::ompt::collector().say_why_not_started(); });
  return true;
}();
}  // namespace
