// The memory of OTF2's buffers (otf2_chunks.hpp) and the definition chunk size
// (otf2_definitions.hpp), driven as OTF2 drives them.
#include "otf2_chunks.hpp"
#include "otf2_definitions.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

using ferret::otf2::chunk_pool;
constexpr std::uint64_t chunk = OTF2_CHUNK_SIZE_MIN;

// One buffer of OTF2's: its per-buffer data and what it was given.
struct buffer {
  buffer(chunk_pool& owner, OTF2_FileType file_type) : pool(owner), type(file_type) {}
  chunk_pool& pool;
  OTF2_FileType type;
  void* data = nullptr;
  std::vector<void*> chunks;

  bool grow() {
    void* given = chunk_pool::callbacks.otf2_allocate(&pool, type, 0, &data, chunk);
    if (given != nullptr) {
      std::memset(given, 0xab, chunk);  // OTF2 fills every chunk it writes
      chunks.push_back(given);
    }
    return given != nullptr;
  }
  void free_all(bool final) {
    chunk_pool::callbacks.otf2_free_all(&pool, type, 0, &data, final);
    chunks.clear();
  }
};

}  // namespace

TEST_CASE("an event buffer: its first chunk always, then more while it and all buffers are within bounds") {
  chunk_pool pool;
  buffer events{pool, OTF2_FILETYPE_EVENTS};
  for (std::size_t i = 0; i < chunk_pool::max_event_chunks; ++i) REQUIRE(events.grow());
  CHECK_FALSE(events.grow());  // OTF2 then flushes this buffer and asks again
  events.free_all(false);
  CHECK(events.grow());

  // All event buffers together: beyond the budget, only first chunks.
  std::vector<buffer> many(chunk_pool::event_budget / chunk / chunk_pool::max_event_chunks + 2,
                           buffer{pool, OTF2_FILETYPE_EVENTS});
  for (buffer& b : many)
    while (b.grow()) {
    }
  std::uint64_t beyond_first = 0;  // chunks past each buffer's first
  for (const buffer& b : many) beyond_first += (b.chunks.size() - 1) * chunk;
  CHECK(beyond_first <= chunk_pool::event_budget);
  CHECK(many.back().chunks.size() == 1);
  buffer late{pool, OTF2_FILETYPE_EVENTS};
  CHECK(late.grow());        // a new location's first chunk, whatever the others hold
  CHECK_FALSE(late.grow());  // but no second one while the budget is spent
  many.front().free_all(false);
  CHECK(late.grow());        // memory written to disk is available again
  for (buffer& b : many) b.free_all(true);
  late.free_all(true);
  events.free_all(true);
  CHECK(events.data == nullptr);
}

TEST_CASE("definition buffers are not limited; freed chunks are reused, a few") {
  chunk_pool pool;
  buffer definitions{pool, OTF2_FILETYPE_LOCAL_DEFS};
  for (std::size_t i = 0; i < 3 * chunk_pool::max_event_chunks; ++i) REQUIRE(definitions.grow());
  const void* first = definitions.chunks.front();
  definitions.free_all(true);
  // The next location's definitions (at the final flush, one location after
  // the other) get a chunk already in memory.
  buffer next{pool, OTF2_FILETYPE_LOCAL_DEFS};
  REQUIRE(next.grow());
  bool reused = false;
  for (std::size_t i = 0; i < chunk_pool::kept_chunks && !reused; ++i) {
    reused = next.chunks.back() == first;
    if (!reused) REQUIRE(next.grow());
  }
  CHECK(reused);
  next.free_all(true);
}

TEST_CASE("the definition chunk size: OTF2's smallest unless a record needs more") {
  ferret::otf2::definitions global;
  global.strings = {"main thread", "solve", std::string(64 * 1024, 'x')};
  CHECK(ferret::otf2::definition_chunk_size(global, {}) == OTF2_CHUNK_SIZE_MIN);

  global.strings.push_back(std::string(300 * 1024, 'y'));  // beyond any ferret writes
  CHECK(ferret::otf2::definition_chunk_size(global, {}) == 512 * 1024);

  ferret::otf2::definitions many_members;
  many_members.groups.push_back({0, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                 std::vector<std::uint64_t>(100'000, 7)});
  CHECK(ferret::otf2::definition_chunk_size(many_members, {}) == 1024 * 1024);

  ferret::otf2::id_mappings rank;
  rank.strings.assign(200'000, 1);
  CHECK(ferret::otf2::definition_chunk_size({}, {rank}) == 4 * 1024 * 1024);

  ferret::otf2::definitions huge;
  huge.strings.push_back(std::string(20 * 1024 * 1024, 'z'));
  CHECK(ferret::otf2::definition_chunk_size(huge, {}) == OTF2_CHUNK_SIZE_MAX);
}
