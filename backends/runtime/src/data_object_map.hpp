// data_object_map.hpp — live data objects by address range.
//
// Ranges form a laminar family: any two are disjoint or one contains the other
// (a named array inside a pool allocation, a user object over an allocation
// that the CUDA collector tracks). Each object links to its innermost
// container, so a lookup is one ordered-map search plus a walk up the
// containers. A range that partially overlaps a live one is refused: that is
// almost always memory reused without unregistering.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "ferret/runtime/backend.hpp"

namespace ferret::runtime::internal {

class data_object_map {
 public:
  enum class insert_result { inserted, empty_range, partial_overlap };

  // `object.id` must be unique among live objects.
  insert_result insert(const data_object_info& object);
  std::optional<data_object_info> erase(std::uint64_t id);
  // Erases the innermost live object that starts at `address`.
  std::optional<data_object_info> erase_at(std::uintptr_t address);
  // The innermost live object containing `address`, or nullptr. For equal
  // ranges, the most recently registered one is the inner.
  const data_object_info* find(std::uintptr_t address) const;
  std::size_t size() const noexcept { return by_id_.size(); }

 private:
  // Sort by start, then larger ranges first, then older first: walking
  // backwards from an address meets inner objects before their containers.
  using key = std::tuple<std::uintptr_t, std::size_t /*~bytes*/, std::uint64_t /*id*/>;
  struct node {
    data_object_info info;
    const node* parent;  // innermost live container, or nullptr
  };
  static key key_of(const data_object_info& object) {
    return {object.address, ~object.bytes, object.id};
  }
  static bool contains(const data_object_info& outer, std::uintptr_t address) {
    return address >= outer.address && address - outer.address < outer.bytes;
  }
  const node* innermost(std::uintptr_t address) const;
  std::optional<data_object_info> erase_node(std::map<key, node>::iterator it);

  std::map<key, node> by_range_;
  std::unordered_map<std::uint64_t, key> by_id_;
};

}  // namespace ferret::runtime::internal
