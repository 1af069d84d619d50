// session.cpp — start-up, the session (its backends and its memory), the mode flags.

#include <fcntl.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <system_error>

#include "ferret/config.hpp"
#include "registry.hpp"

#include "runtime_state.hpp"

namespace ferret::runtime::internal {

namespace {

std::string read_file(const char* path) {
  std::ifstream in{path, std::ios::binary};
  return std::string{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
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
  std::size_t i = 0;
  // "~/..." as the shell would have made it, had the value not been quoted.
  if (const char* home = std::getenv("HOME");
      home != nullptr && *home != '\0' && (pattern == "~" || pattern.rfind("~/", 0) == 0)) {
    out = home;
    i = 1;
  }
  for (; i < pattern.size(); ++i) {
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

}  // namespace

std::string executable_name() {
  char path[4096];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return "unknown";
  const std::string full{path, static_cast<std::size_t>(length)};
  return full.substr(full.rfind('/') + 1);
}

bool is_directory(const std::string& path) {
  struct stat status{};
  return stat(path.c_str(), &status) == 0 && S_ISDIR(status.st_mode);
}

void on_process_exit() { runtime_state::instance().finish(false); }

thread_local bool t_starting = false;

// Time zero of the traces: when the runtime was loaded, before main() (or the
// fork, in a child).
std::int64_t g_process_start_ns = monotonic_raw_ns();

// Before any lock of the runtime is taken: loading a backend's library runs
// its initialisers, which may call back (session_active).
runtime_state::startup runtime_state::prepare_startup() {
  startup prepared;
  prepared.config = parse_settings([](const char* name) -> const char* { return std::getenv(name); });
  prepared.selection = select_backends(prepared.config.backends);
  return prepared;
}

void runtime_state::ensure_initialized() {
  // t_starting: code that the session's start runs (a backend's constructor)
  // called back; waiting for the lock this thread holds would hang.
  if (initialized_.load(std::memory_order_acquire) || t_starting) return;
  startup prepared = prepare_startup();
  std::lock_guard lock{init_mutex_};
  if (initialized_.load(std::memory_order_relaxed)) return;
  // Done once, also if the start threw.
  struct done_once {
    std::atomic<bool>& done;
    ~done_once() { done.store(true, std::memory_order_release); }
  } once{initialized_};
  const starting_scope starting;
  initialize(std::move(prepared));
}

void runtime_state::initialize(startup prepared) {
  tried_recording_.store(!prepared.config.backends.empty());
  config_ = prepared.config;
  if (config_.backends.empty()) return;
  for (const std::string& notice : config_.notices) message("{}", notice);
  // One line per name that is no backend; the others run.
  const std::vector<std::string>& problems = prepared.selection.problems;
  const bool none_left = prepared.selection.factories.empty();
  for (std::size_t i = 0; i < problems.size(); ++i)
    message("{}{}", problems[i], none_left && i + 1 == problems.size() ? "; running untraced" : "");
  if (none_left) return;
  backend_factories_ = std::move(prepared.selection.factories);
  std::atexit(on_process_exit);
  pthread_atfork([] { instance().fork_prepare(); }, [] { instance().fork_parent(); },
                 [] { instance().fork_child(); });
  // The handlers wait for the drainer to write the outputs: none without it.
  if (start_session() && current_.load()->has_drainer()) install_signal_handlers();
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
  // Nothing is created before tracing really starts: the output and the
  // buffers are checked first, so that "running untraced" leaves no file.
  // A device would get files beside it (FERRET_OUTPUT=/dev/null: /dev/null.json).
  struct stat output_status{};
  if (stat(context.output.c_str(), &output_status) == 0 && !S_ISREG(output_status.st_mode) &&
      !S_ISDIR(output_status.st_mode)) {
    message("FERRET_OUTPUT='{}' is neither a file nor a directory; running untraced", context.output);
    return false;
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
  if (arena == MAP_FAILED) {
    message("cannot reserve {} bytes of event buffers (FERRET_BUFFER_SIZE): {}; running untraced",
            config_.buffer_bytes, std::strerror(errno));
    return false;
  }
  const auto release_buffers = [&] { munmap(arena, chunk_count * chunk_bytes); };

  // Missing directories are created, as mkdir -p would (processes started
  // together, such as MPI ranks, may race to create them: that is fine). A
  // file's directory that cannot be made is left to each backend to report.
  const bool wants_directory = !context.output.empty() && context.output.back() == '/';
  const std::string directory =
      wants_directory ? context.output : context.output.substr(0, context.output.rfind('/') + 1);
  std::error_code not_created;
  if (!directory.empty()) std::filesystem::create_directories(directory, not_created);
  if (wants_directory && !is_directory(context.output)) {
    message("cannot create the output directory '{}' (FERRET_OUTPUT): {}; running untraced",
            context.output, not_created.message());
    release_buffers();
    return false;
  }
  // One name for every process (no %p, not a directory named as one): the
  // first process holds it, any other writes beside it, also once the
  // holder's outputs made it a directory (see output_claim.hpp).
  bool existing_directory = is_directory(context.output);
  if (!wants_directory && config_.output.find("%p") == std::string::npos) {
    const bool other_rank = launched_as_rank_other_than_zero();
    const bool beside = existing_directory ? output_claim_.held_elsewhere(context.output)
                        : other_rank       ? true
                                           : output_claim_.hold(context.output) ==
                                                 output_claim::outcome::held_elsewhere;
    if (beside) {
      const std::string shared = context.output;
      config_.output = output_beside_with_pid(config_.output);
      context.output = expand_output(config_.output, info);
      existing_directory = is_directory(context.output);
      if (!other_rank)
        message("FERRET_OUTPUT '{}' is being written by another process; this one (pid {}) writes "
                "beside it, to '{}'",
                shared, info.pid, context.output);
    }
  }
  context.output_is_directory = wants_directory || existing_directory;
  output_was_directory_ = context.output_is_directory;

  // An output that cannot be written turns off its backend only.
  std::vector<std::pair<std::string, std::string>> failures;  // backend, why
  const output_signals_held held;  // backends write their files' heads
  for (const auto& [name, factory] : backend_factories_) {
    std::string error;
    std::unique_ptr<backend> created = factory(context, error);
    if (created != nullptr) {
      s->backends.push_back(std::move(created));
      continue;
    }
    if (error.empty()) error = fmt::format("backend '{}' failed to start", name);
    failures.emplace_back(name, std::move(error));
  }
  for (std::size_t i = 0; i < failures.size(); ++i) {
    if (s->backends.empty() && i + 1 == failures.size())
      message("{}; running untraced", failures[i].second);
    else
      message("{}; backend '{}' is off", failures[i].second, failures[i].first);
  }
  if (s->backends.empty()) {
    release_buffers();
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
  start_drainer(*started);
  if (started->has_drainer()) g_signal_session.store(started);
  current_.store(started, std::memory_order_release);
  if (config_.verbose >= 2)
    message("recording to {} backend(s); clock {}; {} chunks of {} events; output '{}'",
            started->backends.size(), info.clock_source, chunk_count, started->chunk_events,
            context.output);
  publish_mode();
  return true;
}

void runtime_state::start_drainer(session& s) {
  // Every asynchronous signal blocked in the drainer (it inherits this mask):
  // the application's handlers run on its own threads, never in ferret's
  // (where they could annotate into the drainer's own buffer), and a write
  // over a file-size limit fails with EFBIG instead of raising SIGXFSZ.
  sigset_t blocked;
  sigfillset(&blocked);
  for (const int synchronous : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS})
    sigdelset(&blocked, synchronous);
  sigset_t previous;
  pthread_sigmask(SIG_SETMASK, &blocked, &previous);
  try {
    // Wait until the drain thread runs: a fork() while it is still being set
    // up (its C library and sanitizer start-up allocate) can leave the child
    // with an allocator lock held by a thread it does not have. Seen under
    // GCC 12's AddressSanitizer: fork children hung in their first thread's start.
    std::promise<void> drainer_running;
    std::future<void> running = drainer_running.get_future();
    s.drainer = std::thread{[this, &s, &drainer_running] {
      drainer_running.set_value();
      drainer_loop(s);
    }};
    running.wait();
    s.drainer_started = true;
  } catch (const std::system_error& error) {
    // No thread to be had (ulimit -u, a container's pids limit): the
    // application's threads drain when the buffers fill, and at exit.
    message("cannot start the thread that writes the outputs ({}): the buffers are written when "
            "they fill and at exit, by the application's threads",
            error.code().message());
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
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
// Collectors

bool runtime_state::session_active() {
  if (t_starting) {
    message("a collector started while ferret's session was starting (from a backend's start); "
            "it runs without the session");
    return false;
  }
  ensure_initialized();
  return current_.load(std::memory_order_acquire) != nullptr;
}

bool runtime_state::add_collector(collector* source) {
  if (!session_active()) return false;
  std::lock_guard lock{collectors_mutex_};
  if (std::find(collectors_.begin(), collectors_.end(), source) == collectors_.end())
    collectors_.push_back(source);
  return true;
}

}  // namespace ferret::runtime::internal
