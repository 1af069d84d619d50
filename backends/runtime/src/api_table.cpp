// api_table.cpp — the function table annotated code attaches to, and the
// runtime's public functions.

#include <algorithm>
#include <cmath>

#include "registry.hpp"
#include "runtime_state.hpp"

namespace ferret::runtime::internal {
namespace {

// Nothing may throw across the function table handed to annotated code. A
// call that finds the runtime busy on its thread comes from a signal handler
// that interrupted it: it returns `fallback` rather than wait for locks (or
// the allocator) that the interrupted code holds.
template <class F>
auto guarded(F&& body, decltype(body()) fallback) noexcept -> decltype(body()) {
  if (t_runtime_busy != 0) return fallback;
  const runtime_section section;
  try {
    return body();
  } catch (...) {
    return fallback;
  }
}

template <class F>
void guarded(F&& body) noexcept {
  guarded([&] { return body(), true; }, false);
}

runtime_state& rt() { return runtime_state::instance(); }

// A number the caller says is an integer: exact where it is one within 64
// bits (a cast of anything else would be undefined), else the double it is.
metadata_value integral_value(double value) {
  constexpr double two_to_63 = 9223372036854775808.0;
  if (std::trunc(value) != value || value < -two_to_63 || value >= 2 * two_to_63) return value;
  if (value < two_to_63) return static_cast<std::int64_t>(value);
  return static_cast<std::uint64_t>(value);
}

const detail::runtime_api api_table{
    detail::abi_version,
    sizeof(detail::runtime_api),
    [](thread_buffer** slot, std::uint64_t word, std::uint64_t extra, unsigned slots) noexcept {
      if (t_runtime_busy != 0) return rt().drop_reentrant();  // counted: an event
      guarded([&] { rt().write(slot, word, extra, slots); });
    },
    [](thread_buffer** slot, const char* literal, const char* domain) noexcept -> const site* {
      if (t_runtime_busy != 0) {
        rt().drop_reentrant();  // the annotation writes nothing without a site
        return nullptr;
      }
      return guarded([&] { return rt().intern_literal(slot, literal, domain); }, nullptr);
    },
    [](const char* name, std::size_t length, const char* domain) noexcept {
      return guarded([&] { return rt().register_name({name, length}, domain); }, nullptr);
    },
    [](thread_buffer** slot, const char* name, std::size_t length) noexcept {
      guarded([&] { rt().set_thread_name(slot, {name, length}); });
    },
    [](const char* key, std::size_t key_length, const char* value, std::size_t value_length) noexcept {
      guarded([&] { rt().set_metadata({key, key_length}, std::string{value, value_length}); });
    },
    [](const char* key, std::size_t key_length, double value, bool is_integer) noexcept {
      guarded([&] {
        rt().set_metadata({key, key_length},
                          is_integer ? integral_value(value) : metadata_value{value});
      });
    },
    [](const char* name, std::size_t length, const void* address, std::size_t bytes,
       memory_kind memory, int device) noexcept {
      return guarded(
          [&] { return rt().register_object({name, length}, address, bytes, memory, device); },
          std::uint64_t{0});
    },
    [](std::uint64_t id) noexcept { guarded([&] { rt().unregister_object(id); }); },
    [](const void* address) noexcept { guarded([&] { rt().unregister_object_at(address); }); },
    []() noexcept { guarded([] { rt().flush(); }); },
    [](bool on) noexcept { guarded([&] { rt().set_recording(on); }); },
    // Never skipped: after it nothing may touch the object's flag or slots.
    [](std::atomic<std::uint8_t>* mode_flag) noexcept {
      const runtime_section section;
      try {
        rt().detach(mode_flag);
      } catch (...) {
      }
    },
    [](const char* key, std::size_t key_length, std::uint64_t bits, bool is_signed) noexcept {
      guarded([&] {
        constexpr auto largest_signed = static_cast<std::uint64_t>(INT64_MAX);
        rt().set_metadata({key, key_length}, is_signed || bits <= largest_signed
                                                 ? metadata_value{static_cast<std::int64_t>(bits)}
                                                 : metadata_value{bits});
      });
    },
};

}  // namespace

const detail::runtime_api* runtime_state::attach(std::atomic<std::uint8_t>* flag) {
  ensure_initialized();
  attached_.store(true, std::memory_order_relaxed);
  // Untraced (no backend, or none could start), the object gets no table: its
  // data objects, metadata and thread names then cost what they cost without
  // a runtime (no call, no allocation, no lock), as its annotations do. Only
  // a session (or a fork child's, started at its first event) ever records.
  if (current_.load(std::memory_order_acquire) == nullptr && !restart_on_first_event_.load())
    return nullptr;
  {
    std::lock_guard lock{flags_mutex_};
    if (std::find(flags_.begin(), flags_.end(), flag) == flags_.end()) flags_.push_back(flag);
  }
  publish_mode();
  return &api_table;
}

}  // namespace ferret::runtime::internal

