// injection.cpp — ferret as an NVTX tool: NVTX ranges and marks become ferret
// regions, marks and counters on the calling thread.
//
//   program ── nvtxRangePushA("forward") ──▶ NVTX (header-only, in the program)
//     first NVTX call: NVTX_INJECTION64_PATH=libferret_nvtx.so (ferret-run), or
//     the static hook (static_injection.cpp, linked with ferret::nvtx / ferret::cuda)
//     ──▶ InitializeInjectionNvtx2 fills NVTX's function table with the
//         callbacks below (nothing when no ferret session records: NVTX then
//         turns every call into a no-op)
//   callback ──▶ name → site (nvtx_names.hpp) ──▶ kind_begin in the thread's buffer
//
// push/pop:     a region; a per-thread stack (per domain, as NVTX defines it)
//               knows which range a pop ends. A pop with no open range of its
//               domain is counted (nvtx-unbalanced-pops) and writes nothing.
// start/end:    a region that begins on the starting thread and ends on the
//               ending thread, like ferret::begin/end: ended elsewhere, it
//               stays open on its thread until exit, where backends close and
//               count it, and is counted here (nvtx-ranges-ended-on-another-thread).
// marks:        marks. Payloads (numbers): a counter sample of the same name.
// categories:   part of the domain label ("nvtx:NCCL/collectives").
// payload extension (nvToolsExtPayload.h): its push/pop, start/end and marks
//               as above, named by the payload's schema; the payload's bytes
//               are not recorded. NCCL 2.28 ends the ranges of calls that carry
//               parameters (ncclCommInitRank...) with nvtxRangePopPayload.
// not recorded: colours, resource names (CUDA/OpenCL objects), the sync,
//               counters and memory extensions.
// CUPTI has NVTX callbacks of its own, but only when NVTX_INJECTION64_PATH names
// libcupti; with ferret's library there, CUPTI sees no NVTX and nothing is
// recorded twice.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "ferret/ferret.hpp"
#include "ferret/runtime/per_thread.hpp"
#include "ferret/runtime/runtime.hpp"
#include "nvtx_names.hpp"

namespace ferret::nvtx {
namespace {

const site* intern_in_runtime(std::string_view name, const char* label) {
  const detail::runtime_api* api = detail::runtime();
  return api != nullptr ? api->register_name(name.data(), name.size(), label) : nullptr;
}

// Made before NVTX gets the callbacks (InitializeInjectionNvtx2), never freed:
// NVTX calls outlive static destruction.
name_table* g_names = nullptr;
name_table& names() { return *g_names; }
void make_names() {
  static name_table* const table = new name_table{intern_in_runtime};
  g_names = table;
}

domain* domain_of(nvtxDomainHandle_t handle) {
  return handle != nullptr ? reinterpret_cast<domain*>(handle) : &names().default_domain();
}

// What is unusual is counted and reported in the output's metadata.
class counts final : public runtime::collector {
 public:
  std::atomic<std::uint64_t> unbalanced_pops{0};
  std::atomic<std::uint64_t> ended_elsewhere{0};
  std::atomic<std::uint64_t> too_deep{0};
  std::atomic<std::uint64_t> other_thread_names{0};

