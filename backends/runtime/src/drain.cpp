// drain.cpp — draining the per-thread buffers and delivering records, data
// objects, GPU activity and metadata to the backends.

#include <poll.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstring>

#include "runtime_state.hpp"

namespace ferret::runtime::internal {

std::atomic<std::int64_t> g_signal_write_deadline_ns{0};

namespace {

// The records a drain would deliver from [from, to): counter values, and the
// context entries that are not records, are skipped.
std::uint64_t count_records(const event* from, const event* to) {
  std::uint64_t records = 0;
  while (from < to) {
    const std::uint64_t kind = from->word & detail::kind_mask;
    if (kind == detail::kind_correlation || kind == detail::kind_call_stack) {
      from += 2;
      continue;
    }
    from += kind == detail::kind_counter ? 2 : 1;
    ++records;
  }
  return records;
}

bool past_signal_deadline() noexcept {
  const std::int64_t deadline = g_signal_write_deadline_ns.load(std::memory_order_relaxed);
  return deadline != 0 && monotonic_raw_ns() > deadline;
}

}  // namespace

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
    // Sized once for a whole chunk: the loop stores records without checks.
    s.scratch.resize(s.chunk_events);
    record* const records = s.scratch.data();
    record* out = records;
    if (past_signal_deadline()) {
      // A terminating signal's wait is running out: leave time to close the
      // outputs, and count what is not written.
      s.dropped_unwritten.fetch_add(count_records(from, to), std::memory_order_relaxed);
      from = to;
    }
    // Runs for every event: records are built in place, the common kinds
    // tested first, the clock's newest segment and the thread's context in
    // locals.
    const host_clock::newest_conversion newest = s.clock.newest_segment();
    const context_node* context = state.context;
    const detail::call_stack* call_stack = state.call_stack;
    std::uint64_t newest_raw = 0;
    while (from < to) {
      const std::uint64_t word = from->word;
      const std::uint64_t kind = word & detail::kind_mask;
      const auto* record_site = reinterpret_cast<const site*>(word & ~std::uint64_t{detail::kind_mask});
      const std::uint64_t raw = (std::uint64_t{from->time_hi} << 32) | from->time_lo;
      newest_raw = raw;
      if (kind >= detail::kind_correlation) {
        if (kind == detail::kind_correlation && from + 1 < to) {
          // Not a record for the backends: it ties GPU work to this context.
          state.context = context;
          state.call_stack = call_stack;
          s.launches.record(from[1].word, state.tid, s.clock.to_ns(raw), launch_context(s, state, name),
                            s.cycle);
          call_stack = state.call_stack;
        } else if (kind == detail::kind_call_stack && from + 1 < to) {
          // Neither: context for the correlation that follows.
          call_stack = reinterpret_cast<const detail::call_stack*>(from[1].word);
        }
        from += 2;
        continue;
      }
      const auto& cached = s.cached_name(record_site);
      const name_info* site_name = cached.first == record_site ? cached.second : name_of(s, record_site);
      record& r = *out++;
      r.time_ns = newest.covers(raw) ? newest.to_ns(raw) : s.clock.to_ns(raw);
      r.name = site_name;
      r.value = 0.0;
      if (kind == detail::kind_begin) {
        r.kind = record_kind::region_begin;
        context = s.contexts.enter(context, site_name);
        call_stack = nullptr;
      } else if (kind == detail::kind_end) {
        r.kind = record_kind::region_end;
        context = context_tree::leave(context, site_name);
        call_stack = nullptr;
      } else if (kind == detail::kind_mark) {
        r.kind = record_kind::mark;
      } else {
        r.kind = record_kind::counter;
        if (from + 1 < to) std::memcpy(&r.value, &from[1].word, sizeof r.value);
        ++from;
      }
      ++from;
    }
    state.context = context;
    state.call_stack = call_stack;
    s.clock.note_converted(newest_raw);
    const auto count = static_cast<std::size_t>(out - records);
    s.recorded += count;
    if (count > 0)
      for (auto& backend : s.backends) backend->thread_records(thread, records, count);
    if (current) {
      state.drained = published;
    } else {
      // Back to the pool at once: a writer may be waiting for it. Only the
      // drainer pops, so this chunk is still the front.
      {
        std::lock_guard lock{state.mutex};
        state.chunks.pop_front();
      }
      s.give_back(chunks[i]);
      state.drained = nullptr;
    }
  }
  return retired;
}

