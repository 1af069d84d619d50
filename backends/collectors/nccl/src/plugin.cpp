// plugin.cpp — ferret as NCCL's profiler plugin: NCCL's API calls, the
// collectives and sends/receives it enqueues and its kernel launches become
// regions of domain "nccl" on the thread that made them, with their numbers as
// counter samples inside (docs/nccl.md shows what a trace holds).
//
//   program ── ncclAllReduce ──▶ NCCL ── startEvent/stopEvent ──▶ this plugin
//     NCCL_PROFILER_PLUGIN=libferret_nccl.so (ferret-run sets it); NCCL looks up
//     ncclProfiler_v5 (NCCL ≥ 2.28), else ncclProfiler_v4 (2.26, 2.27)
//   init (per communicator): no ferret session → activation mask 0, NCCL then
//     calls nothing more; else the communicator is described in the metadata
//   startEvent ──▶ region begin (+ counter samples) in the calling thread's buffer
//   stopEvent  ──▶ region end
//
// What is a region (v5; v4 reports only the enqueued operations):
//   coll/p2p API    "ncclAllReduce ncclFloat32", "ncclSend ncclInt8", ...: the API call;
//                    samples "nccl bytes" (count × datatype size), "nccl root"
//   kernel launch   "kernel launch": NCCL launching its kernel (the CUDA
//                    collector's cuLaunchKernel nests inside)
//   coll            "AllReduce RING/LL": the collective handed to the proxy/kernel,
//                    with "nccl bytes", "nccl channels", "nccl root"
//   p2p             "Send", "Recv", with "nccl bytes", "nccl peer", "nccl channels"
// Every region also samples "nccl rank" and "nccl communicator" (the index of
// the communicator's "nccl-communicator-<index>" metadata entry).
//
// Nesting. NCCL starts the coll/p2p events of one kernel plan in a loop and
// stops them in a second loop (start A, start B, stop A, stop B). A thread's
// regions must nest, so an event stopped while a later one is still open is
// ended when that one ends (counted: nccl-region-ends-deferred).
// Not recorded: group API events — NCCL starts one inside the group's first
// call (taskAppend) and stops it at the end of ncclGroupEnd, so it would cross
// NCCL's own NVTX ranges of those calls (ncclAllReduce, ncclGroupEnd) on the
// same thread; the plan's group event (no attributes); proxy, network and
// kernel-channel events (NCCL is not asked for them).
#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "ferret/ferret.hpp"
#include "ferret/runtime/per_thread.hpp"
#include "ferret/runtime/runtime.hpp"
#include "nccl_profiler_api.hpp"

namespace ferret::nccl {
namespace {

using detail::site;

// One label for every record: interned sites are keyed by the label's address.
constexpr const char* domain_label = "nccl";

// ---------------------------------------------------------------------------
// Counts for the output's metadata.

class counts final : public runtime::collector {
 public:
  std::atomic<std::uint64_t> communicators{0};
  std::atomic<std::uint64_t> regions{0};
  std::atomic<std::uint64_t> ends_deferred{0};
  std::atomic<std::uint64_t> too_deep{0};
  std::atomic<std::uint64_t> stopped_elsewhere{0};
  std::atomic<std::uint64_t> unknown_datatypes{0};
  std::atomic<int> interface_version{0};

