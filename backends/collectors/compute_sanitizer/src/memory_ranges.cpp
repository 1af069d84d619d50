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

void memory_ranges::released(std::uint64_t address) {
  if (ranges_.erase(address) != 0) ++version_;
}

std::shared_ptr<const memory_ranges::table> memory_ranges::current() {
  if (!tables_.empty() && tables_.back()->version == version_) return tables_.back();
  auto made = std::make_shared<table>();
  made->version = version_;
  made->ranges.reserve(ranges_.size());
  for (const auto& [begin, known] : ranges_)
    made->ranges.push_back(ferret_peer_range{begin, known.end, known.device, 0});
  tables_.push_back(std::move(made));
  if (tables_.size() > kept_versions) tables_.pop_front();
  return tables_.back();
}

std::shared_ptr<const memory_ranges::table> memory_ranges::find(std::uint64_t version) const {
  for (const auto& kept : tables_)
    if (kept->version == version) return kept;
  return nullptr;
}

}  // namespace ferret::compute_sanitizer
