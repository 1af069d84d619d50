#include "registry.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <mutex>

namespace ferret::runtime {
namespace internal {
namespace {

// Both function-local, so that backends may register from their static
// initialisers whatever the libraries' initialisation order, and never
// destroyed: exit() from one thread destroys statics while others still run.
std::mutex& registry_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}

std::vector<backend_entry>& entries() {
  static auto* list = new std::vector<backend_entry>;
  return *list;
}

backend_factory lookup(const std::string& name) {
  std::lock_guard lock{registry_mutex()};
  for (const backend_entry& entry : entries())
    if (entry.name == name) return entry.factory;
  return nullptr;
}

constexpr std::string_view library_prefix = "libferret_";
constexpr std::string_view library_suffix = ".so";

}  // namespace

std::string runtime_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&runtime_directory), &info) == 0 || info.dli_fname == nullptr)
    return ".";
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

backend_factory find_backend(const std::string& name) {
  if (backend_factory factory = lookup(name)) return factory;
  // Not linked into the program: the library registers itself when loaded.
  const std::string path =
      runtime_directory() + "/" + std::string{library_prefix} + name + std::string{library_suffix};
  struct stat status{};
  if (stat(path.c_str(), &status) != 0) return nullptr;
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) return nullptr;
  return lookup(name);
}

// Libraries beside the runtime that are not backends: the runtime itself, the
// collectors (CUDA, OpenMP) and the MPI layer.
namespace {
bool is_not_a_backend(std::string_view library) noexcept {
  for (const std::string_view other : {"runtime", "cupti", "ompt", "mpi"})
    if (library == other) return true;
  return false;
}
}  // namespace

std::vector<std::string> available_backends() {
  std::vector<std::string> names;
  {
    std::lock_guard lock{registry_mutex()};
    for (const backend_entry& entry : entries()) names.push_back(entry.name);
  }
  if (DIR* dir = opendir(runtime_directory().c_str())) {
    while (const dirent* item = readdir(dir)) {
      const std::string_view file = item->d_name;
      if (file.size() <= library_prefix.size() + library_suffix.size() ||
          file.substr(0, library_prefix.size()) != library_prefix ||
          file.substr(file.size() - library_suffix.size()) != library_suffix)
        continue;
      std::string name{file.substr(library_prefix.size(),
                                   file.size() - library_prefix.size() - library_suffix.size())};
      if (!is_not_a_backend(name)) names.push_back(std::move(name));
    }
    closedir(dir);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace internal

bool register_backend(std::string_view name, std::string_view description,
                      backend_factory factory) {
  std::lock_guard lock{internal::registry_mutex()};
  for (const internal::backend_entry& entry : internal::entries())
    if (entry.name == name) return false;
  internal::entries().push_back({std::string{name}, std::string{description}, factory});
  return true;
}

std::string_view to_string(memory_kind memory) noexcept {
  switch (memory) {
    case memory_kind::host: return "host";
    case memory_kind::pinned: return "pinned";
    case memory_kind::device: return "device";
    case memory_kind::managed: return "managed";
  }
  return "unknown";
}

std::string output_file(const backend_context& context, std::string_view extension) {
  const std::string& path = context.output;
  if (context.output_is_directory) {
    std::string directory = path;
    if (!directory.empty() && directory.back() != '/') directory += '/';
    return directory + "ferret-" + context.session->executable + "-" +
           std::to_string(context.session->pid) + std::string{extension};
  }
  if (path.size() >= extension.size() &&
      std::string_view{path}.substr(path.size() - extension.size()) == extension)
    return path;
  const auto slash = path.rfind('/');
  const auto dot = path.rfind('.');
  const bool has_extension =
      dot != std::string::npos && dot > 0 && (slash == std::string::npos || dot > slash + 1);
  return (has_extension ? path.substr(0, dot) : path) + std::string{extension};
}

}  // namespace ferret::runtime
