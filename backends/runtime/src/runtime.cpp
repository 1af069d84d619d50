// runtime.cpp — per-thread event buffers, draining to backends, and the
// process lifecycle (start-up, exit, signals, fork).
//
// Memory: one arena of FERRET_BUFFER_SIZE bytes cut into chunks. A thread
// writes into its current chunk without locks (the inline hot path in
// ferret/detail/recorder.hpp); when the chunk is full it takes a free one
// under a per-thread mutex. A drain (background thread, full pool,
// ferret::flush(), exit) reads every thread's published events, hands them to
// the backends and returns consumed chunks to the pool. When no chunk is free,
// the thread that needs one drains synchronously rather than letting memory
// grow; only what still cannot be stored is dropped, and it is counted.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "clock.hpp"
#include "data_object_map.hpp"
#include "gpu_attribution.hpp"
#include "ferret/config.hpp"
#include "ferret/runtime/runtime.hpp"
#include "registry.hpp"
#include "settings.hpp"

namespace ferret::runtime::internal {
namespace {

using detail::event;
using detail::site;
using detail::thread_buffer;

// ---------------------------------------------------------------------------
// Small utilities

std::uint64_t current_tid() noexcept { return static_cast<std::uint64_t>(syscall(SYS_gettid)); }

// One line on stderr in a single write, so lines from threads and processes
// do not interleave.
template <class... Args>
void message(fmt::format_string<Args...> format, Args&&... args) noexcept {
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
std::string visible_name(std::string name) {
  if (name.find_first_not_of(" \t\n\r\v\f") == std::string::npos) return "(unnamed)";
  return name;
}

std::string read_file(const char* path) {
  std::ifstream in{path, std::ios::binary};
  return std::string{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

std::string executable_name() {
  char path[4096];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return "unknown";
  const std::string full{path, static_cast<std::size_t>(length)};
  return full.substr(full.rfind('/') + 1);
}

std::string command_line() {
  std::string arguments = read_file("/proc/self/cmdline");
  while (!arguments.empty() && arguments.back() == '\0') arguments.pop_back();
  std::replace(arguments.begin(), arguments.end(), '\0', ' ');
  return arguments;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// %p pid, %h host, %e executable, %% percent.
std::string expand_output(const std::string& pattern, const session_info& info) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    switch (pattern[++i]) {
      case 'p': out += std::to_string(info.pid); break;
      case 'h': out += info.hostname; break;
      case 'e': out += info.executable; break;
      case '%': out += '%'; break;
      default: out += '%'; out += pattern[i];
    }
  }
  return out;
}

bool is_directory(const std::string& path) {
  struct stat status{};
  return stat(path.c_str(), &status) == 0 && S_ISDIR(status.st_mode);
}

// ---------------------------------------------------------------------------
// Buffers

struct chunk {
  event* begin = nullptr;
  event* capacity_end = nullptr;
  event* filled = nullptr;  // end of its events once it stopped being current
};

// Slots of exited threads point here: pos == end sends late events to the
// slow path, which counts them instead of writing into a retired buffer.
thread_buffer g_retired_buffer{};
// Slots of a fork child's thread point here until it records again.
thread_buffer g_rebind_buffer{};

struct thread_state : thread_buffer {
  thread_state() : thread_buffer{} {}

  std::uint64_t tid = 0;
  bool is_main = false;
  // Owner only.
  event* capacity_end = nullptr;  // end of the current chunk (`end` is lower when the
                                  // hot path must not stamp events itself)
  std::chrono::steady_clock::time_point starved_until{};
  std::vector<thread_buffer**> slots;  // every shared object's slot bound to this state

  // Guarded by `mutex` (the owner switching chunks, the drainer reading).
  std::mutex mutex;
  std::deque<chunk*> chunks;  // oldest first; back() is current unless retired
  std::string name;
  bool retired = false;

  // Drainer only: consumed up to here in chunks.front() (nullptr: its begin),
  // and the calling context after the last drained event (nullptr: the root).
  event* drained = nullptr;
  const context_node* context = nullptr;
  // The interpreted call stack written inside the open API call, for its
  // correlation (see launch_context).
  const detail::call_stack* call_stack = nullptr;
};

// Trivially destructible, so still readable while the thread's TLS
// destructors run.
thread_local thread_state* t_state = nullptr;
thread_local bool t_exiting = false;
thread_local bool t_in_drain = false;

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
thread_local session* t_owner = nullptr;

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

  std::mutex threads_mutex;
  std::vector<thread_state*> threads;

  std::mutex pending_mutex;
  std::vector<pending_object_event> pending_objects;

  std::mutex drain_mutex;
  bool closed = false;  // the final drain is done (guarded by drain_mutex)
  std::thread drainer;
  int wake_pipe[2] = {-1, -1};
  std::atomic<bool> stopping{false};
  std::atomic<bool> finished{false};

  std::atomic<std::uint64_t> dropped_full{0};
  std::atomic<std::uint64_t> dropped_late{0};
  std::atomic<bool> warned_full{false};

  // Drainer only (under drain_mutex).
  std::uint64_t recorded = 0;
  std::unordered_map<const site*, std::unique_ptr<name_info>> names;
  static constexpr std::size_t name_cache_size = 64;
  std::pair<const site*, const name_info*> name_cache[name_cache_size] = {};
  std::vector<record> scratch;
  // GPU attribution (see gpu_attribution.hpp).
  std::uint64_t cycle = 0;
  metadata_list final_metadata;  // for the exit report
  context_tree contexts;
  launch_table launches;
  object_history objects;
  std::vector<gpu_activity> gpu_batch;
  std::vector<gpu_device_info> gpu_devices;
  std::vector<communicator_info> new_communicators;
  std::vector<communication_event> communication_batch;
  std::uint64_t gpu_operations = 0;
  std::uint64_t gpu_without_launch = 0;  // a correlation id no drained call carried
  std::uint64_t gpu_without_call = 0;    // no correlation id: the driver's own work

  chunk* take_chunk() {
    std::lock_guard lock{pool_mutex};
    if (free_chunks.empty()) return nullptr;
    chunk* c = free_chunks.back();
    free_chunks.pop_back();
    if (free_chunks.size() < chunk_storage.size() / 4) wake();
    return c;
  }
  void give_back(chunk* c) {
    c->filled = nullptr;
    std::lock_guard lock{pool_mutex};
    free_chunks.push_back(c);
    chunks_returned.fetch_add(1, std::memory_order_relaxed);
  }
  void wake() noexcept {
    const char byte = 1;
    [[maybe_unused]] const ssize_t ignored = ::write(wake_pipe[1], &byte, 1);
  }
  std::uint64_t dropped() const noexcept { return dropped_full + dropped_late; }
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
  void write(thread_buffer** slot, std::uint64_t word, std::uint64_t extra, unsigned slots);
  const site* intern_literal(thread_buffer** slot, const char* literal, const char* domain);
  const site* register_name(std::string_view text, const char* domain);
  void set_thread_name(thread_buffer** slot, std::string_view name);
  void set_metadata(std::string_view key, metadata_value value);
  std::uint64_t register_object(std::string_view name, const void* address, std::size_t bytes,
                                memory_kind memory, int device);
  void announce_removal(std::optional<data_object_info> removed);
  void unregister_object(std::uint64_t id);
  void unregister_object_at(const void* address);
  std::optional<data_object_info> find_object(const void* address);
  std::uint64_t find_object_id(const void* address);
  std::uint64_t clock_reading() noexcept;
  std::uint64_t register_allocation(std::string_view api, std::uint64_t correlation,
                                    const void* address, std::size_t bytes, memory_kind memory,
                                    int device);
  bool session_active();
  bool add_collector(collector* source);
  void join_process_group(process_group& group);
  const settings& configuration() const noexcept { return config_; }
  void flush();
  void set_recording(bool on);

  void finish(bool from_drainer);
  void on_signal();
  void fork_prepare();
  void fork_parent();
  void fork_child();

 private:
  runtime_state() = default;
  void initialize();
  bool start_session();
  void publish_mode();
  thread_state* bind(thread_buffer** slot);
  bool switch_chunk(session& s, thread_state& state);
  void retire(thread_state& state);
  void drain(session& s, bool final);
  void drain_locked(session& s, bool final);
  void deliver_objects(session& s);
  void deliver_gpu_activity(session& s);
  void deliver_communication(session& s);
  bool drain_thread(session& s, thread_state& state);
  const context_node* launch_context(session& s, thread_state& state);
  const name_info* name_of(session& s, const site* record_site);
  void drainer_loop(session& s);
  void report(session& s);

  friend struct thread_exit_hook;

  std::mutex init_mutex_;
  bool initialized_ = false;
  settings config_{};
  std::atomic<session*> current_{nullptr};
  // Sessions a fork child inherited and dropped, kept reachable on purpose.
  std::vector<session*> abandoned_;
  // A fork child starts its own session at its first event, so that children
  // that only exec() leave no empty output behind.
  std::atomic<bool> restart_on_first_event_{false};
  std::atomic<bool> recording_requested_{true};

  std::mutex flags_mutex_;
  std::vector<std::atomic<std::uint8_t>*> flags_;

  std::mutex sites_mutex_;
  std::map<std::pair<const char*, const char*>, std::unique_ptr<site>> literal_sites_;
  std::map<std::pair<std::string, const char*>, std::unique_ptr<site>> named_sites_;
  std::deque<std::string> site_names_;

  std::shared_mutex objects_mutex_;
  data_object_map objects_;
  std::atomic<std::uint64_t> next_object_id_{1};
  std::atomic<std::uint64_t> objects_refused_{0};

  std::mutex metadata_mutex_;
  metadata_list user_metadata_;
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
thread_local thread_exit_hook t_exit_hook;

// ---------------------------------------------------------------------------
// Start-up

void on_process_exit() { runtime_state::instance().finish(false); }

// Time zero of the traces: when the runtime was loaded, before main() (or the
// fork, in a child).
std::int64_t g_process_start_ns = monotonic_raw_ns();

std::atomic<bool> g_signal_pending{false};
std::atomic<bool> g_signal_flush_done{false};
std::atomic<session*> g_signal_session{nullptr};

// Best effort: the drainer thread writes the output (a handler cannot safely
// allocate or lock); the handler waits a bounded time, then lets the signal
// take its default action.
void on_terminate_signal(int signal_number) {
  const int saved_errno = errno;
  if (!g_signal_pending.exchange(true)) {
    if (session* s = g_signal_session.load()) s->wake();
    for (int waited_ms = 0; waited_ms < 5000 && !g_signal_flush_done.load(); waited_ms += 5) {
      const timespec pause{0, 5'000'000};
      nanosleep(&pause, nullptr);
    }
  }
  errno = saved_errno;
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

void install_signal_handlers() {
  for (const int signal_number : {SIGINT, SIGTERM}) {
    struct sigaction current{};
    if (sigaction(signal_number, nullptr, &current) != 0) continue;
    // Never replace the application's own handler.
    if (current.sa_handler != SIG_DFL || (current.sa_flags & SA_SIGINFO) != 0) continue;
    struct sigaction handler{};
    handler.sa_handler = on_terminate_signal;
    sigemptyset(&handler.sa_mask);
    handler.sa_flags = SA_RESTART;
    sigaction(signal_number, &handler, nullptr);
  }
}

void runtime_state::initialize() {
  std::string error;
  const auto parsed = parse_settings([](const char* name) -> const char* { return std::getenv(name); },
                                     error);
  if (!parsed) {
    message("{}; running untraced", error);
    return;
  }
  config_ = *parsed;
  if (config_.backends.empty()) return;
  std::atexit(on_process_exit);
  pthread_atfork([] { instance().fork_prepare(); }, [] { instance().fork_parent(); },
                 [] { instance().fork_child(); });
  if (start_session()) install_signal_handlers();
}

bool runtime_state::start_session() {
  auto s = std::make_unique<session>();
  s->config = config_;
  session_info& info = s->info;
  info.pid = static_cast<std::uint32_t>(getpid());
  info.hostname = host_name();
  info.executable = executable_name();
  info.command_line = command_line();
  info.ferret_version = FERRET_VERSION_STRING;

  const bool invariant = hardware_counter_is_invariant();
  const bool hardware = config_.clock == clock_choice::tsc ||
                        (config_.clock == clock_choice::automatic && invariant);
  if (config_.clock == clock_choice::tsc && !invariant)
    message("FERRET_CLOCK=tsc, but this CPU does not report an invariant counter: "
            "timestamps from different cores may disagree");
  s->clock.start(hardware, g_process_start_ns);
  info.clock_source = s->clock.source_name();
  // The clock itself never sees the test offset: only what the session publishes.
  info.start_monotonic_raw_ns = s->clock.start_monotonic_raw_ns() + test_clock_offset_ns();
  info.start_realtime_ns = s->clock.start_realtime_ns();

  backend_context context{&s->info, expand_output(config_.output, info), false};
  const bool wants_directory = !context.output.empty() && context.output.back() == '/';
  // Processes started together (MPI ranks) may race to create it: EEXIST is fine.
  if (wants_directory && !is_directory(context.output) && mkdir(context.output.c_str(), 0755) != 0 &&
      !(errno == EEXIST && is_directory(context.output))) {
    message("cannot create the output directory '{}' (FERRET_OUTPUT): {}; running untraced",
            context.output, std::strerror(errno));
    return false;
  }
  context.output_is_directory = wants_directory || is_directory(context.output);

  for (const std::string& name : config_.backends) {
    const backend_factory factory = find_backend(name);
    std::string error;
    std::unique_ptr<backend> created;
    if (factory == nullptr) {
      const std::vector<std::string> names = available_backends();
      error = fmt::format("unknown backend '{}' in FERRET_BACKEND (available: {})", name,
                          names.empty() ? std::string{"none installed"} : fmt::format("{}", fmt::join(names, ", ")));
    } else {
      created = factory(context, error);
      if (created == nullptr && error.empty()) error = fmt::format("backend '{}' failed to start", name);
    }
    if (created == nullptr) {
      message("{}; running untraced", error);
      for (auto& started : s->backends) started->abandon();
      return false;
    }
    s->backends.push_back(std::move(created));
  }

  // Chunks of 1/64 of the buffer, between 4 KiB and 64 KiB: small buffers
  // still get enough chunks for several threads.
  const std::size_t chunk_bytes =
      std::clamp<std::size_t>(config_.buffer_bytes / 64, 4096, 65536) / sizeof(event) * sizeof(event);
  s->chunk_events = chunk_bytes / sizeof(event);
  const std::size_t chunk_count = config_.buffer_bytes / chunk_bytes;
  // Anonymous memory: pages cost nothing until a thread first writes them.
  void* arena = mmap(nullptr, chunk_count * chunk_bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (arena == MAP_FAILED || pipe2(s->wake_pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
    message("cannot reserve {} bytes of event buffers (FERRET_BUFFER_SIZE): {}; running untraced",
            config_.buffer_bytes, std::strerror(errno));
    for (auto& started : s->backends) started->abandon();
    return false;
  }
  s->chunk_storage.resize(chunk_count);
  s->free_chunks.reserve(chunk_count);
  for (std::size_t i = 0; i < chunk_count; ++i) {
    chunk& c = s->chunk_storage[i];
    c.begin = static_cast<event*>(arena) + i * s->chunk_events;
    c.capacity_end = c.begin + s->chunk_events;
    s->free_chunks.push_back(&s->chunk_storage[chunk_count - 1 - i]);
  }
  s->scratch.reserve(s->chunk_events);

  session* started = s.release();
  // Wait until the drain thread runs: a fork() while it is still being set up
  // (its C library and sanitizer start-up allocate) can leave the child with
  // an allocator lock held by a thread it does not have. Seen under GCC 12's
  // AddressSanitizer: fork children hung in their first thread's start.
  std::promise<void> drainer_running;
  std::future<void> running = drainer_running.get_future();
  started->drainer = std::thread{[this, started, &drainer_running] {
    drainer_running.set_value();
    drainer_loop(*started);
  }};
  running.wait();
  g_signal_session.store(started);
  current_.store(started, std::memory_order_release);
  if (config_.verbose >= 2)
    message("recording to {} backend(s); clock {}; {} chunks of {} events; output '{}'",
            started->backends.size(), info.clock_source, chunk_count, started->chunk_events,
            context.output);
  publish_mode();
  return true;
}

void runtime_state::publish_mode() {
  session* s = current_.load(std::memory_order_acquire);
  const bool on = recording_requested_.load() &&
                  ((s != nullptr && !s->finished.load()) || restart_on_first_event_.load());
  std::lock_guard lock{flags_mutex_};
  for (auto* flag : flags_)
    flag->store(on ? detail::mode_recording : detail::mode_off, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------
// Writing

thread_state* runtime_state::bind(thread_buffer** slot) {
  session* s = current_.load(std::memory_order_acquire);
  if (s == nullptr && restart_on_first_event_.load()) {
    std::lock_guard lock{init_mutex_};
    if (restart_on_first_event_.exchange(false)) start_session();
    s = current_.load(std::memory_order_acquire);
  }
  if (s == nullptr || s->finished.load(std::memory_order_relaxed)) return nullptr;
  if (*slot == &g_retired_buffer || (t_exiting && t_state == nullptr)) {
    s->dropped_late.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  if (t_state != nullptr && t_owner == s) {
    if (*slot != t_state) {
      t_state->slots.push_back(slot);
      *slot = t_state;
    }
    return t_state;
  }
  auto* state = new thread_state;
  state->tid = current_tid();
  state->is_main = state->tid == s->info.pid;
  // A name the application gave the thread (pthread_setname_np) is the
  // default; a thread that only inherited the executable's name has none.
  char os_name[16] = {};
  if (!state->is_main && pthread_getname_np(pthread_self(), os_name, sizeof os_name) == 0 &&
      std::string_view{os_name} != std::string_view{s->info.executable}.substr(0, 15))
    state->name = os_name;
  state->slots.push_back(slot);
  {
    std::lock_guard lock{s->threads_mutex};
    s->threads.push_back(state);
  }
  t_exit_hook.armed = true;  // registers the TLS destructor
  t_state = state;
  t_owner = s;
  *slot = state;
  return state;
}

bool runtime_state::switch_chunk(session& s, thread_state& state) {
  const auto now = std::chrono::steady_clock::now();
  if (now < state.starved_until) return false;
  chunk* fresh = s.take_chunk();
  // The bound is reached: empty the buffers into the backends rather than
  // grow, for as long as draining frees chunks (other threads may take the
  // freed ones first). The writer then runs at the backends' pace.
  while (fresh == nullptr && !t_in_drain) {
    const std::uint64_t returned_before = s.chunks_returned.load();
    drain(s, false);
    fresh = s.take_chunk();
    if (fresh == nullptr && s.chunks_returned.load() == returned_before) break;
  }
  if (fresh == nullptr) {
    // Every chunk is some thread's current one: drop for a while rather than
    // drain on every event.
    state.starved_until = now + std::chrono::milliseconds{10};
    if (!s.warned_full.exchange(true))
      message("event buffers are full (FERRET_BUFFER_SIZE={} bytes, every chunk held by a "
              "thread); dropping events, which will be counted",
              s.config.buffer_bytes);
    return false;
  }
  std::lock_guard lock{state.mutex};
  if (!state.chunks.empty()) state.chunks.back()->filled = state.pos.load(std::memory_order_relaxed);
  state.chunks.push_back(fresh);
  state.pos.store(fresh->begin, std::memory_order_release);
  state.capacity_end = fresh->capacity_end;
  state.end = s.clock.hot_path_stamps() ? state.capacity_end : fresh->begin;
  return true;
}

void runtime_state::write(thread_buffer** slot, std::uint64_t word, std::uint64_t extra,
                          unsigned slots) {
  thread_state* state = bind(slot);
  if (state == nullptr || !recording_requested_.load(std::memory_order_relaxed)) return;
  session& s = *t_owner;
  event* at = state->pos.load(std::memory_order_relaxed);
  if (static_cast<std::size_t>(state->capacity_end - at) < slots) {
    if (!switch_chunk(s, *state)) {
      s.dropped_full.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    at = state->pos.load(std::memory_order_relaxed);
  }
  const std::uint64_t raw = s.clock.read();
  at->time_lo = static_cast<std::uint32_t>(raw);
  at->time_hi = static_cast<std::uint32_t>(raw >> 32);
  at->word = word;
  if (slots == 2) at[1] = event{0, 0, extra};
  state->pos.store(at + slots, std::memory_order_release);
  // Without a hot-path clock, keep end == pos so every event comes here.
  state->end = s.clock.hot_path_stamps() ? state->capacity_end : at + slots;
}

void runtime_state::retire(thread_state& state) {
  // The main thread's buffer stays open: static destructors run after its
  // TLS destructors and may still annotate; the exit drain takes it.
  if (state.is_main) return;
  for (thread_buffer** slot : state.slots) *slot = &g_retired_buffer;
  t_state = nullptr;
  std::lock_guard lock{state.mutex};
  if (!state.chunks.empty()) state.chunks.back()->filled = state.pos.load(std::memory_order_relaxed);
  state.retired = true;
}

// ---------------------------------------------------------------------------
// Names

const site* runtime_state::intern_literal(thread_buffer** slot, const char* literal,
                                          const char* domain) {
  const site* interned = nullptr;
  {
    std::lock_guard lock{sites_mutex_};
    auto& entry = literal_sites_[{literal, domain}];
    if (!entry) entry = std::make_unique<site>(site{literal, domain, nullptr, nullptr, 0, 0});
    interned = entry.get();
  }
  if (thread_state* state = bind(slot)) {
    auto& cached = state->literal_slot(literal);
    cached = {literal, domain, interned};
  }
  return interned;
}

const site* runtime_state::register_name(std::string_view text, const char* domain) {
  std::lock_guard lock{sites_mutex_};
  auto& entry = named_sites_[{std::string{text}, domain}];
  if (!entry) {
    const std::string& stored = site_names_.emplace_back(text);
    entry = std::make_unique<site>(site{stored.c_str(), domain, nullptr, nullptr, 0, 0});
  }
  return entry.get();
}

const name_info* runtime_state::name_of(session& s, const site* record_site) {
  // A small direct-mapped cache in front of the map: a thread's events reuse
  // few sites, and this runs once per drained event.
  auto& cached = s.name_cache[(reinterpret_cast<std::uintptr_t>(record_site) >> 3) %
                              session::name_cache_size];
  if (cached.first == record_site) return cached.second;
  auto& info = s.names[record_site];
  if (!info) {
    const auto text = [](const char* p) { return p != nullptr ? std::string{p} : std::string{}; };
    info = std::make_unique<name_info>(name_info{static_cast<std::uint32_t>(s.names.size() - 1),
                                                 visible_name(text(record_site->name)),
                                                 text(record_site->domain),
                                                 text(record_site->function),
                                                 text(record_site->file), record_site->line});
  }
  cached = {record_site, info.get()};
  return info.get();
}

void runtime_state::set_thread_name(thread_buffer** slot, std::string_view name) {
  if (thread_state* state = bind(slot)) {
    std::lock_guard lock{state->mutex};
    state->name = name;
  }
}

void runtime_state::set_metadata(std::string_view key, metadata_value value) {
  std::lock_guard lock{metadata_mutex_};
  for (auto& [existing, stored] : user_metadata_) {
    if (existing == key) {
      stored = std::move(value);
      return;
    }
  }
  user_metadata_.emplace_back(std::string{key}, std::move(value));
}

// ---------------------------------------------------------------------------
// Data objects

std::uint64_t runtime_state::register_object(std::string_view name, const void* address,
                                             std::size_t bytes, memory_kind memory, int device) {
  const data_object_info object{next_object_id_.fetch_add(1), visible_name(std::string{name}),
                                reinterpret_cast<std::uintptr_t>(address), bytes, memory, device};
  data_object_map::insert_result result;
  std::string overlapped;
  {
    std::unique_lock lock{objects_mutex_};
    result = objects_.insert(object);
    if (result == data_object_map::insert_result::partial_overlap) {
      const data_object_info* other = objects_.find(object.address);
      if (other == nullptr) other = objects_.find(object.address + object.bytes - 1);
      if (other != nullptr) overlapped = other->name;
    }
  }
  if (result != data_object_map::insert_result::inserted) {
    if (objects_refused_.fetch_add(1) == 0)
      message("data object '{}' [{:#x}, +{}) {}; not registered (later refusals are counted "
              "in the output's metadata)",
              object.name, object.address, object.bytes,
              result == data_object_map::insert_result::empty_range
                  ? std::string{"is empty"}
                  : fmt::format("partially overlaps the live object '{}' (memory reused "
                                "without unregistering?)",
                                overlapped));
    return 0;
  }
  if (session* s = current_.load(std::memory_order_acquire)) {
    std::lock_guard lock{s->pending_mutex};
    s->pending_objects.push_back(
        {s->clock.read(), data_object_change::registered, current_tid(), object});
  }
  return object.id;
}

std::uint64_t runtime_state::clock_reading() noexcept {
  session* s = current_.load(std::memory_order_acquire);
  return s != nullptr ? s->clock.read() : 0;
}

std::uint64_t runtime_state::register_allocation(std::string_view api, std::uint64_t correlation,
                                                 const void* address, std::size_t bytes,
                                                 memory_kind memory, int device) {
  // Named after the call until the drain knows the call's calling context.
  const std::uint64_t id = register_object(api, address, bytes, memory, device);
  if (id == 0) return 0;
  if (session* s = current_.load(std::memory_order_acquire)) {
    std::lock_guard lock{s->pending_mutex};
    for (auto it = s->pending_objects.rbegin(); it != s->pending_objects.rend(); ++it)
      if (it->object.id == id && it->change == data_object_change::registered) {
        it->correlation = correlation;
        it->api = std::string{api};
        break;
      }
  }
  return id;
}

// Queues the end of a removed object's lifetime for the backends.
void runtime_state::announce_removal(std::optional<data_object_info> removed) {
  if (!removed) return;
  if (session* s = current_.load(std::memory_order_acquire)) {
    std::lock_guard lock{s->pending_mutex};
    s->pending_objects.push_back(
        {s->clock.read(), data_object_change::unregistered, current_tid(), std::move(*removed)});
  }
}

void runtime_state::unregister_object(std::uint64_t id) {
  std::optional<data_object_info> removed;
  {
    std::unique_lock lock{objects_mutex_};
    removed = objects_.erase(id);
  }
  announce_removal(std::move(removed));
}

void runtime_state::unregister_object_at(const void* address) {
  std::optional<data_object_info> removed;
  {
    std::unique_lock lock{objects_mutex_};
    removed = objects_.erase_at(reinterpret_cast<std::uintptr_t>(address));
  }
  announce_removal(std::move(removed));
}

std::optional<data_object_info> runtime_state::find_object(const void* address) {
  std::shared_lock lock{objects_mutex_};
  if (const data_object_info* found = objects_.find(reinterpret_cast<std::uintptr_t>(address)))
    return *found;
  return std::nullopt;
}

std::uint64_t runtime_state::find_object_id(const void* address) {
  std::shared_lock lock{objects_mutex_};
  const data_object_info* found = objects_.find(reinterpret_cast<std::uintptr_t>(address));
  return found != nullptr ? found->id : 0;
}

// ---------------------------------------------------------------------------
// Collectors

bool runtime_state::session_active() {
  {
    std::lock_guard lock{init_mutex_};
    if (!initialized_) {
      initialized_ = true;
      initialize();
    }
  }
  return current_.load(std::memory_order_acquire) != nullptr;
}

bool runtime_state::add_collector(collector* source) {
  if (!session_active()) return false;
  std::lock_guard lock{collectors_mutex_};
  if (std::find(collectors_.begin(), collectors_.end(), source) == collectors_.end())
    collectors_.push_back(source);
  return true;
}

// ---------------------------------------------------------------------------
// Draining

void runtime_state::drain(session& s, bool final) {
  std::lock_guard lock{s.drain_mutex};
  // After the final drain the backends are closed: a writer racing exit()
  // must not reach them again.
  if (s.closed) return;
  t_in_drain = true;
  drain_locked(s, final);
  t_in_drain = false;
  if (final) s.closed = true;
}

bool runtime_state::drain_thread(session& s, thread_state& state) {
  std::vector<chunk*> chunks;
  event* published = nullptr;
  bool retired = false;
  std::string name;
  {
    std::lock_guard lock{state.mutex};
    // A loop rather than assign(): g++ 12 -O3 warns falsely (-Wnonnull) on
    // assigning a deque's range to a vector.
    chunks.reserve(state.chunks.size());
    for (chunk* c : state.chunks) chunks.push_back(c);
    published = state.pos.load(std::memory_order_acquire);
    retired = state.retired;
    name = state.name;
  }
  const thread_info thread{s.info.pid, state.tid, name, state.is_main};
  if (state.context == nullptr) state.context = s.contexts.root();
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const chunk& c = *chunks[i];
    const bool current = i + 1 == chunks.size() && !retired;
    const event* from = (i == 0 && state.drained != nullptr) ? state.drained : c.begin;
    const event* to = current ? published : c.filled;
    s.scratch.clear();
    while (from < to) {
      const std::uint64_t word = from->word;
      const auto* record_site = reinterpret_cast<const site*>(word & ~std::uint64_t{detail::kind_mask});
      const std::uint64_t raw = (std::uint64_t{from->time_hi} << 32) | from->time_lo;
      record r{s.clock.to_ns(raw), record_kind::mark, name_of(s, record_site), 0.0};
      switch (word & detail::kind_mask) {
        case detail::kind_begin:
          r.kind = record_kind::region_begin;
          state.context = s.contexts.enter(state.context, r.name);
          state.call_stack = nullptr;
          break;
        case detail::kind_end:
          r.kind = record_kind::region_end;
          state.context = context_tree::leave(state.context, r.name);
          state.call_stack = nullptr;
          break;
        case detail::kind_mark: r.kind = record_kind::mark; break;
        case detail::kind_counter:
          r.kind = record_kind::counter;
          if (from + 1 < to) std::memcpy(&r.value, &from[1].word, sizeof r.value);
          ++from;
          break;
        case detail::kind_correlation:
          // Not a record for the backends: it ties GPU work to this context.
          if (from + 1 < to)
            s.launches.record(from[1].word, state.tid, r.time_ns, launch_context(s, state), s.cycle);
          from += 2;
          continue;
        case detail::kind_call_stack:
          // Neither: context for the correlation that follows.
          if (from + 1 < to) state.call_stack = reinterpret_cast<const detail::call_stack*>(from[1].word);
          from += 2;
          continue;
        default: break;
      }
      ++from;
      s.scratch.push_back(r);
    }
    s.recorded += s.scratch.size();
    if (!s.scratch.empty())
      for (auto& out : s.backends) out->thread_records(thread, s.scratch.data(), s.scratch.size());
  }
  std::lock_guard lock{state.mutex};
  const std::size_t consumed = retired ? chunks.size() : (chunks.empty() ? 0 : chunks.size() - 1);
  for (std::size_t i = 0; i < consumed; ++i) {
    s.give_back(state.chunks.front());
    state.chunks.pop_front();
  }
  state.drained = retired ? nullptr : published;
  return retired;
}

// The calling context of GPU work launched by the API call open on the
// thread: the thread's regions, then the interpreted frames written inside the
// call (Python), then the call itself. The frames are context for the GPU work
// only: the thread's own context (its host regions) stays as it was.
const context_node* runtime_state::launch_context(session& s, thread_state& state) {
  const detail::call_stack* stack = std::exchange(state.call_stack, nullptr);
  const context_node* call = state.context;
  if (stack == nullptr) return call;
  const bool in_call = call->parent != nullptr;
  const context_node* at = in_call ? call->parent : call;
  for (std::uint32_t i = 0; i < stack->depth; ++i)
    at = s.contexts.enter(at, name_of(s, stack->frames[i]));
  return in_call ? s.contexts.enter(at, call->name) : at;
}

void runtime_state::deliver_objects(session& s) {
  std::vector<pending_object_event> objects;
  {
    std::lock_guard lock{s.pending_mutex};
    objects.swap(s.pending_objects);
  }
  for (pending_object_event& pending : objects) {
    if (pending.change == data_object_change::registered) {
      if (pending.correlation != 0) {
        // Not matched: the allocating call was not drained (recording paused).
        const std::optional<gpu_launch> launch = s.launches.find(pending.correlation, s.cycle);
        pending.object.allocated_in = launch ? launch->context : s.contexts.root();
        pending.object.name = allocation_name(pending.api, pending.object.allocated_in);
      }
      s.objects.registered(pending.object);
    } else if (const data_object_info* known = s.objects.find(pending.object.id)) {
      pending.object = *known;  // the name the registration was announced with
      s.objects.released(pending.object.id, s.cycle);
    }
    const data_object_event change{s.clock.to_ns(pending.raw_time), pending.change, pending.tid,
                                   &pending.object};
    for (auto& out : s.backends) out->data_object(change);
  }
}

void runtime_state::deliver_gpu_activity(session& s) {
  for (const gpu_device_info& device : s.gpu_devices)
    for (auto& out : s.backends) out->gpu_device(device);
  s.gpu_devices.clear();
  for (gpu_activity& activity : s.gpu_batch) {
    activity.start_ns -= s.info.start_monotonic_raw_ns;
    activity.end_ns -= s.info.start_monotonic_raw_ns;
    if (activity.launch.correlation == 0) {
      // Not started by an API call (e.g. the static memory of a module the
      // driver loads): there is no launch to find.
      ++s.gpu_without_call;
    } else if (const std::optional<gpu_launch> launch =
                   s.launches.find(activity.launch.correlation, s.cycle)) {
      activity.launch = *launch;
    } else if (++s.gpu_without_launch <= 5 && s.config.verbose >= 2) {
      message("GPU {} without a launch seen: correlation {}, device {}, stream {}, {} bytes",
              to_string(activity.operation), activity.launch.correlation, activity.device,
              activity.stream, activity.bytes);
    }
    activity.source_object =
        activity.source_object_id != 0 ? s.objects.find(activity.source_object_id) : nullptr;
    activity.destination_object =
        activity.destination_object_id != 0 ? s.objects.find(activity.destination_object_id) : nullptr;
  }
  s.gpu_operations += s.gpu_batch.size();
  if (!s.gpu_batch.empty())
    for (auto& out : s.backends) out->gpu_activities(s.gpu_batch.data(), s.gpu_batch.size());
  s.gpu_batch.clear();
  s.launches.evict(s.cycle);
  s.objects.evict(s.cycle);
}

void runtime_state::deliver_communication(session& s) {
  for (const communicator_info& communicator : s.new_communicators)
    for (auto& out : s.backends) out->communicator(communicator);
  s.new_communicators.clear();
  for (communication_event& event : s.communication_batch)
    event.time_ns = s.clock.to_ns(static_cast<std::uint64_t>(event.time_ns));
  if (!s.communication_batch.empty())
    for (auto& out : s.backends)
      out->communication(s.communication_batch.data(), s.communication_batch.size());
  s.communication_batch.clear();
}

void runtime_state::drain_locked(session& s, bool final) {
  ++s.cycle;
  s.clock.add_sync_point();

  // Collectors first: every operation they hand over was launched before
  // this point, so its launch is among the events drained below.
  std::vector<collector*> collectors;
  {
    std::lock_guard lock{collectors_mutex_};
    collectors = collectors_;
  }
  for (collector* source : collectors) {
    source->collect(s.gpu_batch, s.gpu_devices, final);
    source->collect_communication(s.new_communicators, s.communication_batch, final);
  }
  // Before the threads' records: a backend that writes each thread's events in
  // time order holds these until the records around them arrive.
  deliver_communication(s);

  std::vector<thread_state*> threads;
  {
    std::lock_guard lock{s.threads_mutex};
    threads = s.threads;
  }
  for (thread_state* state : threads) {
    if (!drain_thread(s, *state)) continue;
    // Retired and emptied: nobody refers to it any more.
    {
      std::lock_guard lock{s.threads_mutex};
      s.threads.erase(std::find(s.threads.begin(), s.threads.end(), state));
    }
    delete state;
  }
  deliver_objects(s);
  deliver_gpu_activity(s);

  metadata_list runtime_metadata{
      {"buffer-bytes", static_cast<std::int64_t>(s.config.buffer_bytes)},
      {"flush-interval-ms", static_cast<std::int64_t>(s.config.flush_interval_ms)},
      {"events-dropped-buffer-full", static_cast<std::int64_t>(s.dropped_full.load())},
      {"events-dropped-after-thread-exit", static_cast<std::int64_t>(s.dropped_late.load())},
      {"data-objects-refused", static_cast<std::int64_t>(objects_refused_.load())},
  };
  if (const double hz = s.clock.ticks_per_second(); hz > 0)
    runtime_metadata.insert(runtime_metadata.begin(), {"clock-ticks-per-second", hz});
  {
    std::lock_guard lock{metadata_mutex_};
    runtime_metadata.insert(runtime_metadata.end(), process_metadata_.begin(),
                            process_metadata_.end());
  }
  if (!collectors.empty()) {
    runtime_metadata.emplace_back("gpu-operations", static_cast<std::int64_t>(s.gpu_operations));
    runtime_metadata.emplace_back("gpu-operations-without-launch",
                                  static_cast<std::int64_t>(s.gpu_without_launch));
    runtime_metadata.emplace_back("gpu-operations-without-api-call",
                                  static_cast<std::int64_t>(s.gpu_without_call));
    for (collector* source : collectors) source->add_metadata(runtime_metadata);
  }
  if (final) s.final_metadata = runtime_metadata;
  metadata_list user_metadata;
  {
    std::lock_guard lock{metadata_mutex_};
    user_metadata = user_metadata_;
  }
  const session_status status{&runtime_metadata, &user_metadata, s.recorded, s.dropped(), final};
  for (auto& out : s.backends) out->flush(status);
}

void runtime_state::drainer_loop(session& s) {
  // Terminal signals go to application threads, whose handler waits for us.
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGINT);
  sigaddset(&blocked, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
  pthread_setname_np(pthread_self(), "ferret-drain");

  const int timeout = s.config.flush_interval_ms == 0 ? -1 : static_cast<int>(s.config.flush_interval_ms);
  while (!s.stopping.load()) {
    pollfd wake{s.wake_pipe[0], POLLIN, 0};
    poll(&wake, 1, timeout);
    char bytes[64];
    while (::read(s.wake_pipe[0], bytes, sizeof bytes) > 0) {
    }
    if (g_signal_pending.load()) {
      finish(true);
      g_signal_flush_done.store(true);
      return;
    }
    if (s.stopping.load()) return;
    drain(s, false);
  }
}

// ---------------------------------------------------------------------------
// Exit, flush, pause

void runtime_state::report(session& s) {
  if (s.config.verbose >= 1)
    for (auto& out : s.backends) message("{}", out->describe());
  if (const std::uint64_t lost = s.dropped(); lost > 0)
    message("{} events were dropped: {} with the buffers full (raise FERRET_BUFFER_SIZE, now {} "
            "bytes), {} after their thread had exited",
            lost, s.dropped_full.load(), s.config.buffer_bytes, s.dropped_late.load());
  // Collectors' losses (e.g. records CUPTI dropped) and unattributed GPU work.
  for (const auto& [key, value] : s.final_metadata) {
    const auto* count = std::get_if<std::int64_t>(&value);
    if (count != nullptr && *count > 0 &&
        (key.find("dropped") != std::string::npos || key == "gpu-operations-without-launch") &&
        key.rfind("events-dropped", 0) != 0)
      message("{}: {}", key, *count);
  }
}

void runtime_state::finish(bool from_drainer) {
  session* s = current_.load(std::memory_order_acquire);
  if (s == nullptr || s->finished.exchange(true)) return;
  if (!from_drainer) g_signal_session.store(nullptr);
  publish_mode();
  s->stopping.store(true);
  s->wake();
  if (!from_drainer && s->drainer.joinable()) s->drainer.join();
  drain(*s, true);
  report(*s);
}

void runtime_state::join_process_group(process_group& group) {
  {
    std::lock_guard lock{metadata_mutex_};
    const std::string paradigm{group.paradigm()};
    process_metadata_ = {{paradigm + "-rank", static_cast<std::int64_t>(group.rank())},
                         {paradigm + "-size", static_cast<std::int64_t>(group.size())}};
  }
  session* s = current_.load(std::memory_order_acquire);
  if (s == nullptr || s->finished.load()) return;
  std::lock_guard lock{s->drain_mutex};  // backends' calls are serialised
  if (s->closed) return;
  for (auto& out : s->backends) out->join_process_group(group);
}

void runtime_state::flush() {
  if (session* s = current_.load(std::memory_order_acquire); s != nullptr && !s->finished && !t_in_drain)
    drain(*s, false);
}

void runtime_state::set_recording(bool on) {
  recording_requested_.store(on);
  publish_mode();
}

// ---------------------------------------------------------------------------
// fork(): the child must neither write the parent's buffered events nor touch
// its output. Locks are taken around fork so the child sees consistent state.

void runtime_state::fork_prepare() {
  init_mutex_.lock();
  if (session* s = current_.load()) {
    s->drain_mutex.lock();
    s->threads_mutex.lock();
    s->pending_mutex.lock();
    s->pool_mutex.lock();
  }
  objects_mutex_.lock();
  sites_mutex_.lock();
  flags_mutex_.lock();
  metadata_mutex_.lock();
}

void runtime_state::fork_parent() {
  metadata_mutex_.unlock();
  flags_mutex_.unlock();
  sites_mutex_.unlock();
  objects_mutex_.unlock();
  if (session* s = current_.load()) {
    s->pool_mutex.unlock();
    s->pending_mutex.unlock();
    s->threads_mutex.unlock();
    s->drain_mutex.unlock();
  }
  init_mutex_.unlock();
}

void runtime_state::fork_child() {
  metadata_mutex_.unlock();
  flags_mutex_.unlock();
  sites_mutex_.unlock();
  objects_mutex_.unlock();
  init_mutex_.unlock();
  session* parent = current_.exchange(nullptr);
  if (parent == nullptr) return;
  abandoned_.push_back(parent);
  // The parent's session is abandoned as it is (its drainer does not exist here).
  for (auto& out : parent->backends) out->abandon();
  {
    std::lock_guard lock{collectors_mutex_};
    for (collector* source : collectors_) source->abandon();
    collectors_.clear();
  }
  if (t_state != nullptr) {
    for (thread_buffer** slot : t_state->slots) *slot = &g_rebind_buffer;
    t_state = nullptr;
    t_owner = nullptr;
  }
  g_signal_session.store(nullptr);
  g_process_start_ns = monotonic_raw_ns();
  const std::string& output = config_.output;
  const bool per_process = output.find("%p") != std::string::npos || output.back() == '/' ||
                           is_directory(output);
  if (per_process) {
    restart_on_first_event_.store(true);
  } else if (config_.verbose >= 2) {
    message("fork child {} is not traced: FERRET_OUTPUT='{}' names one file for all processes "
            "(put %p in it to trace children)",
            getpid(), output);
  }
  publish_mode();
}

// ---------------------------------------------------------------------------
// The function table handed to annotated code. Nothing may throw across it.

template <class F>
auto guarded(F&& body, decltype(body()) fallback) noexcept -> decltype(body()) {
  try {
    return body();
  } catch (...) {
    return fallback;
  }
}

runtime_state& rt() { return runtime_state::instance(); }

const detail::runtime_api api_table{
    detail::abi_version,
    sizeof(detail::runtime_api),
    [](thread_buffer** slot, std::uint64_t word, std::uint64_t extra, unsigned slots) noexcept {
      try {
        rt().write(slot, word, extra, slots);
      } catch (...) {
      }
    },
    [](thread_buffer** slot, const char* literal, const char* domain) noexcept {
      return guarded([&] { return rt().intern_literal(slot, literal, domain); }, nullptr);
    },
    [](const char* name, std::size_t length, const char* domain) noexcept {
      return guarded([&] { return rt().register_name({name, length}, domain); }, nullptr);
    },
    [](thread_buffer** slot, const char* name, std::size_t length) noexcept {
      try {
        rt().set_thread_name(slot, {name, length});
      } catch (...) {
      }
    },
    [](const char* key, std::size_t key_length, const char* value, std::size_t value_length) noexcept {
      try {
        rt().set_metadata({key, key_length}, std::string{value, value_length});
      } catch (...) {
      }
    },
    [](const char* key, std::size_t key_length, double value, bool is_integer) noexcept {
      try {
        rt().set_metadata({key, key_length},
                          is_integer ? metadata_value{static_cast<std::int64_t>(value)}
                                     : metadata_value{value});
      } catch (...) {
      }
    },
    [](const char* name, std::size_t length, const void* address, std::size_t bytes,
       memory_kind memory, int device) noexcept {
      return guarded(
          [&] { return rt().register_object({name, length}, address, bytes, memory, device); },
          std::uint64_t{0});
    },
    [](std::uint64_t id) noexcept {
      try {
        rt().unregister_object(id);
      } catch (...) {
      }
    },
    [](const void* address) noexcept {
      try {
        rt().unregister_object_at(address);
      } catch (...) {
      }
    },
    []() noexcept {
      try {
        rt().flush();
      } catch (...) {
      }
    },
    [](bool on) noexcept { rt().set_recording(on); },
};

const detail::runtime_api* runtime_state::attach(std::atomic<std::uint8_t>* flag) {
  {
    std::lock_guard lock{init_mutex_};
    if (!initialized_) {
      initialized_ = true;
      initialize();
    }
  }
  {
    std::lock_guard lock{flags_mutex_};
    if (std::find(flags_.begin(), flags_.end(), flag) == flags_.end()) flags_.push_back(flag);
  }
  publish_mode();
  return &api_table;
}

}  // namespace
}  // namespace ferret::runtime::internal

namespace ferret::runtime {

std::optional<data_object_info> find_data_object(const void* address) {
  return internal::rt().find_object(address);
}

std::vector<std::string> available_backends() { return internal::available_backends(); }

std::uint64_t find_data_object_id(const void* address) noexcept {
  try {
    return internal::rt().find_object_id(address);
  } catch (...) {
    return 0;
  }
}

bool session_active() noexcept {
  try {
    return internal::rt().session_active();
  } catch (...) {
    return false;
  }
}

void print_message(std::string_view line) noexcept { internal::message("{}", line); }

int verbosity() noexcept {
  try {
    internal::rt().session_active();
    return internal::rt().configuration().verbose;
  } catch (...) {
    return 1;
  }
}

std::uint64_t register_allocation(std::string_view api, std::uint64_t correlation,
                                  const void* address, std::size_t bytes, memory_kind memory,
                                  int device) noexcept {
  try {
    return internal::rt().register_allocation(api, correlation, address, bytes, memory, device);
  } catch (...) {
    return 0;
  }
}

void unregister_allocation(const void* address) noexcept {
  try {
    internal::rt().unregister_object_at(address);
  } catch (...) {
  }
}

std::int64_t monotonic_raw_ns() noexcept {
  return internal::monotonic_raw_ns() + internal::test_clock_offset_ns();
}

std::uint64_t clock_reading() noexcept { return internal::rt().clock_reading(); }

bool register_collector(collector* source) {
  return internal::rt().add_collector(source);
}

namespace {
std::atomic<bool> g_process_group_expected{false};
}

void expect_process_group() noexcept { g_process_group_expected.store(true); }

bool process_group_expected() noexcept { return g_process_group_expected.load(); }

void join_process_group(process_group& group) noexcept {
  try {
    internal::rt().join_process_group(group);
  } catch (...) {
    internal::message("the process group (rank {}) could not be joined", group.rank());
  }
}

void end_session() noexcept {
  try {
    internal::rt().finish(false);
  } catch (...) {
  }
}

}  // namespace ferret::runtime

extern "C" FERRET_EXPORT const ferret::detail::runtime_api* ferret_runtime_attach_v1(
    std::uint32_t abi_version, std::atomic<std::uint8_t>* mode_flag) noexcept {
  if (abi_version != ferret::detail::abi_version) return nullptr;
  try {
    return ferret::runtime::internal::rt().attach(mode_flag);
  } catch (...) {
    return nullptr;
  }
}
