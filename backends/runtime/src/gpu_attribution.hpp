// gpu_attribution.hpp — joins GPU activity with the host side that caused it.
//
// Collectors write a kind_correlation event (the API call's correlation id)
// into the launching thread's buffer. While draining, the runtime follows
// each thread's region stack through a calling-context tree and records, per
// correlation id, the thread, time and context of the launch. GPU records
// arrive later (collectors flush at the start of a drain, before the threads
// are drained) and are matched by correlation id; data objects named by id
// are resolved against the objects' history, which keeps released objects a
// while for operations completed after their release. Drainer only.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ferret/runtime/backend.hpp"
#include "ferret/runtime/runtime.hpp"

namespace ferret::runtime::internal {

class context_tree {
 public:
  context_tree();
  context_tree(const context_tree&) = delete;
  context_tree& operator=(const context_tree&) = delete;

  const context_node* root() const noexcept { return &nodes_.front(); }
  // The child of `parent` named `name`, created on first use. Inline for the
  // child entered last (loops), as the drain does this for every region.
  const context_node* enter(const context_node* parent, const name_info* name) {
    const auto* from = static_cast<const node*>(parent);
    return from->last_name == name ? from->last_child : enter_other(parent, name);
  }
  std::size_t size() const noexcept { return nodes_.size(); }

 private:
  // A node's children are a list of its own, searched in place: most nodes
  // have a few, and recursion (a task tree, a recursive solver) makes
  // millions of nodes, where one hash table of every (parent, name) missed
  // the cache on each entry and rehashed as it grew (56 % of a drain's time
  // on a recursive task program). A node with more than `listed_children`
  // children finds them in `wide_children_` instead.
  static constexpr std::uint32_t listed_children = 8;
  struct node : context_node {
    // Loops re-enter the same child: one cached (name, child) per node saves
    // the search on almost every region entry.
    const name_info* last_name = nullptr;
    const node* last_child = nullptr;
    node* first_child = nullptr;
    node* next_sibling = nullptr;
    std::uint32_t children = 0;
  };
  struct key_hash {
    std::size_t operator()(const std::pair<const context_node*, const name_info*>& key) const noexcept {
      return std::hash<const void*>{}(key.first) * 31 + std::hash<const void*>{}(key.second);
    }
  };
  const context_node* enter_other(const context_node* parent, const name_info* name);
  node* add_child(node& parent, const name_info* name);

  std::deque<node> nodes_;
  std::unordered_map<std::pair<const context_node*, const name_info*>, node*, key_hash> wide_children_;
};

// Launches by correlation id. A launch can start several operations (a graph,
// a copy split in pieces), so a matched entry stays until `kept_cycles_matched`
// drains have passed without a match; one never matched goes after
// `kept_cycles_unmatched` drains.
class launch_table {
 public:
  static constexpr std::uint64_t kept_cycles_matched = 3;
  static constexpr std::uint64_t kept_cycles_unmatched = 50;

  void record(std::uint64_t correlation, std::uint64_t tid, std::int64_t time_ns,
              const context_node* context, std::uint64_t cycle);
  // The launch, or nullopt; marks the entry used in `cycle`.
  std::optional<gpu_launch> find(std::uint64_t correlation, std::uint64_t cycle);
  void evict(std::uint64_t cycle);
  std::size_t size() const noexcept { return entries_.size(); }

 private:
  struct entry {
    std::uint64_t tid;
    std::int64_t time_ns;
    const context_node* context;
    std::uint64_t cycle;  // recorded, or last matched
    bool matched;
  };
  std::unordered_map<std::uint64_t, entry> entries_;
};

// Data objects by id, as backends saw them announced; released ones are kept
// for `kept_cycles` drains, and at most the last `kept_released` of them, so
// that memory follows the live objects, not how many came and went.
class object_history {
 public:
  static constexpr std::uint64_t kept_cycles = 50;
  // Twice the lifetime events queued for one drain (session::pending_objects_limit).
  static constexpr std::size_t kept_released = 16384;

