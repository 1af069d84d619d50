// process_events.cpp — the process lifecycle: exit, terminating signals, fork,
// shared objects unloaded.

#include <link.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include "runtime_state.hpp"

namespace ferret::runtime::internal {

std::atomic<bool> g_signal_pending{false};
std::atomic<bool> g_signal_flush_done{false};
std::atomic<session*> g_signal_session{nullptr};

namespace {

std::atomic<int> g_signal_wait_ms{4000};  // FERRET_SIGNAL_WAIT
std::atomic<int> g_signal_number{0};

void write_stderr(const char* text) noexcept {
  [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
}

std::string signal_name(int signal_number) {
  const char* name = sigabbrev_np(signal_number);
  return name != nullptr ? fmt::format("SIG{}", name) : fmt::format("signal {}", signal_number);
}

}  // namespace

// Best effort: the drainer thread writes the output (a handler cannot safely
// allocate or lock); the handler waits, then lets the signal take its default
// action. Drains deliver events for FERRET_SIGNAL_WAIT and then stop, counting
// what they leave, so that the outputs can still be closed in the second the
// handler adds for that.
constexpr int closing_allowance_ms = 1000;

void on_terminate_signal(int signal_number) {
  const int saved_errno = errno;
  if (!g_signal_pending.exchange(true)) {
    const int wait_ms = g_signal_wait_ms.load();
    g_signal_number.store(signal_number);
    // Never 0: that means "no signal".
    g_signal_write_deadline_ns.store(monotonic_raw_ns() + std::int64_t{wait_ms} * 1'000'000 + 1);
    if (session* s = g_signal_session.load()) s->wake();
    for (int waited_ms = 0; waited_ms < wait_ms + closing_allowance_ms && !g_signal_flush_done.load();
         waited_ms += 5) {
      const timespec pause{0, 5'000'000};
      nanosleep(&pause, nullptr);
    }
    if (!g_signal_flush_done.load() && g_signal_session.load() != nullptr)
      write_stderr("ferret: the outputs were not closed within FERRET_SIGNAL_WAIT and one more "
                   "second; they may be incomplete\n");
  }
  errno = saved_errno;
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

void install_signal_handlers() {
  g_signal_wait_ms.store(static_cast<int>(runtime_state::instance().configuration().signal_wait_ms));
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

void runtime_state::report(session& s) {
  if (s.config.verbose >= 1)
    if (const std::string missing = missing_collectors(); !missing.empty()) message("{}", missing);
  if (s.config.verbose >= 1)
    for (auto& out : s.backends) message("{}", out->describe());
  if (const std::uint64_t lost = s.dropped_full.load() + s.dropped_late.load(); lost > 0)
    message("{} events were dropped: {} with the buffers full (raise FERRET_BUFFER_SIZE, now {} "
            "bytes), {} after their thread had exited",
            lost, s.dropped_full.load(), s.config.buffer_bytes, s.dropped_late.load());
  if (const std::uint64_t reentrant = s.dropped_reentrant.load(); reentrant > 0)
    message("{} events were dropped: a signal handler annotated while its thread was in ferret "
            "(events-dropped-reentrant in the output's metadata)",
            reentrant);
  if (s.unmatched_region_ends > 0)
    message("{} region ends matched no open region of their thread and were ignored "
            "(unmatched-region-ends in the output's metadata)",
            s.unmatched_region_ends);
  if (s.nonfinite_counter_samples > 0)
    message("{} counter samples were NaN or infinite: left out where an output cannot hold them "
            "(nonfinite-counter-samples in its metadata)",
            s.nonfinite_counter_samples);
  if (const std::uint64_t unwritten = s.dropped_unwritten.load(); unwritten > 0)
    message("{} events were not written: {} stopped the program and FERRET_SIGNAL_WAIT={} ms ran "
            "out (events-dropped-unwritten-at-signal in the output's metadata)",
            unwritten, signal_name(g_signal_number.load()), s.config.signal_wait_ms);
  if (s.dropped_too_deep > 0)
    message("{} events were dropped: regions nested deeper than {} levels on one thread, and their "
            "ends (events-dropped-nested-too-deep)",
            s.dropped_too_deep, max_open_regions);
  // Ended by the runtime, and marked so in the outputs.
  if (s.config.verbose >= 1 && s.unbalanced_region_ends > 0)
    message("region ends that also ended regions opened inside them: {} (unbalanced-region-ends)",
            s.unbalanced_region_ends);
  if (s.config.verbose >= 1 && s.unfinished_regions > 0)
    message("regions still open when their thread or the program exited, and ended then: {} "
            "(unfinished-regions)",
            s.unfinished_regions);
  if (const std::uint64_t waits = s.application_waits.load();
      s.config.verbose >= 2 || (s.config.verbose >= 1 && waits > 0))
    message("application threads waited {} times for a free buffer chunk, {} ns in all "
            "(FERRET_BUFFER_SIZE={} bytes)",
            waits, s.application_wait_ns.load(), s.config.buffer_bytes);
  if (const std::uint64_t waits = s.object_waits.load(); s.config.verbose >= 1 && waits > 0)
    message("application threads waited {} times for the drain to take data objects' lifetime "
            "events (at most {} are queued), {} ns in all",
            waits, session::pending_objects_limit, s.object_wait_ns.load());
  // Collectors' losses (e.g. records CUPTI dropped) and unattributed GPU work.
  for (const auto& [key, value] : s.final_metadata) {
    const auto* count = std::get_if<std::int64_t>(&value);
    if (count != nullptr && *count > 0 &&
        (key.find("dropped") != std::string::npos ||
         key.find("-without-launch") != std::string::npos) &&
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
  const output_signals_held held;  // backends may start writing now
  std::lock_guard lock{s->drain_mutex};  // backends' calls are serialised
  if (s->closed) return;
  for (auto& out : s->backends) out->join_process_group(group);
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
    for (const bound_slot& bound : t_state->slots) *bound.slot = &g_rebind_buffer;
    t_rebound_slots = t_state->slots;
    t_state = nullptr;
    t_owner = nullptr;
  }
  g_signal_session.store(nullptr);
  g_process_start_ns = monotonic_raw_ns();
  // A directory that the parent's own outputs created (an OTF2 archive, a TAU
  // profile) is no place for the child's: only one FERRET_OUTPUT named counts.
  const std::string output = config_.output;
  output_claim_.forget_inherited();
  if (output.find("%p") == std::string::npos && !output_was_directory_) {
    // One name for all processes: the child's outputs go beside the parent's,
    // with its pid added (run.json: run-<pid>.json).
    config_.output = output_beside_with_pid(output);
    if (config_.verbose >= 2)
      message("fork child {}: FERRET_OUTPUT='{}' names one output for all processes; the child "
              "writes to '{}'",
              getpid(), output, config_.output);
  }
  restart_on_first_event_.store(true);
  publish_mode();
}

// ---------------------------------------------------------------------------
// A shared object unloaded (dlclose): its static destructors call detach()
// while its memory is still mapped. Afterwards nothing may touch its flag, its
// thread slots (freed TLS) or the names in its memory.

namespace {

struct address_range {
  std::uintptr_t low = 0, high = 0;
};

// The loaded segments of the shared object that holds `address`.
address_range object_holding(const void* address) {
  address_range found{};
  struct search {
    std::uintptr_t address;
    address_range* found;
  } query{reinterpret_cast<std::uintptr_t>(address), &found};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto& q = *static_cast<search*>(data);
        address_range object{UINTPTR_MAX, 0};
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_LOAD) continue;
          const std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
          object.low = std::min(object.low, start);
          object.high = std::max(object.high, start + segment.p_memsz);
        }
        if (q.address < object.low || q.address >= object.high) return 0;
        *q.found = object;
        return 1;
      },
      &query);
  return found;
}

}  // namespace

void runtime_state::detach(std::atomic<std::uint8_t>* flag) {
  {
    std::lock_guard lock{flags_mutex_};
    flags_.erase(std::remove(flags_.begin(), flags_.end(), flag), flags_.end());
  }
  const address_range object = object_holding(flag);
  if (object.high == 0) return;
  const auto unloaded = [&](const void* address) {
    const auto at = reinterpret_cast<std::uintptr_t>(address);
    return at >= object.low && at < object.high;
  };
  {
    std::lock_guard lock{sites_mutex_};
    for (auto it = literal_sites_.begin(); it != literal_sites_.end();) {
      if (unloaded(it->first.first) || unloaded(it->first.second)) {
        unloaded_sites_.push_back(std::move(it->second));
        it = literal_sites_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = named_sites_.begin(); it != named_sites_.end();) {
      if (unloaded(it->first.second)) {
        unloaded_sites_.push_back(std::move(it->second));
        it = named_sites_.erase(it);
      } else {
        ++it;
      }
    }
  }
  session* s = current_.load(std::memory_order_acquire);
  // At exit, after the final drain, the objects still loaded stay mapped.
  if (s == nullptr || s->finished.load()) return;
  // Events name the object's own call-site records: read them now.
  if (!t_in_drain) {
    const output_signals_held held;
    std::lock_guard lock{s->drain_mutex};
    if (!s->closed) {
      t_in_drain = true;
      drain_locked(*s, false);
      t_in_drain = false;
    }
    forget_unloaded_names(*s, object.low, object.high);
  }
  std::lock_guard threads_lock{s->threads_mutex};
  for (thread_state* state : s->threads) {
    std::lock_guard lock{state->mutex};
    auto& slots = state->slots;
    slots.erase(std::remove_if(slots.begin(), slots.end(),
                               [&](const bound_slot& bound) { return unloaded(bound.origin); }),
                slots.end());
  }
}

}  // namespace ferret::runtime::internal