  void collect(std::vector<runtime::gpu_activity>&, std::vector<runtime::gpu_device_info>&,
               bool) override {}
  void add_metadata(runtime::metadata_list& metadata) const override {
    const auto value = [](const std::atomic<std::uint64_t>& count) {
      return static_cast<std::int64_t>(count.load(std::memory_order_relaxed));
    };
    metadata.emplace_back("nccl-profiler-interface",
                          "v" + std::to_string(interface_version.load(std::memory_order_relaxed)));
    metadata.emplace_back("nccl-communicators", value(communicators));
    metadata.emplace_back("nccl-regions", value(regions));
    metadata.emplace_back("nccl-region-ends-deferred", value(ends_deferred));
    metadata.emplace_back("nccl-regions-too-deep-dropped", value(too_deep));
    metadata.emplace_back("nccl-events-stopped-on-another-thread", value(stopped_elsewhere));
    metadata.emplace_back("nccl-unknown-datatypes", value(unknown_datatypes));
  }
  void abandon() noexcept override {}
};
counts& tally() {
  static auto* instance = new counts;  // outlives static destruction: NCCL may finalize late
  return *instance;
}

// ---------------------------------------------------------------------------
// Names

const site* intern(std::string_view name) {
  const detail::runtime_api* api = detail::runtime();
  return api != nullptr ? api->register_name(name.data(), name.size(), domain_label) : nullptr;
}

// The counters, interned once (at the first init).
struct counter_sites {
  const site* bytes;
  const site* root;
  const site* peer;
  const site* channels;
  const site* rank;
  const site* communicator;
};
std::atomic<const counter_sites*> g_counters{nullptr};

const counter_sites* make_counter_sites() {
  auto* made = new counter_sites{intern("nccl bytes"), intern("nccl root"), intern("nccl peer"),
                                 intern("nccl channels"), intern("nccl rank"),
                                 intern("nccl communicator")};
  const counter_sites* expected = nullptr;
  if (!g_counters.compare_exchange_strong(expected, made)) delete made;  // another init won
  return g_counters.load();
}

// Bytes of one element of NCCL's datatype names (ncclDatatypeToString); 0 if unknown.
std::size_t datatype_size(const char* datatype) {
  if (datatype == nullptr) return 0;
  static constexpr struct {
    const char* name;
    std::size_t size;
  } sizes[] = {{"ncclInt8", 1},    {"ncclUint8", 1},       {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1},
               {"ncclFloat16", 2}, {"ncclBfloat16", 2},    {"ncclInt32", 4},      {"ncclUint32", 4},
               {"ncclFloat32", 4}, {"ncclInt64", 8},       {"ncclUint64", 8},     {"ncclFloat64", 8}};
  for (const auto& known : sizes)
    if (std::strcmp(known.name, datatype) == 0) return known.size;
  return 0;
}

bool has_root(const char* func) {
  if (func == nullptr) return false;
  for (const char* rooted : {"Broadcast", "Reduce", "Gather", "Scatter"})
    if (std::strcmp(func, rooted) == 0) return true;
  return false;
}

const char* text_or(const char* text, const char* fallback) { return text != nullptr ? text : fallback; }

// Region names from NCCL's strings, which are literals in NCCL (its
// *ToString functions): cached per thread by the strings' addresses, with the
// datatype's size and whether the function has a root, so that a hit costs a
// few compares and no lock or string compare; a miss interns the name once.
enum class name_kind : std::uint8_t { api_call, collective, point_to_point };

struct name_key {
  name_kind kind;
  const char* func;
  const char* datatype;
  const char* algorithm;
  const char* protocol;
  bool operator==(const name_key& other) const {
    return kind == other.kind && func == other.func && datatype == other.datatype &&
           algorithm == other.algorithm && protocol == other.protocol;
  }
};

// What a name key gives: the region's site and what its samples need.
struct name_facts {
  const site* name = nullptr;
  std::size_t element_size = 0;  // 0: unknown datatype
  bool rooted = false;
};

std::string name_text(const name_key& key) {
  const std::string func = text_or(key.func, "(unknown)");
  switch (key.kind) {
    case name_kind::api_call: return "nccl" + func + " " + text_or(key.datatype, "(unknown datatype)");
    case name_kind::collective:
      return func + " " + text_or(key.algorithm, "(unknown)") + "/" + text_or(key.protocol, "(unknown)");
    case name_kind::point_to_point: return func;
  }
  return func;
}

// ---------------------------------------------------------------------------
// Per-thread state: open regions and the name cache (on the heap: see
// ferret/runtime/per_thread.hpp).

constexpr std::uint32_t max_depth = 64;
constexpr std::uint32_t name_cache_size = 64;

struct thread_state;

// An event handle points at its slot; slots are reused only after their
// region ended (NCCL never uses a handle after stopEvent).
struct open_region {
  thread_state* owner;
  const site* name;
  bool stopped;  // stopEvent came while a later region was still open
};

struct thread_state {
  std::uint32_t depth = 0;
  open_region open[max_depth];
  struct cached_name {
    name_key key;
    name_facts facts;
  } names[name_cache_size] = {};
};

thread_state* my_state() noexcept { return runtime::per_thread<thread_state>::get(); }

const name_facts& facts_of(thread_state& state, const name_key& key) {
  const auto mix = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) >> 3; };
  const std::uintptr_t hash = mix(key.func) * 31 + mix(key.datatype) * 7 + mix(key.algorithm) * 3 +
                              mix(key.protocol) + static_cast<std::uintptr_t>(key.kind);
  auto& slot = state.names[hash % name_cache_size];
  if (slot.facts.name != nullptr && slot.key == key) return slot.facts;
  // The name text leaves the datatype out for enqueued operations; the key
  // keeps it, for the element size.
  name_key named_key = key;
  if (key.kind != name_kind::api_call) named_key.datatype = nullptr;
  slot = {key, {intern(name_text(named_key)), datatype_size(key.datatype), has_root(key.func)}};
  if (slot.facts.element_size == 0) tally().unknown_datatypes.fetch_add(1, std::memory_order_relaxed);
  return slot.facts;
}

// The communicator an init described; NCCL passes it back as the context.
struct communicator {
  std::uint32_t index;
  int rank;
  const counter_sites* counters;
};

