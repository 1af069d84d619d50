// drain.cpp — draining the per-thread buffers and delivering records, data
// objects, GPU activity and metadata to the backends.

#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

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

// Hands the records [first, out) to the backends; returns where the next goes.
record* deliver_records(session& s, const thread_info& thread, record* first, record* out) {
  const auto count = static_cast<std::size_t>(out - first);
  s.recorded += count;
  if (count > 0)
    for (auto& backend : s.backends) backend->thread_records(thread, first, count);
  return first;
}

}  // namespace

void runtime_state::drain(session& s, bool final) {
  // On an application's thread (ferret::flush, exit, no drainer): runtime code
  // there, whose writes must not raise SIGXFSZ or SIGPIPE into the program.
  std::optional<runtime_section> section;
  std::optional<output_signals_held> held;
  if (!t_is_drainer) {
    section.emplace();
    held.emplace();
  }
  std::lock_guard lock{s.drain_mutex};
  // After the final drain the backends are closed: a writer racing exit()
  // must not reach them again.
  if (s.closed) return;
  t_in_drain = true;
  drain_locked(s, final);
  t_in_drain = false;
  if (final) s.closed = true;
}

void runtime_state::snapshot_threads(session& s) {
  std::vector<thread_state*> threads;
  {
    std::lock_guard lock{s.threads_mutex};
    threads = s.threads;
  }
  s.thread_snapshots.resize(threads.size());
  for (std::size_t t = 0; t < threads.size(); ++t) {
    session::thread_snapshot& snapshot = s.thread_snapshots[t];
    thread_state& state = *threads[t];
    snapshot.state = &state;
    snapshot.chunks.clear();
    std::lock_guard lock{state.mutex};
    for (chunk* c = state.oldest; c != nullptr; c = c->next) snapshot.chunks.push_back(c);
    snapshot.published = state.position().load(std::memory_order_acquire);
    snapshot.retired = state.retired;
    snapshot.exit_raw = state.exit_raw;
    snapshot.name = state.name;
  }
}

bool runtime_state::drain_thread(session& s, const session::thread_snapshot& snapshot,
                                 std::optional<std::int64_t> exit_ns) {
  thread_state& state = *snapshot.state;
  const std::vector<chunk*>& chunks = snapshot.chunks;
  event* const published = snapshot.published;
  const bool retired = snapshot.retired;
  const std::uint64_t exit_raw = snapshot.exit_raw;
  const std::string& name = snapshot.name;
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
    // Nesting needs no bookkeeping beyond the context (see thread_state).
    bool plain_nesting = state.hidden_open == 0 && !state.names_counted;
    std::uint64_t newest_raw = 0;
    while (from < to) {
      const std::uint64_t word = from->word;
      const std::uint64_t kind = word & detail::kind_mask;
      const auto* record_site = reinterpret_cast<const site*>(word & ~std::uint64_t{detail::kind_mask});
      const std::uint64_t raw = (std::uint64_t{from->time_hi} << 32) | from->time_lo;
      if (FERRET_UNLIKELY(raw == 0)) {
        // A payload slot where an event should be: a signal handler's mark
        // overwrote the first slot of the counter sample it interrupted.
        s.dropped_reentrant.fetch_add(1, std::memory_order_relaxed);
        ++from;
        continue;
      }
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
      r.closed = region_close::by_program;
      if (kind == detail::kind_begin) {
        call_stack = nullptr;
        if (plain_nesting && context->depth < max_open_regions) {
          r.kind = record_kind::region_begin;
          context = s.contexts.enter(context, site_name);
        } else {
          state.context = context;
          out = begin_region_slowly(s, state, site_name, r.time_ns, out - 1);
          context = state.context;
          plain_nesting = state.hidden_open == 0 && !state.names_counted;
        }
      } else if (kind == detail::kind_end) {
        call_stack = nullptr;
        if (plain_nesting && context->name == site_name && context->parent != nullptr) {
          r.kind = record_kind::region_end;
          context = context->parent;
        } else {
          state.context = context;
          out = end_region_slowly(s, state, thread, site_name, r.time_ns, records, out - 1);
          context = state.context;
          plain_nesting = state.hidden_open == 0 && !state.names_counted;
        }
      } else if (kind == detail::kind_mark) {
        r.kind = record_kind::mark;
      } else {
        r.kind = record_kind::counter;
        if (from + 1 < to) std::memcpy(&r.value, &from[1].word, sizeof r.value);
        s.nonfinite_counter_samples += !std::isfinite(r.value);
        ++from;
      }
      ++from;
    }
    state.context = context;
    state.call_stack = call_stack;
    s.clock.note_converted(newest_raw);
    if (out != records) state.last_ns = out[-1].time_ns;
    deliver_records(s, thread, records, out);
    if (current) {
      state.drained = published;
    } else {
      // Back to the pool at once: a writer may be waiting for it. Only the
      // drainer pops, so this chunk is still the front.
      {
        std::lock_guard lock{state.mutex};
        state.oldest = chunks[i]->next;
        if (state.oldest == nullptr) state.newest = nullptr;
      }
      chunks[i]->next = nullptr;
      s.give_back(chunks[i]);
      state.drained = nullptr;
    }
  }
  if (retired) {
    end_open_regions(s, state, thread, s.clock.to_ns(exit_raw));
  } else if (exit_ns) {
    if (const std::uint64_t idle = state.idle_since.load(std::memory_order_relaxed); idle != 0)
      end_open_regions(s, state, thread, s.clock.to_ns(idle), region_close::by_program);
    else
      end_open_regions(s, state, thread, *exit_ns);
  }
  return retired;
}

