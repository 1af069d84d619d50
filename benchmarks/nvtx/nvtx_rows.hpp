// nvtx_rows.hpp — pieces of ferret-nvtx-bench compiled apart (each NVTX
// instance is per shared object: see nvtx_no_tool.cpp).
#pragma once

namespace ferret_bench {

inline void nvtx_clobber() { asm volatile("" ::: "memory"); }

// One nvtxRangePushA/Pop pair through an NVTX instance that has no tool.
void nvtx_no_tool_pair(const char* name);

}  // namespace ferret_bench
