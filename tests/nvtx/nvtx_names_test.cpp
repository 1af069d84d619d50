// NVTX names → site records: content-keyed per-thread cache, domains,
// categories, registered strings (backends/collectors/nvtx/src/nvtx_names.hpp).
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "nvtx_names.hpp"

namespace {

using ferret::detail::site;
using ferret::nvtx::name_table;

// Stands in for the runtime's register_name: one site per (text, label).
struct fake_runtime {
  static inline std::mutex mutex;
  static inline std::map<std::pair<std::string, const char*>, const site*> sites;
  static inline std::deque<std::string> texts;
  static inline std::deque<site> records;
  static inline int interned = 0;

  static const site* intern(std::string_view text, const char* label) {
    std::lock_guard lock{mutex};
    ++interned;
    const site*& known = sites[{std::string{text}, label}];
    if (known == nullptr) {
      const std::string& stored = texts.emplace_back(text);
      known = &records.emplace_back(site{stored.c_str(), label, nullptr, nullptr, 0, 0});
    }
    return known;
  }
};

}  // namespace

TEST_CASE("a name is found by its content, not by its buffer") {
  name_table names{fake_runtime::intern};
  const char* label = names.default_domain().label();
  CHECK(std::string{label} == "nvtx");
  char buffer[32];
  std::strcpy(buffer, "alpha");
  const site* alpha = names.ascii(buffer, label);
  REQUIRE(alpha != nullptr);
  CHECK(std::string{alpha->name} == "alpha");
  std::strcpy(buffer, "beta");
  const site* beta = names.ascii(buffer, label);
  CHECK(std::string{beta->name} == "beta");
  std::strcpy(buffer, "alphabet");  // a longer name sharing a prefix
  CHECK(std::string{names.ascii(buffer, label)->name} == "alphabet");
  // Another buffer with the same bytes: the same site, from the cache.
  const int before = fake_runtime::interned;
  const std::string copy = "alpha";
  CHECK(names.ascii(copy.c_str(), label) == alpha);
  CHECK(fake_runtime::interned == before);
  CHECK(names.ascii("", label) != nullptr);
}

TEST_CASE("domains, categories and registered strings") {
  name_table names{fake_runtime::intern};
  ferret::nvtx::domain* solver = names.create_domain("Solver");
  CHECK(names.create_domain("Solver") == solver);
  CHECK(std::string{solver->label()} == "nvtx:Solver");
  CHECK(std::string{solver->category_label(0)} == "nvtx:Solver");
  CHECK(std::string{solver->category_label(7)} == "nvtx:Solver/category 7");
  solver->name_category(7, "phases");
  CHECK(std::string{solver->category_label(7)} == "nvtx:Solver/phases");
  solver->name_category(1000, "far");
  CHECK(std::string{solver->category_label(1000)} == "nvtx:Solver/far");
  // The same text under two labels: two sites.
  const site* plain = names.ascii("step", solver->label());
  const site* grouped = names.ascii("step", solver->category_label(7));
  CHECK(plain != grouped);
  CHECK(std::string{grouped->domain} == "nvtx:Solver/phases");
  ferret::nvtx::registered_string* handle = names.register_string("assemble");
  CHECK(names.registered(handle, solver->label()) == names.ascii("assemble", solver->label()));
  CHECK(names.unicode(L"gr\u00f6\u00dfe", solver->label()) ==
        names.ascii("gr\xc3\xb6\xc3\x9f" "e", solver->label()));
}

TEST_CASE("payload schemas: static ids kept, dynamic ids made, names found beyond the lock-free slots") {
  name_table names{fake_runtime::intern};
  ferret::nvtx::domain* comms = names.create_domain("Comms");
  const std::uint64_t static_id = (std::uint64_t{1} << 24) + 7;
  CHECK(comms->register_schema(static_id, "comm parameters") == static_id);
  CHECK(std::string{comms->schema_name(static_id)} == "comm parameters");
  const std::uint64_t first = comms->register_schema(0, "first dynamic");
  const std::uint64_t second = comms->register_schema(0, nullptr);
  CHECK(first >= std::uint64_t{1} << 32);
  CHECK(second == first + 1);
  CHECK(std::string{comms->schema_name(first)} == "first dynamic");
  CHECK(comms->schema_name(second) == nullptr);  // unnamed
  CHECK(comms->schema_name(12345) == nullptr);   // unknown
  CHECK(comms->schema_name(0) == nullptr);
  // Registered again (another NVTX instance): the first name stays.
  CHECK(comms->register_schema(static_id, "again") == static_id);
  CHECK(std::string{comms->schema_name(static_id)} == "comm parameters");
  for (std::uint64_t i = 0; i < 100; ++i) comms->register_schema(static_id + 100 + i, ("schema " + std::to_string(i)).c_str());
  CHECK(std::string{comms->schema_name(static_id + 100 + 99)} == "schema 99");
  CHECK(std::string{comms->schema_name(static_id + 100)} == "schema 0");
  CHECK(names.default_domain().schema_name(static_id) == nullptr);  // per domain
}

TEST_CASE("hashing reads every byte, whatever the length") {
  std::string text;
  for (int length = 0; length < 40; ++length) {
    std::size_t measured = 0;
    const std::uint64_t hash = ferret::nvtx::hash_text(text.c_str(), measured);
    CHECK(measured == text.size());
    if (!text.empty()) {
      std::string changed = text;
      changed.back() = static_cast<char>(changed.back() + 1);
      std::size_t ignored = 0;
      CHECK(ferret::nvtx::hash_text(changed.c_str(), ignored) != hash);
    }
    text += static_cast<char>('a' + length % 26);
  }
  CHECK(ferret::nvtx::to_utf8(L"\U0001F600") == "\xF0\x9F\x98\x80");
}

TEST_CASE("threads naming at once get the same sites") {
  name_table names{fake_runtime::intern};
  ferret::nvtx::domain* shared = names.create_domain("threads");
  std::vector<std::vector<const site*>> seen(4);
  std::vector<std::thread> threads;
  std::atomic<std::size_t> waiting{seen.size()};
  for (std::size_t t = 0; t < seen.size(); ++t)
    threads.emplace_back([&, t] {
      // All start together, so that they race for the first category labels.
      waiting.fetch_sub(1);
      while (waiting.load() != 0) std::this_thread::yield();
      for (int round = 0; round < 200; ++round)
        for (int n = 0; n < 20; ++n) {
          const std::string name = "range " + std::to_string(n);
          const site* found = names.ascii(name.c_str(), shared->category_label(static_cast<std::uint32_t>(n % 3)));
          if (round == 0) seen[t].push_back(found);
        }
    });
  for (auto& thread : threads) thread.join();
  for (std::size_t t = 1; t < seen.size(); ++t) CHECK(seen[t] == seen[0]);
}
