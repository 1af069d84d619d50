#include "gpu_attribution.hpp"

#include <algorithm>

namespace ferret::runtime::internal {

context_tree::context_tree() { nodes_.emplace_back(); }

const context_node* context_tree::enter_other(const context_node* parent, const name_info* name) {
  // The tree's own bookkeeping changes: the nodes are handed out const.
  auto& from = const_cast<node&>(static_cast<const node&>(*parent));
  node* child = nullptr;
  if (from.children <= listed_children) {
    for (node* listed = from.first_child; listed != nullptr && child == nullptr; listed = listed->next_sibling)
      if (listed->name == name) child = listed;
  } else if (const auto found = wide_children_.find({parent, name}); found != wide_children_.end()) {
    child = found->second;
  }
  if (child == nullptr) child = add_child(from, name);
  from.last_name = name;
  from.last_child = child;
  return child;
}

context_tree::node* context_tree::add_child(node& parent, const name_info* name) {
  node& child = nodes_.emplace_back();
  static_cast<context_node&>(child) = {static_cast<std::uint32_t>(nodes_.size() - 1), parent.depth + 1, &parent, name};
  ++parent.children;
  if (parent.children <= listed_children) {
    child.next_sibling = parent.first_child;
    parent.first_child = &child;
  } else {
    if (parent.children == listed_children + 1)  // the list becomes a table
      for (node* listed = parent.first_child; listed != nullptr; listed = listed->next_sibling)
        wide_children_.emplace(std::pair{static_cast<const context_node*>(&parent), listed->name}, listed);
    wide_children_.emplace(std::pair{static_cast<const context_node*>(&parent), name}, &child);
  }
  return &child;
}

void launch_table::record(std::uint64_t correlation, std::uint64_t tid, std::int64_t time_ns,
                          const context_node* context, std::uint64_t cycle) {
  entries_.insert_or_assign(correlation, entry{tid, time_ns, context, cycle, false});
}

std::optional<gpu_launch> launch_table::find(std::uint64_t correlation, std::uint64_t cycle) {
  const auto it = entries_.find(correlation);
  if (it == entries_.end()) return std::nullopt;
  it->second.matched = true;
  it->second.cycle = cycle;
  return gpu_launch{correlation, it->second.tid, it->second.time_ns, it->second.context};
}

void launch_table::evict(std::uint64_t cycle) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    const std::uint64_t kept = it->second.matched ? kept_cycles_matched : kept_cycles_unmatched;
    if (cycle >= it->second.cycle + kept)
      it = entries_.erase(it);
    else
      ++it;
  }
}

std::size_t instruction_samples::key_hash::operator()(const key& k) const noexcept {
  std::size_t h = std::hash<const void*>{}(k.context);
  h = h * 1000003u ^ std::hash<const void*>{}(k.function);
  h = h * 1000003u ^ std::hash<std::uint64_t>{}(k.pc_offset);
  h = h * 1000003u ^ std::hash<const void*>{}(k.reason);
  return h * 1000003u ^ k.device;
}

void instruction_samples::add(const gpu_sample_batch& batch, launch_table& launches,
                              std::uint64_t cycle, const context_node* root) {
  // Shares by context: launches of one context pool their weights.
  std::vector<std::pair<const context_node*, double>> shares;
  double total_weight = 0;
  for (const gpu_sample_batch::share& share : batch.launches) {
    if (share.weight <= 0) continue;
    const std::optional<gpu_launch> launch = launches.find(share.correlation, cycle);
    const context_node* context = launch && launch->context != nullptr ? launch->context : root;
    const auto it = std::find_if(shares.begin(), shares.end(),
                                 [&](const auto& known) { return known.first == context; });
    if (it == shares.end())
      shares.emplace_back(context, share.weight);
    else
      it->second += share.weight;
    total_weight += share.weight;
  }
  if (shares.empty()) {
    shares.emplace_back(root, 1.0);
    total_weight = 1.0;
  }
  for (const auto& [context, weight] : shares) {
    const double fraction = weight / total_weight;
    for (const gpu_sample_batch::instruction& instruction : batch.instructions) {
      const double samples = instruction.samples * fraction;
      if (context == root) unattributed_ += samples;
      const key k{context, batch.device, batch.function, instruction.pc_offset, instruction.reason};
      const auto [it, inserted] = index_.try_emplace(k, samples_.size());
      if (inserted)
        samples_.push_back(gpu_instruction_sample{context, batch.device, batch.function,
                                                  instruction.pc_offset, instruction.file,
                                                  instruction.line, instruction.reason, samples});
      else
        samples_[it->second].samples += samples;
    }
  }
}

