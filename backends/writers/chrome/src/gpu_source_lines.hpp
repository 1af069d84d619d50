// The chrome trace's table of GPU source lines: the instruction samples
// (FERRET_CUDA_PC_SAMPLING) summed per function and source line over every
// calling context and device, of which the metadata's "gpu-source-lines" keeps
// the most sampled: a trace is for time lines, and the summary and report hold
// the full source view, so the trace gets a bounded table a reader can query
// (trace_processor's metadata) without the trace growing with the samples.
#pragma once

#include "ferret/runtime/backend.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace ferret::chrome {

/// At most this many functions, each with at most this many lines, most sampled first.
inline constexpr std::size_t max_sampled_functions = 50;
inline constexpr std::size_t max_lines_per_function = 10;

/// Samples to two decimals: shares of samples among launches are fractions.
double rounded_samples(double samples) noexcept;

/// "long_scoreboard 62%, wait 20%, math_pipe_throttle 9%": `reasons` with their
/// share of `total`, most first, none below 0.5 %.
std::string stall_shares(const runtime::gpu_stall_reason* const* reasons, const double* samples,
                         std::size_t count, double total);

class gpu_source_lines {
 public:
  void add(const runtime::gpu_instruction_sample* samples, std::size_t count);
  bool empty() const noexcept { return functions_.empty(); }
  /// ,"gpu-source-lines":[{"function":"saxpy(...)","samples":N,"lines":[{"file":"a.cu",
  /// "line":42,"samples":N,"stalls":"long_scoreboard 62%, ..."},...]},...]; nothing when empty.
  /// Without line information a line is an instruction: {"pc offset":"0x1a0",...}.
  void append_json(std::string& out) const;

 private:
  struct line {
    double samples = 0;
    std::vector<double> by_reason;  // indexed by gpu_stall_reason::id
  };
  // (file, line, 0) with line information; ("", 0, pc offset) without.
  using line_key = std::tuple<std::string_view, std::uint32_t, std::uint64_t>;
  struct function {
    double samples = 0;
    std::map<line_key, line> lines;
  };
  std::map<std::string_view, function> functions_;  // by mangled name (lives as long as the session)
  std::vector<const runtime::gpu_stall_reason*> reasons_;  // by id
};

}  // namespace ferret::chrome