void sample(const site* counter, double value) {
  if (counter != nullptr) detail::write_with_payload(detail::word_of(counter, detail::kind_counter), detail::bits_of(value));
}

// Opens a region on this thread and returns its handle (nullptr: not recorded).
void* begin(const communicator& comm, const site* name) {
  if (name == nullptr || !detail::recording()) return nullptr;
  thread_state* state = my_state();
  if (state == nullptr) return nullptr;
  if (state->depth >= max_depth) {
    tally().too_deep.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  open_region& slot = state->open[state->depth++];
  slot = {state, name, false};
  detail::write(detail::word_of(name, detail::kind_begin));
  sample(comm.counters->rank, comm.rank);
  sample(comm.counters->communicator, comm.index);
  tally().regions.fetch_add(1, std::memory_order_relaxed);
  return &slot;
}

void end(void* handle) {
  if (handle == nullptr) return;
  auto& region = *static_cast<open_region*>(handle);
  thread_state* state = my_state();
  if (region.owner != state) {
    // Its thread's buffer is not ours to write: the region stays open there
    // and is closed (and counted) at exit.
    tally().stopped_elsewhere.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  region.stopped = true;
  if (&region != &state->open[state->depth - 1]) {
    tally().ends_deferred.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  while (state->depth > 0 && state->open[state->depth - 1].stopped) {
    const open_region& innermost = state->open[--state->depth];
    // Paused meanwhile: not written, as for ferret's own regions.
    if (detail::recording()) detail::write(detail::word_of(innermost.name, detail::kind_end));
  }
}

void* api_call(const communicator& comm, const char* func, const char* datatype, std::size_t count,
               const int* root) {
  thread_state* state = my_state();
  if (state == nullptr) return nullptr;
  const name_facts& facts = facts_of(*state, {name_kind::api_call, func, datatype, nullptr, nullptr});
  void* handle = begin(comm, facts.name);
  if (handle == nullptr) return nullptr;
  if (facts.element_size != 0) sample(comm.counters->bytes, static_cast<double>(count * facts.element_size));
  if (root != nullptr && facts.rooted) sample(comm.counters->root, *root);
  return handle;
}

struct collective {
  const char* func;
  const char* datatype;
  std::size_t count;
  int root;
  std::uint8_t channels;
  const char* algorithm;
  const char* protocol;
};

void* enqueued_collective(const communicator& comm, const collective& op) {
  thread_state* state = my_state();
  if (state == nullptr) return nullptr;
  const name_facts& facts = facts_of(*state, {name_kind::collective, op.func, op.datatype, op.algorithm, op.protocol});
  void* handle = begin(comm, facts.name);
  if (handle == nullptr) return nullptr;
  if (facts.element_size != 0) sample(comm.counters->bytes, static_cast<double>(op.count * facts.element_size));
  sample(comm.counters->channels, op.channels);
  if (facts.rooted) sample(comm.counters->root, op.root);
  return handle;
}

struct point_to_point {
  const char* func;
  const char* datatype;
  std::size_t count;
  int peer;
  std::uint8_t channels;
};

void* enqueued_point_to_point(const communicator& comm, const point_to_point& op) {
  thread_state* state = my_state();
  if (state == nullptr) return nullptr;
  const name_facts& facts = facts_of(*state, {name_kind::point_to_point, op.func, op.datatype, nullptr, nullptr});
  void* handle = begin(comm, facts.name);
  if (handle == nullptr) return nullptr;
  if (facts.element_size != 0) sample(comm.counters->bytes, static_cast<double>(op.count * facts.element_size));
  sample(comm.counters->peer, op.peer);
  sample(comm.counters->channels, op.channels);
  return handle;
}

const site* named(std::atomic<const site*>& cached, std::string_view text) {
  const site* name = cached.load(std::memory_order_acquire);
  if (name == nullptr) {
    name = intern(text);
    cached.store(name, std::memory_order_release);
  }
  return name;
}
std::atomic<const site*> g_launch_site{nullptr};

// ---------------------------------------------------------------------------
// The entry points (C linkage types; never throwing into NCCL).

template <class F>
api::result guarded(F&& body) noexcept {
  try {
    body();
  } catch (...) {
  }
  return api::success;
}

std::atomic<std::uint32_t> g_next_communicator{0};

api::result init(void** context, int* activation_mask, const char* name, std::uint64_t hash, int nodes,
                 int ranks, int rank, int version, int wanted) noexcept {
  if (context != nullptr) *context = nullptr;
  if (activation_mask == nullptr) return api::success;
  *activation_mask = 0;  // nothing, unless a session records
  return guarded([&] {
    if (!runtime::session_active() || detail::runtime() == nullptr) return;
    static const bool counted = runtime::register_collector(&tally());
    static_cast<void>(counted);
    const counter_sites* counters = g_counters.load();
    if (counters == nullptr) counters = make_counter_sites();
    auto* comm = new communicator{g_next_communicator.fetch_add(1, std::memory_order_relaxed), rank, counters};
    tally().interface_version.store(version, std::memory_order_relaxed);
    tally().communicators.fetch_add(1, std::memory_order_relaxed);
    char key[48];
    std::snprintf(key, sizeof key, "nccl-communicator-%" PRIu32, comm->index);
    char description[256];
    std::snprintf(description, sizeof description,
                  "rank %d of %d on %d node%s, hash 0x%016" PRIx64 "%s%s", rank, ranks, nodes,
                  nodes == 1 ? "" : "s", hash, name != nullptr && name[0] != '\0' ? ", name " : "",
                  name != nullptr ? name : "");
    detail::runtime()->set_metadata_string(key, std::strlen(key), description, std::strlen(description));
    *context = comm;
    *activation_mask = wanted;
  });
}

api::result stop_event(void* handle) noexcept {
  return guarded([&] { end(handle); });
}

// Only the group API event has states (ncclGroupStart returned, ncclGroupEnd
// called), and groups are not recorded.
api::result record_event_state(void*, api::event_state, api::event_state_args*) noexcept { return api::success; }

api::result finalize(void* context) noexcept {
  // Handles never point at the communicator, so it can go.
  delete static_cast<communicator*>(context);
  return api::success;
}

// v5 ------------------------------------------------------------------------

api::result init_v5(void** context, std::uint64_t id, int* activation_mask, const char* name, int nodes,
                    int ranks, int rank, api::debug_logger) noexcept {
  return init(context, activation_mask, name, id, nodes, ranks, rank, 5,
              api::coll_api | api::p2p_api | api::kernel_launch | api::coll | api::p2p);
}

api::result start_event_v5(void* context, void** handle, api::event_descr_v5* descr) noexcept {
  if (handle == nullptr) return api::success;
  *handle = nullptr;
  if (context == nullptr || descr == nullptr) return api::success;
  const auto& comm = *static_cast<const communicator*>(context);
  return guarded([&] {
    switch (descr->type) {
      case api::coll_api:
        *handle = api_call(comm, descr->coll_api.func, descr->coll_api.datatype, descr->coll_api.count,
                           &descr->coll_api.root);
        break;
      case api::p2p_api:
        *handle = api_call(comm, descr->p2p_api.func, descr->p2p_api.datatype, descr->p2p_api.count, nullptr);
        break;
      case api::kernel_launch: *handle = begin(comm, named(g_launch_site, "kernel launch")); break;
      case api::coll: {
        const auto& c = descr->coll;
        *handle = enqueued_collective(comm, {c.func, c.datatype, c.count, c.root, c.channels, c.algorithm, c.protocol});
        break;
      }
      case api::p2p: {
        const auto& p = descr->p2p;
        *handle = enqueued_point_to_point(comm, {p.func, p.datatype, p.count, p.peer, p.channels});
        break;
      }
      default: break;  // groups (see above); proxy, network, kernel channels: not asked for
    }
  });
}

// v4 ------------------------------------------------------------------------

api::result init_v4(void** context, int* activation_mask, const char* name, std::uint64_t hash, int nodes,
                    int ranks, int rank, api::debug_logger) noexcept {
  return init(context, activation_mask, name, hash, nodes, ranks, rank, 4, api::coll | api::p2p);
}

api::result start_event_v4(void* context, void** handle, api::event_descr_v4* descr) noexcept {
  if (handle == nullptr) return api::success;
  *handle = nullptr;
  if (context == nullptr || descr == nullptr) return api::success;
  const auto& comm = *static_cast<const communicator*>(context);
  return guarded([&] {
    if (descr->type == api::coll) {
      const auto& c = descr->coll;
      *handle = enqueued_collective(comm, {c.func, c.datatype, c.count, c.root, c.channels, c.algorithm, c.protocol});
    } else if (descr->type == api::p2p) {
      const auto& p = descr->p2p;
      *handle = enqueued_point_to_point(comm, {p.func, p.datatype, p.count, p.peer, p.channels});
    }
  });
}

}  // namespace
}  // namespace ferret::nccl

// The symbols NCCL looks up in the plugin, newest first.
extern "C" {
FERRET_EXPORT ferret::nccl::api::profiler_v5 ncclProfiler_v5 = {
    "ferret", ferret::nccl::init_v5, ferret::nccl::start_event_v5, ferret::nccl::stop_event,
    ferret::nccl::record_event_state, ferret::nccl::finalize};
FERRET_EXPORT ferret::nccl::api::profiler_v4 ncclProfiler_v4 = {
    "ferret", ferret::nccl::init_v4, ferret::nccl::start_event_v4, ferret::nccl::stop_event,
    ferret::nccl::record_event_state, ferret::nccl::finalize};
}
