// CUPTI activity records read field by field through per-version layouts.
#include "record_decoder.hpp"

#include <cupti_version.h>
#include <fmt/format.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "occupancy.hpp"

#if CUPTI_API_VERSION < 130000
#error "ferret's CUDA collector needs the CUPTI headers of CUDA 13.0 or newer"
#endif

namespace ferret::cupti {

namespace layout {

/// Where a field lies in a record and how it is stored.
struct field {
  std::uint16_t offset;
  std::uint8_t size;  // bytes: 1, 2, 4 or 8
  bool is_signed;
};

template <class Member>
constexpr field field_at(std::size_t offset) {
  static_assert(std::is_integral_v<Member> || std::is_enum_v<Member> || std::is_pointer_v<Member>,
                "record fields are read as integers or pointers");
  static_assert(sizeof(Member) == 1 || sizeof(Member) == 2 || sizeof(Member) == 4 ||
                    sizeof(Member) == 8,
                "record fields are 1, 2, 4 or 8 bytes wide");
  return {static_cast<std::uint16_t>(offset), static_cast<std::uint8_t>(sizeof(Member)),
          std::is_signed_v<Member>};
}

// The field `member` of the CUPTI struct `record`, as the headers define it.
#define FERRET_RECORD_FIELD(record, member) \
  field_at<decltype(record::member)>(offsetof(record, member))

/// Fields that kernels, copies and memsets share.
struct device_work {
  field start, end, device, context, stream, correlation, graph_node;
};

template <class Record>
constexpr device_work device_work_of() {
  device_work fields{};
  fields.start = FERRET_RECORD_FIELD(Record, start);
  fields.end = FERRET_RECORD_FIELD(Record, end);
  fields.device = FERRET_RECORD_FIELD(Record, deviceId);
  fields.context = FERRET_RECORD_FIELD(Record, contextId);
  fields.stream = FERRET_RECORD_FIELD(Record, streamId);
  fields.correlation = FERRET_RECORD_FIELD(Record, correlationId);
  fields.graph_node = FERRET_RECORD_FIELD(Record, graphNodeId);
  return fields;
}

struct kernel {
  device_work work;
  field grid_x, grid_y, grid_z, block_x, block_y, block_z;
  field registers_per_thread, static_shared_memory, dynamic_shared_memory;
  field local_memory_per_thread, shared_memory_executed, name;
};

template <class Record>
constexpr kernel kernel_of() {
  kernel fields{};
  fields.work = device_work_of<Record>();
  fields.grid_x = FERRET_RECORD_FIELD(Record, gridX);
  fields.grid_y = FERRET_RECORD_FIELD(Record, gridY);
  fields.grid_z = FERRET_RECORD_FIELD(Record, gridZ);
  fields.block_x = FERRET_RECORD_FIELD(Record, blockX);
  fields.block_y = FERRET_RECORD_FIELD(Record, blockY);
  fields.block_z = FERRET_RECORD_FIELD(Record, blockZ);
  fields.registers_per_thread = FERRET_RECORD_FIELD(Record, registersPerThread);
  fields.static_shared_memory = FERRET_RECORD_FIELD(Record, staticSharedMemory);
  fields.dynamic_shared_memory = FERRET_RECORD_FIELD(Record, dynamicSharedMemory);
  fields.local_memory_per_thread = FERRET_RECORD_FIELD(Record, localMemoryPerThread);
  fields.shared_memory_executed = FERRET_RECORD_FIELD(Record, sharedMemoryExecuted);
  fields.name = FERRET_RECORD_FIELD(Record, name);
  return fields;
}

struct memcpy {
  device_work work;
  field copy_kind, bytes;
};

template <class Record>
constexpr memcpy memcpy_of() {
  memcpy fields{};
  fields.work = device_work_of<Record>();
  fields.copy_kind = FERRET_RECORD_FIELD(Record, copyKind);
  fields.bytes = FERRET_RECORD_FIELD(Record, bytes);
  return fields;
}

/// MEMCPY2: a copy between two devices' memories.
struct peer_copy {
  device_work work;
  field bytes, source_device, destination_device;
};

template <class Record>
constexpr peer_copy peer_copy_of() {
  peer_copy fields{};
  fields.work = device_work_of<Record>();
  fields.bytes = FERRET_RECORD_FIELD(Record, bytes);
  fields.source_device = FERRET_RECORD_FIELD(Record, srcDeviceId);
  fields.destination_device = FERRET_RECORD_FIELD(Record, dstDeviceId);
  return fields;
}

struct memset {
  device_work work;
  field bytes, memory_kind;
};

template <class Record>
constexpr memset memset_of() {
  memset fields{};
  fields.work = device_work_of<Record>();
  fields.bytes = FERRET_RECORD_FIELD(Record, bytes);
  fields.memory_kind = FERRET_RECORD_FIELD(Record, memoryKind);
  return fields;
}

/// MEMORY2: an allocation or a release, at one instant.
struct memory {
  field operation, memory_kind, correlation, address, bytes, timestamp;
  field device, context, stream;
};

template <class Record>
constexpr memory memory_of() {
  memory fields{};
  fields.operation = FERRET_RECORD_FIELD(Record, memoryOperationType);
  fields.memory_kind = FERRET_RECORD_FIELD(Record, memoryKind);
  fields.correlation = FERRET_RECORD_FIELD(Record, correlationId);
  fields.address = FERRET_RECORD_FIELD(Record, address);
  fields.bytes = FERRET_RECORD_FIELD(Record, bytes);
  fields.timestamp = FERRET_RECORD_FIELD(Record, timestamp);
  fields.device = FERRET_RECORD_FIELD(Record, deviceId);
  fields.context = FERRET_RECORD_FIELD(Record, contextId);
  fields.stream = FERRET_RECORD_FIELD(Record, streamId);
  return fields;
}

struct synchronization {
  field type, start, end, correlation, context, stream;
};

template <class Record>
constexpr synchronization synchronization_of() {
  synchronization fields{};
  fields.type = FERRET_RECORD_FIELD(Record, type);
  fields.start = FERRET_RECORD_FIELD(Record, start);
  fields.end = FERRET_RECORD_FIELD(Record, end);
  fields.correlation = FERRET_RECORD_FIELD(Record, correlationId);
  fields.context = FERRET_RECORD_FIELD(Record, contextId);
  fields.stream = FERRET_RECORD_FIELD(Record, streamId);
  return fields;
}

struct device {
  field id, name, compute_major, compute_minor, multiprocessors, global_memory;
  field max_threads_per_block, max_warps_per_multiprocessor, max_blocks_per_multiprocessor;
  field max_registers_per_multiprocessor, max_registers_per_block;
  field max_shared_memory_per_multiprocessor, max_shared_memory_per_block;
};

template <class Record>
constexpr device device_of() {
  device fields{};
  fields.id = FERRET_RECORD_FIELD(Record, id);
  fields.name = FERRET_RECORD_FIELD(Record, name);
  fields.compute_major = FERRET_RECORD_FIELD(Record, computeCapabilityMajor);
  fields.compute_minor = FERRET_RECORD_FIELD(Record, computeCapabilityMinor);
  fields.multiprocessors = FERRET_RECORD_FIELD(Record, numMultiprocessors);
  fields.global_memory = FERRET_RECORD_FIELD(Record, globalMemorySize);
  fields.max_threads_per_block = FERRET_RECORD_FIELD(Record, maxThreadsPerBlock);
  fields.max_warps_per_multiprocessor = FERRET_RECORD_FIELD(Record, maxWarpsPerMultiprocessor);
  fields.max_blocks_per_multiprocessor = FERRET_RECORD_FIELD(Record, maxBlocksPerMultiprocessor);
  fields.max_registers_per_multiprocessor =
      FERRET_RECORD_FIELD(Record, maxRegistersPerMultiprocessor);
  fields.max_registers_per_block = FERRET_RECORD_FIELD(Record, maxRegistersPerBlock);
  fields.max_shared_memory_per_multiprocessor =
      FERRET_RECORD_FIELD(Record, maxSharedMemoryPerMultiprocessor);
  fields.max_shared_memory_per_block = FERRET_RECORD_FIELD(Record, maxSharedMemoryPerBlock);
  return fields;
}

struct context {
  field id, device;
};

template <class Record>
constexpr context context_of() {
  return {FERRET_RECORD_FIELD(Record, contextId), FERRET_RECORD_FIELD(Record, deviceId)};
}

struct overhead {
  field kind, start, end;
};

template <class Record>
constexpr overhead overhead_of() {
  return {FERRET_RECORD_FIELD(Record, overheadKind), FERRET_RECORD_FIELD(Record, start),
          FERRET_RECORD_FIELD(Record, end)};
}

#undef FERRET_RECORD_FIELD

}  // namespace layout

/// The layouts of one CUPTI release: where each field decoded lies.
struct record_layouts {
  // cuptiGetVersion() values of the release. A later version with no row of
  // its own is read with the newest row (and reported as newer).
  std::uint32_t first_version, last_version;
  std::string_view release;
  layout::kernel kernel;
  layout::memcpy memcpy;
  layout::peer_copy peer_copy;
  layout::memset memset;
  layout::memory memory;
  layout::synchronization synchronization;
  layout::device device;
  layout::context context;
  layout::overhead overhead;
};

namespace {

// One row per CUPTI release whose records differ, oldest first. A row names
// the struct that release's cupti_activity.h gives as "the corresponding
// activity record structure" of each kind decoded; offsets come from the
// headers by offsetof (older structs stay in cupti_activity_deprecated.h).
// A row for a release newer than the headers built with needs their structs:
// guard it with #if CUPTI_API_VERSION >= its first version. CUDA 12 and older
// (API versions up to 28) are not read: their libcupti.so.12 is not the
// library this collector links.
constexpr record_layouts known_layouts[] = {
    {130000, 130099, "13.0", layout::kernel_of<CUpti_ActivityKernel10>(),
     layout::memcpy_of<CUpti_ActivityMemcpy6>(), layout::peer_copy_of<CUpti_ActivityMemcpyPtoP4>(),
     layout::memset_of<CUpti_ActivityMemset4>(), layout::memory_of<CUpti_ActivityMemory4>(),
     layout::synchronization_of<CUpti_ActivitySynchronization2>(),
     layout::device_of<CUpti_ActivityDevice5>(), layout::context_of<CUpti_ActivityContext3>(),
     layout::overhead_of<CUpti_ActivityOverhead3>()},
};

// The stored bits of an integer field, sign-extended when the field is signed.
template <class Unsigned, class Signed>
std::uint64_t load(const unsigned char* at, bool is_signed) {
  Unsigned value;
  std::memcpy(&value, at, sizeof value);
  if (is_signed)
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<Signed>(value)));
  return value;
}

