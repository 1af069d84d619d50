// ferret/ferret.hpp — the annotation API. Header-only, C++17.
//
//   #include <ferret/ferret.hpp>
//
//   void solve() {
//     FERRET_FUNCTION();                          // region named after the function
//     ferret::data_object a{"A", ptr, bytes, ferret::memory_kind::device, 0};
//     for (int it = 0; it < n; ++it) {
//       FERRET_REGION("iteration");               // region for this scope
//       residual.record(r);                       // ferret::counter residual{"residual"};
//     }
//     ferret::mark("converged");
//   }
//
// Layers:
//   ferret.hpp (this file)       what applications call
//   detail/recorder.hpp          the inline hot path: a TLS cursor into a per-thread buffer
//   detail/abi.hpp               the versioned table through which the header reaches
//                                libferret_runtime (found at run time, never linked by
//                                the header itself)
//   backends/runtime             buffers, clock, draining, configuration
//   backends/<format>            writers (chrome, ...) fed by the runtime
//
// Switching off:
//   -DFERRET_ENABLED=0           every annotation is an empty inline; the object file is
//                                identical to the file without annotations. Enabled and
//                                disabled files mix in one program: each configuration
//                                has its own inline namespace (FERRET_CONFIGURATION).
//   domains                      struct mylib { static constexpr const char* name = "mylib";
//                                               static constexpr bool enabled = MYLIB_TRACE; };
//                                ferret::region_in<mylib> r{"step"};  // off if !enabled
//   at run time                  FERRET_BACKEND unset or "none": one load and one branch
//                                per annotation.
//
// Names must be string literals or ferret::name handles: the runtime reads
// them after the annotation returns. For names built at run time, call
// ferret::register_name once and keep the handle.
#pragma once

#include "ferret/config.hpp"
#include "ferret/detail/abi.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#if FERRET_ENABLED
#include "ferret/detail/recorder.hpp"
#endif

namespace ferret {

// The same in every configuration: names, types and traits with no code.

using memory_kind = detail::memory_kind;

/// The domain of annotations that name none. A domain is any type; it may
/// declare `static constexpr const char* name` (shown as the category) and
/// `static constexpr bool enabled` (false compiles its annotations out).
struct default_domain {};

namespace detail {
template <class D, class = void>
struct domain_switch : std::true_type {};
template <class D>
struct domain_switch<D, std::void_t<decltype(D::enabled)>> : std::bool_constant<D::enabled> {};

template <class D, class = void>
struct domain_label {
  static constexpr const char* value = nullptr;
};
template <class D>
struct domain_label<D, std::void_t<decltype(D::name)>> {
  static constexpr const char* value = D::name;
};
}  // namespace detail

/// The category name of domain D (nullptr for the default domain).
template <class D>
inline constexpr const char* domain_name = detail::domain_label<D>::value;

/// A name registered at run time (for names that are not string literals).
/// Cheap to copy; valid for the life of the process.
class name {
 public:
  constexpr name() noexcept = default;
  constexpr explicit name(const detail::site* s) noexcept : site_(s) {}
  constexpr const detail::site* site() const noexcept { return site_; }
  constexpr explicit operator bool() const noexcept { return site_ != nullptr; }