void instruction_samples::clear() {
  samples_.clear();
  index_.clear();
}

std::size_t remote_accesses::key_hash::operator()(const key& k) const noexcept {
  std::size_t h = std::hash<const void*>{}(k.context);
  h = h * 1000003u ^ std::hash<const void*>{}(k.function);
  h = h * 1000003u ^ std::hash<std::uint64_t>{}(k.pc_offset);
  h = h * 1000003u ^ std::hash<std::uint64_t>{}(k.object_id);
  h = h * 1000003u ^ static_cast<std::size_t>(k.access);
  h = h * 1000003u ^ static_cast<std::uint32_t>(k.target_device);
  return h * 1000003u ^ k.device;
}

void remote_accesses::add(const gpu_remote_access_batch& batch, launch_table& launches,
                          std::uint64_t cycle, const context_node* root,
                          const object_history& objects) {
  const std::optional<gpu_launch> launch =
      batch.correlation != 0 ? launches.find(batch.correlation, cycle) : std::nullopt;
  const context_node* context = launch && launch->context != nullptr ? launch->context : root;
  for (const gpu_remote_access_batch::access& access : batch.accesses) {
    bytes_ += access.bytes;
    if (!launch) bytes_without_launch_ += access.bytes;
    const key k{context,    batch.device,      access.target_device, access.kind,
                batch.function, access.pc_offset, access.object_id};
    const auto [it, inserted] = index_.try_emplace(k, accesses_.size());
    if (inserted) {
      accesses_.push_back(gpu_remote_access{
          context, batch.device, access.target_device, access.kind, batch.function,
          access.pc_offset, access.file, access.line, access.object_id,
          access.object_id != 0 ? objects.find(access.object_id) : nullptr, access.accesses,
          access.bytes});
    } else {
      accesses_[it->second].accesses += access.accesses;
      accesses_[it->second].bytes += access.bytes;
    }
  }
}

void remote_accesses::clear() {
  accesses_.clear();
  index_.clear();
}

void object_history::registered(const data_object_info& object) {
  objects_.insert_or_assign(object.id, entry{object, false});
}

void object_history::released(std::uint64_t id, std::uint64_t cycle) {
  const auto it = objects_.find(id);
  if (it == objects_.end() || it->second.released) return;
  it->second.released = true;
  releases_.push_back({id, cycle});
  if (releases_.size() > kept_released) forget_oldest_release();
}

void object_history::forget_oldest_release() {
  const auto it = objects_.find(releases_.front().id);
  if (it != objects_.end() && it->second.released) objects_.erase(it);
  releases_.pop_front();
}

const data_object_info* object_history::find(std::uint64_t id) const {
  const auto it = objects_.find(id);
  return it == objects_.end() ? nullptr : &it->second.info;
}

void object_history::evict(std::uint64_t cycle) {
  while (!releases_.empty() && cycle >= releases_.front().cycle + kept_cycles)
    forget_oldest_release();
}

std::string allocation_name(std::string_view api, const context_node* context) {
  const std::string path = context_path(context);
  std::string name{api};
  if (!path.empty()) {
    name += '@';
    name += path;
  }
  return name;
}

std::string allocation_names::name(std::uint64_t id, std::string base) {
  std::set<std::uint32_t>& taken = numbers_taken_[base];
  std::uint32_t number = 1;
  for (const std::uint32_t used : taken) {  // ascending: the first gap
    if (used != number) break;
    ++number;
  }
  taken.insert(number);
  std::string name = number == 1 ? base : base + " #" + std::to_string(number);
  live_.insert_or_assign(id, std::make_pair(std::move(base), number));
  return name;
}

void allocation_names::released(std::uint64_t id) {
  const auto it = live_.find(id);
  if (it == live_.end()) return;
  const auto taken = numbers_taken_.find(it->second.first);
  taken->second.erase(it->second.second);
  if (taken->second.empty()) numbers_taken_.erase(taken);
  live_.erase(it);
}

}  // namespace ferret::runtime::internal
