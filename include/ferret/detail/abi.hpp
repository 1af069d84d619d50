// ferret/detail/abi.hpp — the contract between the header-only API and the
// runtime library (libferret_runtime). Not part of the user-facing API.
//
//   application code ──(inline hot path)──▶ thread_buffer (runtime-owned memory)
//          │                                      ▲
//          └──(slow path: first event, full chunk, names, objects)──▶ runtime_api
//
// The header never links against the runtime: it finds it through a weak
// symbol, so a library can ship annotations without a link dependency, and a
// program without the runtime pays one load and one branch per annotation.
// Everything here is versioned by abi_version; change it on any layout change.
#pragma once

#include "ferret/config.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ferret::detail {

inline constexpr std::uint32_t abi_version = 1;

// A static record per annotation call site (or per interned name). Its address
// is the event's identity: the hot path stores a pointer, and the runtime reads
// the strings only when it drains the buffers. Aligned to 8 so that the low
// three bits of an event word are free for the event kind.
struct alignas(8) site {
  const char* name;
  const char* domain;    // nullptr for the default domain
  const char* function;  // pretty function name, or nullptr
  const char* file;      // source file, or nullptr
  std::uint32_t line;
  std::uint32_t flags;
};

enum event_kind : std::uint64_t {
  kind_begin = 0,    // region entered
  kind_end = 1,      // region left (word carries the site, so misuse is detected)
  kind_mark = 2,     // instant
  kind_counter = 3,  // counter sample; the following slot's word holds the double
  // A GPU API call's correlation id (written by collectors such as
  // backends/collectors/cupti inside the call's region): the following slot's word holds
  // the id, which the runtime maps to the thread's calling context.
  kind_correlation = 4,
  // The interpreted call stack (Python frames, backends/collectors/python) at a GPU API
  // call, written inside the call's region before its kind_correlation: the
  // following slot's word holds the address of a call_stack that lives as
  // long as the process. The runtime puts the frames into the calling context
  // of that correlation's GPU work only (they are not host regions).
  kind_call_stack = 5,
  kind_mask = 7,
};

// Frames of an interpreted call stack, outermost first, each a site record;
// immutable and never freed once written into an event.
struct call_stack {
  std::uint32_t depth;
  const site* const* frames;
};

// One buffered event: 16 bytes. The timestamp is stored as the two halves the
// clock instruction returns (one store each, no shift/or on the hot path).
struct event {
  std::uint32_t time_lo;
  std::uint32_t time_hi;
  std::uint64_t word;  // site address | event_kind, or a counter value's bits
};
static_assert(sizeof(event) == 16, "buffered events must stay 16 bytes");

inline constexpr unsigned literal_cache_size = 32;

// 32 bytes, so that finding a literal's slot is a mask and a scaled add.
struct alignas(32) literal_cache_entry {
  const char* literal;
  const char* domain;
  const site* interned;
};

// Per-thread write cursor. The runtime allocates one per OS thread (it extends
// this struct); the header only touches these fields, always from the owning
// thread. pos is atomic so that the runtime's drainer can read the published
// position concurrently (release store = a plain store on x86-64).
struct thread_buffer {
  std::atomic<event*> pos;
  event* end;
  literal_cache_entry literal_cache[literal_cache_size];

  // The one slot a literal may occupy; the header looks it up, the runtime fills it.
  literal_cache_entry& literal_slot(const char* literal) noexcept {
    return literal_cache[(reinterpret_cast<std::uintptr_t>(literal) >> 3) % literal_cache_size];
  }
};

// Values of the per-DSO mode flag the hot path tests.
enum : std::uint8_t { mode_off = 0, mode_unresolved = 1, mode_recording = 2 };

// FERRET_BACKEND's words for "record nothing", in any case (the runtime's
// settings, and the header's notice of a program without a runtime).
inline constexpr const char* backend_off_words[] = {"none", "off", "0", "false", "no"};
inline constexpr const char* backend_separators = ",; \t\n\r\f\v";

enum class memory_kind : std::uint32_t { host = 0, pinned = 1, device = 2, managed = 3 };