  void collect(std::vector<runtime::gpu_activity>&, std::vector<runtime::gpu_device_info>&,
               bool) override {}
  void add_metadata(runtime::metadata_list& metadata) const override {
    const auto value = [](const std::atomic<std::uint64_t>& count) {
      return static_cast<std::int64_t>(count.load(std::memory_order_relaxed));
    };
    metadata.emplace_back("nvtx-unbalanced-pops", value(unbalanced_pops));
    metadata.emplace_back("nvtx-ranges-ended-on-another-thread", value(ended_elsewhere));
    metadata.emplace_back("nvtx-ranges-too-deep-dropped", value(too_deep));
    metadata.emplace_back("nvtx-thread-names-of-other-threads-ignored", value(other_thread_names));
  }
  void abandon() noexcept override {}
};
counts& tally() {
  static auto* instance = new counts;
  return *instance;
}

// ---------------------------------------------------------------------------
// Per-thread push/pop stack (on the heap: see ferret/runtime/per_thread.hpp).

constexpr std::uint32_t max_depth = 256;

struct open_range {
  const domain* owner;
  const site* written;  // nullptr: the begin was not recorded (paused, no name)
};

std::atomic<std::uint32_t> g_thread_serials{0};

struct thread_ranges {
  std::uint32_t depth = 0;  // may exceed max_depth: those ranges are not kept
  // This thread's number, for start/end range ids.
  std::uint32_t serial = g_thread_serials.fetch_add(1, std::memory_order_relaxed) % 0xFFFF + 1;
  open_range open[max_depth];
};

thread_ranges* my_ranges() noexcept { return runtime::per_thread<thread_ranges>::get(); }

std::uint32_t thread_serial() noexcept {
  const thread_ranges* mine = my_ranges();
  return mine != nullptr ? mine->serial : 0;
}

// The site of an event's message under its domain (and category) label.
const site* site_of(domain& owner, std::uint32_t category, const nvtxEventAttributes_t* event) {
  if (event == nullptr) return nullptr;
  const char* label = owner.category_label(category);
  switch (event->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return event->message.ascii != nullptr ? names().ascii(event->message.ascii, label) : nullptr;
    case NVTX_MESSAGE_TYPE_UNICODE:
      return event->message.unicode != nullptr ? names().unicode(event->message.unicode, label) : nullptr;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return event->message.registered != nullptr
                 ? names().registered(reinterpret_cast<const registered_string*>(event->message.registered), label)
                 : nullptr;
    default: return names().ascii("(unnamed)", label);
  }
}

// A payload as a counter sample of the event's name.
void write_payload(const site* name, const nvtxEventAttributes_t* event) {
  if (name == nullptr || event == nullptr) return;
  double value = 0;
  switch (event->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: value = static_cast<double>(event->payload.ullValue); break;
    case NVTX_PAYLOAD_TYPE_INT64: value = static_cast<double>(event->payload.llValue); break;
    case NVTX_PAYLOAD_TYPE_DOUBLE: value = event->payload.dValue; break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: value = event->payload.uiValue; break;
    case NVTX_PAYLOAD_TYPE_INT32: value = event->payload.iValue; break;
    case NVTX_PAYLOAD_TYPE_FLOAT: value = static_cast<double>(event->payload.fValue); break;
    default: return;  // none, or an extension's schema
  }
  detail::write_with_payload(detail::word_of(name, detail::kind_counter), detail::bits_of(value));
}

std::uint32_t category_of(const nvtxEventAttributes_t* event) {
  return event != nullptr ? event->category : 0;
}

// ---------------------------------------------------------------------------
// Ranges and marks

int push(const domain& owner, const site* name, const nvtxEventAttributes_t* event) {
  thread_ranges* state = my_ranges();
  if (state == nullptr) return -1;  // out of memory
  thread_ranges& mine = *state;
  const std::uint32_t level = mine.depth++;
  if (level >= max_depth) {
    tally().too_deep.fetch_add(1, std::memory_order_relaxed);
    return static_cast<int>(level);
  }
  const bool written = name != nullptr && detail::recording();
  mine.open[level] = open_range{&owner, written ? name : nullptr};
  if (written) {
    detail::write(detail::word_of(name, detail::kind_begin));
    write_payload(name, event);
  }
  return static_cast<int>(level);
}

int pop(const domain& owner) {
  thread_ranges* state = my_ranges();
  if (state == nullptr) return -1;
  thread_ranges& mine = *state;
  const std::uint32_t kept = mine.depth < max_depth ? mine.depth : max_depth;
  if (mine.depth > max_depth) {
    // The innermost range was not kept (too deep): nothing was written for it.
    return static_cast<int>(--mine.depth);
  }
  // NVTX's stacks are per domain: end the innermost open range of this one.
  for (std::uint32_t i = kept; i-- > 0;) {
    if (mine.open[i].owner != &owner) continue;
    const site* written = mine.open[i].written;
    for (std::uint32_t j = i; j + 1 < kept; ++j) mine.open[j] = mine.open[j + 1];
    --mine.depth;
    if (written != nullptr) detail::write(detail::word_of(written, detail::kind_end));
    return static_cast<int>(i);
  }
  tally().unbalanced_pops.fetch_add(1, std::memory_order_relaxed);
  return -1;
}

// A start/end range's id: its site, the starting thread's number (bits
// 48..63) and whether its begin was written (bit 0). Never 0 (NVTX's "no id").
nvtxRangeId_t start(const site* name, const nvtxEventAttributes_t* event) {
  const bool written = name != nullptr && detail::recording();
  if (written) {
    detail::write(detail::word_of(name, detail::kind_begin));
    write_payload(name, event);
  }
  const auto address = reinterpret_cast<std::uintptr_t>(name);
  return (std::uint64_t{thread_serial()} << 48) | (address & 0xFFFFFFFFFFF8u) | (written ? 1u : 0u) | 2u;
}

void end(nvtxRangeId_t id) {
  if ((id & 1u) == 0) return;  // its begin was not written
  const auto* name = reinterpret_cast<const site*>(id & 0xFFFFFFFFFFF8u);
  if ((id >> 48) != thread_serial()) tally().ended_elsewhere.fetch_add(1, std::memory_order_relaxed);
  detail::write(detail::word_of(name, detail::kind_end));
}

void mark(const site* name, const nvtxEventAttributes_t* event) {
  if (name == nullptr || !detail::recording()) return;
  detail::write(detail::word_of(name, detail::kind_mark));
  write_payload(name, event);
}

// ---------------------------------------------------------------------------
// The callbacks NVTX calls (C linkage types, never throwing).

template <class F>
auto guarded(F&& body, decltype(body()) fallback) noexcept -> decltype(body()) {
  try {
    return body();
  } catch (...) {
    return fallback;
  }
}

domain& default_domain() { return names().default_domain(); }

void NVTX_API mark_ex(const nvtxEventAttributes_t* event) {
  guarded([&] { mark(site_of(default_domain(), category_of(event), event), event); return 0; }, 0);
}
void NVTX_API mark_a(const char* message) {
  guarded([&] { mark(message ? names().ascii(message, default_domain().label()) : nullptr, nullptr); return 0; }, 0);
}
void NVTX_API mark_w(const wchar_t* message) {
  guarded([&] { mark(message ? names().unicode(message, default_domain().label()) : nullptr, nullptr); return 0; }, 0);
}
nvtxRangeId_t NVTX_API range_start_ex(const nvtxEventAttributes_t* event) {
  return guarded([&] { return start(site_of(default_domain(), category_of(event), event), event); }, nvtxRangeId_t{0});
}
nvtxRangeId_t NVTX_API range_start_a(const char* message) {
  return guarded([&] { return start(message ? names().ascii(message, default_domain().label()) : nullptr, nullptr); }, nvtxRangeId_t{0});
}
nvtxRangeId_t NVTX_API range_start_w(const wchar_t* message) {
  return guarded([&] { return start(message ? names().unicode(message, default_domain().label()) : nullptr, nullptr); }, nvtxRangeId_t{0});
}
void NVTX_API range_end(nvtxRangeId_t id) { guarded([&] { end(id); return 0; }, 0); }
int NVTX_API range_push_ex(const nvtxEventAttributes_t* event) {
  return guarded([&] { return push(default_domain(), site_of(default_domain(), category_of(event), event), event); }, -1);
}
int NVTX_API range_push_a(const char* message) {
  // The fast path: no attributes structure to read.
  return guarded([&] {
    return push(default_domain(), message ? names().ascii(message, default_domain().label()) : nullptr, nullptr);
  }, -1);
}
int NVTX_API range_push_w(const wchar_t* message) {
  return guarded([&] { return push(default_domain(), message ? names().unicode(message, default_domain().label()) : nullptr, nullptr); }, -1);
}
int NVTX_API range_pop() { return guarded([&] { return pop(default_domain()); }, -1); }
void NVTX_API name_category_a(uint32_t category, const char* name) {
  guarded([&] { if (name) default_domain().name_category(category, name); return 0; }, 0);
}
void NVTX_API name_category_w(uint32_t category, const wchar_t* name) {
  guarded([&] { if (name) default_domain().name_category(category, to_utf8(name)); return 0; }, 0);
}
void name_thread(uint32_t thread, const std::string& name) {
  // ferret names only the calling thread (its buffer is its own).
  if (thread == static_cast<uint32_t>(syscall(SYS_gettid)))
    ferret::set_thread_name(name);
  else
    tally().other_thread_names.fetch_add(1, std::memory_order_relaxed);
}
void NVTX_API name_os_thread_a(uint32_t thread, const char* name) {
  guarded([&] { if (name) name_thread(thread, name); return 0; }, 0);
}
void NVTX_API name_os_thread_w(uint32_t thread, const wchar_t* name) {
  guarded([&] { if (name) name_thread(thread, to_utf8(name)); return 0; }, 0);
}

void NVTX_API domain_mark_ex(nvtxDomainHandle_t handle, const nvtxEventAttributes_t* event) {
  guarded([&] { mark(site_of(*domain_of(handle), category_of(event), event), event); return 0; }, 0);
}
nvtxRangeId_t NVTX_API domain_range_start_ex(nvtxDomainHandle_t handle, const nvtxEventAttributes_t* event) {
  return guarded([&] { return start(site_of(*domain_of(handle), category_of(event), event), event); }, nvtxRangeId_t{0});
}
void NVTX_API domain_range_end(nvtxDomainHandle_t, nvtxRangeId_t id) { guarded([&] { end(id); return 0; }, 0); }
int NVTX_API domain_range_push_ex(nvtxDomainHandle_t handle, const nvtxEventAttributes_t* event) {
  return guarded([&] {
    domain& owner = *domain_of(handle);
    return push(owner, site_of(owner, category_of(event), event), event);
  }, -1);
}
int NVTX_API domain_range_pop(nvtxDomainHandle_t handle) {
  return guarded([&] { return pop(*domain_of(handle)); }, -1);
}
void NVTX_API domain_name_category_a(nvtxDomainHandle_t handle, uint32_t category, const char* name) {
  guarded([&] { if (name) domain_of(handle)->name_category(category, name); return 0; }, 0);
}
void NVTX_API domain_name_category_w(nvtxDomainHandle_t handle, uint32_t category, const wchar_t* name) {
  guarded([&] { if (name) domain_of(handle)->name_category(category, to_utf8(name)); return 0; }, 0);
}
nvtxStringHandle_t NVTX_API domain_register_string_a(nvtxDomainHandle_t, const char* text) {
  return guarded([&] {
    return text ? reinterpret_cast<nvtxStringHandle_t>(names().register_string(text)) : nullptr;
  }, nvtxStringHandle_t{nullptr});
}
nvtxStringHandle_t NVTX_API domain_register_string_w(nvtxDomainHandle_t, const wchar_t* text) {
  return guarded([&] {
    return text ? reinterpret_cast<nvtxStringHandle_t>(names().register_string(to_utf8(text))) : nullptr;
  }, nvtxStringHandle_t{nullptr});
}
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  return guarded([&] {
    return name ? reinterpret_cast<nvtxDomainHandle_t>(names().create_domain(name)) : nullptr;
  }, nvtxDomainHandle_t{nullptr});
}
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t* name) {
  return guarded([&] {
    return name ? reinterpret_cast<nvtxDomainHandle_t>(names().create_domain(to_utf8(name))) : nullptr;
  }, nvtxDomainHandle_t{nullptr});
}
// Domains stay: records already written name them.
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}

