// The calling-context sources (ferret/runtime/context_source.hpp).
#include <dlfcn.h>

#include <array>
#include <atomic>
#include <string>

#include "ferret/runtime/context_source.hpp"
#include "ferret/runtime/runtime.hpp"
#include "registry.hpp"

namespace ferret::runtime {
namespace {

// Libraries that register a source when loaded, by name (libferret_<name>.so).
constexpr std::array source_libraries{"python"};

// Slots filled in order, never emptied: readers stop at the first empty one.
constexpr std::size_t max_sources = 4;
std::array<std::atomic<launch_context_writer>, max_sources> g_sources{};

}  // namespace

void register_launch_context_source(launch_context_writer writer) noexcept {
  if (writer == nullptr) return;
  for (std::atomic<launch_context_writer>& slot : g_sources) {
    launch_context_writer expected = nullptr;
    if (slot.compare_exchange_strong(expected, writer, std::memory_order_acq_rel) ||
        expected == writer)
      return;
  }
  print_message("more calling-context sources than the runtime has room for; one is left out");
}

// No lock is held while loading: a source's initialiser may call back into
// the runtime. Two threads that load at once both call dlopen, which loads
// the library once and returns to the second only after its initialisers ran.
void load_launch_context_sources() noexcept {
  static std::atomic<bool> loaded{false};
  if (loaded.load(std::memory_order_acquire)) return;
  try {
    const std::string directory = internal::runtime_directory();
    for (const char* name : source_libraries) {
      const std::string path = directory + "/libferret_" + name + ".so";
      // A missing library only means that source's context is absent.
      if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr && verbosity() >= 2)
        print_message(std::string{"no calling-context source "} + name + ": " + dlerror());
    }
  } catch (...) {  // std::bad_alloc: run without the sources
  }
  loaded.store(true, std::memory_order_release);
}

void record_launch_context() noexcept {
  for (const std::atomic<launch_context_writer>& slot : g_sources) {
    const launch_context_writer writer = slot.load(std::memory_order_acquire);
    if (writer == nullptr) return;
    writer();
  }
}

}  // namespace ferret::runtime
