// metadata_store.hpp — the run's key/value metadata (ferret::set_metadata), in
// the order the keys were first set; a later value replaces the earlier in
// place. A hash index beside the list makes setting a key constant time on
// average, whatever the number of keys (a scan of the list made 80 000 keys
// take seconds).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "ferret/runtime/backend.hpp"

namespace ferret::runtime::internal {

// KeyEqual: tests count the key comparisons with their own.
template <class KeyEqual = std::equal_to<std::string>>
class basic_metadata_store {
 public:
  void set(std::string_view key, metadata_value value) {
    ++version_;
    std::string owned{key};
    const auto [found, inserted] = index_.try_emplace(owned, entries_.size());
    if (!inserted) {
      entries_[found->second].second = std::move(value);
      return;
    }
    entries_.emplace_back(std::move(owned), std::move(value));
  }
  const metadata_list& entries() const noexcept { return entries_; }
  // Changes with every set(): a reader copies the entries only when it moved.
  std::uint64_t version() const noexcept { return version_; }

 private:
  metadata_list entries_;
  std::unordered_map<std::string, std::size_t, std::hash<std::string>, KeyEqual> index_;
  std::uint64_t version_ = 0;
};

using metadata_store = basic_metadata_store<>;

}  // namespace ferret::runtime::internal