 private:
  const detail::site* site_ = nullptr;
};

/// Identifies a registered data object; 0 means "not registered".
using data_object_id = std::uint64_t;

// What changes with FERRET_ENABLED (see FERRET_CONFIGURATION in config.hpp).
inline namespace FERRET_CONFIGURATION {

/// True when annotations of domain D generate code.
template <class D>
inline constexpr bool domain_enabled = FERRET_ENABLED && detail::domain_switch<D>::value;

/// Copies `text` into a name record kept until the process exits. Call it once
/// per distinct name (at start-up, say), not per event. Returns an empty name
/// when no runtime is loaded; annotations with an empty name do nothing.
template <class Domain = default_domain>
inline name register_name(std::string_view text) noexcept {
#if FERRET_ENABLED
  if constexpr (domain_enabled<Domain>) {
    if (const detail::runtime_api* api = detail::runtime())
      return name{api->register_name(text.data(), text.size(), domain_name<Domain>)};
  }
#endif
  static_cast<void>(text);
  return name{};
}

// ---------------------------------------------------------------------------
// Regions

/// A region for the lifetime of the object (RAII). Names: a call-site record
/// (from the FERRET_REGION / FERRET_FUNCTION macros), a string literal, or a
/// registered ferret::name.
template <class Domain = default_domain, bool Enabled = domain_enabled<Domain>>
class region_in;

#if FERRET_ENABLED
template <class Domain, bool Enabled>
class region_in {
 public:
  // [[nodiscard]]: `ferret::region("solve");` (no variable) would end at
  // once, an empty region; compilers warn about it.
  [[nodiscard]] explicit region_in(const detail::site& s) noexcept {
    if (detail::recording()) begin(&s);
  }
  template <std::size_t N>
  [[nodiscard]] explicit region_in(const char (&literal)[N]) noexcept {
    if (detail::recording()) begin(detail::intern_literal(literal, domain_name<Domain>));
  }
  [[nodiscard]] explicit region_in(name n) noexcept {
    if (detail::recording()) begin(n.site());
  }
  // A region ends exactly when its begin was recorded (not on the recording
  // state at the end), so pausing never leaves it open and the destructor
  // tests a register instead of reloading the mode.
  ~region_in() {
    if (FERRET_UNLIKELY(site_ != nullptr)) detail::write(detail::word_of(site_, detail::kind_end));
  }
  region_in(const region_in&) = delete;
  region_in& operator=(const region_in&) = delete;

 private:
  void begin(const detail::site* s) noexcept {
    site_ = s;
    if (s != nullptr) detail::write(detail::word_of(s, detail::kind_begin));
  }
  const detail::site* site_ = nullptr;
};
#endif

// Constant-initialised and trivially destructible: even at namespace scope it
// needs no initialiser and no atexit registration. [[gnu::unused]]: no
// unused-variable warning where the enabled region (which has a destructor)
// gets none.
template <class Domain>
class [[gnu::unused]] region_in<Domain, false> {
 public:
  // The same warnings as the enabled region's, so that code warned about
  // once stays warned about when compiled out.
  [[nodiscard]] constexpr explicit region_in(const detail::site&) noexcept {}
  template <std::size_t N>
  [[nodiscard]] constexpr explicit region_in(const char (&)[N]) noexcept {}
  [[nodiscard]] constexpr explicit region_in(name) noexcept {}
  region_in(const region_in&) = delete;
  region_in& operator=(const region_in&) = delete;
};

using region = region_in<>;

}  // namespace FERRET_CONFIGURATION

// ---------------------------------------------------------------------------
// Explicit begin/end, marks (instants) and counters

namespace detail {
inline namespace FERRET_CONFIGURATION {
#if FERRET_ENABLED
template <class Domain>
FERRET_ALWAYS_INLINE void write_named(const site* s, event_kind kind) noexcept {
  if constexpr (domain_enabled<Domain>) {
    if (recording() && s != nullptr) write(word_of(s, kind));
  } else {
    static_cast<void>(s);
    static_cast<void>(kind);
  }
}
template <class Domain>
FERRET_ALWAYS_INLINE void write_literal(const char* literal, event_kind kind) noexcept {
  if constexpr (domain_enabled<Domain>) {
    if (recording()) {
      if (const site* s = intern_literal(literal, domain_name<Domain>)) write(word_of(s, kind));
    }
  } else {
    static_cast<void>(literal);
    static_cast<void>(kind);
  }
}
#else
template <class Domain>
FERRET_ALWAYS_INLINE void write_named(const site*, event_kind) noexcept {}
template <class Domain>
FERRET_ALWAYS_INLINE void write_literal(const char*, event_kind) noexcept {}
#endif
}  // namespace FERRET_CONFIGURATION
}  // namespace detail

inline namespace FERRET_CONFIGURATION {

/// Opens a region that a later ferret::end with the same name closes, for code
/// that cannot use a scope (callbacks, state machines). Regions nest per
/// thread: an end closes the innermost open region of its name, and the ones
/// opened inside it with it; an end that matches no open region is left out.
/// Both are counted in the outputs' metadata.
template <class Domain = default_domain, std::size_t N>
inline void begin(const char (&literal)[N]) noexcept {
  detail::write_literal<Domain>(literal, detail::kind_begin);
}
template <class Domain = default_domain>
inline void begin(name n) noexcept {
  detail::write_named<Domain>(n.site(), detail::kind_begin);
}
template <class Domain = default_domain, std::size_t N>
inline void end(const char (&literal)[N]) noexcept {
  detail::write_literal<Domain>(literal, detail::kind_end);
}
template <class Domain = default_domain>
inline void end(name n) noexcept {
  detail::write_named<Domain>(n.site(), detail::kind_end);
}

/// An instant event on the calling thread's timeline.
template <class Domain = default_domain, std::size_t N>
inline void mark(const char (&literal)[N]) noexcept {
  detail::write_literal<Domain>(literal, detail::kind_mark);
}
template <class Domain = default_domain>
inline void mark(name n) noexcept {
  detail::write_named<Domain>(n.site(), detail::kind_mark);
}

/// A numeric time series (queue depth, residual, bytes in flight). Each
/// record() stores one timestamped sample; the object may be shared by threads.
template <class Domain = default_domain, bool Enabled = domain_enabled<Domain>>
class counter_in;

#if FERRET_ENABLED
template <class Domain, bool Enabled>
class counter_in {
 public:
  template <std::size_t N>
  constexpr explicit counter_in(const char (&literal)[N]) noexcept : literal_(literal) {}
  constexpr explicit counter_in(name n) noexcept : site_(n.site()) {}
  constexpr explicit counter_in(const detail::site& s) noexcept : site_(&s) {}

  void record(double value) const noexcept {
    if (!detail::recording()) return;
    const detail::site* s = site_;
    if (s == nullptr && literal_ != nullptr)
      s = detail::intern_literal(literal_, domain_name<Domain>);
    if (s != nullptr)
      detail::write_with_payload(detail::word_of(s, detail::kind_counter), detail::bits_of(value));
  }

 private:
  const detail::site* site_ = nullptr;
  const char* literal_ = nullptr;
};
#endif

template <class Domain>
class counter_in<Domain, false> {
 public:
  template <std::size_t N>
  constexpr explicit counter_in(const char (&)[N]) noexcept {}
  constexpr explicit counter_in(name) noexcept {}
  constexpr explicit counter_in(const detail::site&) noexcept {}
  void record(double) const noexcept {}
};

using counter = counter_in<>;

// ---------------------------------------------------------------------------
// Threads, run metadata, control

/// Names the calling thread in the output (copied; call any time).
inline void set_thread_name(std::string_view thread_name) noexcept {
#if FERRET_ENABLED
  if (const detail::runtime_api* api = detail::runtime())
    api->set_thread_name(&detail::t_buffer, thread_name.data(), thread_name.size());
#else
  static_cast<void>(thread_name);
#endif
}

/// Key/value facts about the run (problem size, input file, ...), written
/// with the trace's metadata. A later value for the same key replaces the earlier.
inline void set_metadata(std::string_view key, std::string_view value) noexcept {
#if FERRET_ENABLED
  if (const detail::runtime_api* api = detail::runtime())
    api->set_metadata_string(key.data(), key.size(), value.data(), value.size());
#else
  static_cast<void>(key);
  static_cast<void>(value);
#endif
}
inline void set_metadata(std::string_view key, const char* value) noexcept {
  set_metadata(key, std::string_view{value});
}
template <class T, std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, int> = 0>
inline void set_metadata(std::string_view key, T value) noexcept {
#if FERRET_ENABLED
  if (const detail::runtime_api* api = detail::runtime()) {
    if constexpr (std::is_integral_v<T>) {
      // Exact where the runtime takes integers as they are (2^53 + 1, UINT64_MAX).
      if (api->size >= offsetof(detail::runtime_api, set_metadata_integer) +
                           sizeof api->set_metadata_integer) {
        api->set_metadata_integer(key.data(), key.size(),
                                  std::is_signed_v<T> ? static_cast<std::uint64_t>(static_cast<std::int64_t>(value))
                                                      : static_cast<std::uint64_t>(value),
                                  std::is_signed_v<T>);
        return;
      }
    }
    api->set_metadata_number(key.data(), key.size(), static_cast<double>(value),
                             std::is_integral_v<T>);
  }
#else
  static_cast<void>(key);
  static_cast<void>(value);
#endif
}

/// Drains every thread's buffered events to the backends now (they are also
/// drained in the background and at exit).
inline void flush() noexcept {
#if FERRET_ENABLED
  if (const detail::runtime_api* api = detail::runtime()) api->flush();
#endif
}

/// Stops and restarts recording for the whole process (all annotated shared
/// objects), e.g. to skip a warm-up phase. Paused annotations cost what
/// annotations cost with no backend: one load and one branch.
inline void pause() noexcept {
#if FERRET_ENABLED
  if (const detail::runtime_api* api = detail::runtime()) api->set_recording(false);
#endif
}
inline void resume() noexcept {
#if FERRET_ENABLED
  if (const detail::runtime_api* api = detail::runtime()) api->set_recording(true);
#endif
}

// ---------------------------------------------------------------------------
// Data objects: named memory ranges, so that transfers can be attributed to
// the arrays they move.

/// Names [address, address + bytes) until unregister_data_object. `device` is
/// the device ordinal for device/managed memory, -1 for host memory. Ranges may
/// nest (an array inside a pool); a lookup finds the innermost. A range that
/// partially overlaps a live one is refused with a message.
inline data_object_id register_data_object(std::string_view object_name, const void* address,
                                           std::size_t bytes,
                                           memory_kind memory = memory_kind::host,
                                           int device = -1) noexcept {
#if FERRET_ENABLED
  if (const detail::runtime_api* api = detail::runtime())
    return api->register_data_object(object_name.data(), object_name.size(), address, bytes,
                                     memory, device);
#endif
  static_cast<void>(object_name);
  static_cast<void>(address);
  static_cast<void>(bytes);
  static_cast<void>(memory);
  static_cast<void>(device);
  return 0;
}

inline void unregister_data_object(data_object_id id) noexcept {
#if FERRET_ENABLED
  if (id == 0) return;
  if (const detail::runtime_api* api = detail::runtime()) api->unregister_data_object(id);
#else
  static_cast<void>(id);
#endif
}

/// Unregisters the live data object that starts at `address`, if any.
inline void unregister_data_object_at(const void* address) noexcept {
#if FERRET_ENABLED
  if (const detail::runtime_api* api = detail::runtime()) api->unregister_data_object_at(address);
#else
  static_cast<void>(address);
#endif
}

/// RAII data object: registered on construction, unregistered on destruction.
#if FERRET_ENABLED
class data_object {
 public:
  // [[nodiscard]]: without a variable it would be unregistered at once.
  [[nodiscard]] data_object(std::string_view object_name, const void* address, std::size_t bytes,
                            memory_kind memory = memory_kind::host, int device = -1) noexcept
      : id_(register_data_object(object_name, address, bytes, memory, device)) {}
  ~data_object() { unregister_data_object(id_); }
  data_object(const data_object&) = delete;
  data_object& operator=(const data_object&) = delete;
  data_object(data_object&& other) noexcept : id_(std::exchange(other.id_, 0)) {}
  data_object& operator=(data_object&& other) noexcept {
    if (this != &other) {
      unregister_data_object(id_);
      id_ = std::exchange(other.id_, 0);
    }
    return *this;
  }
  data_object_id id() const noexcept { return id_; }

 private:
  data_object_id id_ = 0;
};
#else
// Constant-initialised and trivially destructible, as the disabled region.
class [[gnu::unused]] data_object {
 public:
  [[nodiscard]] constexpr data_object(std::string_view, const void*, std::size_t,
                                      memory_kind = memory_kind::host, int = -1) noexcept {}
  data_object(const data_object&) = delete;
  data_object& operator=(const data_object&) = delete;
  data_object(data_object&&) noexcept = default;
  data_object& operator=(data_object&&) noexcept = default;
  constexpr data_object_id id() const noexcept { return 0; }
};
#endif

}  // namespace FERRET_CONFIGURATION
}  // namespace ferret

