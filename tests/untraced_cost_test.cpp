// With the runtime linked and nothing to record (FERRET_BACKEND unset), the
// annotations that are not events (data objects, metadata, thread names)
// cost what every annotation costs without a backend: the runtime hands the
// annotated code no function table, so nothing is called, allocated or
// locked. Allocations are counted by replacing operator new; the runtime,
// a shared library, allocates through it too.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "ferret/ferret.hpp"

namespace {
std::atomic<std::uint64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t bytes) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc{};
}
void* operator new[](std::size_t bytes) { return operator new(bytes); }
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(bytes == 0 ? 1 : bytes);
}
void* operator new[](std::size_t bytes, const std::nothrow_t& tag) noexcept {
  return operator new(bytes, tag);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

TEST_CASE("untraced: data objects, metadata and thread names allocate nothing") {
  constexpr int count = 1000;
  std::vector<char> memory(count);
  std::vector<std::string> keys;
  for (int i = 0; i < count; ++i) keys.push_back("key " + std::to_string(i));
  ferret::mark("first annotation");  // finds the runtime, which reads the environment
  ferret::set_metadata("first key", 1);

  std::uint64_t registered = 0;
  const std::uint64_t before = g_allocations.load();
  for (int i = 0; i < count; ++i) {
    const auto at = static_cast<std::size_t>(i);
    registered += ferret::register_data_object("object", &memory[at], 1);
    const ferret::data_object scoped{"scoped object", &memory[at], 1};
    registered += scoped.id();
    ferret::set_metadata(keys[at], i);
    ferret::set_metadata(keys[at], "a value long enough not to fit in a small string");
    ferret::set_thread_name("a thread name long enough not to fit in a small string");
    ferret::unregister_data_object_at(&memory[at]);
  }
  const std::uint64_t during = g_allocations.load() - before;

  CHECK(during == 0);
  CHECK(registered == 0);  // nothing was registered: there is nothing to record it
  CHECK(ferret::detail::runtime() == nullptr);
}
