// One thread's profile while records arrive. See tau_thread_profile.hpp; the
// common cases (a region with a node, TIME only) are inline there, the rest here.
#include "tau_thread_profile.hpp"

#include <algorithm>

namespace ferret::tau {

thread_profile::thread_profile(thread_kind k, std::size_t metric_count, std::uint64_t appearance)
    : kind(k), order(appearance), counters_(metric_count - 1), counters_now_(counters_, 0.0),
      root_children_counters_(counters_, 0.0), node_counters_(2 * counters_, 0.0) {
  nodes.push_back(call_node{application_function, root_node, 0, 0, nullptr, false});
  frames_.resize(64);
  last_frame_ = frames_.size() - 1;
  frames_[0] = open_frame{0, 0, 0, root_node, application_function, root_node, false};
  // enter() opens frames with a node and TIME only.
  cached_depth_limit_ = counters_ == 0 ? callpath_depth - 1 : 0;
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
    nodes.push_back(call_node{function, parent, nodes[parent].depth + 1, 0, nullptr, recursive});
    node_counters_.resize(node_counters_.size() + 2 * counters_, 0.0);
  }
  nodes[parent].last_child = it->second;
  nodes[parent].last_region = nullptr;  // begin() says which name entered it
  return it->second;
}

void thread_profile::begin(const runtime::name_info* region, std::uint32_t function) {
  open_frame frame{now_ns, 0, 0, folded_outermost, function, 0, false};
  if (nodes[current_node_].depth + 1 < callpath_depth) {
    const std::uint32_t parent = current_node_;
    frame.node = child(parent, function);
    nodes[parent].last_region = region;
    current_node_ = frame.node;
  } else {
    // Folded: it counts in its function's inclusive time unless a caller has the
    // same function (a node above it, or another folded frame).
    const auto open = folded_open_.find(function);
    bool outermost = open == folded_open_.end() || open->second == 0;
    for (std::uint32_t up = top_node(); up != root_node && outermost; up = nodes[up].parent)
      outermost = nodes[up].function != function;
    if (!outermost) frame.node = folded_recursive;
    ++folded_open_[function];
  }
  push_frame(frame);
}

void thread_profile::begin_task(std::uint32_t function) {
  // Unlike begin(), no last_region for the root: enter() never opens a task as
  // an ordinary frame.
  const std::uint32_t node = child(root_node, function);
  push_frame(open_frame{now_ns, 0, 0, node, function, current_node_, true});
  current_node_ = node;
}

void thread_profile::push_frame(const open_frame& frame) {
  if (top_ == last_frame_) grow_frames();
  frames_[++top_] = frame;
  if (counters_ > 0) {
    frame_counters_.insert(frame_counters_.end(), counters_now_.begin(), counters_now_.end());
    frame_counters_.resize(frame_counters_.size() + 2 * counters_, 0.0);
  }
}

void thread_profile::close_slow() {
  const std::size_t index = top_;
  const open_frame frame = frames_[index];
  // The frame's own time leaves out the tasks run inside it. A task's whole
  // time is suspension for the frames it interrupted; its own time is the
  // root's child's (its node's parent is the root).
  const std::int64_t elapsed = now_ns - frame.begin_ns;
  const std::int64_t spent = elapsed - frame.suspended_ns;
  open_frame& interrupted = frames_[index - 1];
  if (frame.task) {
    interrupted.suspended_ns += elapsed;
    frames_[0].children_ns += spent;
  } else {
    interrupted.children_ns += spent;
    interrupted.suspended_ns += frame.suspended_ns;
  }
  const double* counter_begin = nullptr;
  const double* counter_children = nullptr;
  const double* counter_suspended = nullptr;
  double* parent_counter_children = nullptr;   // where the frame's own change adds up
  double* parent_counter_suspended = nullptr;  // nullptr: the root's (not kept)
  if (counters_ > 0) {
    counter_begin = frame_counters(index);
    counter_children = counter_begin + counters_;
    counter_suspended = counter_children + counters_;
    parent_counter_children =
        index == 1 || frame.task ? root_children_counters_.data() : frame_counters(index - 1) + counters_;
    if (index > 1) parent_counter_suspended = frame_counters(index - 1) + 2 * counters_;
  }
  const auto counter_spent = [&](std::size_t c) {
    const double change = counters_now_[c] - counter_begin[c];
    if (parent_counter_suspended != nullptr)
      parent_counter_suspended[c] += frame.task ? change : counter_suspended[c];
    return change - counter_suspended[c];
  };
  if (frame.node < folded) {
    call_node& node = nodes[frame.node];
    node.inclusive_ns += spent;
    node.exclusive_ns += spent - frame.children_ns;
    ++node.calls;
    ++nodes[node.parent].child_calls;
    current_node_ = frame.task ? frame.outer_node : node.parent;
    double* node_inclusive = node_counters_.data() + std::size_t{frame.node} * 2 * counters_;  // none: TIME only
    double* node_exclusive = node_inclusive + counters_;
    for (std::size_t c = 0; c < counters_; ++c) {
      const double change = counter_spent(c);
      node_inclusive[c] += change;
      node_exclusive[c] += change - counter_children[c];
      parent_counter_children[c] += change;
    }
  } else {
    folded_totals& totals = folded_calls[frame.function];
    if (totals.counter_exclusive.size() != counters_) {
      totals.counter_exclusive.assign(counters_, 0.0);
      totals.counter_inclusive.assign(counters_, 0.0);
    }
    ++totals.calls;
    totals.exclusive_ns += spent - frame.children_ns;
    const bool outermost = frame.node == folded_outermost;
    if (outermost) totals.inclusive_ns += spent;
    for (std::size_t c = 0; c < counters_; ++c) {
      const double change = counter_spent(c);
      totals.counter_exclusive[c] += change - counter_children[c];
      if (outermost) totals.counter_inclusive[c] += change;
      parent_counter_children[c] += change;
    }
    ++folded_call_count;
    --folded_open_[frame.function];
    const open_frame& parent = frames_[index - 1];  // a real frame: folded ones are deep
    if (parent.node < folded)
      ++nodes[parent.node].child_calls;
    else
      ++folded_calls[parent.function].child_calls;
  }
  --top_;
  if (counters_ > 0) frame_counters_.resize((index - 1) * 3 * counters_);
}

void thread_profile::add_interval(std::uint32_t function, std::int64_t spent_ns) {
  call_node& node = nodes[child(root_node, function)];
  node.inclusive_ns += spent_ns;
  node.exclusive_ns += spent_ns;
  ++node.calls;
  frames_[0].children_ns += spent_ns;
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
