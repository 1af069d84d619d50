// cupti_subscriber.cpp — see cupti_subscriber.hpp.
#include "cupti_subscriber.hpp"

#include <atomic>
#include <memory>
#include <mutex>

#include "api_table.hpp"

namespace ferret_bench {
namespace {

// CUPTI's recommendation is 1-10 MB. A storm of 100k launches with every kind
// enabled should fill four or five (estimated: a kernel, a runtime and a driver
// record per launch, some 350 bytes).
constexpr std::size_t buffer_bytes = std::size_t{8} << 20;
constexpr std::size_t buffers_at_start = 4;
constexpr std::size_t buffer_limit = 16;

// Correlation ids seen by launch callbacks, one bit each (ids are dense and
// start at 1; a run makes far fewer than this many calls).
constexpr std::size_t tracked_correlations = std::size_t{1} << 26;

struct subscriber_state {
  std::mutex mutex;  // guards everything below but api_callbacks
  std::vector<std::unique_ptr<std::uint8_t[]>> buffers;
  std::vector<std::uint8_t*> free_buffers;
  cupti_counts counts;
  std::atomic<std::uint64_t> api_callbacks{0};
  std::unique_ptr<std::atomic<std::uint64_t>[]> launched =
      std::make_unique<std::atomic<std::uint64_t>[]>(tracked_correlations / 64);
  std::vector<bool> launch_ids[2];  // by domain (runtime 0, driver 1), callback id
};

// Never destroyed: CUPTI may hand buffers back while the process exits.
subscriber_state& state() {
  static auto* const the_state = new subscriber_state;
  return *the_state;
}

void check(CUptiResult result, const char* call) {
  if (result == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  throw cupti_failure(std::string(call) + " failed: " + (text != nullptr ? text : "unknown error"));
}

// Called with the state's mutex held.
std::uint8_t* allocate_buffer(subscriber_state& s) {
  s.buffers.emplace_back(new std::uint8_t[buffer_bytes]);
  ++s.counts.buffers_allocated;
  return s.buffers.back().get();
}

void CUPTIAPI give_buffer(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  subscriber_state& s = state();
  const std::lock_guard lock(s.mutex);
  *max_records = 0;  // as many as fit
  if (!s.free_buffers.empty()) {
    *buffer = s.free_buffers.back();
    s.free_buffers.pop_back();
  } else if (s.buffers.size() < buffer_limit) {
    *buffer = allocate_buffer(s);
  } else {
    // Declining makes CUPTI drop records, which it counts: memory stays bounded.
    *buffer = nullptr;
    ++s.counts.buffers_declined;
  }
  *size = *buffer != nullptr ? buffer_bytes : 0;
}

void CUPTIAPI take_buffer(CUcontext context, std::uint32_t stream, std::uint8_t* buffer,
                          std::size_t, std::size_t valid_bytes) {
  std::array<std::uint64_t, CUPTI_ACTIVITY_KIND_COUNT> by_kind{};
  std::uint64_t records = 0, joined = 0;
  CUpti_Activity* record = nullptr;
  subscriber_state& s = state();
  while (cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
    ++records;
    if (record->kind < CUPTI_ACTIVITY_KIND_COUNT) ++by_kind[record->kind];
    if (record->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
      // A launch call's record (driver_launch_records): its id joins its kernel.
      const auto* call = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      const std::vector<bool>& launches = s.launch_ids[1];
      if (call->cbid < launches.size() && launches[call->cbid] && call->correlationId < tracked_correlations)
        s.launched[call->correlationId / 64].fetch_or(std::uint64_t{1} << (call->correlationId % 64),
                                                      std::memory_order_relaxed);
    }
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const std::uint32_t id = reinterpret_cast<const CUpti_ActivityKernel10*>(record)->correlationId;
      if (id < tracked_correlations &&
          (s.launched[id / 64].load(std::memory_order_relaxed) >> (id % 64) & 1U) != 0)
        ++joined;
    }
  }
  std::size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(context, stream, &dropped);

  const std::lock_guard lock(s.mutex);
  s.counts.records += records;
  s.counts.kernels_joined += joined;
  for (std::size_t kind = 0; kind < by_kind.size(); ++kind)
    s.counts.records_by_kind[kind] += by_kind[kind];
  s.counts.dropped += dropped;
  s.free_buffers.push_back(buffer);
}

void CUPTIAPI count_api_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  subscriber_state& s = state();
  s.api_callbacks.fetch_add(1, std::memory_order_relaxed);
  const std::vector<bool>& launches = s.launch_ids[domain == CUPTI_CB_DOMAIN_DRIVER_API ? 1 : 0];
  if (id >= launches.size() || !launches[id]) return;
  const auto* call = static_cast<const CUpti_CallbackData*>(data);
  if (call->callbackSite != CUPTI_API_ENTER || call->correlationId >= tracked_correlations) return;
  s.launched[call->correlationId / 64].fetch_or(std::uint64_t{1} << (call->correlationId % 64),
                                                std::memory_order_relaxed);
}

// Activity records for the driver's launch calls only, no callback; the
// kernels are joined to those records' correlation ids in take_buffer.
void enable_launch_records(subscriber_state& s, bool external) {
  const ferret::cupti::api_table& table = ferret::cupti::api_table::cuda();
  s.launch_ids[1].assign(CUPTI_DRIVER_TRACE_CBID_SIZE, false);
  for (const CUpti_CallbackId id : table.driver_calls()) {
    if (table.driver_call(id).effect != ferret::runtime::api_effect::launch) continue;
    s.launch_ids[1][id] = true;
    if (cuptiActivityEnableDriverApi(id, 1) != CUPTI_SUCCESS) {
      const std::lock_guard lock(s.mutex);
      ++s.counts.callbacks_refused;
    }
  }
  if (!external) return;
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION), "cuptiActivityEnable(EXTERNAL_CORRELATION)");
  check(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 1),
        "cuptiActivityPushExternalCorrelationId");
}

}  // namespace

