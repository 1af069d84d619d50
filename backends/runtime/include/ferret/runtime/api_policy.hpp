// ferret/runtime/api_policy.hpp — which calls of a GPU programming interface
// (CUDA, Level Zero, ...) a collector records, counts or leaves alone.
//
// A trace of a real program is mostly API calls that move nothing: PyTorch
// calls cudaGetDevice about six times per operation. So a collector classifies
// every call of its interface by what it does to GPU work (api_effect, one
// table per interface, each row with its reason) and FERRET_<API>_API picks
// what happens to each class (api_recording):
//
//   effect                         work (default)   work-uncounted   all
//   launch ... order               region           region           region
//   other (queries, properties)    counted          not subscribed   region
//   internal (parts of a launch)   not subscribed   not subscribed   region
//
// A counted call costs the vendor's callback and one increment, no event; a
// call not subscribed to costs nothing. Counts reach the run metadata as
// "<collector>-api-unrecorded:<call>" (the summary backend tables them).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ferret::runtime {

/// What an API call does to GPU work.
enum class api_effect : std::uint8_t {
  launch,       // starts kernels, graphs or host functions in a stream
  copy,         // moves bytes, prefetches or discards memory
  set,          // fills memory
  allocate,     // device, managed, pinned or pooled memory; pins host memory
  release,      // frees what the above allocated
  synchronize,  // the host waits for device work: blocking, or polling (queries)
  order,        // orders work between streams (events recorded and waited for) or captures it
  other,        // properties, attributes, handles, error codes: no device work
  internal,     // a step of a call recorded by itself (compiler-generated launch code)
};

/// The FERRET_<API>_API setting.
enum class api_recording : std::uint8_t {
  work,            // regions for launch ... order; other calls counted
  work_uncounted,  // regions for launch ... order; nothing else subscribed to
  all,             // a region for every call
};

/// True when a call of `effect` becomes a region.
constexpr bool records(api_recording recording, api_effect effect) noexcept {
  return recording == api_recording::all ||
         (effect != api_effect::other && effect != api_effect::internal);
}

/// True when a call of `effect` is counted, not recorded.
constexpr bool counts(api_recording recording, api_effect effect) noexcept {
  return recording == api_recording::work && effect == api_effect::other;
}

/// True when the collector needs the call's callback at all.
constexpr bool subscribes(api_recording recording, api_effect effect) noexcept {
  return records(recording, effect) || counts(recording, effect);
}

/// "work", "work-uncounted" or "all" (blanks around it ignored); nullopt for anything else.
constexpr std::optional<api_recording> parse_api_recording(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  if (text == "work") return api_recording::work;
  if (text == "work-uncounted") return api_recording::work_uncounted;
  if (text == "all") return api_recording::all;
  return std::nullopt;
}

constexpr std::string_view to_string(api_recording recording) noexcept {
  switch (recording) {
    case api_recording::work: return "work";
    case api_recording::work_uncounted: return "work-uncounted";
    case api_recording::all: return "all";
  }
  return "work";
}

/// What FERRET_<API>_API accepts, for the settings table and error messages.
inline constexpr std::string_view api_recording_values = "work, work-uncounted or all";

/// The infix of the metadata keys of counted calls: "<collector>-api-unrecorded:<call>".
inline constexpr std::string_view api_unrecorded_infix = "-api-unrecorded:";

}  // namespace ferret::runtime
