// backends/writers/tau — what one profile.N.C.T file holds while records arrive:
// a thread's (or a GPU stream's) calling-context tree with calls and metric
// values per node, and its user events.
//
// Call paths are kept, and written, for regions nested up to callpath_depth - 1
// levels below ".TAU application": a path has at most callpath_depth names
// (TAU_CALLPATH_DEPTH, as TAU counts it). A region entered deeper is *folded*:
// it has no node of its own, its time stays in the inclusive time of the path
// entry at the limit, and it counts fully in its function's flat entry (calls,
// subroutines, exclusive and inclusive time). Folded calls are counted and
// reported. So memory grows with the calling-context tree up to that depth
// (plus the open frames), never with the number of events or the square of the
// nesting depth.
//
// Tasks (begin_task; OpenMP's explicit tasks) have call paths of their own,
// ".TAU application => task", whatever the thread was in when it ran them: a
// thread waiting in a taskwait or barrier runs any ready task there, and a task
// that waits runs others inside it, so that call paths through the waits would
// follow the scheduling (2^depth paths for a recursion of two task constructs).
// The regions a task interrupted do not count its time (they were suspended),
// as Score-P's profiles give each task a tree of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "ferret/runtime/backend.hpp"

namespace ferret::tau {

/// TAU_CALLPATH_DEPTH: the most names in a call path, ".TAU application"
/// included. TAU's default is 2 (caller => callee); ferret keeps whole paths
/// up to this depth. Long names are cut (tau_names.hpp) so that a path line
/// stays within pprof's 64 KiB line buffer.
inline constexpr std::uint32_t callpath_depth = 32;

inline constexpr std::uint32_t application_function = 0;  // ".TAU application"
inline constexpr std::uint32_t root_node = 0;

/// Statistics of a user event. Sums are kept in long double (at least the range
/// of x87's extended precision on x86-64), so that the squares of finite samples
/// (1e200² = 1e400) neither overflow nor lose the smaller samples beside them.
struct statistics {
  std::uint64_t count = 0;
  double max = -std::numeric_limits<double>::infinity();
  double min = std::numeric_limits<double>::infinity();
  long double sum = 0.0L;
  long double sum_of_squares = 0.0L;

  void add(double value) noexcept {
    ++count;
    max = value > max ? value : max;
    min = value < min ? value : min;
    const auto wide = static_cast<long double>(value);
    sum += wide;
    sum_of_squares += wide * wide;
  }
  void merge(const statistics& other) noexcept {
    count += other.count;
    max = other.max > max ? other.max : max;
    min = other.min < min ? other.min : min;
    sum += other.sum;
    sum_of_squares += other.sum_of_squares;
  }
};

/// A calling context: a function entered from its parent's context. TIME is
/// kept in whole nanoseconds (exact, and cheaper than doubles on the way in).
struct call_node {
  std::uint32_t function;
  std::uint32_t parent;      // root_node for the root's children (and the root)
  std::uint32_t depth;       // 0 for the root
  std::uint32_t last_child;  // the child entered last (a loop re-enters it), 0: none
  const runtime::name_info* last_region;  // the name that entered last_child
  bool recursive;            // the function is also one of its callers: its time is
                             // already in the outermost call's inclusive time
  std::uint64_t calls = 0;
  std::uint64_t child_calls = 0;  // completed calls of its children, folded ones too
  std::int64_t inclusive_ns = 0;
  std::int64_t exclusive_ns = 0;
};

/// Flat totals of calls made too deep for a node.
struct folded_totals {
  std::uint64_t calls = 0;
  std::uint64_t child_calls = 0;
  std::int64_t exclusive_ns = 0;
  std::int64_t inclusive_ns = 0;
  std::vector<double> counter_exclusive, counter_inclusive;  // per counter metric