// The calling context of GPU work launched by the API call open on the
// thread: the thread's regions, then the interpreted frames written inside the
// call (Python), then the call itself. The frames are context for the GPU work
// only: the thread's own context (its host regions) stays as it was.
// Work that a named thread other than the main one launches outside every
// region and frame has that thread as its context, "(thread pt_autograd_0)":
// PyTorch's backward pass runs on such threads, with no Python frame there.
const context_node* runtime_state::launch_context(session& s, thread_state& state,
                                                  const std::string& thread_name) {
  const detail::call_stack* stack = std::exchange(state.call_stack, nullptr);
  const context_node* call = state.context;
  const bool in_call = call->parent != nullptr;
  const context_node* at = in_call ? call->parent : call;
  const bool outside_everything = at == s.contexts.root() && (stack == nullptr || stack->depth == 0);
  if (outside_everything && !state.is_main && !thread_name.empty()) {
    if (state.thread_context == nullptr || state.thread_context_name != thread_name) {
      const site* named = register_name("(thread " + thread_name + ")", "thread");
      state.thread_context = s.contexts.enter(s.contexts.root(), name_of(s, named));
      state.thread_context_name = thread_name;
    }
    at = state.thread_context;
  } else if (stack == nullptr) {
    return call;
  } else {
    for (std::uint32_t i = 0; i < stack->depth; ++i)
      at = s.contexts.enter(at, name_of(s, stack->frames[i]));
  }
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
        pending.object.name = s.allocations.name(
            pending.object.id, allocation_name(pending.api, pending.object.allocated_in));
      }
      s.objects.registered(pending.object);
    } else if (const data_object_info* known = s.objects.find(pending.object.id)) {
      pending.object = *known;  // the name the registration was announced with
      s.objects.released(pending.object.id, s.cycle);
      s.allocations.released(pending.object.id);
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
      {"events-dropped-unwritten-at-signal", static_cast<std::int64_t>(s.dropped_unwritten.load())},
      {"application-waits", static_cast<std::int64_t>(s.application_waits.load())},
      {"application-wait-ns", static_cast<std::int64_t>(s.application_wait_ns.load())},
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
  {
    std::lock_guard lock{metadata_mutex_};
    if (s.user_metadata_version != user_metadata_.version()) {
      s.user_metadata = user_metadata_.entries();
      s.user_metadata_version = user_metadata_.version();
    }
  }
  const session_status status{&runtime_metadata, &s.user_metadata, s.recorded, s.dropped(), final};
  for (auto& out : s.backends) out->flush(status);
  s.drain_completed();
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
  bool behind = false;
  while (!s.stopping.load()) {
    // Behind the writers (half the chunks still taken after a drain that
    // returned some): drain again at once rather than sleep.
    if (!behind) {
      pollfd wake{s.wake_pipe[0], POLLIN, 0};
      poll(&wake, 1, timeout);
    }
    char bytes[64];
    while (::read(s.wake_pipe[0], bytes, sizeof bytes) > 0) {
    }
    // After emptying the pipe: a wake from here on writes a new byte.
    s.wake_pending.store(false);
    if (g_signal_pending.load()) {
      finish(true);
      g_signal_flush_done.store(true);
      return;
    }
    if (s.stopping.load()) return;
    const std::uint64_t returned_before = s.chunks_returned.load();
    drain(s, false);
    std::lock_guard lock{s.pool_mutex};
    behind = s.pool_low() && s.chunks_returned.load() != returned_before;
  }
}

void runtime_state::flush() {
  if (session* s = current_.load(std::memory_order_acquire); s != nullptr && !s->finished && !t_in_drain)
    drain(*s, false);
}

}  // namespace ferret::runtime::internal