// ---------------------------------------------------------------------------
// Macros. Each call site gets a static record, so the hot path stores only its
// address and names are never copied or hashed while the program runs.

#if FERRET_ENABLED
#define FERRET_DETAIL_SITE(var, Domain, name_literal, function)                    \
  static constexpr ::ferret::detail::site var {                                    \
    name_literal, ::ferret::domain_name<Domain>, function, __FILE__, __LINE__, 0u \
  }
#define FERRET_DETAIL_REGION(id, Domain, name_literal, function)                       \
  FERRET_DETAIL_SITE(FERRET_CONCAT(ferret_site_, id), Domain, name_literal, function); \
  const ::ferret::region_in<Domain> FERRET_CONCAT(ferret_region_, id) {                \
    FERRET_CONCAT(ferret_site_, id)                                                    \
  }
#define FERRET_DETAIL_MARK(id, Domain, name_literal)                                   \
  do {                                                                                 \
    FERRET_DETAIL_SITE(FERRET_CONCAT(ferret_site_, id), Domain, name_literal, nullptr); \
    ::ferret::detail::write_named<Domain>(&FERRET_CONCAT(ferret_site_, id),             \
                                          ::ferret::detail::kind_mark);                  \
  } while (false)
// The value is evaluated only when the domain is enabled and recording is on.
#define FERRET_DETAIL_COUNTER(id, Domain, name_literal, value)                             \
  do {                                                                                   \
    if constexpr (::ferret::domain_enabled<Domain>) {                                    \
      FERRET_DETAIL_SITE(FERRET_CONCAT(ferret_site_, id), Domain, name_literal, nullptr); \
      if (::ferret::detail::recording())                                                 \
        ::ferret::counter_in<Domain>{FERRET_CONCAT(ferret_site_, id)}.record(value);      \
    }                                                                                    \
  } while (false)

