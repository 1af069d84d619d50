// missing_collectors.cpp — a program linked with ferret (not run under
// ferret-run) that loads CUDA, LLVM's OpenMP runtime, Level Zero or MPI
// without ferret's collector for it records none of that work; at exit one
// line says which, and how to enable the collector. Under ferret-run the
// collectors are injected and run_report.cpp speaks instead; a collector
// arranged through its own variable (CUDA_INJECTION64_PATH, OMP_TOOL_LIBRARIES)
// loads only once the runtime starts, so it is not asked about.
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ferret/runtime/components.hpp"
#include "runtime_state.hpp"

namespace ferret::runtime::internal {
namespace {

struct vendor_runtime {
  std::string_view label;                  // for people
  std::vector<std::string_view> prefixes;  // of its libraries' file names
  std::string_view collector;              // the component's name
  const char* injection_variable;          // set: the collector comes that way (nullptr: none)
};

const std::vector<vendor_runtime>& vendor_runtimes() {
  static const std::vector<vendor_runtime> known{
      {"CUDA", {"libcuda.so"}, "cuda", "CUDA_INJECTION64_PATH"},
      {"LLVM's OpenMP runtime", {"libomp.so", "libiomp5.so"}, "openmp", "OMP_TOOL_LIBRARIES"},
      {"Level Zero", {"libze_loader.so"}, "level_zero", nullptr},
      {"MPI", {"libmpi.so", "libmpich.so"}, "mpi", nullptr},
  };
  return known;
}

int add_file_name(dl_phdr_info* info, std::size_t, void* data) {
  if (info->dlpi_name == nullptr || *info->dlpi_name == '\0') return 0;
  const char* slash = std::strrchr(info->dlpi_name, '/');
  static_cast<std::vector<std::string>*>(data)->emplace_back(slash != nullptr ? slash + 1 : info->dlpi_name);
  return 0;
}

}  // namespace

std::vector<std::string> loaded_library_files() {
  std::vector<std::string> loaded;
  dl_iterate_phdr(add_file_name, &loaded);
  return loaded;
}

bool library_loaded(const std::vector<std::string>& files, std::string_view prefix) {
  for (const std::string& file : files)
    if (std::string_view{file}.substr(0, prefix.size()) == prefix) return true;
  return false;
}

std::string missing_collectors() {
  if (std::getenv("FERRET_RUN_STATUS") != nullptr) return {};  // under ferret-run
  const std::vector<std::string> loaded = loaded_library_files();
  const auto is_loaded = [&](std::string_view prefix) { return library_loaded(loaded, prefix); };
  std::vector<std::string_view> labels;
  std::vector<std::string> remedies;
  for (const vendor_runtime& vendor : vendor_runtimes()) {
    bool used = false;
    for (const std::string_view prefix : vendor.prefixes) used = used || is_loaded(prefix);
    if (!used || (vendor.injection_variable != nullptr && std::getenv(vendor.injection_variable) != nullptr))
      continue;
    for (const component& c : components())
      if (c.kind == component_kind::collector && vendor.collector == c.name &&
          !is_loaded(fmt::format("libferret_{}.so", c.library))) {
        labels.push_back(vendor.label);
        remedies.push_back(fmt::format("{}: {}", vendor.label, c.enabled_by));
      }
  }
  if (labels.empty()) return {};
  return fmt::format("{} loaded {} without ferret's {}: that work is not recorded ({})", executable_name(),
                     fmt::join(labels, " and "),
                     labels.size() == 1 ? "collector for it" : "collectors for them", fmt::join(remedies, "; "));
}

}  // namespace ferret::runtime::internal
