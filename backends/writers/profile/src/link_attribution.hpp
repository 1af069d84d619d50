// Attribution of sampled link bytes (FERRET_CUDA_METRICS_SAMPLING: NVLink and
// PCIe bytes per interval of a GPU) to the kernels that ran on that GPU then.
// Shared by the profile model (summary, report) and the Chrome writer (kernel
// arguments).
//
// An interval's bytes go to the kernels that overlap it: all of them to a
// kernel that ran alone in it ("exact"); split by overlap time among several
// ("shared"); none ran: "no kernel" (the GPU idled or only copied).
//
// Kernels and intervals arrive in separate calls and drains, in either order.
// Per device a window holds the kernels and intervals not yet settled; an
// interval is attributed once the kernels have passed its end (a kernel that
// ends later arrived) or at the end of the drain after the one that brought it
// (the collector had a whole drain to deliver the kernels that ran then). A
// kernel is done once the intervals have passed its end: no later interval
// can reach it. Memory is bounded whatever the run: past window_limit kernels
// (or intervals) of a device the oldest is settled early (counted).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "ferret/runtime/backend.hpp"

namespace ferret::profile {

/// The link counters whose bytes are attributed to kernels.
enum class link_counter : std::uint8_t { nvlink_sent, nvlink_received, pcie_read, pcie_write };
inline constexpr std::size_t link_counters = 4;
using link_bytes = std::array<double, link_counters>;

/// Which link counter a sampled metric is, by the vendor's name
/// ("nvltx__bytes.sum" is NVLink sent); nullopt for every other metric
/// (including the "_data_user" splits, which the totals already hold).
std::optional<link_counter> link_counter_of(std::string_view metric_name) noexcept;
/// "NVLink sent", "NVLink received", "PCIe read", "PCIe write".
std::string_view describe(link_counter counter) noexcept;

/// How an interval's bytes were attributed.
enum class link_share : std::uint8_t { exact, shared, no_kernel };

/// A kernel launch's attributed bytes.
struct kernel_link_bytes {
  link_bytes exact{};   // from intervals in which it ran alone
  link_bytes shared{};  // its overlap's part of intervals in which several ran
  std::uint32_t intervals = 0;  // sampled intervals it overlapped
  double total() const noexcept;
};

class link_attribution {
 public:
  class handler {
   public:
    virtual ~handler() = default;
    /// A kernel no later interval can reach, with its bytes; nullptr when its
    /// device samples no link counter (or had announced none by the end of
    /// the drain that brought the kernel). Called once per kernel added.
    virtual void kernel_done(std::uint64_t key, const kernel_link_bytes* bytes) = 0;
    /// An interval's link bytes, attributed.
    virtual void interval_done(std::uint32_t device, link_share share, const link_bytes& bytes) = 0;
  };

  /// Kernels (or intervals) a sampled device's window holds at most.
  static constexpr std::size_t window_limit = 1U << 16U;
  /// Kernels a device without link counters holds until the drain ends (its
  /// counters may be announced later in the same drain); older ones are done
  /// without bytes.
  static constexpr std::size_t unsampled_limit = 1U << 12U;

  explicit link_attribution(handler& sink) : handler_(sink) {}

  void add_metric_set(const runtime::gpu_metric_set& set);
  /// A kernel launch; `key` is the caller's, handed back by kernel_done.
  void add_kernel(std::uint32_t device, std::int64_t begin_ns, std::int64_t end_ns,
                  std::uint64_t key);
  void add_intervals(const runtime::gpu_metric_interval* intervals, std::size_t count);
  /// After every drain (the backend's flush).
  void end_drain();
  /// At the end: settles everything held.
  void finish();

  /// Kernels that arrived after intervals they overlap were attributed: those
  /// intervals' bytes went to the kernels known then (or to "no kernel").
  std::uint64_t late_kernels() const noexcept { return late_kernels_; }
  /// Kernels and intervals settled early because a window was full.
  std::uint64_t settled_at_limit() const noexcept { return settled_at_limit_; }

 private:
  static constexpr std::int64_t no_time = std::numeric_limits<std::int64_t>::min();
  struct held_kernel {
    std::int64_t begin_ns, end_ns;
    std::uint64_t key;
    kernel_link_bytes bytes;
  };
  struct held_interval {
    std::int64_t begin_ns, end_ns;
    link_bytes bytes;
    std::uint64_t drain;  // the drain that brought it
  };
  struct device_window {
    // Index of each link counter in the set's values; nullopt: not sampled.
    std::array<std::optional<std::size_t>, link_counters> index{};
    bool sampled = false;  // a set with at least one link counter
    std::deque<held_kernel> kernels;  // by begin time
    std::deque<held_interval> intervals;  // in time order
    std::int64_t kernels_reached_ns = no_time;  // the latest kernel end seen
    std::int64_t attributed_to_ns = no_time;    // the end of the last attributed interval
  };

  device_window& window(std::uint32_t device);
  void attribute_front(std::uint32_t device, device_window& window);
  void retire_passed(device_window& window);
  void retire_all(device_window& window);
  void settle(std::uint32_t device, device_window& window, bool everything);

  handler& handler_;
  std::map<std::uint32_t, device_window> windows_;
  std::uint64_t drain_ = 0;
  std::uint64_t late_kernels_ = 0;
  std::uint64_t settled_at_limit_ = 0;
  struct overlap {
    held_kernel* kernel;
    std::int64_t ns;
  };
  std::vector<overlap> overlaps_;  // scratch of attribute_front
};

}  // namespace ferret::profile
