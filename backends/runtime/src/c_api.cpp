// c_api.cpp — ferret/c_api.h: the annotation API as extern "C" functions, on
// top of the header's own hot path (this library attaches to itself).
#include "ferret/c_api.h"

#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>

#include "ferret/ferret.hpp"
#include "ferret/runtime/settings.hpp"  // FERRET_EXPORT

namespace ferret::runtime::internal {
namespace {

// Site records made from C strings: the runtime reads a site's strings when
// it drains, so they are copied here and kept for the process lifetime.
class c_names {
 public:
  const detail::site* get(const char* name, const char* domain, const char* function,
                          const char* file, std::uint32_t line) {
    const auto text = [](const char* s) { return s != nullptr ? std::string{s} : std::string{}; };
    std::lock_guard lock{mutex_};
    const auto key = std::make_tuple(text(name), text(domain), text(function), text(file), line);
    const auto found = sites_.find(key);
    if (found != sites_.end()) return found->second;
    const auto kept = [this](const std::string& s) -> const char* {
      return s.empty() ? nullptr : strings_.insert(s).first->c_str();
    };
    detail::site& made = records_.emplace_back(
        detail::site{strings_.insert(std::get<0>(key)).first->c_str(), kept(std::get<1>(key)),
                     kept(std::get<2>(key)), kept(std::get<3>(key)), line, 0});
    sites_.emplace(key, &made);
    return &made;
  }

 private:
  std::mutex mutex_;
  std::set<std::string> strings_;  // node-based: c_str() stays valid
  std::deque<detail::site> records_;
  std::map<std::tuple<std::string, std::string, std::string, std::string, std::uint32_t>,
           const detail::site*>
      sites_;
};

c_names& names() {
  static auto* instance = new c_names;  // leaked: names outlive static destruction
  return *instance;
}

ferret::name handle(const void* name) { return ferret::name{static_cast<const detail::site*>(name)}; }

}  // namespace
}  // namespace ferret::runtime::internal

using ferret::runtime::internal::handle;

extern "C" {

FERRET_EXPORT int ferret_c_api_version(void) { return FERRET_C_API_VERSION; }

FERRET_EXPORT int ferret_recording(void) {
  ferret::detail::runtime();  // attaches on first use, which sets the mode
  return ferret::detail::g_mode.load(std::memory_order_relaxed) == ferret::detail::mode_recording;
}

FERRET_EXPORT const void* ferret_name(const char* name, const char* domain, const char* function,
                                      const char* file, uint32_t line) {
  if (name == nullptr) return nullptr;
  try {
    return ferret::runtime::internal::names().get(name, domain, function, file, line);
  } catch (...) {
    return nullptr;
  }
}

FERRET_EXPORT void ferret_region_begin(const void* name) { ferret::begin(handle(name)); }
FERRET_EXPORT void ferret_region_end(const void* name) { ferret::end(handle(name)); }
FERRET_EXPORT void ferret_mark(const void* name) { ferret::mark(handle(name)); }

FERRET_EXPORT void ferret_counter_record(const void* name, double value) {
  if (name != nullptr) ferret::counter{handle(name)}.record(value);
}

FERRET_EXPORT uint64_t ferret_data_object_register(const char* name, uintptr_t address,
                                                   size_t bytes, int memory_kind, int device) {
  if (name == nullptr || memory_kind < 0 || memory_kind > 3) return 0;
  return ferret::register_data_object(name, reinterpret_cast<const void*>(address), bytes,
                                      static_cast<ferret::memory_kind>(memory_kind), device);
}

FERRET_EXPORT void ferret_data_object_unregister(uint64_t id) { ferret::unregister_data_object(id); }

FERRET_EXPORT void ferret_set_thread_name(const char* name) {
  if (name != nullptr) ferret::set_thread_name(name);
}

FERRET_EXPORT void ferret_set_metadata_string(const char* key, const char* value) {
  if (key != nullptr && value != nullptr)
    ferret::set_metadata(key, std::string_view{value});
}

FERRET_EXPORT void ferret_set_metadata_number(const char* key, double value, int is_integer) {
  if (key == nullptr) return;
  // An integer where the value is one within 64 bits (casting anything else
  // is undefined: 2^63 became INT64_MIN), else the double it is.
  constexpr double two_to_63 = 9223372036854775808.0;
  if (is_integer != 0 && std::trunc(value) == value && value >= -two_to_63 &&
      value < 2 * two_to_63) {
    if (value < two_to_63)
      ferret::set_metadata(key, static_cast<long long>(value));
    else
      ferret::set_metadata(key, static_cast<unsigned long long>(value));
  } else {
    ferret::set_metadata(key, value);
  }
}

FERRET_EXPORT void ferret_set_metadata_integer(const char* key, uint64_t bits, int is_signed) {
  if (key == nullptr) return;
  if (is_signed != 0)
    ferret::set_metadata(key, static_cast<long long>(bits));
  else
    ferret::set_metadata(key, static_cast<unsigned long long>(bits));
}

FERRET_EXPORT void ferret_flush(void) { ferret::flush(); }
FERRET_EXPORT void ferret_pause(void) { ferret::pause(); }
FERRET_EXPORT void ferret_resume(void) { ferret::resume(); }

}  // extern "C"