/// A region from here to the end of the enclosing scope.
#define FERRET_REGION(name_literal) FERRET_REGION_IN(::ferret::default_domain, name_literal)
#define FERRET_REGION_IN(Domain, name_literal) \
  FERRET_DETAIL_REGION(__COUNTER__, Domain, name_literal, __PRETTY_FUNCTION__)
/// A region named after the enclosing function, with its file and line.
#define FERRET_FUNCTION() FERRET_FUNCTION_IN(::ferret::default_domain)
#define FERRET_FUNCTION_IN(Domain) \
  FERRET_DETAIL_REGION(__COUNTER__, Domain, __func__, __PRETTY_FUNCTION__)
/// An instant event.
#define FERRET_MARK(name_literal) FERRET_MARK_IN(::ferret::default_domain, name_literal)
#define FERRET_MARK_IN(Domain, name_literal) FERRET_DETAIL_MARK(__COUNTER__, Domain, name_literal)
/// A counter sample. `value` is evaluated only while recording.
#define FERRET_COUNTER(name_literal, value) \
  FERRET_COUNTER_IN(::ferret::default_domain, name_literal, value)
#define FERRET_COUNTER_IN(Domain, name_literal, value) \
  FERRET_DETAIL_COUNTER(__COUNTER__, Domain, name_literal, value)
#else
#define FERRET_REGION(name_literal) static_cast<void>(0)
#define FERRET_REGION_IN(Domain, name_literal) static_cast<void>(0)
#define FERRET_FUNCTION() static_cast<void>(0)
#define FERRET_FUNCTION_IN(Domain) static_cast<void>(0)
#define FERRET_MARK(name_literal) static_cast<void>(0)
#define FERRET_MARK_IN(Domain, name_literal) static_cast<void>(0)
#define FERRET_COUNTER(name_literal, value) static_cast<void>(0)
#define FERRET_COUNTER_IN(Domain, name_literal, value) static_cast<void>(0)
#endif
