// Names of GPU operations, copy kinds and calling contexts, for backends.
#include "ferret/runtime/backend.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <vector>

namespace ferret::runtime {

std::string_view to_string(gpu_operation operation) noexcept {
  switch (operation) {
    case gpu_operation::kernel: return "kernel";
    case gpu_operation::memcpy: return "memcpy";
    case gpu_operation::memset: return "memset";
    case gpu_operation::allocation: return "allocation";
    case gpu_operation::release: return "release";
    case gpu_operation::synchronization: return "synchronization";
  }
  return "unknown";
}

std::string_view to_string(copy_kind kind) noexcept {
  switch (kind) {
    case copy_kind::host_to_device: return "HtoD";
    case copy_kind::device_to_host: return "DtoH";
    case copy_kind::device_to_device: return "DtoD";
    case copy_kind::host_to_host: return "HtoH";
    case copy_kind::peer_to_peer: return "PtoP";
    case copy_kind::unknown: break;
  }
  return "unknown";
}

std::string demangled_kernel_name(const char* mangled) {
  if (mangled == nullptr) return "kernel";
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> text{
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free};
  if (status != 0 || text == nullptr) return mangled;
  return text.get();
}

namespace {
// The domains of the GPU API calls the collectors record (CUDA, Level Zero).
bool is_gpu_api(const name_info& name) noexcept {
  return name.domain == "cuda" || name.domain == "level_zero";
}
}  // namespace

std::string context_path(const context_node* node, std::string_view separator,
                         bool with_api_calls) {
  std::vector<const name_info*> names;
  for (; node != nullptr && node->name != nullptr; node = node->parent)
    if (with_api_calls || !is_gpu_api(*node->name)) names.push_back(node->name);
  std::string path;
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    if (!path.empty()) path += separator;
    path += (*it)->name;
  }
  return path;
}

const name_info* launching_call(const context_node* node) noexcept {
  for (; node != nullptr; node = node->parent)
    if (node->name != nullptr && is_gpu_api(*node->name)) return node->name;
  return nullptr;
}

}  // namespace ferret::runtime
