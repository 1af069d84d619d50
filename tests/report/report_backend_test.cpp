// The report backend's file handling: where it writes, when, and what it says
// when it cannot.
#include "report_backend.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "support/backend_test_support.hpp"

namespace {

namespace rt = ferret::runtime;

rt::session_status status(bool final) { return rt::session_status{nullptr, nullptr, 0, 0, final}; }

}  // namespace

TEST_CASE("the page is written once, at the final flush, complete") {
  ferret::testing::temp_directory directory{"ferret-report-test"};
  const rt::session_info session = ferret::testing::make_session(42);
  std::string error;
  const auto backend =
      ferret::report::make_backend(rt::backend_context{&session, directory.file("run.json"), false}, error);
  REQUIRE(backend != nullptr);
  CHECK(error.empty());
  backend->flush(status(false));
  CHECK(std::filesystem::is_empty(directory.path()));
  CHECK(backend->describe() == "report: not written (" + directory.file("run.html") + ")");
  backend->flush(status(true));
  CHECK(std::filesystem::exists(directory.file("run.html")));
  CHECK(!std::filesystem::exists(directory.file("run.html.part")));
  CHECK(backend->describe() == "report: " + directory.file("run.html"));
  const std::string page = [&] {
    std::string text;
    std::FILE* file = std::fopen(directory.file("run.html").c_str(), "rb");
    REQUIRE(file != nullptr);
    char chunk[4096];
    for (std::size_t got; (got = std::fread(chunk, 1, sizeof chunk, file)) > 0;) text.append(chunk, got);
    std::fclose(file);
    return text;
  }();
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(page.find("/*ferret:") == std::string::npos);  // every part put in
  CHECK(page.find("\"format\":\"ferret-report\"") != std::string::npos);
  // Nothing to fetch: no remote source or link (the SVG namespace is a name, not a fetch).
  CHECK(page.find("https://") == std::string::npos);
  CHECK(page.find("src=\"http") == std::string::npos);
  CHECK(page.find("href=\"http") == std::string::npos);
}

TEST_CASE("an output it cannot write is refused at the start, with the reason") {
  const rt::session_info session = ferret::testing::make_session(42);
  std::string error;
  CHECK(ferret::report::make_backend(
            rt::backend_context{&session, "/nonexistent-ferret-directory/run", false}, error) == nullptr);
  CHECK(error ==
        "cannot write the report to '/nonexistent-ferret-directory/run.html': No such file or directory");
  error.clear();
  CHECK(ferret::report::make_backend(rt::backend_context{nullptr, "run", false}, error) == nullptr);
  CHECK(error == "cannot write the report to 'run': no session");
}

TEST_CASE("a fork child's backend writes nothing") {
  ferret::testing::temp_directory directory{"ferret-report-test"};
  const rt::session_info session = ferret::testing::make_session(42);
  std::string error;
  const auto backend =
      ferret::report::make_backend(rt::backend_context{&session, directory.file("child"), false}, error);
  REQUIRE(backend != nullptr);
  backend->abandon();
  backend->flush(status(true));
  CHECK(std::filesystem::is_empty(directory.path()));
}
