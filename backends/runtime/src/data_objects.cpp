// data_objects.cpp — named memory ranges: registration, removal, lookup, and the
// allocations collectors track.


#include "runtime_state.hpp"

namespace ferret::runtime::internal {

std::uint64_t runtime_state::register_object(std::string_view name, const void* address,
                                             std::size_t bytes, memory_kind memory, int device,
                                             std::uint64_t correlation) {
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
  if (session* s = current_.load(std::memory_order_acquire))
    s->queue_object_event({s->clock.read(), data_object_change::registered, current_tid(), object,
                           correlation, correlation != 0 ? std::string{name} : std::string{}});
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
  return register_object(api, address, bytes, memory, device, correlation);
}

// Queues the end of a removed object's lifetime for the backends.
void runtime_state::announce_removal(std::optional<data_object_info> removed) {
  if (!removed) return;
  if (session* s = current_.load(std::memory_order_acquire))
    s->queue_object_event(
        {s->clock.read(), data_object_change::unregistered, current_tid(), std::move(*removed)});
}

// Lifetime events wait for the next drain; a program that registers and
// removes objects faster than drains come must not grow the queue without
// bound: from half the limit on the drainer is woken, and at the limit the
// thread waits until a drain took the queue, as a writer waits for a free
// chunk (the waits are counted, and said at exit).
void session::queue_object_event(pending_object_event event) {
  std::size_t queued = 0;
  {
    std::lock_guard lock{pending_mutex};
    pending_objects.push_back(std::move(event));
    queued = pending_objects.size();
  }
  if (queued < pending_objects_limit / 2) return;
  wake();
  // The drainer itself (a backend or collector registering) must not wait for itself.
  if (queued < pending_objects_limit || t_in_drain) return;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    {
      std::lock_guard lock{pending_mutex};
      if (pending_objects.size() < pending_objects_limit) break;
    }
    wake();
    std::unique_lock lock{pool_mutex};
    if (stopping.load()) break;  // the last drain takes the queue
    // Bounded, in case the drainer is gone (exit, a signal) without a word.
    pool_changed.wait_for(lock, std::chrono::milliseconds{10});
  }
  object_waits.fetch_add(1, std::memory_order_relaxed);
  object_wait_ns.fetch_add(
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - start)
                                     .count()),
      std::memory_order_relaxed);
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

data_object_ref runtime_state::find_object_ref(const void* address) {
  std::shared_lock lock{objects_mutex_};
  const data_object_info* found = objects_.find(reinterpret_cast<std::uintptr_t>(address));
  return found != nullptr ? data_object_ref{found->id, found->memory} : data_object_ref{};
}

}  // namespace ferret::runtime::internal
