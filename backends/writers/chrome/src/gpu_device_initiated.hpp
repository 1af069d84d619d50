// The chrome trace's table of device-initiated traffic: kernels' own loads and
// stores that reached another GPU's or host memory (FERRET_CUDA_PEER_ACCESSES),
// summed per kernel, source line, data object, device pair and access over
// every calling context, of which the metadata's "gpu-device-initiated" keeps
// the rows with the most bytes. As for "gpu-source-lines": the summary and
// the report hold the full view, the trace a bounded table a reader can query.
#pragma once

#include "ferret/runtime/backend.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

namespace ferret::chrome {

/// At most this many rows, most bytes first; the rest is counted.
inline constexpr std::size_t max_device_initiated_rows = 100;

class gpu_device_initiated {
 public:
  void add(const runtime::gpu_remote_access* accesses, std::size_t count);
  bool empty() const noexcept { return rows_.empty(); }
  /// ,"gpu-device-initiated":[{"kernel":"halo(float*)","file":"halo.cu","line":21,
  /// "object":"peer","access":"load","source device":1,"destination device":0,
  /// "bytes":N,"accesses":N},...], then the rows and bytes left out when there
  /// are more rows than the table keeps; nothing when empty. Without line
  /// information a row is an instruction: "pc offset":"0x1a0".
  void append_json(std::string& out) const;

 private:
  // (function, file, line, pc offset (0 with line information), object name,
  // device, target device, access). Objects by name: a program that allocates
  // a buffer per step keeps one row, not one per allocation. Functions and files
  // live as long as the session.
  using row_key = std::tuple<std::string_view, std::string_view, std::uint32_t, std::uint64_t,
                             std::string, std::uint32_t, std::int32_t, runtime::memory_access>;
  struct row {
    std::uint64_t bytes = 0;
    std::uint64_t accesses = 0;
  };
  std::map<row_key, row> rows_;
};

}  // namespace ferret::chrome