std::uint64_t read_bits(const unsigned char* record, layout::field field) {
  const unsigned char* at = record + field.offset;
  switch (field.size) {
    case 1: return load<std::uint8_t, std::int8_t>(at, field.is_signed);
    case 2: return load<std::uint16_t, std::int16_t>(at, field.is_signed);
    case 4: return load<std::uint32_t, std::int32_t>(at, field.is_signed);
    default: return load<std::uint64_t, std::int64_t>(at, field.is_signed);
  }
}

template <class Value>
Value read(const unsigned char* record, layout::field field) {
  return static_cast<Value>(read_bits(record, field));
}

const char* read_string(const unsigned char* record, layout::field field) {
  const char* text;
  std::memcpy(&text, record + field.offset, sizeof text);
  return text;
}

// The runtime's "no stream" is 0.
std::uint32_t stream_or_none(std::uint32_t cupti_stream) {
  return cupti_stream == CUPTI_INVALID_STREAM_ID ? 0 : cupti_stream;
}

struct copy_direction {
  runtime::copy_kind kind;
  bool source_on_device, destination_on_device;
};

// CUpti_ActivityMemcpyKind: arrays are device memory. An unknown kind keeps
// both ends on the device that ran the copy.
copy_direction direction_of(std::uint32_t cupti_copy_kind) {
  using runtime::copy_kind;
  switch (cupti_copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return {copy_kind::host_to_device, false, true};
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return {copy_kind::device_to_host, true, false};
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return {copy_kind::device_to_device, true, true};
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return {copy_kind::host_to_host, false, false};
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return {copy_kind::peer_to_peer, true, true};
    default: return {copy_kind::unknown, true, true};
  }
}

