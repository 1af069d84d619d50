// run_program.hpp — runs a program as a user would, for the process-level
// tests: in a directory of its own, with stdout and stderr captured to files
// there, and with only the FERRET_* variables the test chooses.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace ferret::testing {

struct program_result {
  int exit_code = -1;  // -signal when a signal ended it
  std::string out, err;
  pid_t pid = 0;
  bool timed_out = false;  // killed at the time limit
  long peak_memory_kib = 0;  // the program's peak resident memory
};

using environment = std::vector<std::pair<std::string, std::string>>;

/// Runs `command` (argv; the program found on PATH if it has no '/') in
/// `directory`, which must exist, with stdout and stderr going to the files
/// "stdout" and "stderr" there. Every variable of the runtime's settings table
/// and CUDA_INJECTION64_PATH is removed from the environment, then `variables`
/// are set. With a nonzero `time_limit` the program is killed when it runs
/// longer (timed_out).
program_result run_program(const std::filesystem::path& directory,
                           const std::vector<std::string>& command, const environment& variables,
                           std::chrono::milliseconds time_limit = std::chrono::milliseconds{0});

/// An empty directory for one test's files, made again if it exists:
/// <temp>/ferret-<test>-<pid>-<name>.
std::filesystem::path fresh_directory(const std::string& test, const std::string& name);

/// The whole file; empty if it cannot be read.
std::string read_file(const std::filesystem::path& path);

}  // namespace ferret::testing
