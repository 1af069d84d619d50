// doctest's main, except that a run in which no test case runs fails: doctest
// exits 0 when a --test-case or --test-suite filter matches nothing, so a
// renamed case would silently stop being tested by the CTest entry naming it.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

namespace {

bool g_run_ended = false;  // false for queries (--count, --list-test-cases, --help)
unsigned g_cases_started = 0;

struct case_counter final : doctest::IReporter {
  explicit case_counter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override { g_run_ended = true; }
  void test_case_start(const doctest::TestCaseData&) override { ++g_cases_started; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

DOCTEST_REGISTER_LISTENER("case_counter", 1, case_counter);

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int status = context.run();
  if (g_run_ended && g_cases_started == 0) {
    std::fprintf(stderr, "%s: no test case ran: a --test-case or --test-suite filter names no "
                         "existing case (renamed?)\n", argc > 0 ? argv[0] : "test");
    return EXIT_FAILURE;
  }
  return status;
}
