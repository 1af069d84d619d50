// subscription.hpp — why cuptiSubscribe failed, in the words of CUPTI and of
// the CUDA driver: another tool's subscription is one cause among several (a
// missing or too old driver gives CUPTI_ERROR_UNKNOWN or a driver error).
#pragma once

#include <cupti.h>

#include <string>

namespace ferret::cupti {

struct cuda_driver {
  bool found = false;      // libcuda.so.1 is in the process or could be loaded
  std::string load_error;  // dlerror() when it could not
  int version = 0;         // cuDriverGetVersion (12040: CUDA 12.4); 0 if not known
};

/// Finds the driver the program would use (loading libcuda.so.1 if it is not
/// loaded yet: only on the failure path) and asks its version.
cuda_driver find_cuda_driver();

/// The line (without "ferret: ") that says why the subscription failed:
/// `result` and its text from CUPTI, the driver found, and the CUDA version
/// ferret's CUPTI comes from (CUDA_VERSION: 13000 for 13.0).
std::string subscription_failure(CUptiResult result, const std::string& result_text,
                                 const cuda_driver& driver, int cuda_version);

}  // namespace ferret::cupti
