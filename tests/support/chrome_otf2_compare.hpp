// chrome_otf2_compare — one run traced with FERRET_BACKEND=chrome,otf2 must show
// the same events in both files. Compares, per region name (host regions, CUDA
// API calls, kernels, memsets), the number of calls and the summed duration;
// the number of copies and their bytes; the marks; and, per host counter, the
// number of samples; the names of the host threads. The chrome file is read with nlohmann/json, the archive
// with the OTF2 reader API (ferret::otf2_check).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ferret::testing {

struct comparison {
  std::vector<std::string> differences;  // empty when both agree
  std::size_t regions = 0;               // region names compared
  std::uint64_t calls = 0;               // region instances compared
  std::uint64_t copies = 0;
  std::uint64_t marks = 0;
  std::uint64_t counter_samples = 0;
  std::size_t threads = 0;  // host threads, whose names are compared
};

/// Durations may differ by `tolerance_ns` per call (chrome writes microseconds
/// with three decimals; OTF2 clamps GPU times that overlap on one stream).
comparison compare_chrome_with_otf2(const std::string& chrome_json, const std::string& otf2_anchor,
                                    std::uint64_t tolerance_ns = 1);

}  // namespace ferret::testing