  void registered(const data_object_info& object);
  void released(std::uint64_t id, std::uint64_t cycle);
  const data_object_info* find(std::uint64_t id) const;
  void evict(std::uint64_t cycle);
  std::size_t size() const noexcept { return objects_.size(); }

 private:
  struct entry {
    data_object_info info;
    bool released = false;
  };
  struct release {
    std::uint64_t id;
    std::uint64_t cycle;
  };
  void forget_oldest_release();

  std::unordered_map<std::uint64_t, entry> objects_;
  std::deque<release> releases_;  // oldest first
};

// Instruction samples by calling context: each batch's samples shared among
// its launches' contexts by weight, summed per (context, device, function,
// instruction, reason) within one drain. Launches not found (and batches with
// none) give their share to the root; `unattributed` counts those samples.
class instruction_samples {
 public:
  void add(const gpu_sample_batch& batch, launch_table& launches, std::uint64_t cycle,
           const context_node* root);
  // The samples of this drain, then empty again.
  std::vector<gpu_instruction_sample>& drained() noexcept { return samples_; }
  void clear();
  double unattributed() const noexcept { return unattributed_; }

 private:
  struct key {
    const context_node* context;
    std::uint32_t device;
    const char* function;
    std::uint64_t pc_offset;
    const gpu_stall_reason* reason;
    bool operator==(const key& other) const noexcept {
      return context == other.context && device == other.device && function == other.function &&
             pc_offset == other.pc_offset && reason == other.reason;
    }
  };
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept;
  };
  std::vector<gpu_instruction_sample> samples_;
  std::unordered_map<key, std::size_t, key_hash> index_;  // into samples_
  double unattributed_ = 0;
};

// Device-initiated traffic of one drain, summed per (context, device, target,
// access, function, instruction, object) over the launches of a context.
class remote_accesses {
 public:
  void add(const gpu_remote_access_batch& batch, launch_table& launches, std::uint64_t cycle,
           const context_node* root, const object_history& objects);
  // This drain's entries, then empty again.
  std::vector<gpu_remote_access>& drained() noexcept { return accesses_; }
  void clear();
  // Totals over the session, for the metadata.
  std::uint64_t bytes() const noexcept { return bytes_; }
  std::uint64_t bytes_without_launch() const noexcept { return bytes_without_launch_; }

 private:
  struct key {
    const context_node* context;
    std::uint32_t device;
    std::int32_t target_device;
    memory_access access;
    const char* function;
    std::uint64_t pc_offset;
    std::uint64_t object_id;
    bool operator==(const key& other) const noexcept {
      return context == other.context && device == other.device &&
             target_device == other.target_device && access == other.access &&
             function == other.function && pc_offset == other.pc_offset &&
             object_id == other.object_id;
    }
  };
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept;
  };
  std::vector<gpu_remote_access> accesses_;
  std::unordered_map<key, std::size_t, key_hash> index_;  // into accesses_
  std::uint64_t bytes_ = 0;
  std::uint64_t bytes_without_launch_ = 0;
};

// The name of an allocation the runtime tracks by itself: "<api>@<context
// path>", or "<api>" outside any region.
std::string allocation_name(std::string_view api, const context_node* context);

// Names of those allocations, told apart while they live: the first live one
// of a name keeps it, one made while it lives gets " #2", and so on (the
// smallest number free). A number is free again once its allocation is
// released, so that a call site allocating and freeing in a loop keeps one
// name (and a profile one entry).
class allocation_names {
 public:
  // The name for allocation `id`, whose name without a number is `base`.
  std::string name(std::uint64_t id, std::string base);
  void released(std::uint64_t id);

 private:
  std::unordered_map<std::string, std::set<std::uint32_t>> numbers_taken_;  // by base name
  std::unordered_map<std::uint64_t, std::pair<std::string, std::uint32_t>> live_;  // id -> base, number
};

}  // namespace ferret::runtime::internal
