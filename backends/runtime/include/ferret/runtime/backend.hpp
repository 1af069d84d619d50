// ferret/runtime/backend.hpp — what a backend (an output format) implements.
//
// The runtime drains the per-thread buffers (in its background thread, when a
// buffer fills, at ferret::flush() and at exit), converts timestamps to
// nanoseconds since the process start, resolves names, and hands each backend
// batches of records. All calls into one backend are serialised by the runtime:
// a backend needs no locking of its own.
//
// A backend registers a factory under its name from a static initializer of its
// shared library (see FERRET_REGISTER_BACKEND); FERRET_BACKEND selects it.
#pragma once

#include "ferret/detail/abi.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ferret/runtime/settings.hpp"  // FERRET_EXPORT

namespace ferret::runtime {

using ferret::detail::memory_kind;

FERRET_EXPORT std::string_view to_string(memory_kind memory) noexcept;

/// A region, mark or counter name with where it came from. `id` is dense
/// (0, 1, 2, ... in order of first appearance), for backends that keep tables.
struct name_info {
  std::uint32_t id;
  std::string name;
  std::string domain;    // empty for the default domain
  std::string function;  // empty unless from FERRET_FUNCTION/FERRET_REGION
  std::string file;
  std::uint32_t line;
};

enum class record_kind : std::uint8_t { region_begin, region_end, mark, counter };

/// One event of one thread. Records of a thread arrive in the order the
/// thread wrote them (which is time order).
struct record {
  std::int64_t time_ns;  // since the process start (session_info::start_monotonic_raw_ns)
  record_kind kind;
  const name_info* name;
  double value;  // counters only
};

struct thread_info {
  std::uint32_t pid;
  std::uint64_t tid;     // kernel thread id (never 0)
  std::string_view name; // set with ferret::set_thread_name, else empty
  bool is_main;          // tid == pid
};

struct data_object_info {
  std::uint64_t id;
  std::string name;
  std::uintptr_t address;
  std::size_t bytes;
  memory_kind memory;
  int device;  // -1 for host memory
};

enum class data_object_change : std::uint8_t { registered, unregistered };

struct data_object_event {
  std::int64_t time_ns;
  data_object_change change;
  std::uint64_t tid;  // thread that (un)registered it
  const data_object_info* object;
};

using metadata_value = std::variant<std::string, std::int64_t, double>;
using metadata_list = std::vector<std::pair<std::string, metadata_value>>;

/// Facts fixed when the session starts.
struct session_info {
  std::uint32_t pid;
  std::string hostname;
  std::string executable;     // base name of /proc/self/exe
  std::string command_line;   // arguments joined by spaces
  std::string clock_source;   // "tsc", "cntvct" or "CLOCK_MONOTONIC_RAW"
  std::int64_t start_monotonic_raw_ns;  // time zero: the runtime's load (process start, or
                                        // the fork in a child) on CLOCK_MONOTONIC_RAW
  std::int64_t start_realtime_ns;       // the same instant on CLOCK_REALTIME
  std::string ferret_version;
};

/// What the runtime knows at a flush: run metadata and loss accounting.
/// Every flush passes the latest values.
struct session_status {
  const metadata_list* runtime_metadata;  // clock frequency, buffer size, ...
  const metadata_list* user_metadata;     // from ferret::set_metadata, unique keys
  std::uint64_t events_recorded;
  std::uint64_t events_dropped;  // events that could not be kept (see docs)
  bool final;                    // true for the last call: close the output
};

/// Everything a factory needs to create a backend.
struct backend_context {
  const session_info* session;
  // The output path from FERRET_OUTPUT, with %p/%h/%e expanded; a directory
  // when it ends in '/' or names an existing directory. Use output_file().
  std::string output;
  bool output_is_directory;
};

/// The file a backend writes: `<directory>/ferret-<exe>-<pid><extension>` for
/// a directory; the path itself if it already ends in `extension`; otherwise
/// the path with its extension replaced by (or extended with) `extension`.
FERRET_EXPORT std::string output_file(const backend_context& context, std::string_view extension);

class backend {
 public:
  virtual ~backend() = default;
  /// Records of one thread, in its order. `records` is valid for the call only.
  virtual void thread_records(const thread_info& thread, const record* records,
                              std::size_t count) = 0;
  /// Data-object lifetimes, in the order they happened.
  virtual void data_object(const data_object_event& event) = 0;
  /// Called after every drain: write what is buffered so that the output on
  /// disk is as complete as it can be; with status.final, finish and close.
  virtual void flush(const session_status& status) = 0;
  /// In a fork() child: release resources without writing anything (the
  /// parent owns the output).
  virtual void abandon() noexcept = 0;
  /// One line for the exit summary, e.g. "chrome trace: ferret-app-42.json".
  virtual std::string describe() const = 0;
};

/// Creates a backend; on failure returns nullptr and sets `error` to one line.
using backend_factory = std::unique_ptr<backend> (*)(const backend_context& context,
                                                     std::string& error);

/// Makes a backend selectable by name. Returns true (for static initialisers).
FERRET_EXPORT bool register_backend(std::string_view name, std::string_view description,
                      backend_factory factory);

}  // namespace ferret::runtime

/// Registers `factory` under `name` when the backend's library is loaded.
#define FERRET_REGISTER_BACKEND(name, description, factory)                          \
  [[maybe_unused]] static const bool FERRET_CONCAT(ferret_backend_registered_, __LINE__) = \
      ::ferret::runtime::register_backend(name, description, factory)
