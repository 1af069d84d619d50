// sites.hpp — region names for OpenMP constructs, with their source location
// found from the return address the runtime passes (codeptr_ra).
//
//   callback (hot path)            per-thread cache: (label, codeptr, device) → site
//        │ miss                    64 direct-mapped slots, no lock, no allocation
//        ▼
//   site_registry::find_or_add     global map under a mutex, once per construct and
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

namespace ferret::ompt {

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

  mutable std::mutex mutex_;
  std::map<std::tuple<const char*, const void*, int>, std::unique_ptr<entry>> entries_;
  std::vector<entry*> pending_;
  bool draining_ = false;
  std::uint64_t symbolized_ = 0;
  std::unique_ptr<symbolizer> symbolizer_;
};

}  // namespace ferret::ompt