// CUpti_ActivityMemoryKind. memory_kind has no "unknown": CUPTI's unknown
// (and any kind newer than these headers) counts as device memory, the
// memory of most memsets and allocations.
runtime::memory_kind memory_of(std::uint32_t cupti_memory_kind) {
  using runtime::memory_kind;
  switch (cupti_memory_kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return memory_kind::host;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return memory_kind::pinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return memory_kind::managed;
    default: return memory_kind::device;
  }
}

// gpu_activity::detail of a synchronization: CUpti_ActivitySynchronizationType
// 1 event, 2 stream wait event, 3 stream, 4 context; 0 for any other type.
std::uint32_t synchronization_detail(std::uint32_t cupti_type) {
  return cupti_type >= CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE &&
                 cupti_type <= CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE
             ? cupti_type
             : 0;
}

}  // namespace

bool record_decoder::select_version(std::uint32_t cupti_version, std::string& error) {
  layouts_ = nullptr;
  reading_newer_ = false;
  for (const record_layouts& row : known_layouts)
    if (row.first_version <= cupti_version) layouts_ = &row;
  if (layouts_ == nullptr) {
    const record_layouts& oldest = known_layouts[0];
    error = cupti_version == 0
                ? std::string("libcupti reported API version 0")
                : fmt::format(
                      "libcupti API version {} is older than CUDA {} (API version {}), the "
                      "oldest whose activity records ferret reads",
                      cupti_version, oldest.release, oldest.first_version);
    return false;
  }
  reading_newer_ = cupti_version > layouts_->last_version;
  return true;
}

