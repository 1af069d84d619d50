// The runtime's bookkeeping grows with what is live and distinct, not with
// the history: run metadata keys (set in constant work each, however many).
#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

#include "metadata_store.hpp"

using namespace ferret::runtime::internal;

namespace {

std::uint64_t g_key_comparisons = 0;

struct counted_equal {
  bool operator()(const std::string& a, const std::string& b) const {
    ++g_key_comparisons;
    return a == b;
  }
};

}  // namespace

TEST_CASE("metadata: a key is set in constant work, however many keys there are") {
  basic_metadata_store<counted_equal> store;
  constexpr std::int64_t keys = 20'000;
  g_key_comparisons = 0;
  for (std::int64_t i = 0; i < keys; ++i) store.set("key " + std::to_string(i), i);
  for (std::int64_t i = 0; i < keys; ++i) store.set("key " + std::to_string(i), -i);
  // A scan of the list made keys * (keys - 1) / 2 comparisons for the first
  // pass alone (2e8); the index about one per key that exists.
  CHECK(g_key_comparisons <= 3 * keys);
  REQUIRE(store.entries().size() == keys);
  // In the order first set, the later value in place.
  CHECK(store.entries()[7].first == "key 7");
  CHECK(std::get<std::int64_t>(store.entries()[7].second) == -7);
}

TEST_CASE("metadata: every set changes the version, so the drain copies only what changed") {
  metadata_store store;
  const std::uint64_t empty = store.version();
  store.set("a", std::string{"x"});
  const std::uint64_t one = store.version();
  store.set("a", std::string{"y"});
  CHECK(empty != one);
  CHECK(store.version() != one);
  CHECK(store.entries().size() == 1);
}
