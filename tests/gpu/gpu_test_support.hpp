// gpu_test_support.hpp — what the GPU test programs' checkers share: is there
// a GPU (and a PyTorch that sees it), running a program in a folder of its own,
// reading its "expected {json}" line and its chrome trace.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/run_program.hpp"

namespace ferret::gpu_testing {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ferret::testing::environment;

/// Why CUDA device 0 cannot be used (asked of the driver, libcuda.so.1,
/// directly: no CUDA runtime in the checker), or nullopt and its name.
std::optional<std::string> gpu_unusable_reason(std::string& device_name);

/// Why `python3` cannot run torch on the GPU, or nullopt.
std::optional<std::string> torch_unusable_reason();

/// The folder of the running executable: bin/ of the build, where the GPU
/// test programs, ferret-run and the scripts are.
fs::path programs_folder();

struct program_run : ferret::testing::program_result {
  fs::path directory;
  fs::path trace() const { return directory / "trace.json"; }
  /// The JSON after "<prefix> " on the first stdout line starting so; null if none.
  json line(const std::string& prefix) const;
};

/// Runs `command` in `directory` (created, emptied first) with only the
/// FERRET_* variables of `variables`, killed after `limit`.
program_run run_in(const fs::path& directory, const std::vector<std::string>& command,
                   const environment& variables, std::chrono::milliseconds limit);

/// `command` under bin/ferret-run writing trace.json (chrome and summary).
std::vector<std::string> through_ferret_run(std::vector<std::string> command);

json load_trace(const fs::path& path);

/// Events of the trace for which `predicate` holds, in time order.
template <typename Predicate>
std::vector<const json*> events_where(const json& trace, Predicate predicate) {
  std::vector<const json*> found;
  for (const json& event : trace.at("traceEvents"))
    if (predicate(event)) found.push_back(&event);
  return found;
}

/// True for events on a GPU's process (ferret sets the top bit of its pid).
inline bool on_gpu(const json& event) {
  return (event.at("pid").get<std::uint64_t>() & 0x80000000u) != 0;
}

}  // namespace ferret::gpu_testing
