// NVTX's own instance in this library finds no tool (no environment variable,
// no static hook): its calls take NVTX's no-tool path, the baseline row.
#define NVTX_SUPPORT_ENV_VARS 0
#define NVTX_SUPPORT_STATIC_INJECTION_LIBRARY 0
#include <nvtx3/nvToolsExt.h>

#include "nvtx_rows.hpp"

namespace ferret_bench {

void nvtx_no_tool_pair(const char* name) {
  nvtxRangePushA(name);
  nvtx_clobber();
  nvtxRangePop();
}

}  // namespace ferret_bench