std::string activity_kind_name(CUpti_ActivityKind kind) {
  for (const auto& known : activity_kinds) {
    if (known.kind == kind) return std::string(known.name);
  }
  return "kind" + std::to_string(static_cast<int>(kind));
}

cupti_counts records_since(const cupti_counts& now, const cupti_counts& earlier) {
  cupti_counts difference = now;
  difference.records -= earlier.records;
  difference.kernels_joined -= earlier.kernels_joined;
  difference.api_callbacks -= earlier.api_callbacks;
  for (std::size_t kind = 0; kind < difference.records_by_kind.size(); ++kind) {
    difference.records_by_kind[kind] -= earlier.records_by_kind[kind];
  }
  return difference;
}

void start_cupti(const std::vector<CUpti_ActivityKind>& kinds, callback_set callbacks) {
  subscriber_state& s = state();
  {
    const std::lock_guard lock(s.mutex);
    while (s.buffers.size() < buffers_at_start) s.free_buffers.push_back(allocate_buffer(s));
  }
  check(cuptiActivityRegisterCallbacks(give_buffer, take_buffer), "cuptiActivityRegisterCallbacks");
  for (const CUpti_ActivityKind kind : kinds)
    check(cuptiActivityEnable(kind), "cuptiActivityEnable");
  if (callbacks == callback_set::none) return;
  if (callbacks == callback_set::driver_launch_records ||
      callbacks == callback_set::driver_launch_records_external) {
    enable_launch_records(s, callbacks == callback_set::driver_launch_records_external);
    return;
  }

  CUpti_SubscriberHandle subscriber = nullptr;
  check(cuptiSubscribe(&subscriber, count_api_call, nullptr), "cuptiSubscribe");
  const auto enable_domain = [&](CUpti_CallbackDomain domain) {
    check(cuptiEnableDomain(1, subscriber, domain), "cuptiEnableDomain");
  };
  // Ids the running CUPTI does not know are refused one by one and counted.
  const auto enable = [&](CUpti_CallbackDomain domain, CUpti_CallbackId id) {
    if (cuptiEnableCallback(1, subscriber, domain, id) != CUPTI_SUCCESS) {
      const std::lock_guard lock(s.mutex);
      ++s.counts.callbacks_refused;
    }
  };
  const ferret::cupti::api_table& table = ferret::cupti::api_table::cuda();
  s.launch_ids[0].assign(CUPTI_RUNTIME_TRACE_CBID_SIZE, false);
  s.launch_ids[1].assign(CUPTI_DRIVER_TRACE_CBID_SIZE, false);
  for (CUpti_CallbackId id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++id)
    s.launch_ids[0][id] = table.runtime_call(id).effect == ferret::runtime::api_effect::launch;
  for (const CUpti_CallbackId id : table.driver_calls())
    s.launch_ids[1][id] = table.driver_call(id).effect == ferret::runtime::api_effect::launch;
  switch (callbacks) {
    case callback_set::none:
    case callback_set::driver_launch_records:  // handled above: no subscriber
    case callback_set::driver_launch_records_external: break;
    case callback_set::runtime: enable_domain(CUPTI_CB_DOMAIN_RUNTIME_API); break;
    case callback_set::driver: enable_domain(CUPTI_CB_DOMAIN_DRIVER_API); break;
    case callback_set::both:
      enable_domain(CUPTI_CB_DOMAIN_RUNTIME_API);
      enable_domain(CUPTI_CB_DOMAIN_DRIVER_API);
      break;
    case callback_set::launch:
      for (CUpti_CallbackId id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++id)
        if (table.runtime_call(id).effect == ferret::runtime::api_effect::launch)
          enable(CUPTI_CB_DOMAIN_RUNTIME_API, id);
      break;
    case callback_set::ferret:
      for (const CUpti_CallbackId id : table.runtime_subscriptions(ferret::runtime::api_recording::work))
        enable(CUPTI_CB_DOMAIN_RUNTIME_API, id);
      for (const CUpti_CallbackId id : table.driver_calls()) enable(CUPTI_CB_DOMAIN_DRIVER_API, id);
      break;
    case callback_set::driver_launch:
      for (const CUpti_CallbackId id : table.driver_calls())
        if (s.launch_ids[1][id]) enable(CUPTI_CB_DOMAIN_DRIVER_API, id);
      break;
    case callback_set::driver_ferret:
      for (const CUpti_CallbackId id : table.driver_calls()) enable(CUPTI_CB_DOMAIN_DRIVER_API, id);
      break;
  }
}

cupti_counts flush_cupti() {
  check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  subscriber_state& s = state();
  const std::lock_guard lock(s.mutex);
  cupti_counts counts = s.counts;
  counts.api_callbacks = s.api_callbacks.load(std::memory_order_relaxed);
  return counts;
}

std::string cupti_version() {
  std::uint32_t version = 0;
  check(cuptiGetVersion(&version), "cuptiGetVersion");
  return std::to_string(version);
}

}  // namespace ferret_bench