std::string_view record_decoder::layouts_release() const {
  return layouts_ != nullptr ? layouts_->release : std::string_view();
}

decoded_kind record_decoder::decode(const CUpti_Activity* record, decoded& out) {
  out.kind = decoded_kind::ignored;
  if (layouts_ == nullptr || record == nullptr) return out.kind;
  const auto* bytes = reinterpret_cast<const unsigned char*>(record);
  // The kind leads every record of every version.
  std::uint32_t kind;
  std::memcpy(&kind, bytes + offsetof(CUpti_Activity, kind), sizeof kind);
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: decode_kernel(bytes, out); break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: decode_memcpy(bytes, out); break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2: decode_peer_copy(bytes, out); break;
    case CUPTI_ACTIVITY_KIND_MEMSET: decode_memset(bytes, out); break;
    case CUPTI_ACTIVITY_KIND_MEMORY2: decode_memory(bytes, out); break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: decode_synchronization(bytes, out); break;
    case CUPTI_ACTIVITY_KIND_DEVICE: decode_device(bytes, out); break;
    case CUPTI_ACTIVITY_KIND_CONTEXT: decode_context(bytes, out); break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD: decode_overhead(bytes, out); break;
    default: break;
  }
  return out.kind;
}

namespace {

// Starts an activity of `operation` with the fields all device work shares.
runtime::gpu_activity& begin_activity(const unsigned char* record, const layout::device_work& work,
                                      runtime::gpu_operation operation, decoded& out) {
  out.kind = decoded_kind::activity;
  out.device_known = true;
  runtime::gpu_activity& activity = out.activity;
  activity = runtime::gpu_activity{};
  activity.operation = operation;
  activity.start_ns = read<std::int64_t>(record, work.start);
  activity.end_ns = read<std::int64_t>(record, work.end);
  activity.device = read<std::uint32_t>(record, work.device);
  activity.stream = stream_or_none(read<std::uint32_t>(record, work.stream));
  activity.launch.correlation = read<std::uint32_t>(record, work.correlation);
  activity.graph_node = read<std::uint64_t>(record, work.graph_node);
  return activity;
}

}  // namespace

