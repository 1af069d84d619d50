// clock.hpp — the host clock: raw readings on the hot path, nanoseconds at drain time.
//
// The hot path stores raw counter values (rdtsc on x86-64). Rather than trust a
// nominal frequency, the runtime takes a (counter, CLOCK_MONOTONIC_RAW) pair at
// the start and at drains (10 ms apart at least), and converts each raw value by
// linear interpolation between the pairs around it: drift between pairs is
// bounded by their spacing. Raw values past the newest pair are extrapolated
// with the newest rate; the next segment starts where that extrapolation
// reached, so a value once given never changes and one thread's times never go
// back from one drain to the next.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

namespace ferret::runtime::internal {

enum class clock_source { tsc, cntvct, monotonic_raw };

std::int64_t monotonic_raw_ns() noexcept;
std::int64_t realtime_ns() noexcept;
// FERRET_TEST_CLOCK_OFFSET_NS: how far this process pretends its host clock is
// off (tests of the MPI clock alignment); 0 unless set.
std::int64_t test_clock_offset_ns() noexcept;

// Whether the CPU's counter can timestamp events from every core: the CPU
// reports an invariant TSC, or the kernel itself uses it as its clocksource.
bool hardware_counter_is_invariant() noexcept;

class host_clock {
 public:
  // `hardware` selects the counter the inline hot path reads on this
  // architecture; false selects CLOCK_MONOTONIC_RAW for every event.
  // `origin_ns` (CLOCK_MONOTONIC_RAW, at or before now) becomes time zero.
  void start(bool hardware, std::int64_t origin_ns) noexcept;

  clock_source source() const noexcept { return source_; }
  std::string source_name() const;
  // True when the inline hot path may stamp events itself.
  bool hot_path_stamps() const noexcept { return hot_path_stamps_; }

  // A raw reading in this clock's unit (thread-safe).
  std::uint64_t read() const noexcept;

  // Adds a (raw, ns) pair; call from the draining thread only, before
  // converting the events written up to now.
  void add_sync_point();
  // Nanoseconds since the origin for a raw value (draining thread only).
  std::int64_t to_ns(std::uint64_t raw) noexcept {
    note_converted(raw);
    const newest_conversion newest = newest_segment();
    return newest.covers(raw) ? newest.to_ns(raw) : to_ns_elsewhere(raw);
  }
  // The newest segment, where nearly every drained event falls, as a value a
  // loop keeps in registers (the drain converts every event with it). A loop
  // that converts with it reports the newest raw value it converted.
  struct newest_conversion {
    std::uint64_t base_raw;  // UINT64_MAX: no segment yet
    std::uint64_t rate;      // nanoseconds per tick, 32.32 fixed point
    std::int64_t base_ns;    // since the origin
    bool covers(std::uint64_t raw) const noexcept { return raw >= base_raw; }
    std::int64_t to_ns(std::uint64_t raw) const noexcept {
      __extension__ using unsigned_wide = unsigned __int128;
      return base_ns + static_cast<std::int64_t>((static_cast<unsigned_wide>(raw - base_raw) * rate) >> 32);
    }
  };
  newest_conversion newest_segment() const noexcept {
    if (segments_.empty()) return {UINT64_MAX, 0, 0};
    const segment& newest = segments_.back();
    return {newest.base.raw, newest.rate, newest.base.ns - start_ns_};
  }
  void note_converted(std::uint64_t raw) noexcept {
    if (raw > converted_up_to_) converted_up_to_ = raw;
  }
  // Measured counter frequency over the run so far (0 for monotonic_raw).
  double ticks_per_second() const noexcept;

  std::int64_t start_monotonic_raw_ns() const noexcept { return start_ns_; }
  std::int64_t start_realtime_ns() const noexcept { return start_realtime_ns_; }

 private:
  struct sync_point {
    std::uint64_t raw;
    std::int64_t ns;  // CLOCK_MONOTONIC_RAW
  };
  // One interpolation segment: ns = base.ns + ((raw - base.raw) * rate >> 32),
  // from its base to the next segment's (the newest: onwards). A fixed-point
  // rate turns the per-event division into one multiplication.
  struct segment {
    sync_point base;
    std::uint64_t rate;  // nanoseconds per tick, 32.32 fixed point
  };
  sync_point sample() const noexcept;
  std::int64_t to_ns_elsewhere(std::uint64_t raw) const noexcept;
  static segment segment_between(const sync_point& a, const sync_point& b) noexcept;
  static std::int64_t apply(const segment& s, std::uint64_t raw) noexcept;

  clock_source source_ = clock_source::monotonic_raw;
  bool hot_path_stamps_ = false;
  std::int64_t start_ns_ = 0;
  std::int64_t start_realtime_ns_ = 0;
  sync_point first_{};
  sync_point newest_pair_{};
  std::deque<segment> segments_;  // recent ones, ascending by base
  std::uint64_t converted_up_to_ = 0;  // the newest raw value converted
};

}  // namespace ferret::runtime::internal
