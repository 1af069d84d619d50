// cupti_subscriber.hpp — the least a CUPTI tracing tool does, as a yardstick
// for ferret's collector: activity buffers of 8 MiB from a small pool, the
// chosen activity kinds enabled, records counted (not decoded) when CUPTI
// hands a buffer back, and optionally an API callback that only counts, for
// every function of the runtime and/or driver domain, for the runtime's
// launches alone, or for exactly the calls ferret's collector subscribes to
// by default (its api_table).
#pragma once

#include <cupti.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ferret_bench {

struct cupti_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct named_activity_kind {
  std::string_view name;  // as given to --kinds
  CUpti_ActivityKind kind;
  bool in_all;     // --kinds=all: what a tracing tool records (runtime and driver API included)
  bool in_ferret;  // --kinds=ferret: what ferret's collector enables
};

// The kinds, in the order --kinds lists them.
inline constexpr std::array<named_activity_kind, 11> activity_kinds{{
    {"kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, true, true},
    {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY, true, true},
    {"memcpy2", CUPTI_ACTIVITY_KIND_MEMCPY2, false, true},
    {"memset", CUPTI_ACTIVITY_KIND_MEMSET, true, true},
    {"memory2", CUPTI_ACTIVITY_KIND_MEMORY2, true, true},
    {"sync", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, true, true},
    {"runtime", CUPTI_ACTIVITY_KIND_RUNTIME, true, false},
    {"driver", CUPTI_ACTIVITY_KIND_DRIVER, true, false},
    {"device", CUPTI_ACTIVITY_KIND_DEVICE, false, true},
    {"context", CUPTI_ACTIVITY_KIND_CONTEXT, false, true},
    {"overhead", CUPTI_ACTIVITY_KIND_OVERHEAD, true, true},
}};

// The --kinds name of `kind`, or "kind<number>" for the others.
std::string activity_kind_name(CUpti_ActivityKind kind);

// Which API calls get the counting callback.
enum class callback_set {
  none,
  runtime,  // every runtime function
  driver,   // every driver function
  both,
  launch,   // the runtime's launches alone: the least a tracer needs to correlate kernels
  ferret,   // what ferret's collector subscribes to with FERRET_CUDA_API=work
  // The driver domain alone (issue 27: does leaving the runtime domain
  // unsubscribed spare every runtime call CUPTI's dispatch, and do kernel
  // records still carry a correlation id a callback saw?):
  driver_launch,  // the driver's launches (the runtime launches through them)
  driver_ferret,  // the driver calls ferret's collector lists
  // No callback at all (issue 27: does CUPTI's own recording of a call cost
  // less than a callback?): activity records of the driver's launch calls
  // alone (cuptiActivityEnableDriverApi), optionally with an external
  // correlation id pushed once, as a tracer that pushes one at each context
  // change would in a loop whose context never changes.
  driver_launch_records,
  driver_launch_records_external,
};

struct cupti_counts {
  std::uint64_t records = 0;
  std::uint64_t dropped = 0;
  std::uint64_t api_callbacks = 0;  // enter and exit each count
  std::array<std::uint64_t, CUPTI_ACTIVITY_KIND_COUNT> records_by_kind{};
  std::size_t buffers_allocated = 0;
  std::size_t buffers_declined = 0;  // requests refused because the pool was spent
  std::size_t callbacks_refused = 0;  // callback ids cuptiEnableCallback refused
  // Kernel records whose correlation id an enter callback of a launch call saw
  // (any domain): whether the callbacks can join the kernels to their calls.
  std::uint64_t kernels_joined = 0;
};

// Records minus the earlier snapshot's (dropped and buffers stay totals).
cupti_counts records_since(const cupti_counts& now, const cupti_counts& earlier);

// One subscriber per process (CUPTI allows only one before CUDA 13.3).
// Throws cupti_failure when CUPTI refuses, e.g. another tool already subscribed.
void start_cupti(const std::vector<CUpti_ActivityKind>& kinds, callback_set callbacks);

// Forces CUPTI to hand back every buffer, incomplete ones too, and returns the
// counts so far. Synchronise the device first for complete records.
cupti_counts flush_cupti();

// The CUPTI version as "<api version>".
std::string cupti_version();

}  // namespace ferret_bench
