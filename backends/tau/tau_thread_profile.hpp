// ferret/backends/tau — what one profile.N.C.T file holds while records arrive:
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

/// A calling context: a function entered from its parent's context.
struct call_node {
  std::uint32_t function;
  std::uint32_t parent;      // root_node for the root's children (and the root)
  std::uint32_t depth;       // 0 for the root
  std::uint32_t last_child;  // the child entered last (a loop re-enters it), 0: none
  bool recursive;            // the function is also one of its callers: its time is
                             // already in the outermost call's inclusive time
  std::uint64_t calls = 0;
  std::uint64_t child_calls = 0;  // completed calls of its children, folded ones too
};

/// Flat totals of calls made too deep for a node.
struct folded_totals {
  std::uint64_t calls = 0;
  std::uint64_t child_calls = 0;
  std::vector<double> exclusive, inclusive;
};

struct context_event {
  std::uint32_t event;  // index into thread_profile::events
  std::uint32_t node;
  statistics values;
};

enum class thread_kind : std::uint8_t { host, gpu_stream };

class thread_profile {
 public:
  static constexpr std::uint32_t folded = std::numeric_limits<std::uint32_t>::max();

  thread_profile(thread_kind kind, std::size_t metric_count, std::uint64_t appearance);

  // --- regions (host threads) --------------------------------------------------
  /// Opens `function` (called by `region`, which its end must match) at the current values.
  void begin(const runtime::name_info* region, std::uint32_t function);
  /// Closes the innermost open region at the current values.
  void close_innermost();
  /// The open frame whose region `region` ends: its index + 1, 0 when none.
  std::size_t matching_frame(const runtime::name_info* region) const noexcept;
  std::size_t open_frames() const noexcept { return stack_.size(); }

  // --- GPU streams ---------------------------------------------------------------
  /// A completed interval of `function` directly under the root, for TIME only.
  void add_interval(std::uint32_t function, double spent_ns);

  // --- user events ---------------------------------------------------------------
  /// Adds a sample of global event `event`, and of its context event at `node`.
  void add_event(std::uint32_t event, double value, std::uint32_t node);
  /// Adds a sample without a calling context.
  void add_plain_event(std::uint32_t event, double value);

  /// The node of the innermost open region with a node (root_node: none).
  std::uint32_t top_node() const noexcept;
  /// The node of `function` called from `parent`, created on first use.
  std::uint32_t child(std::uint32_t parent, std::uint32_t function);

  // --- times -----------------------------------------------------------------------
  void see(std::int64_t time_ns) noexcept {
    if (!seen) {
      seen = true;
      if (!is_main) start_ns = time_ns;  // the main thread starts with the process
    }
    if (time_ns < start_ns) start_ns = time_ns;
    if (time_ns > end_ns) end_ns = time_ns;
  }

  double* inclusive(std::uint32_t node) noexcept { return &node_values_[std::size_t{node} * 2 * metrics_]; }
  double* exclusive(std::uint32_t node) noexcept { return inclusive(node) + metrics_; }
  const double* inclusive(std::uint32_t node) const noexcept {
    return &node_values_[std::size_t{node} * 2 * metrics_];
  }
  const double* exclusive(std::uint32_t node) const noexcept { return inclusive(node) + metrics_; }

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

  std::vector<double> current;        // TIME (ns) and each counter metric, now
  std::vector<double> root_children;  // inclusive values of the root's completed children

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
    const runtime::name_info* region;
    std::uint32_t function;
    std::uint32_t node;  // folded: deeper than the call-path limit
    bool outermost;      // no caller has the same function
  };
  double* frame_begin(std::size_t frame) noexcept { return &frame_values_[frame * 2 * metrics_]; }
  double* frame_children(std::size_t frame) noexcept { return frame_begin(frame) + metrics_; }
  std::uint32_t local_event(std::uint32_t event);

  std::size_t metrics_;
  std::vector<double> node_values_;  // per node: inclusive[metrics], exclusive[metrics]
  std::unordered_map<std::uint64_t, std::uint32_t> child_index_;  // (parent, function) → node
  std::vector<open_frame> stack_;
  std::vector<double> frame_values_;   // per open frame: values at begin, children's inclusive
  std::vector<std::uint32_t> active_;  // per global function: open frames of it
  std::vector<std::uint32_t> local_event_;  // global event → index + 1 into events (0: none)
  std::unordered_map<std::uint64_t, std::uint32_t> context_index_;  // (event, node) → index
};

}  // namespace ferret::tau
