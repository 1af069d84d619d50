// Sampled counters (FERRET_CUDA_METRICS_SAMPLING) without a GPU: the setting
// as newcomers type it, which counters a device samples, which clock its
// samples' times are on, and decoded samples turned into the runtime's intervals.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "metrics_sampling_setting.hpp"
#include "sampled_metrics.hpp"

namespace rt = ferret::runtime;
using ferret::cupti::parse_metrics_sampling;
using ferret::cupti::sample_clock;

namespace {

// The interval the setting gives, -1 when off, -2 when refused.
long long interval_of(const char* value) {
  const auto setting = parse_metrics_sampling(value);
  if (!setting) return -2;
  return setting->on ? setting->interval_ns : -1;
}

std::vector<std::string> names(const std::vector<rt::gpu_metric>& metrics) {
  std::vector<std::string> out;
  for (const rt::gpu_metric& metric : metrics) out.emplace_back(metric.name);
  return out;
}

}  // namespace

TEST_CASE("the setting: durations as people write them, off, and the rest refused") {
  CHECK(interval_of(nullptr) == -1);
  CHECK(interval_of("") == -1);
  CHECK(interval_of("  ") == -1);
  CHECK(interval_of("0") == -1);
  CHECK(interval_of("0ms") == -1);
  CHECK(interval_of("off") == -1);
  CHECK(interval_of("OFF") == -1);
  CHECK(interval_of("1ms") == 1'000'000);
  CHECK(interval_of("1") == 1'000'000);  // a plain number: milliseconds
  CHECK(interval_of("2 ms") == 2'000'000);
  CHECK(interval_of(" 2ms ") == 2'000'000);
  CHECK(interval_of("1MS") == 1'000'000);
  CHECK(interval_of("500us") == 500'000);
  CHECK(interval_of("500\xc2\xb5s") == 500'000);  // µs
  CHECK(interval_of("0.5ms") == 500'000);
  CHECK(interval_of("0.5") == 500'000);
  CHECK(interval_of("10us") == 10'000);
  CHECK(interval_of("100000ns") == 100'000);
  CHECK(interval_of("1s") == 1'000'000'000);
  CHECK(interval_of("10s") == 10'000'000'000);
  CHECK(interval_of("1.25 s") == 1'250'000'000);
  // Refused: too short or too long, no number, units nobody means, signs, junk.
  CHECK(interval_of("9us") == -2);
  CHECK(interval_of("1ns") == -2);
  CHECK(interval_of("11s") == -2);
  CHECK(interval_of("1h") == -2);
  CHECK(interval_of("1m") == -2);
  CHECK(interval_of("-1ms") == -2);
  CHECK(interval_of("+1ms") == -2);
  CHECK(interval_of("ms") == -2);
  CHECK(interval_of("1.ms") == -2);
  CHECK(interval_of(".5ms") == -2);
  CHECK(interval_of("1e-3s") == -2);
  CHECK(interval_of("1ms2") == -2);
  CHECK(interval_of("1 2ms") == -2);
  CHECK(interval_of("on") == -2);
  CHECK(interval_of("yes") == -2);
  CHECK(interval_of("true") == -2);
  CHECK(interval_of("99999999999999999999999s") == -2);  // no overflow into a valid value
  CHECK(interval_of("18446744073709551617ns") == -2);
}

TEST_CASE("the wanted counters: links first, each with a label and a unit") {
  const auto& wanted = ferret::cupti::wanted_metrics();
  REQUIRE(wanted.size() >= 7);
  CHECK(std::string{wanted[0].name} == "nvltx__bytes.sum");
  CHECK(std::string{wanted[1].name} == "nvlrx__bytes.sum");
  std::set<std::string> unique;
  for (const rt::gpu_metric& metric : wanted) {
    CHECK(unique.insert(metric.name).second);
    CHECK(std::string{metric.label}.size() > 0);
    CHECK((std::string{metric.unit} == "bytes") == metric.accumulates);
  }
}

TEST_CASE("the subset a device has and CUPTI configures, without the later ones beyond one pass") {
  using ferret::cupti::metric_fit;
  const auto& wanted = ferret::cupti::wanted_metrics();
  const auto is_nvlink = [](const std::string& name) { return name.rfind("nvl", 0) == 0; };
  // A device without NVLink counters.
  const auto no_nvlink = [&](const std::string& name) { return !is_nvlink(name); };
  int asked = 0;
  const auto everything_fits = [&](const std::vector<rt::gpu_metric>&) {
    ++asked;
    return metric_fit::one_pass;
  };
  auto selection = ferret::cupti::select_metrics(wanted, no_nvlink, everything_fits);
  CHECK(asked == static_cast<int>(wanted.size()) - 4);  // once per metric had
  CHECK(names(selection.not_available) == std::vector<std::string>{"nvltx__bytes.sum", "nvlrx__bytes.sum",
                                                                   "nvltx__bytes_data_user.sum",
                                                                   "nvlrx__bytes_data_user.sum"});
  CHECK(selection.sampled.size() == wanted.size() - 4);
  CHECK(std::string{selection.sampled[0].name} == "pcie__read_bytes.sum");
  CHECK(selection.left_out.empty());

  // One H200 (seen on 2026-11-29): NVLink counters named, but any set with
  // one of them refused by CUPTI; the others are still sampled.
  const auto all = [](const std::string&) { return true; };
  const auto nvlink_refused = [&](const std::vector<rt::gpu_metric>& metrics) {
    for (const rt::gpu_metric& metric : metrics)
      if (is_nvlink(metric.name)) return metric_fit::refused;
    return metric_fit::one_pass;
  };
  selection = ferret::cupti::select_metrics(wanted, all, nvlink_refused);
  CHECK(names(selection.not_available) == std::vector<std::string>{"nvltx__bytes.sum", "nvlrx__bytes.sum",
                                                                   "nvltx__bytes_data_user.sum",
                                                                   "nvlrx__bytes_data_user.sum"});
  CHECK(selection.sampled.size() == wanted.size() - 4);
  CHECK(selection.left_out.empty());

  // Two GPUs, room for five in a pass: the later wanted go, in their order.
  asked = 0;
  const auto five_fit = [&](const std::vector<rt::gpu_metric>& metrics) {
    ++asked;
    return metrics.size() <= 5 ? metric_fit::one_pass : metric_fit::more_passes;
  };
  selection = ferret::cupti::select_metrics(wanted, all, five_fit);
  CHECK(selection.sampled.size() == 5);
  CHECK(std::string{selection.sampled[0].name} == "nvltx__bytes.sum");
  CHECK(selection.left_out.size() == wanted.size() - 5);
  CHECK(std::string{selection.left_out.back().name} == wanted.back().name);
  CHECK(asked == static_cast<int>(wanted.size()));

  // CUPTI refuses everything: nothing sampled, nothing left out for passes.
  selection = ferret::cupti::select_metrics(wanted, all, [](const auto&) { return metric_fit::refused; });
  CHECK(selection.sampled.empty());
  CHECK(selection.left_out.empty());
  CHECK(selection.not_available.size() == wanted.size());
  CHECK(ferret::cupti::metric_names({wanted[0], wanted[1]}) == "nvltx__bytes.sum, nvlrx__bytes.sum");
}

TEST_CASE("the samples' clock: the one whose now the newest sample ended just before") {
  // CUPTI's clock 5 s behind CLOCK_MONOTONIC_RAW.
  const std::int64_t raw_now = 100'000'000'000;
  const std::uint64_t cupti_now = 95'000'000'000;
  CHECK(ferret::cupti::sample_clock_of(99'999'000'000, raw_now, cupti_now) == sample_clock::monotonic_raw);
  CHECK(ferret::cupti::sample_clock_of(94'999'000'000, raw_now, cupti_now) == sample_clock::cupti);
  // Ahead of both (a sample ending after its decode): the nearer.
  CHECK(ferret::cupti::sample_clock_of(100'000'001'000, raw_now, cupti_now) == sample_clock::monotonic_raw);
  CHECK(ferret::cupti::sample_clock_of(100'000'001'000, raw_now, 100'000'000'500) == sample_clock::cupti);
  // CUPTI's clock ahead: a sample 1 ms old on CUPTI's clock is in raw's future.
  CHECK(ferret::cupti::sample_clock_of(101'000'000'000, raw_now, 101'001'000'000) == sample_clock::cupti);
}

TEST_CASE("decoded samples become intervals on CLOCK_MONOTONIC_RAW; broken ones are dropped") {
  ferret::cupti::sample_converter converter{1, 2};
  rt::gpu_metric_batch batch;
  batch.device = 1;
  const double first[] = {100, 50}, second[] = {200, 60}, third[] = {300, 70};
  const std::int64_t offset = 5'000;
  converter.add(1'000, 2'000, first, offset, batch);
  converter.add(2'000, 3'000, second, offset, batch);
  converter.add(2'500, 3'500, third, offset, batch);  // overlaps the previous: dropped
  converter.add(4'000, 4'000, third, offset, batch);  // empty: dropped
  converter.add(0, 0, third, offset, batch);          // not read (a failed evaluation): dropped
  converter.add(3'000, 4'000, third, offset, batch);
  CHECK(converter.dropped() == 3);
  REQUIRE(batch.intervals.size() == 3);
  CHECK(batch.intervals[0].begin_ns == 6'000);
  CHECK(batch.intervals[0].end_ns == 7'000);
  CHECK(batch.intervals[2].begin_ns == 8'000);
  CHECK(batch.values == std::vector<double>{100, 50, 200, 60, 300, 70});
  // A negative offset (CUPTI's clock ahead of CLOCK_MONOTONIC_RAW).
  ferret::cupti::sample_converter behind{0, 1};
  rt::gpu_metric_batch other;
  behind.add(10'000, 11'000, first, -4'000, other);
  REQUIRE(other.intervals.size() == 1);
  CHECK(other.intervals[0].begin_ns == 6'000);
}
