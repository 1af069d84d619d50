// Theoretical occupancy of a kernel launch, from the device's limits and the
// launch's attributes (as CUPTI's kernel records carry them).
#pragma once

#include "ferret/runtime/backend.hpp"

namespace ferret::cupti {

/// Active warps per multiprocessor over the most it can hold (0..1), as
/// NVIDIA's occupancy calculator (cuda_occupancy.h) computes it: the fewest
/// blocks that the warp slots, the block slots, the registers (allocated per
/// warp, 256 at a time) and the shared memory (static + dynamic + 1 KiB the
/// driver reserves per block from compute capability 8.0 on, allocated 128
/// bytes at a time) allow. The shared memory per multiprocessor is the
/// carveout the kernel ran with when the record has it, else the device's
/// maximum. The per-block shared memory limit is not applied: a launch that
/// happened fitted it.
///
/// Negative when it cannot be computed: limits of `device` missing, an empty
/// block, or a compute capability the calculator does not know.
double theoretical_occupancy(const runtime::gpu_device_info& device,
                             const runtime::kernel_attributes& kernel);

}  // namespace ferret::cupti