// The payload extension's calls. A range or mark that carries only a payload
// is named by its first payload's schema.
const site* payload_site(domain& owner, const nvtxPayloadData_t* data, std::size_t count) {
  const char* schema = data != nullptr && count > 0 ? owner.schema_name(data[0].schemaId) : nullptr;
  return names().ascii(schema != nullptr ? schema : "(payload)", owner.label());
}
std::uint64_t NVTX_API payload_schema_register(nvtxDomainHandle_t handle, const nvtxPayloadSchemaAttr_t* attributes) {
  return guarded([&] {
    if (attributes == nullptr) return std::uint64_t{0};
    const std::uint64_t fields = attributes->fieldMask;
    return domain_of(handle)->register_schema(
        (fields & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID) != 0 ? attributes->schemaId : 0,
        (fields & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NAME) != 0 ? attributes->name : nullptr);
  }, std::uint64_t{0});
}
std::uint64_t NVTX_API payload_enum_register(nvtxDomainHandle_t handle, const nvtxPayloadEnumAttr_t* attributes) {
  return guarded([&] {
    if (attributes == nullptr) return std::uint64_t{0};
    const bool has_id = (attributes->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID) != 0;
    return domain_of(handle)->register_schema(has_id ? attributes->schemaId : 0, nullptr);
  }, std::uint64_t{0});
}
void NVTX_API mark_payload(nvtxDomainHandle_t handle, const nvtxPayloadData_t* data, std::size_t count) {
  guarded([&] { mark(payload_site(*domain_of(handle), data, count), nullptr); return 0; }, 0);
}
int NVTX_API range_push_payload(nvtxDomainHandle_t handle, const nvtxPayloadData_t* data, std::size_t count) {
  return guarded([&] {
    domain& owner = *domain_of(handle);
    return push(owner, payload_site(owner, data, count), nullptr);
  }, -1);
}
int NVTX_API range_pop_payload(nvtxDomainHandle_t handle, const nvtxPayloadData_t*, std::size_t) {
  return guarded([&] { return pop(*domain_of(handle)); }, -1);
}
nvtxRangeId_t NVTX_API range_start_payload(nvtxDomainHandle_t handle, const nvtxPayloadData_t* data,
                                           std::size_t count) {
  return guarded([&] { return start(payload_site(*domain_of(handle), data, count), nullptr); }, nvtxRangeId_t{0});
}
void NVTX_API range_end_payload(nvtxDomainHandle_t, nvtxRangeId_t id, const nvtxPayloadData_t*, std::size_t) {
  guarded([&] { end(id); return 0; }, 0);
}
std::uint8_t NVTX_API domain_is_enabled(nvtxDomainHandle_t) { return 1; }

