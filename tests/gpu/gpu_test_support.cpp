// gpu_test_support.cpp — see gpu_test_support.hpp.
#include "gpu_test_support.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace ferret::gpu_testing {

std::optional<std::string> gpu_unusable_reason(std::string& device_name) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return fmt::format("no NVIDIA driver ({})", dlerror());
  using init_function = int (*)(unsigned);
  using count_function = int (*)(int*);
  using device_function = int (*)(int*, int);
  using name_function = int (*)(char*, int, int);
  const auto init = reinterpret_cast<init_function>(dlsym(driver, "cuInit"));
  const auto count = reinterpret_cast<count_function>(dlsym(driver, "cuDeviceGetCount"));
  const auto get_device = reinterpret_cast<device_function>(dlsym(driver, "cuDeviceGet"));
  const auto get_name = reinterpret_cast<name_function>(dlsym(driver, "cuDeviceGetName"));
  if (init == nullptr || count == nullptr || get_device == nullptr || get_name == nullptr)
    return std::string{"libcuda.so.1 lacks cuInit, cuDeviceGetCount, cuDeviceGet or cuDeviceGetName"};
  if (const int status = init(0); status != 0)
    return fmt::format("cuInit failed with CUresult {}", status);
  int devices = 0;
  if (const int status = count(&devices); status != 0)
    return fmt::format("cuDeviceGetCount failed with CUresult {}", status);
  if (devices == 0) return std::string{"the driver reports no CUDA device"};
  int device = 0;
  char name[256] = {};
  if (get_device(&device, 0) != 0 || get_name(name, sizeof name, device) != 0)
    return std::string{"cannot read the name of CUDA device 0"};
  device_name = name;
  return std::nullopt;
}

std::optional<std::string> torch_unusable_reason() {
  FILE* probe = popen(
      "python3 -c 'import torch; assert torch.cuda.is_available(), \"torch sees no GPU\"' 2>&1", "r");
  if (probe == nullptr) return std::string{"cannot start python3"};
  std::string output, last_line;
  char chunk[512];
  while (std::fgets(chunk, sizeof chunk, probe) != nullptr) output += chunk;
  const int status = pclose(probe);
  if (status == 0) return std::nullopt;
  std::istringstream lines{output};
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) last_line = line;
  return fmt::format("python3 cannot use torch on the GPU ({})",
                     last_line.empty() ? fmt::format("status {}", status) : last_line);
}

fs::path programs_folder() { return fs::read_symlink("/proc/self/exe").parent_path(); }

json program_run::line(const std::string& prefix) const {
  std::istringstream lines{out};
  for (std::string text; std::getline(lines, text);)
    if (text.rfind(prefix + " ", 0) == 0) return json::parse(text.substr(prefix.size() + 1));
  return nullptr;
}

program_run run_in(const fs::path& directory, const std::vector<std::string>& command,
                   const environment& variables, std::chrono::milliseconds limit) {
  program_run result;
  result.directory = directory;
  fs::remove_all(directory);
  fs::create_directories(directory);
  static_cast<ferret::testing::program_result&>(result) =
      ferret::testing::run_program(directory, command, variables, limit);
  return result;
}

std::vector<std::string> through_ferret_run(std::vector<std::string> command) {
  std::vector<std::string> full{(programs_folder() / "ferret-run").string(), "--output",
                                "trace.json", "--"};
  full.insert(full.end(), command.begin(), command.end());
  return full;
}

json load_trace(const fs::path& path) {
  std::ifstream in{path};
  if (!in.good()) return nullptr;
  return json::parse(in);
}

}  // namespace ferret::gpu_testing