void record_decoder::decode_kernel(const unsigned char* record, decoded& out) {
  const layout::kernel& fields = layouts_->kernel;
  runtime::gpu_activity& activity =
      begin_activity(record, fields.work, runtime::gpu_operation::kernel, out);
  activity.name = read_string(record, fields.name);
  runtime::kernel_attributes& kernel = activity.kernel;
  kernel.grid[0] = read<std::uint32_t>(record, fields.grid_x);
  kernel.grid[1] = read<std::uint32_t>(record, fields.grid_y);
  kernel.grid[2] = read<std::uint32_t>(record, fields.grid_z);
  kernel.block[0] = read<std::uint32_t>(record, fields.block_x);
  kernel.block[1] = read<std::uint32_t>(record, fields.block_y);
  kernel.block[2] = read<std::uint32_t>(record, fields.block_z);
  kernel.registers_per_thread = read<std::uint32_t>(record, fields.registers_per_thread);
  kernel.static_shared_memory = read<std::uint32_t>(record, fields.static_shared_memory);
  kernel.dynamic_shared_memory = read<std::uint32_t>(record, fields.dynamic_shared_memory);
  kernel.local_memory_per_thread = read<std::uint32_t>(record, fields.local_memory_per_thread);
  kernel.shared_memory_executed = read<std::uint32_t>(record, fields.shared_memory_executed);
  const runtime::gpu_device_info* device = find_device(activity.device);
  kernel.occupancy = device != nullptr ? theoretical_occupancy(*device, kernel) : -1.0;
  note_context(read<std::uint32_t>(record, fields.work.context), activity.device);
}

void record_decoder::decode_memcpy(const unsigned char* record, decoded& out) {
  const layout::memcpy& fields = layouts_->memcpy;
  runtime::gpu_activity& activity =
      begin_activity(record, fields.work, runtime::gpu_operation::memcpy, out);
  activity.bytes = read<std::uint64_t>(record, fields.bytes);
  // The record names only the device that ran the copy; a copy between two
  // devices comes as a MEMCPY2 record, which names both.
  const copy_direction direction = direction_of(read<std::uint32_t>(record, fields.copy_kind));
  const auto device = static_cast<std::int32_t>(activity.device);
  activity.copy = direction.kind;
  activity.source_device = direction.source_on_device ? device : -1;
  activity.destination_device = direction.destination_on_device ? device : -1;
  note_context(read<std::uint32_t>(record, fields.work.context), activity.device);
}

void record_decoder::decode_peer_copy(const unsigned char* record, decoded& out) {
  const layout::peer_copy& fields = layouts_->peer_copy;
  runtime::gpu_activity& activity =
      begin_activity(record, fields.work, runtime::gpu_operation::memcpy, out);
  activity.bytes = read<std::uint64_t>(record, fields.bytes);
  activity.source_device = read<std::int32_t>(record, fields.source_device);
  activity.destination_device = read<std::int32_t>(record, fields.destination_device);
  activity.copy = activity.source_device == activity.destination_device
                      ? runtime::copy_kind::device_to_device
                      : runtime::copy_kind::peer_to_peer;
  note_context(read<std::uint32_t>(record, fields.work.context), activity.device);
}

void record_decoder::decode_memset(const unsigned char* record, decoded& out) {
  const layout::memset& fields = layouts_->memset;
  runtime::gpu_activity& activity =
      begin_activity(record, fields.work, runtime::gpu_operation::memset, out);
  activity.bytes = read<std::uint64_t>(record, fields.bytes);
  activity.memory = memory_of(read<std::uint32_t>(record, fields.memory_kind));
  note_context(read<std::uint32_t>(record, fields.work.context), activity.device);
}

// Records of other operations (pools) stay ignored.
void record_decoder::decode_memory(const unsigned char* record, decoded& out) {
  const layout::memory& fields = layouts_->memory;
  runtime::gpu_operation operation;
  switch (read<std::uint32_t>(record, fields.operation)) {
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION:
      operation = runtime::gpu_operation::allocation;
      break;
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE:
      operation = runtime::gpu_operation::release;
      break;
    default: return;
  }
  out.kind = decoded_kind::activity;
  out.device_known = true;
  runtime::gpu_activity& activity = out.activity;
  activity = runtime::gpu_activity{};
  activity.operation = operation;
  activity.start_ns = activity.end_ns = read<std::int64_t>(record, fields.timestamp);
  activity.device = read<std::uint32_t>(record, fields.device);
  activity.stream = stream_or_none(read<std::uint32_t>(record, fields.stream));
  activity.launch.correlation = read<std::uint32_t>(record, fields.correlation);
  activity.bytes = read<std::uint64_t>(record, fields.bytes);
  activity.address = read<std::uintptr_t>(record, fields.address);
  activity.memory = memory_of(read<std::uint32_t>(record, fields.memory_kind));
  note_context(read<std::uint32_t>(record, fields.context), activity.device);
}