  double exclusive(std::size_t metric) const noexcept {
    return metric == 0 ? static_cast<double>(exclusive_ns) : counter_exclusive[metric - 1];
  }
  double inclusive(std::size_t metric) const noexcept {
    return metric == 0 ? static_cast<double>(inclusive_ns) : counter_inclusive[metric - 1];
  }
};

struct context_event {
  std::uint32_t event;  // index into thread_profile::events
  std::uint32_t node;
  statistics values;
};

enum class thread_kind : std::uint8_t { host, gpu_stream };

/// Metric 0 is TIME (nanoseconds); metrics 1.. are counters (FERRET_TAU_METRICS),
/// whose values a region gets as the change between its begin and end.
class thread_profile {
 public:
  // Node ids of folded frames (deeper than the call-path limit): from `folded` on.
  static constexpr std::uint32_t folded = std::numeric_limits<std::uint32_t>::max() - 1;
  static constexpr std::uint32_t folded_outermost = folded;      // no caller has its function
  static constexpr std::uint32_t folded_recursive = folded + 1;  // a caller has it

  thread_profile(thread_kind kind, std::size_t metric_count, std::uint64_t appearance);

  // --- regions (host threads) --------------------------------------------------
  // The common case — the region entered last from the current context again,
  // TIME only — is inline and touches no table: a loop of regions costs a few
  // compares and stores per event.

  /// The node `region` enters from the current context when it is the one that
  /// entered from there last, else 0: then call begin().
  std::uint32_t cached_child(const runtime::name_info* region) const noexcept {
    const call_node& parent = nodes[current_node_];
    return parent.last_region == region && top_ < cached_depth_limit_ ? parent.last_child : 0;
  }
  /// Opens the region at node `node` from cached_child() now.
  __attribute__((always_inline)) void enter(std::uint32_t node) {
    if (top_ == last_frame_) grow_frames();
    frames_[++top_] = open_frame{now_ns, 0, 0, node, 0, 0, false};
    current_node_ = node;
  }
  /// Opens `function` (called by `region`) now.
  void begin(const runtime::name_info* region, std::uint32_t function);
  /// Opens task `function` now: its node is a child of the root, and the open
  /// frames below it are suspended until it closes.
  void begin_task(std::uint32_t function);
  /// Closes the innermost open region now.
  __attribute__((always_inline)) void close_innermost() {
    const open_frame& frame = frames_[top_];
    if (frame.node < folded && counters_ == 0 && frame.suspended_ns == 0 && !frame.task) {
      const std::int64_t spent = now_ns - frame.begin_ns;
      call_node& node = nodes[frame.node];
      node.inclusive_ns += spent;
      node.exclusive_ns += spent - frame.children_ns;
      ++node.calls;
      ++nodes[node.parent].child_calls;
      frames_[top_ - 1].children_ns += spent;  // the root's frame at least
      current_node_ = node.parent;
      --top_;
      return;
    }
    close_slow();
  }
  std::size_t open_frames() const noexcept { return top_; }

  // --- GPU streams ---------------------------------------------------------------
  /// A completed interval of `function` directly under the root, for TIME only.
  void add_interval(std::uint32_t function, std::int64_t spent_ns);

  // --- user events ---------------------------------------------------------------
  /// Adds a sample of global event `event`, and of its context event at `node`.
  void add_event(std::uint32_t event, double value, std::uint32_t node);
  /// Adds a sample without a calling context.
  void add_plain_event(std::uint32_t event, double value);

  /// The node of the innermost open region with a node (root_node: none).
  std::uint32_t top_node() const noexcept { return current_node_; }
  /// The node of `function` called from `parent`, created on first use.
  std::uint32_t child(std::uint32_t parent, std::uint32_t function);

