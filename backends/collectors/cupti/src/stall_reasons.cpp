#include "stall_reasons.hpp"

#include <array>
#include <utility>

namespace ferret::cupti {

namespace {
constexpr std::string_view metric_prefix = "smsp__pcsamp_warps_issue_stalled_";
constexpr std::string_view not_issued_suffix = "_not_issued";

using runtime::gpu_stall;

// CUPTI's reasons (Volta to Blackwell) onto HPCToolkit's classes, following
// the correspondence of the PC sampling API's reasons to the older activity
// API's (whose reasons HPCToolkit's classes name). docs/gpu-inside.md has the table.
constexpr std::array<std::pair<std::string_view, gpu_stall>, 20> classes{{
    {"selected", gpu_stall::none},
    {"branch_resolving", gpu_stall::ifet},
    {"no_instructions", gpu_stall::ifet},
    {"wait", gpu_stall::idep},
    {"short_scoreboard", gpu_stall::idep},
    {"long_scoreboard", gpu_stall::gmem},
    {"tex_throttle", gpu_stall::tmem},
    {"barrier", gpu_stall::sync},
    {"membar", gpu_stall::sync},
    {"imc_miss", gpu_stall::cmem},
    {"math_pipe_throttle", gpu_stall::pipe},
    {"tensor_pipe_throttle", gpu_stall::pipe},
    {"lg_throttle", gpu_stall::mthr},
    {"mio_throttle", gpu_stall::mthr},
    {"drain", gpu_stall::mthr},
    {"not_selected", gpu_stall::nsel},
    {"sleeping", gpu_stall::slp},
    {"dispatch_stall", gpu_stall::othr},
    {"misc", gpu_stall::othr},
    {"gmma", gpu_stall::pipe},
}};
}  // namespace

std::string_view stall_reason_name(std::string_view cupti_name) noexcept {
  if (cupti_name.substr(0, metric_prefix.size()) == metric_prefix)
    cupti_name.remove_prefix(metric_prefix.size());
  return cupti_name;
}

bool collect_stall_reason(std::string_view cupti_name) noexcept {
  return !(cupti_name.size() >= not_issued_suffix.size() &&
           cupti_name.substr(cupti_name.size() - not_issued_suffix.size()) == not_issued_suffix);
}

gpu_stall classify_stall_reason(std::string_view name) noexcept {
  for (const auto& [known, stall] : classes)
    if (known == name) return stall;
  return gpu_stall::othr;
}

}  // namespace ferret::cupti
