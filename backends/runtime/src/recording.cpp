// recording.cpp — the slow path of writing: binding a thread to the session, switching
// chunks, retiring exited threads, pausing.

#include <pthread.h>

#include "runtime_state.hpp"

namespace ferret::runtime::internal {

// Slots of exited threads point here: pos == end sends late events to the
// slow path, which counts them instead of writing into a retired buffer.
thread_buffer g_retired_buffer{};
// Slots of a fork child's thread point here until it records again.
thread_buffer g_rebind_buffer{};

// Trivially destructible, so still readable while the thread's TLS
// destructors run.
thread_local thread_state* t_state = nullptr;
thread_local bool t_exiting = false;
thread_local bool t_in_drain = false;
thread_local unsigned t_runtime_busy = 0;
thread_local bool t_is_drainer = false;

thread_local session* t_owner = nullptr;
thread_local std::vector<bound_slot> t_rebound_slots;

thread_local thread_exit_hook t_exit_hook;

namespace {

// What a slot pointed to before the runtime first bound it (see bound_slot).
const void* origin_of(thread_buffer** slot) {
  if (*slot != &g_rebind_buffer) return *slot;
  for (const bound_slot& bound : t_rebound_slots)
    if (bound.slot == slot) return bound.origin;
  return *slot;
}

}  // namespace

thread_state* runtime_state::bind(thread_buffer** slot) {
  session* s = current_.load(std::memory_order_acquire);
  if (s == nullptr && restart_on_first_event_.load()) {
    // A fork child's first event. The claim is cleared only once the session
    // is published, so that another thread's first event waits here for it
    // rather than finding neither a session nor a claim.
    std::lock_guard lock{init_mutex_};
    if (restart_on_first_event_.load() && current_.load() == nullptr) {
      const bool started = [this] {
        const starting_scope starting;
        return start_session();
      }();
      restart_on_first_event_.store(false);
      if (!started) publish_mode();  // recording off again
    }
  }
  if (s == nullptr) s = current_.load(std::memory_order_acquire);
  if (s == nullptr || s->finished.load(std::memory_order_relaxed)) return nullptr;
  if (*slot == &g_retired_buffer || (t_exiting && t_state == nullptr)) {
    s->dropped_late.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  if (t_state != nullptr && t_owner == s) {
    if (*slot != t_state) {
      const bound_slot bound{slot, origin_of(slot)};
      std::lock_guard lock{t_state->mutex};
      t_state->slots.push_back(bound);
      *slot = t_state;
    }
    return t_state;
  }
  auto* state = new thread_state;
  state->hot_path_writes = s->clock.hot_path_stamps();
  state->tid = current_tid();
  state->is_main = state->tid == s->info.pid;
  // A name the application gave the thread (pthread_setname_np) is the
  // default; a thread that only inherited the executable's name has none.
  char os_name[16] = {};
  if (!state->is_main && pthread_getname_np(pthread_self(), os_name, sizeof os_name) == 0 &&
      std::string_view{os_name} != std::string_view{s->info.executable}.substr(0, 15))
    state->name = os_name;
  state->slots.push_back({slot, origin_of(slot)});
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

// No chunk is free: the drainer has the full ones. Wait for the first it
// returns (it returns each as soon as the backends have its records), not for
// a whole drain, so the writer runs at the backends' pace in steps of one
// chunk. If a drain that began after the wait (or after the last chunk came
// back, to another thread) returned none, every chunk is some thread's current
// one: give up (the caller drops, counted).
chunk* session::wait_for_chunk() {
  const auto start = std::chrono::steady_clock::now();
  chunk* fresh = nullptr;
  {
    std::unique_lock lock{pool_mutex};
    // The drain under way may have looked at this thread before it filled
    // its chunk: the one after it is the first that surely sees it.
    std::uint64_t give_up_at = drains_completed + 2;
    std::uint64_t returned_seen = chunks_returned.load();
    while (free_chunks.empty() && !finished.load()) {
      if (drains_completed >= give_up_at) {
        if (chunks_returned.load() == returned_seen) break;
        give_up_at = drains_completed + 2;
        returned_seen = chunks_returned.load();
      }
      wake();
      // Bounded, in case the drainer is gone (exit, a signal) without a word.
      pool_changed.wait_for(lock, std::chrono::milliseconds{10});
    }
    if (!free_chunks.empty()) {
      fresh = free_chunks.back();
      free_chunks.pop_back();
    }
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  application_waits.fetch_add(1, std::memory_order_relaxed);
  application_wait_ns.fetch_add(
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count()),
      std::memory_order_relaxed);
  return fresh;
}

// Allocates nothing and says nothing itself (a signal handler's annotation
// may switch chunks): the drainer says that the buffers were full.
bool runtime_state::switch_chunk(session& s, thread_state& state) {
  const auto now = std::chrono::steady_clock::now();
  if (now < state.starved_until) return false;
  chunk* fresh = s.take_chunk();
  // The drainer itself (a backend or collector annotating) must not wait for itself.
  if (fresh == nullptr && !t_in_drain) {
    if (s.has_drainer()) {
      fresh = s.wait_for_chunk();
    } else {
      // No background thread could be started: this thread drains.
      drain(s, false);
      fresh = s.take_chunk();
    }
  }
  if (fresh == nullptr) {
    if (s.finished.load()) return false;  // the session ended while it waited
    // Every chunk is some thread's current one: drop for a while rather than
    // drain on every event.
    state.starved_until = now + std::chrono::milliseconds{10};
    s.buffers_were_full.store(true, std::memory_order_relaxed);
    return false;
  }
  if (!fresh->pages_touched) {
    // The arena's pages are mapped on first write, and the kernel zeroes each
    // then: done here, before the event that needs the chunk reads the clock,
    // so that no event's interval holds it (a thread's first region would
    // absorb its whole set-up). 4096: the smallest page size.
    auto* bytes = reinterpret_cast<volatile unsigned char*>(fresh->begin);
    const auto size = static_cast<std::size_t>(fresh->capacity_end - fresh->begin) * sizeof(event);
    for (std::size_t at = 0; at < size; at += 4096) bytes[at] = 0;
    fresh->pages_touched = true;
  }
  std::lock_guard lock{state.mutex};
  if (state.newest != nullptr) {
    state.newest->filled = state.position().load(std::memory_order_relaxed);
    state.newest->next = fresh;
  } else {
    state.oldest = fresh;
  }
  state.newest = fresh;
  state.position().store(fresh->begin, std::memory_order_release);
  state.capacity_end = fresh->capacity_end;
  if (state.hot_path_writes) state.end = state.capacity_end;
  return true;
}

void runtime_state::drop_reentrant() noexcept {
  if (session* s = current_.load(std::memory_order_acquire))
    s->dropped_reentrant.fetch_add(1, std::memory_order_relaxed);
}

void runtime_state::write(thread_buffer** slot, std::uint64_t word, std::uint64_t extra,
                          unsigned slots, const std::uint64_t* time) {
  thread_state* state = bind(slot);
  if (state == nullptr || !recording_requested_.load(std::memory_order_relaxed)) return;
  session& s = *t_owner;
  std::atomic<event*>& position = state->position();
  event* at = position.load(std::memory_order_relaxed);
  if (static_cast<std::size_t>(state->capacity_end - at) < slots) {
    if (!switch_chunk(s, *state)) {
      s.dropped_full.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    at = position.load(std::memory_order_relaxed);
  }
  const std::uint64_t raw = time != nullptr ? *time : s.clock.read();
  at->time_lo = static_cast<std::uint32_t>(raw);
  at->time_hi = static_cast<std::uint32_t>(raw >> 32);
  at->word = word;
  if (slots == 2) at[1] = event{0, 0, extra};
  position.store(at + slots, std::memory_order_release);
}

void runtime_state::set_thread_idle_since(std::uint64_t tid, std::uint64_t time) {
  session* s = current_.load(std::memory_order_acquire);
  if (s == nullptr) return;
  std::lock_guard lock{s->threads_mutex};
  for (thread_state* state : s->threads)
    if (state->tid == tid) state->idle_since.store(time, std::memory_order_relaxed);
}

void runtime_state::retire(thread_state& state) {
  // The main thread's buffer stays open: static destructors run after its
  // TLS destructors and may still annotate; the exit drain takes it.
  if (state.is_main) return;
  std::lock_guard lock{state.mutex};
  for (const bound_slot& bound : state.slots) *bound.slot = &g_retired_buffer;
  t_state = nullptr;
  if (state.newest != nullptr) state.newest->filled = state.position().load(std::memory_order_relaxed);
  // When the regions it left open end.
  if (session* s = current_.load(std::memory_order_acquire)) state.exit_raw = s->clock.read();
  state.retired = true;
}

void runtime_state::set_recording(bool on) {
  recording_requested_.store(on);
  publish_mode();
}

}  // namespace ferret::runtime::internal