  // --- times and metrics -------------------------------------------------------
  void see(std::int64_t time_ns) noexcept {
    if (!seen) {
      seen = true;
      if (!is_main) start_ns = time_ns;  // the main thread starts with the process
    }
    if (time_ns < start_ns) start_ns = time_ns;
    if (time_ns > end_ns) end_ns = time_ns;
  }
  /// A counter metric's value from now on (metric >= 1).
  void set_counter(std::size_t metric, double value) noexcept { counters_now_[metric - 1] = value; }
  /// Metric `metric` now, at the root (a counter from 0), of a node.
  double now_value(std::size_t metric) const noexcept {
    return metric == 0 ? static_cast<double>(now_ns) : counters_now_[metric - 1];
  }
  double root_children(std::size_t metric) const noexcept {
    return metric == 0 ? static_cast<double>(frames_[0].children_ns) : root_children_counters_[metric - 1];
  }
  double inclusive(std::uint32_t node, std::size_t metric) const noexcept {
    return metric == 0 ? static_cast<double>(nodes[node].inclusive_ns)
                       : node_counters_[(std::size_t{node} * 2) * counters_ + metric - 1];
  }
  double exclusive(std::uint32_t node, std::size_t metric) const noexcept {
    return metric == 0 ? static_cast<double>(nodes[node].exclusive_ns)
                       : node_counters_[(std::size_t{node} * 2 + 1) * counters_ + metric - 1];
  }

  thread_kind kind;
  std::uint64_t order;  // appearance, for the thread numbers
  bool is_main = false;
  std::uint64_t tid = 0;
  std::string name;  // the thread's
  std::uint32_t device = 0;
  std::uint32_t stream = 0;

  bool seen = false;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t now_ns = 0;  // TIME now

  std::vector<call_node> nodes;
  // Launch contexts (the runtime's calling-context tree) already given a node.
  std::unordered_map<const runtime::context_node*, std::uint32_t> node_of_context;
  std::unordered_map<std::uint32_t, folded_totals> folded_calls;  // by function
  std::uint64_t folded_call_count = 0;

  std::vector<statistics> events;             // in order of first sample
  std::vector<std::uint32_t> event_ids;       // the global id of each
  std::vector<context_event> context_events;  // in order of first sample

 private:
  struct open_frame {
    std::int64_t begin_ns;
    std::int64_t children_ns;   // the inclusive time of its completed children
    std::int64_t suspended_ns;  // time of the tasks run inside it (and inside its children)
    std::uint32_t node;         // folded_outermost or folded_recursive: no node
    std::uint32_t function;     // folded frames only (a node knows its function)
    std::uint32_t outer_node;   // tasks: the node current when they began
    bool task;                  // begin_task
  };
  void grow_frames() {
    frames_.resize(frames_.size() * 2);
    last_frame_ = frames_.size() - 1;
  }
  void close_slow();
  std::uint32_t local_event(std::uint32_t event);
  // Counter metrics of open frame `frame` (from 1): values at begin, children's
  // inclusive, suspended (as suspended_ns).
  double* frame_counters(std::size_t frame) noexcept { return &frame_counters_[(frame - 1) * 3 * counters_]; }
  void push_frame(const open_frame& frame);

  std::size_t counters_;  // counter metrics (metrics besides TIME)
  std::vector<double> counters_now_;
  std::vector<double> root_children_counters_;
  std::uint32_t current_node_ = root_node;  // of the innermost frame with a node
  std::vector<double> node_counters_;  // per node: inclusive[counters], exclusive[counters]
  std::unordered_map<std::uint64_t, std::uint32_t> child_index_;  // (parent, function) → node
  std::vector<open_frame> frames_;  // [0]: the root's, for its children's time; [top_]: innermost
  std::size_t top_ = 0;
  std::size_t last_frame_ = 0;          // frames_.size() - 1
  std::size_t cached_depth_limit_ = 0;  // enter() takes frames up to this depth
  std::vector<double> frame_counters_;  // from frame 1 on
  std::unordered_map<std::uint32_t, std::uint32_t> folded_open_;  // function → open folded frames
  std::vector<std::uint32_t> local_event_;  // global event → index + 1 into events (0: none)
  std::unordered_map<std::uint64_t, std::uint32_t> context_index_;  // (event, node) → index
};

}  // namespace ferret::tau
