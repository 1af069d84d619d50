#include "data_object_map.hpp"

#include <vector>

namespace ferret::runtime::internal {

const data_object_map::node* data_object_map::innermost(std::uintptr_t address) const {
  auto it = by_range_.upper_bound(key{address, SIZE_MAX, UINT64_MAX});
  if (it == by_range_.begin()) return nullptr;
  // The last object starting at or before `address`; if it does not contain
  // the address, only its containers can (the family is laminar).
  for (const node* candidate = &std::prev(it)->second; candidate != nullptr;
       candidate = candidate->parent)
    if (contains(candidate->info, address)) return candidate;
  return nullptr;
}

const data_object_info* data_object_map::find(std::uintptr_t address) const {
  const node* found = innermost(address);
  return found ? &found->info : nullptr;
}

data_object_map::insert_result data_object_map::insert(const data_object_info& object) {
  if (object.bytes == 0 || object.address + object.bytes < object.address)
    return insert_result::empty_range;
  const std::uintptr_t first = object.address;
  const std::uintptr_t last = object.address + object.bytes - 1;

  // The new object's container: the innermost object holding its first byte
  // that also holds its last; objects in between must lie inside the new one.
  const node* parent = innermost(first);
  while (parent != nullptr && !contains(parent->info, last)) {
    if (parent->info.address < first) return insert_result::partial_overlap;
    parent = parent->parent;
  }
  // Objects starting inside the new range must end inside it too; the
  // outermost of them (those whose container is `parent`) move under it.
  std::vector<node*> children;
  for (auto it = by_range_.lower_bound(key{first, 0, 0});
       it != by_range_.end() && std::get<0>(it->first) <= last; ++it) {
    node& inside = it->second;
    if (&inside == parent) continue;
    if (!contains(object, inside.info.address + inside.info.bytes - 1)) {
      // Starts at `first` and is larger or equal: an ancestor, already checked.
      if (inside.info.address == first && inside.info.bytes >= object.bytes) continue;
      return insert_result::partial_overlap;
    }
    if (inside.parent == parent) children.push_back(&inside);
  }
  auto [it, added] = by_range_.emplace(key_of(object), node{object, parent});
  for (node* child : children) child->parent = &it->second;
  by_id_.emplace(object.id, it->first);
  return insert_result::inserted;
}

std::optional<data_object_info> data_object_map::erase_node(std::map<key, node>::iterator it) {
  const node* removed = &it->second;
  const std::uintptr_t last = removed->info.address + removed->info.bytes - 1;
  for (auto child = std::next(it); child != by_range_.end() && std::get<0>(child->first) <= last;
       ++child)
    if (child->second.parent == removed) child->second.parent = removed->parent;
  // Same-range objects registered earlier sort before it and cannot be its children.
  data_object_info info = std::move(it->second.info);
  by_id_.erase(info.id);
  by_range_.erase(it);
  return info;
}

std::optional<data_object_info> data_object_map::erase(std::uint64_t id) {
  const auto found = by_id_.find(id);
  if (found == by_id_.end()) return std::nullopt;
  return erase_node(by_range_.find(found->second));
}

std::optional<data_object_info> data_object_map::erase_at(std::uintptr_t address) {
  const node* inner = innermost(address);
  while (inner != nullptr && inner->info.address != address) inner = inner->parent;
  if (inner == nullptr) return std::nullopt;
  return erase_node(by_range_.find(key_of(inner->info)));
}

}  // namespace ferret::runtime::internal