record* runtime_state::begin_region_slowly(session& s, thread_state& state, const name_info* name,
                                           std::int64_t time_ns, record* out) {
  if (state.hidden_open > 0 || state.context->depth >= max_open_regions) {
    ++state.hidden_open;
    ++s.dropped_too_deep;
    return out;
  }
  state.context = s.contexts.enter(state.context, name);
  if (state.names_counted) ++state.open_names[s.identity(name)];
  *out = record{time_ns, record_kind::region_begin, region_close::by_program, name, 0.0};
  return out + 1;
}

record* runtime_state::end_region_slowly(session& s, thread_state& state, const thread_info& thread,
                                         const name_info* name, std::int64_t time_ns,
                                         record* first, record* out) {
  if (state.hidden_open > 0) {  // the innermost open region was not delivered
    --state.hidden_open;
    ++s.dropped_too_deep;
    return out;
  }
  const name_info* const identity = s.identity(name);
  const auto end_innermost = [&](region_close closed) {
    const context_node* innermost = state.context;
    state.context = innermost->parent;
    if (state.names_counted) {
      --state.open_names[s.identity(innermost->name)];
      if (state.context->parent == nullptr) {  // none open: back to the plain way
        state.open_names.clear();
        state.names_counted = false;
      }
    }
    return record{time_ns, record_kind::region_end, closed, innermost->name, 0.0};
  };
  const context_node* innermost = state.context;
  if (innermost->parent != nullptr && s.identity(innermost->name) == identity) {
    *out = end_innermost(region_close::by_program);
    return out + 1;
  }
  if (!state.names_counted) {
    for (const context_node* open = innermost; open->parent != nullptr; open = open->parent)
      ++state.open_names[s.identity(open->name)];
    state.names_counted = true;
  }
  const auto found = state.open_names.find(identity);
  if (found == state.open_names.end() || found->second == 0) {
    ++s.unmatched_region_ends;
    return out;
  }
  // Ends an outer region: first those opened inside it, with it. In a batch
  // of their own, after the records before them.
  ++s.unbalanced_region_ends;
  out = deliver_records(s, thread, first, out);
  std::vector<record> ends;
  while (s.identity(state.context->name) != identity) ends.push_back(end_innermost(region_close::by_outer_end));
  ends.push_back(end_innermost(region_close::by_program));
  for (auto& backend : s.backends) backend->thread_records(thread, ends.data(), ends.size());
  s.recorded += 1;
  state.last_ns = time_ns;
  return out;
}

