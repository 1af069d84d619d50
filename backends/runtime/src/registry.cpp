#include "registry.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <string_view>
#include <utility>

#include "ferret/runtime/components.hpp"

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

bool same_letters(std::string_view a, std::string_view b) {
  const auto same = [](unsigned char x, unsigned char y) { return std::tolower(x) == std::tolower(y); };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), same);
}

// FERRET_BACKEND's names are taken in any case (Chrome is chrome).
backend_factory lookup(const std::string& name) {
  std::lock_guard lock{registry_mutex()};
  for (const backend_entry& entry : entries())
    if (same_letters(entry.name, name)) return entry.factory;
  return nullptr;
}

std::string library_path(std::string_view library) {
  return runtime_directory() + "/libferret_" + std::string{library} + ".so";
}

bool exists(const std::string& path) {
  struct stat status{};
  return stat(path.c_str(), &status) == 0;
}

// Names become file names (libferret_<name>.so): only plain ones are looked for.
bool plain_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::islower(c) || std::isdigit(c) || c == '_';
  });
}

const component* collector_named(std::string_view name) {
  for (const component& c : components())
    if (c.kind == component_kind::collector && (name == c.name || name == c.library)) return &c;
  return nullptr;
}

// Edits (insertions, deletions, substitutions, swaps of neighbours) that turn a into b.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string listed(const std::vector<std::string>& names) {
  return names.empty() ? std::string{"none installed"} : fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

std::string runtime_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&runtime_directory), &info) == 0 || info.dli_fname == nullptr)
    return ".";
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string nearest_name(std::string_view name, const std::vector<std::string>& candidates) {
  std::string nearest;
  std::size_t best = 3;  // at most two edits, and fewer than the name has letters
  for (const std::string& candidate : candidates) {
    if (name.size() > candidate.size() + 2 || candidate.size() > name.size() + 2) continue;
    const std::size_t distance = edit_distance(name, candidate);
    if (distance < best && distance < name.size()) {
      best = distance;
      nearest = candidate;
    }
  }
  return nearest;
}

namespace {

// What a newcomer may type for an output: the reader's or the format's name,
// and the backend that writes for it. Suggested, never accepted in its place:
// the name stays one per backend.
constexpr std::pair<std::string_view, std::string_view> output_aliases[] = {
    {"perfetto", "chrome"}, {"json", "chrome"},      {"trace", "chrome"},  {"vampir", "otf2"},
    {"scorep", "otf2"},     {"score-p", "otf2"},     {"paraprof", "tau"},  {"pprof", "tau"},
    {"html", "report"},     {"text", "summary"},
};

// "did you mean X? " for a reader's or format's name, or a name two edits
// from one of `known`; empty when nothing is near.
std::string suggestion_for(const std::string& name, const std::vector<std::string>& known) {
  for (const auto& [typed, backend] : output_aliases)  // names come lower-cased (settings)
    if (name == typed)
      for (const component& c : components())
        if (c.name == backend) return fmt::format("did you mean {}? it writes {}; ", c.name, c.what);
  const std::string nearest = nearest_name(name, known);
  return nearest.empty() ? "" : fmt::format("did you mean {}? ", nearest);
}

}  // namespace

backend_selection select_backends(const std::vector<std::string>& names) {
  backend_selection selection;
  std::vector<std::string> available;  // listed in the messages, found once
  for (const std::string& name : names) {
    backend_factory factory = plain_name(name) ? lookup(name) : nullptr;
    // Not linked into the program: the library registers itself when loaded.
    // Collectors are never loaded here: they start with their own library
    // (linked, or injected by ferret-run), not from FERRET_BACKEND.
    const component* collector = plain_name(name) ? collector_named(name) : nullptr;
    std::string load_error;  // its library is there but the loader refused it
    if (factory == nullptr && collector == nullptr && plain_name(name)) {
      const std::string path = library_path(name);
      if (exists(path)) {
        if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr)
          factory = lookup(name);
        else if (const char* error = dlerror(); error != nullptr)
          load_error = error;
      }
    }
    if (factory != nullptr) {
      selection.factories.emplace_back(name, factory);
      continue;
    }
    if (!load_error.empty()) {
      // Typically a library the backend needs (the OTF2 library) is not on the loader's path.
      selection.problems.push_back(
          fmt::format("backend '{}' is installed but could not be loaded: {}", name, load_error));
      continue;
    }
    if (available.empty()) available = available_backends();
    if (collector != nullptr) {
      selection.problems.push_back(fmt::format(
          "'{}' in FERRET_BACKEND is a collector, not a backend: {}; enabled by {} (backends: {})",
          name, collector->what, collector->enabled_by, listed(available)));
      continue;
    }
    std::vector<std::string> known = available;
    for (const component& c : components()) known.emplace_back(c.name);
    const std::string suggestion = suggestion_for(name, known);
    selection.problems.push_back(fmt::format("unknown backend '{}' in FERRET_BACKEND ({}backends: {})",
                                             name, suggestion, listed(available)));
  }
  return selection;
}

std::vector<std::string> available_backends() {
  std::vector<std::string> names;
  {
    std::lock_guard lock{registry_mutex()};
    for (const backend_entry& entry : entries()) names.push_back(entry.name);
  }
  for (const component& c : components())
    if (c.kind == component_kind::backend && exists(library_path(c.library))) names.emplace_back(c.name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace internal

bool installed(const component& c) noexcept {
  try {
    return internal::exists(internal::library_path(c.library)) ||
           (c.kind == component_kind::backend && internal::lookup(c.name) != nullptr);
  } catch (...) {
    return false;
  }
}

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
  const auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  if (path.size() >= extension.size() &&
      std::equal(extension.begin(), extension.end(), path.end() - static_cast<std::ptrdiff_t>(extension.size()),
                 [&](char a, char b) { return lower(a) == lower(b); }))
    return path;
  const auto slash = path.rfind('/');
  const auto dot = path.rfind('.');
  const bool has_extension =
      dot != std::string::npos && dot > 0 && (slash == std::string::npos || dot > slash + 1);
  return (has_extension ? path.substr(0, dot) : path) + std::string{extension};
}

std::string output_directory(const backend_context& context) {
  std::string path = output_file(context, "");
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const std::size_t slash = path.rfind('/');
  const std::size_t dot = path.rfind('.');
  const std::size_t name_start = slash == std::string::npos ? 0 : slash + 1;
  if (dot == std::string::npos || dot <= name_start || dot + 1 == path.size()) return path;
  const auto extension = std::string_view{path}.substr(dot + 1);
  const auto letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  const auto letter_or_digit = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (std::all_of(extension.begin(), extension.end(), letter_or_digit) &&
      std::any_of(extension.begin(), extension.end(), letter))
    path.resize(dot);
  return path;
}

}  // namespace ferret::runtime
