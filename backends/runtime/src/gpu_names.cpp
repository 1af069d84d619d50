// Names of GPU operations, copy kinds and calling contexts, for backends.
#include "ferret/runtime/backend.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>
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

std::string memory_end_name(std::int64_t device) {
  return device < 0 ? std::string{"host"} : "GPU " + std::to_string(device);
}

std::string_view to_string(memory_access access) noexcept {
  switch (access) {
    case memory_access::load: return "load";
    case memory_access::store: return "store";
    case memory_access::atomic: return "atomic";
  }
  return "unknown";
}

std::string_view metric_name(gpu_stall stall) noexcept {
  switch (stall) {
    case gpu_stall::none: return "GINST:STL_NONE";
    case gpu_stall::ifet: return "GINST:STL_IFET";
    case gpu_stall::idep: return "GINST:STL_IDEP";
    case gpu_stall::gmem: return "GINST:STL_GMEM";
    case gpu_stall::tmem: return "GINST:STL_TMEM";
    case gpu_stall::sync: return "GINST:STL_SYNC";
    case gpu_stall::cmem: return "GINST:STL_CMEM";
    case gpu_stall::pipe: return "GINST:STL_PIPE";
    case gpu_stall::mthr: return "GINST:STL_MTHR";
    case gpu_stall::nsel: return "GINST:STL_NSEL";
    case gpu_stall::othr: return "GINST:STL_OTHR";
    case gpu_stall::slp: return "GINST:STL_SLP";
  }
  return "GINST:STL_OTHR";
}

std::string_view describe(gpu_stall stall) noexcept {
  switch (stall) {
    case gpu_stall::none: return "issued";
    case gpu_stall::ifet: return "instruction fetch";
    case gpu_stall::idep: return "execution dependency";
    case gpu_stall::gmem: return "global memory";
    case gpu_stall::tmem: return "texture";
    case gpu_stall::sync: return "synchronization";
    case gpu_stall::cmem: return "constant memory";
    case gpu_stall::pipe: return "pipe busy";
    case gpu_stall::mthr: return "memory throttle";
    case gpu_stall::nsel: return "not selected";
    case gpu_stall::othr: return "other";
    case gpu_stall::slp: return "sleeping";
  }
  return "other";
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