void runtime_state::end_open_regions(session& s, thread_state& state, const thread_info& thread,
                                     std::int64_t time_ns, region_close closed) {
  state.hidden_open = 0;  // their ends never come
  if (state.context == nullptr || state.context->parent == nullptr) return;
  // Not before the thread's last event (another thread may run on at the final drain).
  time_ns = std::max(time_ns, state.last_ns);
  std::vector<record> ends;
  for (const context_node* open = state.context; open->parent != nullptr; open = open->parent)
    ends.push_back(record{time_ns, record_kind::region_end, closed, open->name, 0.0});
  if (closed == region_close::at_exit) s.unfinished_regions += ends.size();
  state.context = s.contexts.root();
  state.open_names.clear();
  state.names_counted = false;
  for (auto& backend : s.backends) backend->thread_records(thread, ends.data(), ends.size());
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
  // Samples after the activities: their launches were matched (and kept) just now.
  for (const gpu_sample_batch& batch : s.sample_batches)
    s.gpu_samples.add(batch, s.launches, s.cycle, s.contexts.root());
  s.sample_batches.clear();
  if (std::vector<gpu_instruction_sample>& samples = s.gpu_samples.drained(); !samples.empty())
    for (auto& out : s.backends) out->gpu_instruction_samples(samples.data(), samples.size());
  s.gpu_samples.clear();
  for (const gpu_remote_access_batch& batch : s.remote_batches)
    s.gpu_remote.add(batch, s.launches, s.cycle, s.contexts.root(), s.objects);
  s.remote_batches.clear();
  if (std::vector<gpu_remote_access>& remote = s.gpu_remote.drained(); !remote.empty())
    for (auto& out : s.backends) out->gpu_remote_accesses(remote.data(), remote.size());
  s.gpu_remote.clear();
  s.launches.evict(s.cycle);
  s.objects.evict(s.cycle);
}

