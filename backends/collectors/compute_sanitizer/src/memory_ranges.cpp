// memory_ranges.cpp — see memory_ranges.hpp.
#include "memory_ranges.hpp"

#include <algorithm>
#include <iterator>

namespace ferret::compute_sanitizer {

void memory_ranges::allocated(std::uint64_t address, std::uint64_t bytes, std::int32_t device) {
  if (bytes == 0) return;
  const std::uint64_t end = address + bytes < address ? UINT64_MAX : address + bytes;
  // Ranges overlapping [address, end) are stale.
  auto first = ranges_.lower_bound(address);
  if (first != ranges_.begin() && std::prev(first)->second.end > address) --first;
  auto last = first;
  while (last != ranges_.end() && last->first < end) ++last;
  ranges_.erase(first, last);
  ranges_.emplace(address, range{end, device});
  ++version_;
}

bool memory_ranges::viewed(std::uint64_t address, std::uint64_t bytes, std::int32_t device) {
  if (bytes == 0) return false;
  const std::uint64_t end = address + bytes < address ? UINT64_MAX : address + bytes;
  auto next = ranges_.lower_bound(address);
  if (next != ranges_.end() && next->first < end) return false;
  if (next != ranges_.begin() && std::prev(next)->second.end > address) return false;
  ranges_.emplace(address, range{end, device});
  ++version_;
  return true;
}

void memory_ranges::released(std::uint64_t address) {
  if (ranges_.erase(address) != 0) ++version_;
}

std::shared_ptr<const memory_ranges::table> memory_ranges::current() {
  if (current_ != nullptr && current_->version == version_) return current_;
  auto made = std::make_shared<table>();
  made->version = version_;
  made->ranges.reserve(ranges_.size());
  for (const auto& [begin, known] : ranges_)
    made->ranges.push_back(ferret_peer_range{begin, known.end, known.device, 0});
  current_ = std::move(made);
  return current_;
}

}  // namespace ferret::compute_sanitizer
