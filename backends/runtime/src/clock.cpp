#include "clock.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace ferret::runtime::internal {

namespace {

std::int64_t read_clock(clockid_t id) noexcept {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The counter the header's inline hot path reads (detail::read_clock).
std::uint64_t read_hardware_counter() noexcept {
#if defined(__x86_64__)
  return __rdtsc();
#elif defined(__aarch64__)
  std::uint64_t ticks;
  __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(ticks));
  return ticks;
#else
  return static_cast<std::uint64_t>(read_clock(CLOCK_MONOTONIC_RAW));
#endif
}

constexpr clock_source hardware_source() noexcept {
#if defined(__x86_64__)
  return clock_source::tsc;
#elif defined(__aarch64__)
  return clock_source::cntvct;
#else
  return clock_source::monotonic_raw;
#endif
}

// Pairs closer than this give a poor rate (tens of ns of jitter per pair).
constexpr std::int64_t min_sync_spacing_ns = 10'000'000;
constexpr std::int64_t first_sync_spacing_ns = 1'000'000;
constexpr std::size_t max_segments = 4096;

// Offsets times spacing overflow 64 bits after a few seconds of ticks.
__extension__ using wide = __int128;

}  // namespace

std::int64_t monotonic_raw_ns() noexcept { return read_clock(CLOCK_MONOTONIC_RAW); }
std::int64_t realtime_ns() noexcept { return read_clock(CLOCK_REALTIME); }

std::int64_t test_clock_offset_ns() noexcept {
  static const std::int64_t offset = [] {
    const char* text = std::getenv("FERRET_TEST_CLOCK_OFFSET_NS");
    return text != nullptr ? std::strtoll(text, nullptr, 10) : 0LL;
  }();
  return offset;
}

bool hardware_counter_is_invariant() noexcept {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) && eax >= 0x80000007u &&
      __get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) && (edx & (1u << 8)) != 0)
    return true;
  // Hypervisors often hide the CPUID bit; the kernel's own choice of the TSC
  // as its clocksource means it checked the TSC is synchronised and stable.
  std::ifstream source{"/sys/devices/system/clocksource/clocksource0/current_clocksource"};
  std::string name;
  return source >> name && name == "tsc";
#elif defined(__aarch64__)
  return true;  // the architected generic timer is system-wide and constant-rate
#else
  return false;
#endif
}

void host_clock::start(bool hardware, std::int64_t origin_ns) noexcept {
  source_ = hardware ? hardware_source() : clock_source::monotonic_raw;
  // The hot path stamps with the hardware counter; on architectures without
  // one it reads CLOCK_MONOTONIC_RAW itself, which is then always right.
  hot_path_stamps_ = hardware || hardware_source() == clock_source::monotonic_raw;
  const std::int64_t now = monotonic_raw_ns();
  start_ns_ = std::min(origin_ns, now);
  start_realtime_ns_ = realtime_ns() - (now - start_ns_);
  first_ = sample();
  newest_pair_ = first_;
  segments_.clear();
  converted_up_to_ = 0;
}

std::string host_clock::source_name() const {
  switch (source_) {
    case clock_source::tsc: return "tsc";
    case clock_source::cntvct: return "cntvct";
    case clock_source::monotonic_raw: break;
  }
  return "CLOCK_MONOTONIC_RAW";
}

std::uint64_t host_clock::read() const noexcept {
  if (source_ == clock_source::monotonic_raw)
    return static_cast<std::uint64_t>(read_clock(CLOCK_MONOTONIC_RAW));
  return read_hardware_counter();
}

host_clock::sync_point host_clock::sample() const noexcept {
  if (source_ == clock_source::monotonic_raw) {
    const std::int64_t ns = monotonic_raw_ns();
    return {static_cast<std::uint64_t>(ns), ns};
  }
  // The pair whose counter readings bracket the clock_gettime call most
  // tightly, with the counter taken at the bracket's middle.
  sync_point best{};
  std::uint64_t best_width = UINT64_MAX;
  for (int attempt = 0; attempt < 5; ++attempt) {
    const std::uint64_t before = read_hardware_counter();
    const std::int64_t ns = monotonic_raw_ns();
    const std::uint64_t after = read_hardware_counter();
    if (after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, ns};
    }
  }
  return best;
}

void host_clock::add_sync_point() {
  if (source_ == clock_source::monotonic_raw) return;
  if (segments_.empty()) {
    // The first conversion needs a rate: wait out a short spacing once.
    while (monotonic_raw_ns() - first_.ns < first_sync_spacing_ns) {
    }
  } else if (monotonic_raw_ns() - newest_pair_.ns < min_sync_spacing_ns) {
    return;
  }
  const sync_point point = sample();
  // The new segment starts at the newest pair, or past it where raw values
  // were already converted by extrapolation: at the last of them, with the
  // value it was given.
  sync_point from = newest_pair_;
  if (!segments_.empty()) {
    const std::uint64_t reached = std::max(newest_pair_.raw, converted_up_to_);
    from = {reached, apply(segments_.back(), reached)};
  }
  if (point.raw <= from.raw) {
    // A value converted from past this reading (another core's counter a
    // little ahead): not a place to start from; the next pair starts afresh.
    converted_up_to_ = 0;
    return;
  }
  // The extrapolation ran ahead of the clock: it goes on until a later pair.
  if (point.ns <= from.ns) return;
  segments_.push_back(segment_between(from, point));
  newest_pair_ = point;
  if (segments_.size() > max_segments) segments_.pop_front();
}

host_clock::segment host_clock::segment_between(const sync_point& a, const sync_point& b) noexcept {
  const auto ticks = static_cast<wide>(b.raw - a.raw);
  const auto ns = static_cast<wide>(b.ns - a.ns);
  return {a, static_cast<std::uint64_t>((ns << 32) / ticks)};
}

std::int64_t host_clock::apply(const segment& s, std::uint64_t raw) noexcept {
  // Signed: raw may precede the segment's base (before the first segment).
  const wide offset = static_cast<wide>(raw) - static_cast<wide>(s.base.raw);
  return s.base.ns + static_cast<std::int64_t>((offset * static_cast<wide>(s.rate)) >> 32);
}

std::int64_t host_clock::to_ns_elsewhere(std::uint64_t raw) const noexcept {
  if (source_ == clock_source::monotonic_raw) return static_cast<std::int64_t>(raw) - start_ns_;
  if (segments_.empty()) return static_cast<std::int64_t>(raw - first_.raw);
  // Older events: the segment they fall in; before the first one kept, its
  // rate extrapolates.
  auto after = std::upper_bound(segments_.begin(), segments_.end(), raw,
                                [](std::uint64_t value, const segment& s) { return value < s.base.raw; });
  if (after != segments_.begin()) --after;
  return apply(*after, raw) - start_ns_;
}

double host_clock::ticks_per_second() const noexcept {
  if (source_ == clock_source::monotonic_raw || segments_.empty()) return 0.0;
  return static_cast<double>(newest_pair_.raw - first_.raw) * 1e9 /
         static_cast<double>(newest_pair_.ns - first_.ns);
}

}  // namespace ferret::runtime::internal