// Sampled counters: each device's set before its first interval, then the
// intervals on the session's clock. An interval the backends could not place
// (no set for its device, values missing, before its device's previous end)
// is dropped and counted.
void runtime_state::deliver_metric_intervals(session& s) {
  for (const gpu_metric_set& set : s.new_metric_sets) {
    if (s.sampled_devices.count(set.device) != 0) continue;  // announced once
    s.sampled_devices.emplace(set.device, session::sampled_device{set.metrics.size(), std::numeric_limits<std::int64_t>::min()});
    for (auto& out : s.backends) out->gpu_sampled_metrics(set);
  }
  s.new_metric_sets.clear();
  s.metric_intervals.clear();
  for (const gpu_metric_batch& batch : s.metric_batches) {
    const auto device = s.sampled_devices.find(batch.device);
    const std::size_t metrics = device != s.sampled_devices.end() ? device->second.metric_count : 0;
    if (device == s.sampled_devices.end() || batch.values.size() != batch.intervals.size() * metrics) {
      s.gpu_metric_intervals_dropped += batch.intervals.size();
      continue;
    }
    for (std::size_t i = 0; i < batch.intervals.size(); ++i) {
      const std::int64_t begin = static_cast<std::int64_t>(batch.intervals[i].begin_ns) - s.info.start_monotonic_raw_ns;
      const std::int64_t end = static_cast<std::int64_t>(batch.intervals[i].end_ns) - s.info.start_monotonic_raw_ns;
      if (end <= begin || begin < device->second.last_end_ns) {
        ++s.gpu_metric_intervals_dropped;
        continue;
      }
      device->second.last_end_ns = end;
      s.metric_intervals.push_back({batch.device, begin, end, batch.values.data() + i * metrics});
    }
  }
  s.gpu_metric_intervals += s.metric_intervals.size();
  if (!s.metric_intervals.empty())
    for (auto& out : s.backends) out->gpu_metric_intervals(s.metric_intervals.data(), s.metric_intervals.size());
  s.metric_intervals.clear();
  s.metric_batches.clear();
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
  if (!s.said_full && s.buffers_were_full.load(std::memory_order_relaxed)) {
    s.said_full = true;
    message("event buffers are full (FERRET_BUFFER_SIZE={} bytes, every chunk held by a "
            "thread); dropping events, which will be counted",
            s.config.buffer_bytes);
  }
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
    source->collect_metric_intervals(s.new_metric_sets, s.metric_batches, final);
    source->collect_samples(s.sample_batches, final);
    source->collect_remote_accesses(s.remote_batches, final);
  }
  // The threads' records are read up to here, and the MPI events after: an MPI
  // call records its event before its region's end, so every event inside the
  // regions drained now is among them. Collected before the snapshot, an event
  // of a call that ended in between would come a drain after its region's end,
  // later than a writer that keeps each thread in time order (OTF2) can take it.
  snapshot_threads(s);
  for (collector* source : collectors)
    source->collect_communication(s.new_communicators, s.communication_batch, final);
  // Before the threads' records: a writer holds an event that comes early
  // until the records around it arrive.
  deliver_communication(s);

  // Regions still open at the end are ended then (not before their thread's last event).
  std::optional<std::int64_t> exit_ns;
  if (final) exit_ns = s.clock.to_ns(s.clock.read());
  for (const session::thread_snapshot& snapshot : s.thread_snapshots) {
    if (!drain_thread(s, snapshot, exit_ns)) continue;
    thread_state* const state = snapshot.state;
    // Retired and emptied: nobody refers to it any more.
    {
      std::lock_guard lock{s.threads_mutex};
      s.threads.erase(std::find(s.threads.begin(), s.threads.end(), state));
    }
    delete state;
  }
  deliver_objects(s);
  deliver_gpu_activity(s);
  deliver_metric_intervals(s);

  metadata_list runtime_metadata{
      {"buffer-bytes", static_cast<std::int64_t>(s.config.buffer_bytes)},
      {"flush-interval-ms", static_cast<std::int64_t>(s.config.flush_interval_ms)},
      {"events-dropped-buffer-full", static_cast<std::int64_t>(s.dropped_full.load())},
      {"events-dropped-after-thread-exit", static_cast<std::int64_t>(s.dropped_late.load())},
      {"events-dropped-unwritten-at-signal", static_cast<std::int64_t>(s.dropped_unwritten.load())},
      {"events-dropped-reentrant", static_cast<std::int64_t>(s.dropped_reentrant.load())},
      {"application-waits", static_cast<std::int64_t>(s.application_waits.load())},
      {"application-wait-ns", static_cast<std::int64_t>(s.application_wait_ns.load())},
      {"data-objects-refused", static_cast<std::int64_t>(objects_refused_.load())},
      {"events-dropped-nested-too-deep", static_cast<std::int64_t>(s.dropped_too_deep)},
      {"unmatched-region-ends", static_cast<std::int64_t>(s.unmatched_region_ends)},
      {"unbalanced-region-ends", static_cast<std::int64_t>(s.unbalanced_region_ends)},
      {"unfinished-regions", static_cast<std::int64_t>(s.unfinished_regions)},
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
    if (s.gpu_samples.unattributed() > 0)
      runtime_metadata.emplace_back("gpu-instruction-samples-without-launch",
                                    static_cast<std::int64_t>(s.gpu_samples.unattributed() + 0.5));
    if (s.gpu_remote.bytes() > 0) {
      runtime_metadata.emplace_back("gpu-device-initiated-bytes",
                                    static_cast<std::int64_t>(s.gpu_remote.bytes()));
      runtime_metadata.emplace_back("gpu-device-initiated-bytes-without-launch",
                                    static_cast<std::int64_t>(s.gpu_remote.bytes_without_launch()));
    }
    if (!s.sampled_devices.empty() || s.gpu_metric_intervals_dropped > 0) {
      runtime_metadata.emplace_back("gpu-metric-intervals", static_cast<std::int64_t>(s.gpu_metric_intervals));
      runtime_metadata.emplace_back("gpu-metric-intervals-dropped",
                                    static_cast<std::int64_t>(s.gpu_metric_intervals_dropped));
    }
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

void session::sleep_until_woken(int timeout_ms) noexcept {
  const std::uint32_t seen = wake_word.load();
  if (wake_pending.load()) return;
  timespec timeout{timeout_ms / 1000, (timeout_ms % 1000) * 1'000'000L};
  // A relative timeout (CLOCK_MONOTONIC); returns at once if a wake came
  // since `seen` was read.
  syscall(SYS_futex, &wake_word, FUTEX_WAIT_PRIVATE, seen, timeout_ms < 0 ? nullptr : &timeout,
          nullptr, 0);
}

// Runs with every asynchronous signal blocked (see start_drainer): the
// application's handlers run on its own threads, and a write over a file-size
// limit fails with EFBIG instead of raising SIGXFSZ.
void runtime_state::drainer_loop(session& s) {
  t_is_drainer = true;
  pthread_setname_np(pthread_self(), "ferret-drain");

  const int timeout = s.config.flush_interval_ms == 0 ? -1 : static_cast<int>(s.config.flush_interval_ms);
  bool behind = false;
  while (!s.stopping.load()) {
    // Behind the writers (half the chunks still taken after a drain that
    // returned some): drain again at once rather than sleep.
    if (!behind) s.sleep_until_woken(timeout);
    // From here on a wake is a new one.
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
