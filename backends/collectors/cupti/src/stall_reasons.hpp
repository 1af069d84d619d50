// stall_reasons.hpp — CUPTI's PC sampling stall reasons: their names without
// the metric prefix, which of them to collect, and HPCToolkit's class of each.
//
// CUPTI names a reason by its Perfworks metric, "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
// and on recent GPUs offers each twice: the reason, and "<reason>_not_issued" (the
// same samples, restricted to those where no warp issued). The plain ones
// partition the samples; the "_not_issued" ones would count samples twice, so
// they are not collected. No libcupti calls here: unit-tested without a GPU.
#pragma once

#include <string_view>

#include "ferret/runtime/backend.hpp"

namespace ferret::cupti {

/// "smsp__pcsamp_warps_issue_stalled_long_scoreboard" -> "long_scoreboard";
/// a name without the prefix is returned as it is.
std::string_view stall_reason_name(std::string_view cupti_name) noexcept;

/// Whether to collect the reason: false for the "_not_issued" duplicates.
bool collect_stall_reason(std::string_view cupti_name) noexcept;

/// HPCToolkit's class of a reason (by its name without the prefix); reasons
/// this table does not know are "other" (STL_OTHR).
runtime::gpu_stall classify_stall_reason(std::string_view name) noexcept;

}  // namespace ferret::cupti
