// hostile_names_app: every kind of name a program may hand ferret — empty,
// blank, readers' separators and annotations, quotes, control characters,
// invalid UTF-8, non-ASCII, 64 KiB — as regions (nested in one another, and in
// a library domain), marks, counters (huge finite values too), thread names and
// run metadata, on two threads. tests/hostile_names.cmake traces it into every
// format at once. Prints what it recorded: "regions R marks M samples S".
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "ferret/ferret.hpp"

namespace {

struct hostile_library {
  static constexpr const char* name = "my \"lib\" => [{x} : y\n";
};

std::vector<std::string> hostile_texts() {
  return {
      "",
      "   ",
      "x [{f.cpp} {abc,1}]",
      "a => b",
      "event : context",
      "say \"hi\"",
      "tab\there\nnew line\r\x01\x7f",
      "bad\xff\xfe utf-8 \xc3",
      "gr\xC3\xB6\xC3\x9F" "e \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x9A\x80",
      std::string(64 * 1024, 'n'),
      "x [ <n> ] !$omp @a:b file: f line: l OpenMP location: x [@] y",
      "a  b",
      "<xml> & 'apos' #hash ]]>",
  };
}

struct recorded {
  std::uint64_t regions = 0, marks = 0, samples = 0;
};

// Every name as a region holding a mark, a counter sample and the next name's
// region; then one region of the library domain.
recorded record_all(const std::vector<ferret::name>& names, const std::vector<ferret::counter>& counters,
                    const ferret::name& library_region) {
  static constexpr double values[] = {1e200, -1e200, 0.5, 42.0};
  recorded r;
  for (int repeat = 0; repeat < 3; ++repeat) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      ferret::region outer{names[i]};
      ferret::mark(names[i]);
      counters[i].record(values[(i + static_cast<std::size_t>(repeat)) % 4]);
      { ferret::region inner{names[(i + 1) % names.size()]}; }
      r.regions += 2;
      ++r.marks;
      ++r.samples;
    }
    ferret::region_in<hostile_library> library{library_region};
    ++r.regions;
  }
  return r;
}

}  // namespace

int main() {
  const std::vector<std::string> texts = hostile_texts();
  std::vector<ferret::name> names;
  std::vector<ferret::counter> counters;
  for (const std::string& text : texts) {
    names.push_back(ferret::register_name(text));
    counters.emplace_back(names.back());
  }
  const ferret::name library_region = ferret::register_name<hostile_library>("factorize \"it\" => [{y}");

  ferret::set_metadata("unicode-Gr\xC3\xB6\xC3\x9F" "e", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xE2\x9C\x93");
  ferret::set_metadata("", "an empty key");
  ferret::set_metadata("a-b", 1);
  ferret::set_metadata("a_b", 2);
  ferret::set_metadata("big", std::int64_t{9007199254740993});  // 2^53 + 1
  ferret::set_metadata("uint64-max", UINT64_MAX);
  ferret::set_metadata("int64-min", INT64_MIN);
  ferret::set_metadata("newline\nkey", "line 1\nline 2 # <&>");
  ferret::set_metadata(std::string(64 * 1024, 'k'), std::string(64 * 1024, 'v'));
  ferret::set_metadata("invalid \xff", "value \xfe");

  recorded worker_recorded;
  std::thread worker{[&] {
    ferret::set_thread_name("worker \"1\" => [{x} : \xff");
    worker_recorded = record_all(names, counters, library_region);
  }};
  worker.join();
  const recorded main_recorded = record_all(names, counters, library_region);
  std::printf("regions %llu marks %llu samples %llu\n",
              static_cast<unsigned long long>(main_recorded.regions + worker_recorded.regions),
              static_cast<unsigned long long>(main_recorded.marks + worker_recorded.marks),
              static_cast<unsigned long long>(main_recorded.samples + worker_recorded.samples));
  return 0;
}
