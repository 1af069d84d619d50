// The tables of sampled counters (FERRET_CUDA_METRICS_SAMPLING) as text cells,
// built once for the summary and the report's page, so that both print the
// same digits.
#pragma once

#include <cstddef>
#include <string>

#include "gpu_sample_tables.hpp"
#include "profile_model.hpp"

namespace ferret::profile {

/// "Link traffic by kernel (PM sampling)": the `limit` kernels (per device)
/// with the most attributed link bytes: NVLink sent, NVLink received, PCIe
/// read, PCIe write, the share of the kernel's bytes from intervals in which
/// it ran alone (exact), launches, GPU, kernel (demangled); `rest` sums the
/// kernels left out.
text_rows link_kernel_table(const profile_model& model, std::size_t limit);
/// "Sampled counters per GPU": per device and counter, the total over the run,
/// the mean and the peak rate (levels: the time-weighted mean and the peak).
text_rows sampled_counter_table(const profile_model& model);
/// How the sampled link bytes were attributed: "12.0 MiB to one kernel
/// (exact), 3.0 MiB shared among several, 1.0 MiB while no kernel ran", and
/// what the attribution's windows could not settle in time.
std::string link_attribution_text(const profile_model& model);

}  // namespace ferret::profile
