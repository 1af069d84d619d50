// The attribution of sampled link bytes to kernels (link_attribution.hpp) on
// its own: when kernels are done (handed back once, with their bytes), with a
// long kernel holding the front of a device's window, and in a launch storm
// that comes before any interval.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <vector>

#include "link_attribution.hpp"

namespace {

using ferret::profile::kernel_link_bytes;
using ferret::profile::link_attribution;
using ferret::profile::link_bytes;
using ferret::profile::link_share;

constexpr std::int64_t ms = 1'000'000;

struct recorder final : link_attribution::handler {
  std::map<std::uint64_t, int> done_count;
  std::map<std::uint64_t, double> bytes;  // exact + shared, all counters
  std::vector<std::uint64_t> order;
  void kernel_done(std::uint64_t key, const kernel_link_bytes* attributed) override {
    ++done_count[key];
    order.push_back(key);
    bytes[key] = attributed != nullptr ? attributed->total() : -1;
  }
  void interval_done(std::uint32_t, link_share, const link_bytes&) override {}
};

// A device sampling PCIe reads (value index 0).
ferret::runtime::gpu_metric_set pcie_set() {
  ferret::runtime::gpu_metric_set set;
  set.device = 0;
  set.metrics = {{"pcie__read_bytes.sum", "PCIe bytes read", "bytes", true}};
  set.interval_ns = ms;
  return set;
}

}  // namespace

TEST_CASE("kernels that passed are done while a longer kernel begun before them still runs") {
  recorder sink;
  link_attribution attribution{sink};
  attribution.add_metric_set(pcie_set());
  attribution.add_kernel(0, 0, 10 * ms, 1);  // runs across every interval below
  attribution.add_kernel(0, 1 * ms, 2 * ms, 2);
  attribution.add_kernel(0, 4 * ms, 5 * ms, 3);
  attribution.add_kernel(0, 11 * ms, 12 * ms, 4);  // the kernels have passed 3 ms
  const double values[] = {1000.0};
  const ferret::runtime::gpu_metric_interval first{0, 0, 3 * ms, values};
  attribution.add_intervals(&first, 1);
  // Kernel 2 ended before 3 ms: done, with its share by overlap time (1 ms of
  // the 4 ms the two kernels overlapped the interval).
  CHECK(sink.done_count[2] == 1);
  CHECK(sink.bytes[2] == doctest::Approx(1000.0 * 1 / 4));
  CHECK(sink.done_count.count(1) == 0);  // still running at 3 ms
  CHECK(sink.done_count.count(3) == 0);
  attribution.finish();
  for (std::uint64_t key = 1; key <= 4; ++key) CHECK(sink.done_count[key] == 1);
  CHECK(sink.bytes[1] == doctest::Approx(1000.0 * 3 / 4));
  CHECK(sink.bytes[3] == doctest::Approx(0.0));
}

TEST_CASE("a launch storm before any interval: each kernel done once, those in the window with bytes") {
  recorder sink;
  link_attribution attribution{sink};
  attribution.add_metric_set(pcie_set());
  // Back-to-back 2 µs kernels for 200 ms, as PM sampling's first interval
  // (about 0.6 s on an H200) holds them: more than the window holds.
  constexpr std::int64_t kernel_ns = 2'000;
  constexpr std::uint64_t kernels = 100'000;
  for (std::uint64_t key = 0; key < kernels; ++key) {
    const auto begin = static_cast<std::int64_t>(key) * kernel_ns;
    attribution.add_kernel(0, begin, begin + kernel_ns, key);
  }
  const std::uint64_t beyond_window = kernels - link_attribution::window_limit;
  CHECK(attribution.settled_at_limit() == beyond_window);
  CHECK(sink.order.size() == beyond_window);
  const double values[] = {1e6};
  const ferret::runtime::gpu_metric_interval whole{0, 0, static_cast<std::int64_t>(kernels) * kernel_ns, values};
  attribution.add_intervals(&whole, 1);
  attribution.end_drain();
  CHECK(sink.order.size() == kernels);
  double attributed = 0;
  for (const auto& [key, count] : sink.done_count) {
    CHECK(count == 1);
    attributed += sink.bytes[key];
  }
  // The kernels still held share the interval by their overlap.
  CHECK(attributed == doctest::Approx(1e6));
}