namespace ferret::runtime {

std::optional<data_object_info> find_data_object(const void* address) {
  return internal::rt().find_object(address);
}

std::vector<std::string> available_backends() { return internal::available_backends(); }

data_object_ref find_data_object_ref(const void* address) noexcept {
  try {
    return internal::rt().find_object_ref(address);
  } catch (...) {
    return {};
  }
}

bool session_active() noexcept {
  try {
    return internal::rt().session_active();
  } catch (...) {
    return false;
  }
}

void print_message(std::string_view line) noexcept { internal::message("{}", line); }

int verbosity() noexcept {
  try {
    internal::rt().ensure_initialized();
    return internal::rt().configuration().verbose;
  } catch (...) {
    return 1;
  }
}

std::uint64_t register_allocation(std::string_view api, std::uint64_t correlation,
                                  const void* address, std::size_t bytes, memory_kind memory,
                                  int device) noexcept {
  try {
    return internal::rt().register_allocation(api, correlation, address, bytes, memory, device);
  } catch (...) {
    return 0;
  }
}

void unregister_allocation(const void* address) noexcept {
  try {
    internal::rt().unregister_object_at(address);
  } catch (...) {
  }
}

std::int64_t monotonic_raw_ns() noexcept {
  return internal::monotonic_raw_ns() + internal::test_clock_offset_ns();
}

std::uint64_t clock_reading() noexcept { return internal::rt().clock_reading(); }

void set_thread_idle_since(std::uint64_t tid, std::uint64_t time) noexcept {
  // Called from a collector's collect(), inside the drain: runtime code
  // already, so not through guarded(), which would take it for a reentry.
  try {
    internal::rt().set_thread_idle_since(tid, time);
  } catch (...) {
  }
}

void write_event_at(detail::thread_buffer** slot, std::uint64_t word, std::uint64_t time) noexcept {
  if (internal::t_runtime_busy != 0) return internal::rt().drop_reentrant();
  internal::guarded([&] { internal::rt().write(slot, word, 0, 1, &time); });
}

bool register_collector(collector* source) {
  return internal::rt().add_collector(source);
}

namespace {
std::atomic<bool> g_process_group_expected{false};
}

void expect_process_group() noexcept { g_process_group_expected.store(true); }

bool process_group_expected() noexcept { return g_process_group_expected.load(); }

void join_process_group(process_group& group) noexcept {
  try {
    internal::rt().join_process_group(group);
  } catch (...) {
    internal::message("the process group (rank {}) could not be joined", group.rank());
  }
}

void end_session() noexcept {
  try {
    internal::rt().finish(false);
  } catch (...) {
  }
}

}  // namespace ferret::runtime

extern "C" FERRET_EXPORT const ferret::detail::runtime_api* ferret_runtime_attach_v1(
    std::uint32_t abi_version, std::atomic<std::uint8_t>* mode_flag) noexcept {
  if (abi_version != ferret::detail::abi_version) return nullptr;
  try {
    return ferret::runtime::internal::rt().attach(mode_flag);
  } catch (...) {
    return nullptr;
  }
}
