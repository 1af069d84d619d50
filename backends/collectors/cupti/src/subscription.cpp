#include "subscription.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

namespace ferret::cupti {
namespace {

std::string cuda_release(int version) { return fmt::format("{}.{}", version / 1000, version % 1000 / 10); }

}  // namespace

cuda_driver find_cuda_driver() {
  cuda_driver driver;
  void* library = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (library == nullptr) library = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    driver.load_error = error != nullptr ? error : "libcuda.so.1 cannot be loaded";
    return driver;
  }
  driver.found = true;
  using get_version_fn = int (*)(int*);
  if (const auto get_version = reinterpret_cast<get_version_fn>(dlsym(library, "cuDriverGetVersion")))
    if (get_version(&driver.version) != 0) driver.version = 0;
  return driver;
}

std::string subscription_failure(CUptiResult result, const std::string& result_text,
                                 const cuda_driver& driver, int cuda_version) {
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    return fmt::format("another tool holds the CUPTI subscription ({}: Nsight Systems, Nsight "
                       "Compute, cuda-gdb, a sanitizer or a framework profiler?)",
                       result_text);
  if (!driver.found)
    return fmt::format("no CUDA driver ({}; CUPTI: {})", driver.load_error, result_text);
  if (driver.version > 0 && driver.version < cuda_version)
    return fmt::format("CUDA driver version is insufficient: the driver supports CUDA {}, ferret's "
                       "CUPTI is from CUDA {} (CUPTI: {})",
                       cuda_release(driver.version), cuda_release(cuda_version), result_text);
  return fmt::format("CUPTI cannot subscribe ({})", result_text);
}

}  // namespace ferret::cupti
