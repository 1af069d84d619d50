// Regions still open when their thread or the program exits end at that exit,
// the same way in every format: nested in their parents (not cut to nothing at
// a parent's end), and marked — args.ferret in Chrome, the "ferret" attribute
// of the Leave in OTF2 — and counted (unfinished-regions) in every format's
// metadata. One run of support/test_app with chrome,otf2,tau,summary.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "otf2_check.hpp"
#include "support/run_program.hpp"
#include "tau_check.hpp"
#include "trace_check.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

json the_slice(const json& doc, const std::string& name) {
  std::vector<json> found;
  for (const json& event : doc.at("traceEvents"))
    if (event.at("ph") == "X" && event.at("name") == name) found.push_back(event);
  REQUIRE_MESSAGE(found.size() == 1, found.size() << " slices named " << name);
  return found.front();
}

}  // namespace

TEST_CASE("regions open at exit end then, nested and marked, in every format") {
  const fs::path work = fs::temp_directory_path() / ("ferret-open-at-exit-" + std::to_string(getpid()));
  fs::remove_all(work);
  fs::create_directories(work);
  const ferret::testing::program_result ran = ferret::testing::run_program(
      work, {FERRET_TEST_APP, "open-at-exit"},
      {{"FERRET_BACKEND", "chrome,otf2,tau,summary"}, {"FERRET_OUTPUT", (work / "run").string()}});
  INFO(ran.err);
  REQUIRE(ran.exit_code == 0);

  // Chrome: each open region an X event to the exit, inside its parent.
  const ferret::trace_check::report chrome = ferret::trace_check::check_file((work / "run.json").string());
  for (const std::string& error : chrome.errors) MESSAGE(error);
  CHECK(chrome.ok());
  CHECK(chrome.metadata.at("unfinished-regions") == 4);
  const json doc = json::parse(read_text(work / "run.json"));
  const json main_slice = the_slice(doc, "main");
  const json phase = the_slice(doc, "phase");
  const json task = the_slice(doc, "task");
  const json step = the_slice(doc, "step");
  for (const json* slice : {&main_slice, &phase, &task, &step}) {
    CAPTURE(slice->at("name"));
    CHECK(slice->at("args").at("ferret") == "closed at exit");
  }
  CHECK_FALSE(the_slice(doc, "done").contains("args"));
  // In nanoseconds, as Perfetto reads the microseconds with three decimals.
  const auto ns = [](const json& microseconds) { return std::llround(microseconds.get<double>() * 1000); };
  const auto begin_of = [&](const json& slice) { return ns(slice.at("ts")); };
  const auto end_of = [&](const json& slice) { return ns(slice.at("ts")) + ns(slice.at("dur")); };
  CHECK(begin_of(phase) >= begin_of(main_slice));
  CHECK(end_of(phase) == end_of(main_slice));
  CHECK(end_of(phase) >= end_of(the_slice(doc, "done")));  // not cut to nothing at main's end
  CHECK(end_of(step) == end_of(task));                     // the worker's exit...
  CHECK(end_of(task) <= begin_of(phase));                  // ...before main began phase

  // OTF2: every Enter left, the Leaves of the four marked.
  const ferret::otf2_check::report otf2 = ferret::otf2_check::check_archive((work / "run/traces.otf2").string());
  for (const std::string& error : otf2.errors) MESSAGE(error);
  CHECK(otf2.ok());
  for (const auto& [id, location] : otf2.locations) CHECK(location.enters == location.leaves);
  CHECK(otf2.attribute_counts.at("ferret") == 4);
  CHECK(otf2.attribute_strings.at("ferret") == std::set<std::string>{"closed at exit"});
  CHECK(otf2.properties.at("FERRET::RUNTIME::UNFINISHED_2DREGIONS") == "4");

  // TAU: phase a call under main; the count in each thread's metadata.
  const ferret::tau_check::report tau = ferret::tau_check::check_directory((work / "run").string());
  for (const std::string& error : tau.errors) MESSAGE(error);
  CHECK(tau.ok());
  const ferret::tau_check::profile* main_profile = tau.find(0, 0);
  REQUIRE(main_profile != nullptr);
  CHECK(main_profile->attribute("unfinished-regions") == "4");
  bool phase_under_main = false;
  for (const auto& function : main_profile->functions)
    phase_under_main |= function.name.find("main") != std::string::npos &&
                        function.name.find(" => phase") != std::string::npos && function.calls == 1;
  CHECK(phase_under_main);

  // summary: said with the losses.
  CHECK(ran.err.find("4 unfinished-regions") != std::string::npos);
  fs::remove_all(work);
}
