// Why the CUDA collector runs without GPU data: the cause CUPTI and the
// driver give, not a guess. The mapping from CUPTI's result and the driver
// found to the line; and, on a machine without a CUDA driver, the line a
// program linked with ferret::cuda prints.
#include <doctest/doctest.h>
#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>

#include "subscription.hpp"
#include "support/run_program.hpp"

namespace fs = std::filesystem;
using ferret::cupti::cuda_driver;
using ferret::cupti::subscription_failure;

TEST_CASE("mapping: another tool only when CUPTI says so") {
  const cuda_driver current{true, "", 13000};
  CHECK(subscription_failure(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
                             "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED", current, 13000)
            .rfind("another tool holds the CUPTI subscription (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED", 0) == 0);
  CHECK(subscription_failure(CUPTI_ERROR_UNKNOWN, "CUPTI_ERROR_UNKNOWN", current, 13000) ==
        "CUPTI cannot subscribe (CUPTI_ERROR_UNKNOWN)");
  CHECK(subscription_failure(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "User doesn't have sufficient privileges",
                             current, 13000) ==
        "CUPTI cannot subscribe (User doesn't have sufficient privileges)");
}

TEST_CASE("mapping: the driver missing or too old") {
  const cuda_driver missing{false, "libcuda.so.1: cannot open shared object file: No such file or directory", 0};
  CHECK(subscription_failure(CUPTI_ERROR_UNKNOWN, "CUPTI_ERROR_UNKNOWN", missing, 13000) ==
        "no CUDA driver (libcuda.so.1: cannot open shared object file: No such file or directory; "
        "CUPTI: CUPTI_ERROR_UNKNOWN)");
  const cuda_driver old{true, "", 12040};
  CHECK(subscription_failure(CUPTI_ERROR_NOT_INITIALIZED, "CUPTI_ERROR_NOT_INITIALIZED", old, 13000) ==
        "CUDA driver version is insufficient: the driver supports CUDA 12.4, ferret's CUPTI is from "
        "CUDA 13.0 (CUPTI: CUPTI_ERROR_NOT_INITIALIZED)");
  // Even another tool's subscription is CUPTI's word over the driver's age.
  CHECK(subscription_failure(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "M", old, 13000)
            .rfind("another tool", 0) == 0);
}

TEST_CASE("process: a program linked with ferret::cuda on a machine without a CUDA driver") {
  if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(driver);
    MESSAGE("skipped: this machine has a CUDA driver (the case needs none)");
    return;
  }
  const fs::path directory = fs::temp_directory_path() / ("ferret-cupti-subscription-" + std::to_string(getpid()));
  fs::remove_all(directory);
  fs::create_directories(directory);
  const auto result = ferret::testing::run_program(
      directory, {FERRET_CUDA_LINKED_PROGRAM}, {{"FERRET_BACKEND", "chrome"}, {"FERRET_OUTPUT", "run.json"}},
      std::chrono::seconds{60});
  CHECK(result.exit_code == 0);
  CHECK(result.out == "finished\n");
  CHECK(result.err.find("ferret: no CUDA driver (libcuda.so.1: ") != std::string::npos);
  CHECK(result.err.find("running without GPU data\n") != std::string::npos);
  CHECK(result.err.find("another tool") == std::string::npos);
  CHECK(fs::exists(directory / "run.json"));  // the annotations are traced all the same
  fs::remove_all(directory);
}
