// The runtime's bookkeeping grows with what is live and distinct, not with
// the history: run metadata keys (set in constant work each, however many),
// and the released data objects the GPU attribution keeps.
#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

#include "gpu_attribution.hpp"
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

TEST_CASE("object history: released objects are kept for a while, and at most kept_released") {
  object_history history;
  const auto info = [](std::uint64_t id) {
    return ferret::runtime::data_object_info{id, "object", 0x1000 * id, 16,
                                             ferret::runtime::memory_kind::host, -1};
  };
  for (std::uint64_t id = 1; id <= 3; ++id) history.registered(info(id));  // stay live
  constexpr std::uint64_t churned = 4 * object_history::kept_released;
  std::uint64_t cycle = 1;
  std::size_t most = 0;
  for (std::uint64_t id = 4; id < 4 + churned; ++id) {
    history.registered(info(id));
    history.released(id, cycle);
    if (id % 1000 == 0) history.evict(++cycle);  // a drain now and then
    most = std::max(most, history.size());
  }
  CHECK(most <= 3 + object_history::kept_released);
  // The latest released are still named (a copy completed after its array was freed).
  CHECK(history.find(3 + churned) != nullptr);
  CHECK(history.find(4) == nullptr);
  // kept_cycles drains later only the live ones are left.
  history.evict(cycle + object_history::kept_cycles);
  CHECK(history.size() == 3);
  for (std::uint64_t id = 1; id <= 3; ++id) CHECK(history.find(id) != nullptr);
}

TEST_CASE("context tree: one node per (parent, name), the same before and after a node's children outgrow its list") {
  context_tree tree;
  // Names are compared by address: distinct records, never read.
  std::vector<ferret::runtime::name_info> names(40);
  const ferret::runtime::context_node* root = tree.root();
  CHECK(root->parent == nullptr);
  CHECK(root->depth == 0);
  std::vector<const ferret::runtime::context_node*> children;
  for (const auto& name : names) children.push_back(tree.enter(root, &name));
  for (std::size_t i = 0; i < names.size(); ++i) {
    CAPTURE(i);
    CHECK(children[i]->parent == root);
    CHECK(children[i]->depth == 1);
    CHECK(children[i]->name == &names[i]);
    CHECK(children[i]->id == i + 1);  // ids in the order of creation, the root's 0
  }
  // Found again, out of order and after other entries (not only the cached last child).
  for (std::size_t i = names.size(); i-- > 0;) CHECK(tree.enter(root, &names[i]) == children[i]);
  CHECK(tree.enter(root, &names[3]) == children[3]);
  CHECK(tree.enter(root, &names[30]) == children[30]);
  CHECK(tree.size() == names.size() + 1);
  // A recursion: each level a node of its own, found again on the way back in.
  const ferret::runtime::context_node* at = root;
  for (int level = 0; level < 1000; ++level) at = tree.enter(tree.enter(at, &names[0]), &names[1]);
  CHECK(at->depth == 2000);
  const std::size_t size = tree.size();
  at = root;
  for (int level = 0; level < 1000; ++level) at = tree.enter(tree.enter(at, &names[0]), &names[1]);
  CHECK(tree.size() == size);
  CHECK(at->depth == 2000);
}
