// code_sites.hpp — region names for the code that reached a collector (an
// OpenMP construct, an MPI call), with their source location found from a
// return address: OMPT's codeptr_ra, an MPI wrapper's caller.
//
//   callback / wrapper (hot path)  site_cache, per thread: (label, code, device) → site
//        │ miss                    64 direct-mapped slots, no lock, no allocation
//        ▼
//   site_registry::find_or_add     global map under a mutex, once per site and
//        │                         thread; a new site carries its label only and
//        │                         waits in `pending_`
//        ▼
//   collect() at each drain        symbolizes the pending sites (function, file,
//   (the drain thread)             line), before the runtime reads any site of
//                                  that drain
//
// The runtime copies a site's strings the first time it drains an event that
// names it, so a site must be complete by then. Sites born while a drain is
// under way (between the collector's collect() and add_metadata(), which
// bracket it) may be read by that drain: those are symbolized at once.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "ferret/detail/abi.hpp"

namespace ferret::code_sites {

/// Function, file and line of a code address.
struct source_location {
  std::string function;
  std::string file;
  std::uint32_t line = 0;
};

/// Symbolizes code addresses of the running process. Return addresses point
/// after the call, so the line is looked up one byte before.
class symbolizer {
 public:
  symbolizer();
  ~symbolizer();
  symbolizer(const symbolizer&) = delete;
  symbolizer& operator=(const symbolizer&) = delete;
  source_location locate(const void* return_address);
  /// "DWARF (libdw)" or "dynamic symbols (dladdr)".
  static const char* method() noexcept;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

class site_registry {
 public:
  /// Sites of the domain `domain` (a string that outlives the registry).
  explicit site_registry(const char* domain) noexcept : domain_(domain) {}
  /// The site for `label` reached from `code` (nullptr: no location), on
  /// `device` (-1: none). Thread-safe; allocates only for a new site.
  const detail::site* find_or_add(const char* label, const void* code, int device);
  /// Bracket one drain of the runtime (see the top of this file).
  void drain_started();
  void drain_finished();
  std::size_t size() const;
  std::uint64_t symbolized() const;

 private:
  struct entry {
    detail::site site{};
    const void* code = nullptr;
    std::string name, function, file;
  };
  void symbolize(entry& e);

  const char* domain_;
  mutable std::mutex mutex_;
  std::map<std::tuple<const char*, const void*, int>, std::unique_ptr<entry>> entries_;
  std::vector<entry*> pending_;
  bool draining_ = false;
  std::uint64_t symbolized_ = 0;
  std::unique_ptr<symbolizer> symbolizer_;
};

/// A thread's cache in front of a registry: a hit takes no lock and allocates
/// nothing. Constant-initialised and trivially destructible, so that it may
/// live in thread-local storage without a guard or a destructor call.
class site_cache {
 public:
  const detail::site* find_or_add(site_registry& registry, const char* label, const void* code,
                                  int device = -1) {
    const auto hash = (reinterpret_cast<std::uintptr_t>(code) >> 2) ^
                      (reinterpret_cast<std::uintptr_t>(label) >> 3) ^
                      static_cast<std::uintptr_t>(device + 1) * 0x9e3779b9u;
    slot& cached = slots_[hash % size];
    if (cached.site != nullptr && cached.label == label && cached.code == code && cached.device == device)
      return cached.site;
    cached = {label, code, device, registry.find_or_add(label, code, device)};
    return cached.site;
  }

 private:
  struct slot {
    const char* label;
    const void* code;
    int device;
    const detail::site* site;
  };
  static constexpr unsigned size = 64;
  slot slots_[size] = {};
};

}  // namespace ferret::code_sites