void record_decoder::decode_synchronization(const unsigned char* record, decoded& out) {
  const layout::synchronization& fields = layouts_->synchronization;
  out.kind = decoded_kind::activity;
  runtime::gpu_activity& activity = out.activity;
  activity = runtime::gpu_activity{};
  activity.operation = runtime::gpu_operation::synchronization;
  activity.start_ns = read<std::int64_t>(record, fields.start);
  activity.end_ns = read<std::int64_t>(record, fields.end);
  activity.stream = stream_or_none(read<std::uint32_t>(record, fields.stream));
  activity.launch.correlation = read<std::uint32_t>(record, fields.correlation);
  activity.detail = synchronization_detail(read<std::uint32_t>(record, fields.type));
  const auto context = context_devices_.find(read<std::uint32_t>(record, fields.context));
  out.device_known = context != context_devices_.end();
  if (out.device_known) activity.device = context->second;
}

void record_decoder::decode_device(const unsigned char* record, decoded& out) {
  const layout::device& fields = layouts_->device;
  out.kind = decoded_kind::device;
  runtime::gpu_device_info& device = out.device;
  device.id = read<std::uint32_t>(record, fields.id);
  const char* name = read_string(record, fields.name);
  device.name = name != nullptr ? name : "";
  device.compute_major = read<std::uint32_t>(record, fields.compute_major);
  device.compute_minor = read<std::uint32_t>(record, fields.compute_minor);
  device.multiprocessors = read<std::uint32_t>(record, fields.multiprocessors);
  device.global_memory_bytes = read<std::uint64_t>(record, fields.global_memory);
  device.max_threads_per_block = read<std::uint32_t>(record, fields.max_threads_per_block);
  device.max_warps_per_multiprocessor =
      read<std::uint32_t>(record, fields.max_warps_per_multiprocessor);
  device.max_blocks_per_multiprocessor =
      read<std::uint32_t>(record, fields.max_blocks_per_multiprocessor);
  device.max_registers_per_multiprocessor =
      read<std::uint32_t>(record, fields.max_registers_per_multiprocessor);
  device.max_registers_per_block = read<std::uint32_t>(record, fields.max_registers_per_block);
  device.max_shared_memory_per_multiprocessor =
      read<std::uint32_t>(record, fields.max_shared_memory_per_multiprocessor);
  device.max_shared_memory_per_block =
      read<std::uint32_t>(record, fields.max_shared_memory_per_block);
  add_device(device);
}

void record_decoder::decode_context(const unsigned char* record, decoded& out) {
  const layout::context& fields = layouts_->context;
  out.kind = decoded_kind::context;
  out.context = {read<std::uint32_t>(record, fields.id),
                 read<std::uint32_t>(record, fields.device)};
  add_context(out.context);
}

void record_decoder::decode_overhead(const unsigned char* record, decoded& out) const {
  const layout::overhead& fields = layouts_->overhead;
  out.kind = decoded_kind::overhead;
  out.overhead = {read<std::uint32_t>(record, fields.kind),
                  read<std::int64_t>(record, fields.start), read<std::int64_t>(record, fields.end)};
}

void record_decoder::add_device(const runtime::gpu_device_info& device) {
  devices_.insert_or_assign(device.id, device);
}

const runtime::gpu_device_info* record_decoder::find_device(std::uint32_t id) const {
  const auto found = devices_.find(id);
  return found != devices_.end() ? &found->second : nullptr;
}

void record_decoder::add_context(const context_info& context) {
  context_devices_.insert_or_assign(context.context_id, context.device_id);
}

void record_decoder::note_context(std::uint32_t context, std::uint32_t device) {
  // Records of one context come in runs: look it up once per run.
  if (context == last_noted_context_ || context == CUPTI_INVALID_CONTEXT_ID) return;
  last_noted_context_ = context;
  context_devices_.try_emplace(context, device);
}

}  // namespace ferret::cupti
