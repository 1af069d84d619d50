// The tables of GPU instruction samples as text cells, built once for the
// summary (which cuts the names for a terminal) and the report's page (which
// shows them whole), so that both print the same digits.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "profile_model.hpp"

namespace ferret::profile {

/// Samples as a count: "12" where whole, else one decimal ("3.8"): launches
/// that share an interval's samples get fractions of them.
std::string samples_text(double samples);
/// `part` of `whole` as "62.5%"; "-" when `whole` is 0.
std::string share_text(double part, double whole);
/// The reasons with the most samples, most first, with their share of the
/// samples: "long_scoreboard 62%, selected 9%" (at most `most`; shares that
/// round to 0% are left out after the first).
std::string dominant_reasons(const stall_samples& samples, const std::vector<stall_reason>& reasons,
                             std::size_t most = 3);
/// "file:line", or "+0x1a0" (the instruction's offset in its kernel) without
/// line information.
std::string gpu_line_location(const gpu_line& line);
/// "STL_GMEM" for GINST:STL_GMEM.
std::string stall_column(runtime::gpu_stall stall);

/// A table: headers, the alignment of each column ('r' or 'l'), the rows
/// shown and how many there were.
struct text_rows {
  std::vector<std::string> header;
  std::string alignment;
  std::vector<std::vector<std::string>> rows;
  std::size_t total = 0;
  std::string rest;  // what the rows left out add up to, where a table sums them; else ""
};

/// "GPU instructions by source line": the `limit` lines (over all calling
/// contexts) with the most samples: samples, share of all instruction
/// samples, dominant reasons, line, kernel (demangled).
text_rows gpu_line_table(const profile_model& model, std::size_t limit);
/// "GPU stalls by calling context": per region path and kernel, the most
/// samples first: GINST, STL_ANY (share stalled), the share of each of the
/// `classes` stall classes with the most samples over all rows (issued left
/// out: STL_ANY is its complement), kernel, context.
text_rows gpu_stall_table(const profile_model& model, std::size_t limit, std::size_t classes = 4);
/// The lines of the sampling section: counts, period, GSAMP:UTIL, and what
/// was dropped.
std::vector<std::string> sampling_lines(const profile_model& model);

}  // namespace ferret::profile
