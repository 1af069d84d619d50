#include "support/run_program.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

#include "ferret/runtime/settings.hpp"

namespace ferret::testing {

std::filesystem::path fresh_directory(const std::string& test, const std::string& name) {
  const std::filesystem::path directory = std::filesystem::temp_directory_path() /
                                          ("ferret-" + test + "-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  return directory;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in{path, std::ios::binary};
  return std::string{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

program_result run_program(const std::filesystem::path& directory,
                           const std::vector<std::string>& command, const environment& variables,
                           std::chrono::milliseconds time_limit) {
  program_result result;
  const pid_t child = fork();
  if (child == 0) {
    if (chdir(directory.c_str()) != 0) _exit(120);
    const int out = open("stdout", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open("stderr", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(121);
    // The runtime's own table names every variable it reads.
    for (const runtime::setting& s : runtime::settings()) unsetenv(s.variable);
    unsetenv("CUDA_INJECTION64_PATH");
    for (const auto& [name, value] : variables) setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> arguments;
    for (const std::string& word : command) arguments.push_back(const_cast<char*>(word.c_str()));
    arguments.push_back(nullptr);
    execvp(arguments[0], arguments.data());
    std::fprintf(stderr, "cannot run %s\n", arguments[0]);
    _exit(127);
  }
  if (child < 0) return result;
  result.pid = child;
  int status = 0;
  rusage usage{};
  if (time_limit.count() == 0) {
    wait4(child, &status, 0, &usage);
  } else {
    const auto deadline = std::chrono::steady_clock::now() + time_limit;
    while (wait4(child, &status, WNOHANG, &usage) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(child, SIGKILL);
        wait4(child, &status, 0, &usage);
        result.timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  result.peak_memory_kib = usage.ru_maxrss;
  result.out = read_file(directory / "stdout");
  result.err = read_file(directory / "stderr");
  return result;
}

}  // namespace ferret::testing
