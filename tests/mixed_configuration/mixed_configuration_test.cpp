// Translation units built with FERRET_ENABLED=0 and enabled ones in one
// program (a library compiled out inside a traced application; the
// benchmarks do it too): each behaves as it was built. Before each
// configuration had its own inline namespace, the header's inline functions
// and data_object had the same names in both, and the linker kept one copy:
// the disabled code then recorded, or the enabled code did not (and an
// enabled data_object was constructed in a disabled one's single byte).
#include <doctest/doctest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "ferret/ferret.hpp"
#include "mixed_configuration/annotations.hpp"
#include "support/memory_backend.hpp"

using ferret::testing::capture;
using ferret::testing::memory_backend;

namespace {

std::uint64_t this_tid() { return static_cast<std::uint64_t>(syscall(SYS_gettid)); }

capture drained() {
  ferret::flush();
  return memory_backend::snapshot();
}

std::vector<std::string> record_names(const capture& captured) {
  std::vector<std::string> names;
  const auto thread = captured.threads.find(this_tid());
  if (thread == captured.threads.end()) return names;
  for (const auto& r : thread->second.records) names.push_back(r.name);
  return names;
}

const ferret::runtime::metadata_value* metadata(const capture& captured, const std::string& key) {
  for (const auto& [k, v] : captured.user_metadata)
    if (k == key) return &v;
  return nullptr;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE("disabled and enabled translation units in one program each behave as built") {
  ferret::mark("session started");  // attaches this program to the runtime
  drained();
  memory_backend::clear();
  char memory[64];

  const annotation_results disabled = annotate_disabled("disabled thread", memory, sizeof memory, 1);
  const capture after_disabled = drained();
  CHECK_FALSE(disabled.name_registered);
  CHECK(disabled.object_id == 0);
  CHECK(disabled.raw_object_id == 0);
  CHECK(record_names(after_disabled).empty());
  CHECK(after_disabled.objects.empty());
  CHECK(metadata(after_disabled, "mixed key") == nullptr);
  CHECK(metadata(after_disabled, "mixed text") == nullptr);

  const annotation_results enabled = annotate_enabled("enabled thread", memory, sizeof memory, 2);
  const capture after_enabled = drained();
  CHECK(enabled.name_registered);
  CHECK(enabled.object_id != 0);
  CHECK(enabled.raw_object_id != 0);
  const std::vector<std::string> names = record_names(after_enabled);
  for (const char* expected :
       {"annotate_enabled", "mixed macro region", "mixed region", "mixed macro mark", "mixed mark",
        "mixed macro counter", "mixed counter", "mixed registered name", "mixed begin"})
    CHECK_MESSAGE(contains(names, expected), expected);
  REQUIRE(after_enabled.objects.size() == 4);  // two objects, registered and unregistered
  CHECK(after_enabled.objects[0].object.name == "mixed object");
  CHECK(after_enabled.objects[1].object.name == "mixed raw object");
  REQUIRE(metadata(after_enabled, "mixed key") != nullptr);
  CHECK(std::get<std::int64_t>(*metadata(after_enabled, "mixed key")) == 2);
  CHECK(after_enabled.threads.at(this_tid()).name == "enabled thread");

  // The disabled code again, after the enabled code attached: still nothing.
  memory_backend::clear();
  annotate_disabled("disabled thread", memory, sizeof memory, 3);
  const capture again = drained();
  CHECK(record_names(again).empty());
  CHECK(again.objects.empty());
  CHECK(std::get<std::int64_t>(*metadata(again, "mixed key")) == 2);
}

// Two shared objects with the same annotations: the header's out-of-line
// functions are hidden, so that each runs its own copy on its own flag. With
// default visibility the second object's calls were bound to the first's
// copy, and its flag stayed unresolved: every annotation there then took
// the slow path, and the runtime never learnt of the object (no detach at
// dlclose).
TEST_CASE("each shared object resolves its own mode flag") {
  CHECK(first_shared_object_mode() == ferret::detail::mode_recording);
  CHECK(second_shared_object_mode() == ferret::detail::mode_recording);
}
