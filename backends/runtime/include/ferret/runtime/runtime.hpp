// ferret/runtime/runtime.hpp — services the runtime offers to collectors and tools.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ferret/runtime/backend.hpp"

namespace ferret::runtime {

/// The innermost live data object containing `address` (thread-safe), for
/// attributing transfers to the arrays they move.
FERRET_EXPORT std::optional<data_object_info> find_data_object(const void* address);

/// The id of the innermost live data object containing `address`, 0 if none.
/// Allocates nothing: for collectors' API callbacks.
FERRET_EXPORT std::uint64_t find_data_object_id(const void* address) noexcept;

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
  /// Adds the collector's counts (records, losses) to the output's metadata.
  virtual void add_metadata(metadata_list& metadata) const = 0;
  /// In a fork() child: stop without touching the parent's state.
  virtual void abandon() noexcept = 0;
};

/// Adds a collector to the current session (it must outlive the process;
/// collectors are never removed). Returns false without a session.
FERRET_EXPORT bool register_collector(collector* source);

}  // namespace ferret::runtime
