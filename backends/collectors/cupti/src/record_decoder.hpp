// Decoding of CUPTI activity records into the runtime's GPU types.
//
// CUPTI's record structs change between releases (CUpti_ActivityKernel9 in
// CUDA 12, Kernel10 in 13.0, Kernel11 in 13.1, ...), and the layout a record
// has is that of the libcupti the process runs with, not that of the headers
// ferret was built with. So no record is cast to a struct: every field is read
// with memcpy from a byte offset taken from a per-version layout table
// (record_decoder.cpp, `known_layouts`), chosen once by select_version().
//
//   record_decoder decoder;
//   std::string error;
//   if (!decoder.select_version(version_from_cuptiGetVersion, error)) { report error; stop }
//   decoded out;
//   if (decoder.decode(record, out) == decoded_kind::activity) { use out.activity }
//
// No libcupti calls: the decoder runs (and is tested) without a GPU or driver.
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ferret/runtime/backend.hpp"

namespace ferret::cupti {

struct record_layouts;  // one row of the version table (record_decoder.cpp)

enum class decoded_kind { activity, device, context, overhead, ignored };

/// CUPTI's own overhead (buffer flushes, instrumentation, ...).
struct overhead_info {
  std::uint32_t kind;  // CUpti_ActivityOverheadKind
  std::int64_t start_ns, end_ns;  // raw CUPTI ns
};

struct context_info {
  std::uint32_t context_id, device_id;
};

/// What decode() made of a record; only the member of `kind` is written.
struct decoded {
  decoded_kind kind;
  // kind == activity: times in raw CUPTI ns (the collector maps the clock);
  // launch.correlation set, object ids and the launch's host side left 0.
  runtime::gpu_activity activity;
  // kind == activity: false only for a synchronization on a context that no
  // record has tied to a device yet (CUPTI's synchronization records name the
  // context, not the device); activity.device is 0 then.
  bool device_known;
  runtime::gpu_device_info device;  // kind == device
  context_info context;             // kind == context
  overhead_info overhead;           // kind == overhead
};

class record_decoder {
 public:
  /// Chooses the record layouts for the libcupti the process runs with
  /// (cuptiGetVersion()). False, with a one-line reason, for versions older
  /// than every known layout; then nothing is decoded until a later call
  /// succeeds.
  bool select_version(std::uint32_t cupti_version, std::string& error);

  /// True when the running libcupti is newer than every layout known: the
  /// newest known layouts are read, which holds for the fields they share
  /// because CUPTI grows a record at its end. Worth one verbose line.
  bool reading_newer_version() const { return reading_newer_; }

  /// The CUDA release whose layouts are read ("13.0"); empty before a
  /// successful select_version().
  std::string_view layouts_release() const;

  /// Decodes one record. Kinds other than kernels, copies, memsets, memory,
  /// synchronization, devices, contexts and overhead are `ignored`, as is
  /// everything before a successful select_version(). A DEVICE record is
  /// also added to the known devices (for occupancy), a CONTEXT record to the
  /// known contexts.
  decoded_kind decode(const CUpti_Activity* record, decoded& out);

  /// Makes a device known, e.g. from cuDeviceGetAttribute before its first
  /// DEVICE record; replaces an earlier entry with the same id.
  void add_device(const runtime::gpu_device_info& device);
  /// nullptr for a device not (yet) known; the pointer stays valid.
  const runtime::gpu_device_info* find_device(std::uint32_t id) const;

  /// Ties a context to its device (from a CONTEXT record, or the collector's
  /// context-creation callback); kernel, copy, memset and memory records tie
  /// theirs as they are decoded.
  void add_context(const context_info& context);

 private:
  void decode_kernel(const unsigned char* record, decoded& out);
  void decode_memcpy(const unsigned char* record, decoded& out);
  void decode_peer_copy(const unsigned char* record, decoded& out);
  void decode_memset(const unsigned char* record, decoded& out);
  void decode_memory(const unsigned char* record, decoded& out);
  void decode_synchronization(const unsigned char* record, decoded& out);
  void decode_device(const unsigned char* record, decoded& out);
  void decode_context(const unsigned char* record, decoded& out);
  void decode_overhead(const unsigned char* record, decoded& out) const;
  void note_context(std::uint32_t context, std::uint32_t device);

  const record_layouts* layouts_ = nullptr;
  bool reading_newer_ = false;
  // Node-based: find_device's pointers survive later insertions.
  std::unordered_map<std::uint32_t, runtime::gpu_device_info> devices_;
  std::unordered_map<std::uint32_t, std::uint32_t> context_devices_;
  std::uint32_t last_noted_context_ = CUPTI_INVALID_CONTEXT_ID;
};

}  // namespace ferret::cupti
