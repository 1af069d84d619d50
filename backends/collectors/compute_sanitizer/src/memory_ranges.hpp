// memory_ranges.hpp — which memory a device address belongs to, as the
// Compute Sanitizer reports allocations (device memory per context, pinned
// and mapped host memory, managed memory). The patch needs a sorted, disjoint
// table on each device; the table changes with every allocation, and a
// launch's counters name ranges by their index in the table it was given, so
// each version is an immutable table that a launch keeps until it is decoded.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "peer_access_layout.h"

namespace ferret::compute_sanitizer {

class memory_ranges {
 public:
  /// A table of one version: sorted by begin, disjoint.
  struct table {
    std::uint64_t version;
    std::vector<ferret_peer_range> ranges;
  };

  /// An allocation of `bytes` at `address` in `device`'s memory
  /// (runtime::host_memory_device for host memory). An allocation overlapping known ones replaces them (the
  /// driver reuses addresses it was told are free).
  void allocated(std::uint64_t address, std::uint64_t bytes, std::int32_t device);
  /// A view of `device`'s memory mapped at `address` for another device (a
  /// peer mapping): taken unless a known allocation already covers part of it
  /// (a view at the owner's own address says nothing new). True if taken.
  bool viewed(std::uint64_t address, std::uint64_t bytes, std::int32_t device);
  /// The allocation starting at `address` is gone (unknown addresses: no-op).
  void released(std::uint64_t address);

  /// The current table (made once per change); never null.
  std::shared_ptr<const table> current();

  std::size_t size() const noexcept { return ranges_.size(); }

 private:
  struct range {
    std::uint64_t end;
    std::int32_t device;
  };
  std::map<std::uint64_t, range> ranges_;  // by begin
  std::uint64_t version_ = 1;
  std::shared_ptr<const table> current_;  // made for version_, or older
};

}  // namespace ferret::compute_sanitizer