// The payload extension's module (id 2), compatible versions 1.x: NCCL 2.28
// bundles 1.3, CUDA 13 has 1.4, with the same slots for these calls.
bool attach_payload_extension(nvtxExtModuleInfo_t* module) {
  if (module == nullptr || module->moduleId != NVTX_EXT_PAYLOAD_MODULEID || (module->compatId >> 8) != 1 ||
      module->segmentsCount < 1 || module->segments == nullptr || module->segments[0].functionSlots == nullptr)
    return false;
  nvtxExtModuleSegment_t& slots = module->segments[0];
  const auto set = [&](std::size_t id, auto function) {
    if (id < slots.slotCount) slots.functionSlots[id] = reinterpret_cast<intptr_t>(function);
  };
  set(NVTX3EXT_CBID_nvtxPayloadSchemaRegister, payload_schema_register);
  set(NVTX3EXT_CBID_nvtxPayloadEnumRegister, payload_enum_register);
  set(NVTX3EXT_CBID_nvtxMarkPayload, mark_payload);
  set(NVTX3EXT_CBID_nvtxRangePushPayload, range_push_payload);
  set(NVTX3EXT_CBID_nvtxRangePopPayload, range_pop_payload);
  set(NVTX3EXT_CBID_nvtxRangeStartPayload, range_start_payload);
  set(NVTX3EXT_CBID_nvtxRangeEndPayload, range_end_payload);
  set(NVTX3EXT_CBID_nvtxDomainIsEnabled, domain_is_enabled);
  return true;
}
void NVTX_API initialize(const void*) {}

