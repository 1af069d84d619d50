// ferret/detail/recorder.hpp — the inline hot path. Not part of the user-facing API.
//
// Cost model (x86-64, see docs/performance.md for measurements):
//   not recording:  one byte load + one branch per annotation;
//   recording:      a TLS load, a bounds check, rdtsc and three stores.
// Everything else (first event of a thread, full chunk, name interning, no
// runtime at all) is out of line in the *_slow functions.
#pragma once

#include "ferret/detail/abi.hpp"

#include <cstring>
#if !defined(FERRET_RUNTIME_LINKED)
#include <strings.h>
#include <unistd.h>

#include <cstdlib>
#endif
#if !defined(__x86_64__) && !defined(__aarch64__)
#include <time.h>
#endif

namespace ferret::detail {

// Per shared object (hidden), so the hot path reads them PC-relative / with
// initial-exec TLS. The runtime learns each flag's address when the object
// attaches, and binds each object's thread slot on the thread's first event.
// On a cache line of its own: every annotation reads it, and a neighbour that
// the application writes often would make that read miss.
alignas(64) FERRET_DSO_LOCAL inline std::atomic<std::uint8_t> g_mode{mode_unresolved};
FERRET_DSO_LOCAL inline std::atomic<const runtime_api*> g_api{nullptr};
// Never written: its pos == end == nullptr sends a thread's first event to the
// slow path, and its empty literal cache misses.
FERRET_DSO_LOCAL inline thread_buffer g_unbound_buffer{};
FERRET_DSO_LOCAL FERRET_TLS_MODEL inline thread_local thread_buffer* t_buffer =
    &g_unbound_buffer;

// Tells the runtime when this shared object goes (dlclose(), or exit), while
// its memory is still mapped: a plugin or a Python extension module may be
// unloaded long before the process ends.
struct unload_hook {
  ~unload_hook() {
    const runtime_api* api = g_api.load(std::memory_order_acquire);
    if (api != nullptr && api->size >= offsetof(runtime_api, detach) + sizeof api->detach)
      api->detach(&g_mode);
  }
};

// Hinted unlikely: the path without recording (the common case in
// production) then runs straight through, with no taken jump.
FERRET_ALWAYS_INLINE bool recording() noexcept {
  return FERRET_UNLIKELY(g_mode.load(std::memory_order_relaxed) != mode_off);
}

#if !defined(FERRET_RUNTIME_LINKED)
// True when `backends` (FERRET_BACKEND) holds a word other than the off words.
FERRET_DSO_LOCAL inline bool names_a_backend(const char* backends) noexcept {
  if (backends == nullptr) return false;
  for (const char* word = backends; *word != '\0';) {
    const std::size_t length = std::strcspn(word, backend_separators);
    bool off = length == 0;
    for (const char* off_word : backend_off_words)
      off = off || (std::strlen(off_word) == length && strncasecmp(word, off_word, length) == 0);
    if (!off) return true;
    word += length + (word[length] != '\0');
  }
  return false;
}

// Once per process (one flag for every shared object's copy of this code).
__attribute__((visibility("default"))) inline std::atomic<bool> g_no_runtime_said{false};

// The program asked for a trace (FERRET_BACKEND) but no runtime came into
// the process (the API alone, or a weak reference the linker dropped with
// --as-needed, Debian's default): say so, once,
// rather than record nothing in silence. write(2): an annotation may run in
// a signal handler.
FERRET_DSO_LOCAL FERRET_NOINLINE inline void say_no_runtime() noexcept {
  if (!names_a_backend(std::getenv("FERRET_BACKEND")) || g_no_runtime_said.exchange(true)) return;
  static constexpr char line[] =
      "ferret: FERRET_BACKEND is set, but no ferret runtime is loaded in this program, so nothing is "
      "recorded: link ferret::runtime or a backend target (the API alone, ferret::ferret, refers to "
      "the runtime only weakly, and linkers drop a plain -lferret_runtime of a build tree), or run "
      "the program under ferret-run\n";
  const ssize_t written = ::write(2, line, sizeof line - 1);
  static_cast<void>(written);
}
#endif

// The functions below that are not always inlined are hidden too: each shared
// object must run its own copy, on its own flag and thread slot (a default-
// visibility copy would be bound to the first loaded object's, leaving the
// others' flags unresolved).
FERRET_DSO_LOCAL FERRET_NOINLINE inline const runtime_api* resolve_runtime() noexcept {
  // A function-local static, so that only code that annotates carries the
  // hook (a namespace-scope one would give every translation unit that
  // includes this header an initialiser and an atexit registration).
  // Registered before attaching: at exit it then runs after the runtime's
  // own exit handler, which the first attach registers.
  static unload_hook hook;
  static_cast<void>(hook);
  const runtime_api* api = nullptr;
#if defined(FERRET_RUNTIME_LINKED)
  api = ferret_runtime_attach_v1(abi_version, &g_mode);
#else
  if (&ferret_runtime_attach_v1 != nullptr) api = ferret_runtime_attach_v1(abi_version, &g_mode);
  else say_no_runtime();
#endif
  if (api == nullptr || api->abi_version != abi_version) {
    api = nullptr;
    g_mode.store(mode_off, std::memory_order_relaxed);
  }
  g_api.store(api, std::memory_order_release);
  return api;
}

// The runtime's function table, attaching on first use; nullptr without a
// runtime, or with one that records nothing in this process. Also attaches
// when the mode says recording but the table is not stored yet: another
// thread's attach published the mode and has not stored the table (its
// event would otherwise be lost, uncounted); attaching again is harmless.
FERRET_DSO_LOCAL inline const runtime_api* runtime() noexcept {
  if (const runtime_api* api = g_api.load(std::memory_order_acquire)) return api;
  if (g_mode.load(std::memory_order_relaxed) != mode_off) return resolve_runtime();
  return nullptr;
}

FERRET_DSO_LOCAL FERRET_NOINLINE inline void write_slow(std::uint64_t word, std::uint64_t extra,
                                                        unsigned slots) noexcept {
  if (const runtime_api* api = runtime()) api->write(&t_buffer, word, extra, slots);
}

FERRET_ALWAYS_INLINE void read_clock(event* e) noexcept {
#if defined(__x86_64__)
  std::uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  e->time_lo = lo;
  e->time_hi = hi;
#elif defined(__aarch64__)
  std::uint64_t ticks;
  __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(ticks));
  e->time_lo = static_cast<std::uint32_t>(ticks);
  e->time_hi = static_cast<std::uint32_t>(ticks >> 32);
#else
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  const std::uint64_t ns = static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
                           static_cast<std::uint64_t>(ts.tv_nsec);
  e->time_lo = static_cast<std::uint32_t>(ns);
  e->time_hi = static_cast<std::uint32_t>(ns >> 32);
#endif
}

