// One thread's profile while records arrive. See tau_thread_profile.hpp.
#include "tau_thread_profile.hpp"

#include <algorithm>

namespace ferret::tau {
namespace {

bool same_region(const runtime::name_info* a, const runtime::name_info* b) noexcept {
  return a == b || (a->name == b->name && a->domain == b->domain);
}

}  // namespace

thread_profile::thread_profile(thread_kind k, std::size_t metric_count, std::uint64_t appearance)
    : kind(k), order(appearance), current(metric_count, 0.0), root_children(metric_count, 0.0),
      metrics_(metric_count) {
  nodes.push_back(call_node{application_function, root_node, 0, 0, false});
  node_values_.assign(2 * metrics_, 0.0);
}

std::uint32_t thread_profile::top_node() const noexcept {
  // Frames from index callpath_depth - 1 on are folded; the one before has a node.
  const std::size_t with_node = std::min<std::size_t>(stack_.size(), callpath_depth - 1);
  return with_node == 0 ? root_node : stack_[with_node - 1].node;
}

std::uint32_t thread_profile::child(std::uint32_t parent, std::uint32_t function) {
  const std::uint32_t cached = nodes[parent].last_child;
  if (cached != 0 && nodes[cached].function == function) return cached;
  const std::uint64_t key = (std::uint64_t{parent} << 32U) | function;
  const auto [it, inserted] = child_index_.try_emplace(key, static_cast<std::uint32_t>(nodes.size()));
  if (inserted) {
    bool recursive = false;
    for (std::uint32_t up = parent; up != root_node && !recursive; up = nodes[up].parent)
      recursive = nodes[up].function == function;
    nodes.push_back(call_node{function, parent, nodes[parent].depth + 1, 0, recursive});
    node_values_.resize(node_values_.size() + 2 * metrics_, 0.0);
  }
  nodes[parent].last_child = it->second;
  return it->second;
}

void thread_profile::begin(const runtime::name_info* region, std::uint32_t function) {
  if (function >= active_.size()) active_.resize(std::size_t{function} + 1, 0);
  const std::uint32_t node = stack_.size() + 1 < callpath_depth ? child(top_node(), function) : folded;
  stack_.push_back(open_frame{region, function, node, active_[function] == 0});
  ++active_[function];
  frame_values_.insert(frame_values_.end(), current.begin(), current.end());
  frame_values_.resize(frame_values_.size() + metrics_, 0.0);
}

std::size_t thread_profile::matching_frame(const runtime::name_info* region) const noexcept {
  std::size_t match = stack_.size();
  while (match > 0 && !same_region(stack_[match - 1].region, region)) --match;
  return match;
}

void thread_profile::close_innermost() {
  const std::size_t frame = stack_.size() - 1;
  const open_frame closed = stack_[frame];
  const double* begin_values = frame_begin(frame);
  const double* children = frame_children(frame);
  double* parent_children = frame == 0 ? root_children.data() : frame_children(frame - 1);
  if (closed.node != folded) {
    double* node_inclusive = inclusive(closed.node);
    double* node_exclusive = exclusive(closed.node);
    for (std::size_t m = 0; m < metrics_; ++m) {
      const double spent = current[m] - begin_values[m];
      node_inclusive[m] += spent;
      node_exclusive[m] += spent - children[m];
      parent_children[m] += spent;
    }
    ++nodes[closed.node].calls;
    ++nodes[nodes[closed.node].parent].child_calls;
  } else {
    folded_totals& totals = folded_calls[closed.function];
    if (totals.exclusive.empty()) {
      totals.exclusive.assign(metrics_, 0.0);
      totals.inclusive.assign(metrics_, 0.0);
    }
    for (std::size_t m = 0; m < metrics_; ++m) {
      const double spent = current[m] - begin_values[m];
      totals.exclusive[m] += spent - children[m];
      if (closed.outermost) totals.inclusive[m] += spent;
      parent_children[m] += spent;
    }
    ++totals.calls;
    ++folded_call_count;
    const open_frame& parent = stack_[frame - 1];  // a folded frame is never the outermost
    if (parent.node != folded)
      ++nodes[parent.node].child_calls;
    else
      ++folded_calls[parent.function].child_calls;
  }
  --active_[closed.function];
  stack_.pop_back();
  frame_values_.resize(frame * 2 * metrics_);
}

void thread_profile::add_interval(std::uint32_t function, double spent_ns) {
  const std::uint32_t node = child(root_node, function);
  inclusive(node)[0] += spent_ns;
  exclusive(node)[0] += spent_ns;
  root_children[0] += spent_ns;
  ++nodes[node].calls;
  ++nodes[root_node].child_calls;
}

std::uint32_t thread_profile::local_event(std::uint32_t event) {
  if (event >= local_event_.size()) local_event_.resize(std::size_t{event} + 1, 0);
  std::uint32_t& slot = local_event_[event];
  if (slot == 0) {
    events.emplace_back();
    event_ids.push_back(event);
    slot = static_cast<std::uint32_t>(events.size());
  }
  return slot - 1;
}

void thread_profile::add_event(std::uint32_t event, double value, std::uint32_t node) {
  const std::uint32_t local = local_event(event);
  events[local].add(value);
  const std::uint64_t key = (std::uint64_t{local} << 32U) | node;
  const auto [it, inserted] =
      context_index_.try_emplace(key, static_cast<std::uint32_t>(context_events.size()));
  if (inserted) context_events.push_back(context_event{local, node, {}});
  context_events[it->second].values.add(value);
}

void thread_profile::add_plain_event(std::uint32_t event, double value) {
  events[local_event(event)].add(value);
}

}  // namespace ferret::tau
