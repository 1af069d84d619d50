#include "chrome_otf2_compare.hpp"

#include "otf2_check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

namespace ferret::testing {
namespace {

struct totals {
  std::uint64_t calls = 0;
  std::uint64_t nanoseconds = 0;
};

bool on_gpu(const nlohmann::json& event) {
  return (event.value("pid", std::uint64_t{0}) & 0x80000000U) != 0;
}

std::uint64_t nanoseconds(const nlohmann::json& microseconds) {
  return static_cast<std::uint64_t>(std::llround(microseconds.get<double>() * 1000.0));
}

}  // namespace

comparison compare_chrome_with_otf2(const std::string& chrome_json, const std::string& otf2_anchor,
                                    std::uint64_t tolerance_ns) {
  comparison result;
  auto& differences = result.differences;

  nlohmann::json trace;
  try {
    std::ifstream in{chrome_json};
    trace = nlohmann::json::parse(in);
  } catch (const std::exception& error) {
    differences.push_back(fmt::format("cannot read {}: {}", chrome_json, error.what()));
    return result;
  }
  const otf2_check::report archive = otf2_check::check_archive(otf2_anchor);
  for (const std::string& error : archive.errors) differences.push_back("otf2: " + error);

  std::map<std::string, totals> regions;
  std::uint64_t copies = 0, copy_bytes = 0;
  std::multiset<std::string> marks;
  std::map<std::string, std::uint64_t> counter_samples;
  std::map<std::uint64_t, std::string> thread_names;  // by tid: a renamed thread's last name
  const nlohmann::json& events = trace.is_array() ? trace : trace.at("traceEvents");
  for (const nlohmann::json& event : events) {
    const std::string phase = event.value("ph", "");
    const std::string name = event.value("name", "");
    if (phase == "X") {
      if (event.value("cat", "") == "memcpy") {
        ++copies;
        copy_bytes += event.at("args").at("bytes").get<std::uint64_t>();
      } else {
        totals& t = regions[name];
        ++t.calls;
        t.nanoseconds += nanoseconds(event.at("dur"));
      }
    } else if (phase == "i") {
      marks.insert(name);
    } else if (phase == "C" && !on_gpu(event)) {
      ++counter_samples[name];
    } else if (phase == "M" && name == "thread_name" && !on_gpu(event)) {
      thread_names[event.at("tid").get<std::uint64_t>()] = event.at("args").at("name");
    }
  }

  for (const auto& [name, chrome] : regions) {
    const auto it = archive.region_totals.find(name);
    if (it == archive.region_totals.end()) {
      differences.push_back(fmt::format("region '{}': {} calls in chrome, none in otf2", name,
                                        chrome.calls));
      continue;
    }
    const otf2_check::region_total& otf2 = it->second;
    if (otf2.calls != chrome.calls)
      differences.push_back(
          fmt::format("region '{}': {} calls in chrome, {} in otf2", name, chrome.calls, otf2.calls));
    const std::uint64_t difference = chrome.nanoseconds > otf2.inclusive_ns
                                         ? chrome.nanoseconds - otf2.inclusive_ns
                                         : otf2.inclusive_ns - chrome.nanoseconds;
    if (difference > tolerance_ns * chrome.calls)
      differences.push_back(fmt::format("region '{}': {} ns in chrome, {} ns in otf2", name,
                                        chrome.nanoseconds, otf2.inclusive_ns));
    ++result.regions;
    result.calls += chrome.calls;
  }
  for (const auto& [name, otf2] : archive.region_totals)
    if (regions.count(name) == 0)
      differences.push_back(fmt::format("region '{}': {} calls in otf2, none in chrome", name,
                                        otf2.calls));

  const std::uint64_t rma = archive.rma_gets + archive.rma_puts;
  if (rma != copies || archive.get_bytes + archive.put_bytes != copy_bytes)
    differences.push_back(fmt::format("copies: {} ({} bytes) in chrome, {} ({} bytes) in otf2",
                                      copies, copy_bytes, rma,
                                      archive.get_bytes + archive.put_bytes));
  result.copies = copies;

  // The archive's markers also hold data-object lifetimes: compare the marks only.
  std::multiset<std::string> otf2_marks;
  for (const std::string& text : archive.markers)
    if (marks.count(text) > 0) otf2_marks.insert(text);
  if (otf2_marks != marks)
    differences.push_back(fmt::format("marks: {} in chrome, {} of their names in otf2",
                                      marks.size(), otf2_marks.size()));
  result.marks = marks.size();

  for (const auto& [name, samples] : counter_samples) {
    const auto it = archive.metric_sample_counts.find(name);
    const std::uint64_t in_otf2 = it == archive.metric_sample_counts.end() ? 0 : it->second;
    if (in_otf2 != samples)
      differences.push_back(fmt::format("counter '{}': {} samples in chrome, {} in otf2", name,
                                        samples, in_otf2));
    result.counter_samples += samples;
  }

  // One name per host thread in both: the same names.
  std::multiset<std::string> chrome_threads, otf2_threads;
  for (const auto& [tid, name] : thread_names) chrome_threads.insert(name);
  for (const auto& [id, location] : archive.locations)
    if (location.type == 1) otf2_threads.insert(location.name);  // OTF2_LOCATION_TYPE_CPU_THREAD
  if (chrome_threads != otf2_threads)
    differences.push_back(fmt::format("thread names: {} in chrome, {} in otf2",
                                      fmt::join(chrome_threads, ", "), fmt::join(otf2_threads, ", ")));
  result.threads = chrome_threads.size();
  return result;
}

}  // namespace ferret::testing
