// backend_test_support.hpp — what the tests that drive a backend directly
// share: a scratch directory, name records as the runtime hands them out,
// record builders and a fixed session.
#pragma once

#include "ferret/runtime/backend.hpp"

#include <stdlib.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace ferret::testing {

/// A fresh directory under $TMPDIR, removed with its contents afterwards
/// (kept when FERRET_TEST_KEEP is set, to look at by hand).
class temp_directory {
 public:
  explicit temp_directory(std::string_view prefix) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / (std::string{prefix} + "-XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error(std::string{"mkdtemp: "} + std::strerror(errno));
    path_ = pattern;
  }
  ~temp_directory() {
    if (std::getenv("FERRET_TEST_KEEP") != nullptr) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  temp_directory(const temp_directory&) = delete;
  temp_directory& operator=(const temp_directory&) = delete;
  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string{name}; }

 private:
  std::string path_;
};

/// Name records with stable addresses and dense ids, as the runtime hands out.
class name_table {
 public:
  const runtime::name_info* add(std::string name, std::string domain = {}, std::string file = {},
                                std::uint32_t line = 0, std::string function = {}) {
    names_.push_back(runtime::name_info{static_cast<std::uint32_t>(names_.size()), std::move(name),
                                        std::move(domain), std::move(function), std::move(file),
                                        line});
    return &names_.back();
  }

 private:
  std::deque<runtime::name_info> names_;
};

inline runtime::record begin(std::int64_t ns, const runtime::name_info* name) {
  return {ns, runtime::record_kind::region_begin, runtime::region_close::by_program, name, 0.0};
}
/// The end of the innermost open region, `name` (the runtime delivers nested
/// records); `closed` says who ended it.
inline runtime::record end(std::int64_t ns, const runtime::name_info* name,
                           runtime::region_close closed = runtime::region_close::by_program) {
  return {ns, runtime::record_kind::region_end, closed, name, 0.0};
}
inline runtime::record mark(std::int64_t ns, const runtime::name_info* name) {
  return {ns, runtime::record_kind::mark, runtime::region_close::by_program, name, 0.0};
}
inline runtime::record sample(std::int64_t ns, const runtime::name_info* name, double value) {
  return {ns, runtime::record_kind::counter, runtime::region_close::by_program, name, value};
}

/// A session of process `pid` ("app --size 3" on "testhost").
inline runtime::session_info make_session(std::uint32_t pid) {
  runtime::session_info session;
  session.pid = pid;
  session.hostname = "testhost";
  session.executable = "app";
  session.command_line = "app --size 3";
  session.clock_source = "tsc";
  session.start_monotonic_raw_ns = 987654321;
  session.start_realtime_ns = 1'700'000'000'123'456'789;
  session.ferret_version = "0.1.0-test";
  return session;
}

}  // namespace ferret::testing
