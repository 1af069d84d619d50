// peer_access_decoder.hpp — a launch's counter table, copied back from the
// device after the kernel ended, into the runtime's device-initiated traffic:
// each counter's instruction address to its function and offset (and source
// line), its range to the device whose memory it reached, its address bounds
// to the data object they fall in. No sanitizer or CUDA calls: unit-tested
// without a GPU.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "ferret/runtime/runtime.hpp"
#include "memory_ranges.hpp"
#include "peer_access_layout.h"

namespace ferret::compute_sanitizer {

/// Where the functions of loaded modules lie in device code memory.
class function_map {
 public:
  struct function {
    std::uint64_t start;
    std::uint64_t size;
    const char* name;  // mangled; lives as long as the session
    std::uint64_t module;  // the collector's id of its module (for source lines)
  };
  void add(const function& code);
  /// Functions of an unloaded module are forgotten.
  void remove_module(std::uint64_t module);
  /// The function holding `pc`, or nullptr.
  const function* find(std::uint64_t pc) const;

 private:
  std::map<std::uint64_t, function> by_start_;
};

struct source_line {
  const char* file;  // nullptr without line information; lives as long as the session
  std::uint32_t line;
};
using line_resolver = std::function<source_line(const function_map::function&, std::uint64_t pc_offset)>;

/// The data object holding [lowest, highest]: its id, 0 when none holds both
/// ends (`spans` set when two different objects hold them).
using object_resolver = std::function<std::uint64_t(std::uint64_t lowest, std::uint64_t highest, bool& spans)>;

/// What decoding could not attribute, summed over launches (for the metadata).
struct decode_losses {
  std::uint64_t accesses_lost_table_full = 0;   // the device table had no free counter
  std::uint64_t accesses_lost_key_overflow = 0; // an address too large to pack
  std::uint64_t accesses_in_no_range = 0;       // to memory the sanitizer never reported
  std::uint64_t accesses_outside_functions = 0; // an instruction in no known function
  std::uint64_t bytes_spanning_objects = 0;     // one instruction's accesses in several objects
  // Where accesses in no range went: the lowest and highest address seen, to
  // say which memory the sanitizer did not report (0, 0: none).
  std::uint64_t no_range_lowest = 0;
  std::uint64_t no_range_highest = 0;
};

/// Appends to `batches` one batch per function of the launch's counters
/// (correlation and device set on each), and adds what it could not
/// attribute to `losses`. `table` is the range table the launch was given.
void decode_launch(const ferret_peer_counter* counters, std::size_t slots,
                   const std::uint64_t (&lost)[ferret_peer_loss_reasons],
                   const memory_ranges::table& table, std::uint64_t correlation,
                   std::uint32_t device, const function_map& functions,
                   const line_resolver& lines, const object_resolver& objects,
                   std::vector<runtime::gpu_remote_access_batch>& batches, decode_losses& losses);

}  // namespace ferret::compute_sanitizer