template <class F>
void assign(NvtxFunctionTable table, unsigned int size, unsigned int id, F function) {
  if (table != nullptr && id <= size && table[id] != nullptr)
    *table[id] = reinterpret_cast<NvtxFunctionPointer>(function);
}

bool attach(NvtxGetExportTableFunc_t get_export_table) {
  if (get_export_table == nullptr) return false;
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr)
    return false;
  NvtxFunctionTable core = nullptr;
  unsigned int core_size = 0;
  NvtxFunctionTable core2 = nullptr;
  unsigned int core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) == 0 ||
      callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) == 0)
    return false;
  assign(core, core_size, NVTX_CBID_CORE_MarkEx, mark_ex);
  assign(core, core_size, NVTX_CBID_CORE_MarkA, mark_a);
  assign(core, core_size, NVTX_CBID_CORE_MarkW, mark_w);
  assign(core, core_size, NVTX_CBID_CORE_RangeStartEx, range_start_ex);
  assign(core, core_size, NVTX_CBID_CORE_RangeStartA, range_start_a);
  assign(core, core_size, NVTX_CBID_CORE_RangeStartW, range_start_w);
  assign(core, core_size, NVTX_CBID_CORE_RangeEnd, range_end);
  assign(core, core_size, NVTX_CBID_CORE_RangePushEx, range_push_ex);
  assign(core, core_size, NVTX_CBID_CORE_RangePushA, range_push_a);
  assign(core, core_size, NVTX_CBID_CORE_RangePushW, range_push_w);
  assign(core, core_size, NVTX_CBID_CORE_RangePop, range_pop);
  assign(core, core_size, NVTX_CBID_CORE_NameCategoryA, name_category_a);
  assign(core, core_size, NVTX_CBID_CORE_NameCategoryW, name_category_w);
  assign(core, core_size, NVTX_CBID_CORE_NameOsThreadA, name_os_thread_a);
  assign(core, core_size, NVTX_CBID_CORE_NameOsThreadW, name_os_thread_w);
  assign(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, domain_mark_ex);
  assign(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, domain_range_start_ex);
  assign(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, domain_range_end);
  assign(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, domain_range_push_ex);
  assign(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, domain_range_pop);
  assign(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryA, domain_name_category_a);
  assign(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryW, domain_name_category_w);
  assign(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, domain_register_string_a);
  assign(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, domain_register_string_w);
  assign(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, domain_create_a);
  assign(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, domain_create_w);
  assign(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, domain_destroy);
  assign(core2, core2_size, NVTX_CBID_CORE2_Initialize, initialize);
  if (const auto* version =
          static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO));
      version != nullptr && version->struct_size >= sizeof(NvtxExportTableVersionInfo) &&
      version->SetInjectionNvtxVersion != nullptr)
    version->SetInjectionNvtxVersion(NVTX_VERSION);
  return true;
}

}  // namespace
}  // namespace ferret::nvtx

// NVTX calls this once per NVTX instance (each program or library that
// includes NVTX's header has its own) at its first NVTX call. Returning 0
// leaves that instance's calls as no-ops: what happens without a ferret session.
extern "C" FERRET_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  try {
    if (!ferret::runtime::session_active()) return 0;
    ferret::nvtx::make_names();
    if (!ferret::nvtx::attach(get_export_table)) {
      ferret::runtime::print_message("NVTX's export table is not the one ferret knows; NVTX ranges are not recorded");
      return 0;
    }
    static const bool counted = ferret::runtime::register_collector(&ferret::nvtx::tally());
    static_cast<void>(counted);
    return 1;
  } catch (...) {
    return 0;
  }
}

// The same, once per NVTX instance and extension module at the module's first
// call; 0 leaves a module's calls as no-ops (the extensions ferret does not record).
extern "C" FERRET_EXPORT int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t* module) {
  try {
    if (!ferret::runtime::session_active()) return 0;
    ferret::nvtx::make_names();
    return ferret::nvtx::attach_payload_extension(module) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}