// The end of the thread's chunk, read before the position (acquire: a plain
// load, which the compiler keeps before the next): a signal handler that
// switches chunks between the two reads leaves a position in the new chunk
// and an old end, never an old position (the end of a full chunk) beside a
// new end, which would write past the chunk.
FERRET_ALWAYS_INLINE event* end_of(const thread_buffer* buffer) noexcept {
  return __atomic_load_n(&buffer->end, __ATOMIC_ACQUIRE);
}

// Appends one event. Call only when recording() is true.
FERRET_ALWAYS_INLINE void write(std::uint64_t word) noexcept {
  thread_buffer* buffer = t_buffer;
  event* const end = end_of(buffer);
  event* slot = buffer->pos.load(std::memory_order_relaxed);
  if (FERRET_LIKELY(slot != end)) {
    read_clock(slot);
    slot->word = word;
    buffer->pos.store(slot + 1, std::memory_order_release);
  } else {
    write_slow(word, 0, 1);
  }
}

// Appends an event followed by a payload slot (counters).
FERRET_ALWAYS_INLINE void write_with_payload(std::uint64_t word, std::uint64_t payload) noexcept {
  thread_buffer* buffer = t_buffer;
  event* const end = end_of(buffer);
  event* slot = buffer->pos.load(std::memory_order_relaxed);
  if (FERRET_LIKELY(end - slot >= 2)) {
    read_clock(slot);
    slot->word = word;
    slot[1].time_lo = 0;
    slot[1].time_hi = 0;
    slot[1].word = payload;
    buffer->pos.store(slot + 2, std::memory_order_release);
  } else {
    write_slow(word, payload, 2);
  }
}

FERRET_ALWAYS_INLINE std::uint64_t word_of(const site* s, event_kind kind) noexcept {
  // '+' rather than '|' (same value: sites are 8-aligned) folds into one lea.
  return reinterpret_cast<std::uintptr_t>(s) + kind;
}

FERRET_DSO_LOCAL FERRET_NOINLINE inline const site* intern_literal_slow(
    const char* literal, const char* domain) noexcept {
  const runtime_api* api = runtime();
  return api ? api->intern_literal(&t_buffer, literal, domain) : nullptr;
}

// Maps a string literal to its site record through the thread's small cache;
// the runtime interns on a miss. Returns nullptr when there is no runtime.
FERRET_ALWAYS_INLINE const site* intern_literal(const char* literal, const char* domain) noexcept {
  const literal_cache_entry& entry = t_buffer->literal_slot(literal);
  if (FERRET_LIKELY(entry.literal == literal && entry.domain == domain)) return entry.interned;
  return intern_literal_slow(literal, domain);
}

inline std::uint64_t bits_of(double value) noexcept {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

}  // namespace ferret::detail