// Function table the runtime hands to each annotated shared object. Appending
// members is compatible; anything else needs a new abi_version.
struct runtime_api {
  std::uint32_t abi_version;
  std::uint32_t size;  // sizeof(runtime_api) as the runtime was built
  // Writes `slots` (1 or 2) events for the calling thread; binds *slot to the
  // thread's buffer on first use and switches chunks when one is full.
  void (*write)(thread_buffer** slot, std::uint64_t word, std::uint64_t extra,
                unsigned slots) noexcept;
  // Maps a string literal (by address) to a site record and caches it in the
  // calling thread's literal cache.
  const site* (*intern_literal)(thread_buffer** slot, const char* literal,
                                const char* domain) noexcept;
  // Copies name into a site record owned by the runtime for the process lifetime.
  const site* (*register_name)(const char* name, std::size_t length,
                               const char* domain) noexcept;
  void (*set_thread_name)(thread_buffer** slot, const char* name, std::size_t length) noexcept;
  void (*set_metadata_string)(const char* key, std::size_t key_length, const char* value,
                              std::size_t value_length) noexcept;
  void (*set_metadata_number)(const char* key, std::size_t key_length, double value,
                              bool is_integer) noexcept;
  std::uint64_t (*register_data_object)(const char* name, std::size_t name_length,
                                        const void* address, std::size_t bytes,
                                        memory_kind memory, int device) noexcept;
  void (*unregister_data_object)(std::uint64_t id) noexcept;
  void (*unregister_data_object_at)(const void* address) noexcept;
  void (*flush)() noexcept;
  void (*set_recording)(bool on) noexcept;
  // The shared object whose flag this is is going (dlclose, or exit): the
  // runtime stops storing into its flag and thread slots and keeps copies of
  // the names it recorded. Absent (size too small) in older runtimes.
  void (*detach)(std::atomic<std::uint8_t>* mode_flag) noexcept;
  // An integer value exactly (set_metadata_number carries a double): the
  // bits of an std::int64_t when is_signed, else of an std::uint64_t.
  void (*set_metadata_integer)(const char* key, std::size_t key_length, std::uint64_t bits,
                               bool is_signed) noexcept;
};

}  // namespace ferret::detail

// Defined by libferret_runtime. `mode_flag` is the calling shared object's
// flag; the runtime keeps it to switch recording on and off.
//
// Code built against the ferret::runtime target (FERRET_RUNTIME_LINKED)
// references it strongly, so linkers that drop unreferenced libraries
// (--as-needed) keep the runtime. Elsewhere the reference is weak: without a
// runtime in the process its address is null and every annotation stays off.
#if defined(FERRET_RUNTIME_LINKED)
extern "C" const ferret::detail::runtime_api* ferret_runtime_attach_v1(
    std::uint32_t abi_version, std::atomic<std::uint8_t>* mode_flag) noexcept;
#else
extern "C" FERRET_WEAK const ferret::detail::runtime_api* ferret_runtime_attach_v1(
    std::uint32_t abi_version, std::atomic<std::uint8_t>* mode_flag) noexcept;
#endif

// Code built against the ferret::cuda target (the CUDA collector) references
// the collector, so that linkers that drop unreferenced libraries
// (--as-needed) keep it: the collector starts from its library's initialiser.
// Not with FERRET_ENABLED=0: compiled-out code references nothing.
#if defined(FERRET_CUDA_LINKED) && FERRET_ENABLED
extern "C" const int ferret_cuda_collector_v1;
namespace ferret::detail {
[[gnu::used]] FERRET_DSO_LOCAL inline const int* const cuda_collector_anchor = &ferret_cuda_collector_v1;
}  // namespace ferret::detail
#endif

// The same for the OpenMP collector (ferret::ompt): referenced, its library
// stays, and the OpenMP runtime finds its ompt_start_tool.
#if defined(FERRET_OMPT_LINKED) && FERRET_ENABLED
extern "C" const int ferret_ompt_collector_v1;
namespace ferret::detail {
[[gnu::used]] FERRET_DSO_LOCAL inline const int* const ompt_collector_anchor = &ferret_ompt_collector_v1;
}  // namespace ferret::detail
#endif
