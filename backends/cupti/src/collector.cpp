// collector.cpp — the CUDA collector: CUPTI callbacks and activity buffers.
//
//   application thread                      ferret's drain thread
//   ──────────────────                      ─────────────────────
//   cudaLaunchKernel ─▶ API callback:       collect(): cuptiActivityFlushAll
//     region "cudaLaunchKernel" begin        ─▶ buffer callbacks decode the
//     kind_correlation event (corr id)          records into `completed_`
//     (memcpy/memset: data objects by id)    hand them to the runtime, which
//     ...region end                          matches corr ids with the drained
//                                            correlation events (calling context)
//
// API calls are recorded through the callback API, on the thread's own event
// buffer and clock, so they nest exactly inside the annotated regions. GPU
// work comes from the activity API with CUPTI's timestamps on
// CLOCK_MONOTONIC_RAW (our timestamp callback), which is what the runtime's
// host clock is mapped to. If the callback cannot be registered, a measured
// offset between cuptiGetTimestamp() and CLOCK_MONOTONIC_RAW, refreshed at
// every drain, maps CUPTI's own clock instead.
#include <cupti.h>
#include <dlfcn.h>
#include <time.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ferret/ferret.hpp"
#include "ferret/python/call_stack.hpp"
#include "ferret/runtime/runtime.hpp"
#include "occupancy.hpp"
#include "record_decoder.hpp"

namespace ferret::cupti {
namespace {

using runtime::gpu_activity;
using runtime::gpu_device_info;
using runtime::memory_kind;

std::int64_t monotonic_raw_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

uint64_t CUPTIAPI timestamp_callback() { return static_cast<uint64_t>(monotonic_raw_ns()); }

std::string cupti_error(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) return fmt::format("CUPTI error {}", static_cast<int>(result));
  return text;
}

// What an API call means for attribution. Everything else is only a region.
enum class role : std::uint8_t {
  other,
  launch,       // kernels, graphs
  work,         // other calls that start GPU work (their addresses are not read)
  copy,         // params start with (destination, source)
  copy_peer,    // cudaMemcpyPeer[Async]
  copy_2d,      // cudaMemcpy2D[Async]
  set,          // params start with the destination
  allocate,     // device memory; the result pointer is written on exit
  allocate_managed,
  allocate_pinned,
  release,
  release_host,
  synchronize,
  reset,  // cudaDeviceReset: deliver the device's records first
};

struct api_table {
  std::vector<role> runtime_roles = std::vector<role>(CUPTI_RUNTIME_TRACE_CBID_SIZE, role::other);
  std::vector<role> driver_roles = std::vector<role>(CUPTI_DRIVER_TRACE_CBID_SIZE, role::other);
  std::vector<CUpti_CallbackId> traced_driver_calls;

  api_table() {
    const auto runtime_calls = [&](role r, std::initializer_list<CUpti_CallbackId> ids) {
      for (const CUpti_CallbackId id : ids) runtime_roles[id] = r;
    };
    const auto driver_calls = [&](role r, std::initializer_list<CUpti_CallbackId> ids) {
      for (const CUpti_CallbackId id : ids) {
        driver_roles[id] = r;
        traced_driver_calls.push_back(id);
      }
    };
    runtime_calls(role::launch, {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
                                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
                                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
                                 CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
                                 CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000});
    runtime_calls(role::copy, {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
                               CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
                               CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                               CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000});
    runtime_calls(role::copy_peer, {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000,
                                    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000});
    runtime_calls(role::copy_2d, {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000});
    runtime_calls(role::set, {CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_v3020,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_ptds_v7000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_ptsz_v7000});
    runtime_calls(role::allocate, {CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020});
    runtime_calls(role::allocate_managed, {CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000});
    runtime_calls(role::allocate_pinned, {CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
                                          CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020});
    runtime_calls(role::release, {CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020});
    runtime_calls(role::release_host, {CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020});
    runtime_calls(role::synchronize, {CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
                                      CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                                      CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
                                      CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
                                      CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
                                      CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000});
    runtime_calls(role::reset, {CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020});

    // Driver calls: only those that start GPU work, for programs and
    // libraries (cuBLAS, Triton, NCCL) that skip the runtime API.
    driver_calls(role::launch, {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                                CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                                CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                                CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
                                CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
                                CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
                                CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz});
    driver_calls(role::copy, {CUPTI_DRIVER_TRACE_CBID_cuMemcpy,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz});
    driver_calls(role::work, {CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer,
                                CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer_ptds,
                                CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync,
                                CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz});
    driver_calls(role::set, {CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2,
                             CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds,
                             CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2,
                             CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds,
                             CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2,
                             CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds,
                             CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
                             CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
                             CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async,
                             CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz,
                             CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
                             CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz});
    driver_calls(role::allocate, {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
                                  CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
                                  CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
                                  CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
                                  CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz});
    driver_calls(role::allocate_managed, {CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged});
    driver_calls(role::release, {CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
                                 CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
                                 CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz});
    driver_calls(role::synchronize, {CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
                                     CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
                                     CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
                                     CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize});
  }
};

// The pointers a copy or memset call names, read from its parameters.
struct call_addresses {
  const void* destination = nullptr;
  const void* source = nullptr;
};

const void* as_pointer(CUdeviceptr address) { return reinterpret_cast<const void*>(address); }

call_addresses addresses_of(CUpti_CallbackDomain domain, role kind, const void* params) {
  // Every copy family lists (destination, source) first, and every memset
  // family its destination first; the typed structs keep us honest on layout.
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (kind) {
      case role::copy: {
        const auto* p = static_cast<const cudaMemcpy_v3020_params*>(params);
        return {p->dst, p->src};
      }
      case role::copy_peer: {
        const auto* p = static_cast<const cudaMemcpyPeer_v4000_params*>(params);
        return {p->dst, p->src};
      }
      case role::copy_2d: {
        const auto* p = static_cast<const cudaMemcpy2D_v3020_params*>(params);
        return {p->dst, p->src};
      }
      case role::set: return {static_cast<const cudaMemset_v3020_params*>(params)->devPtr, nullptr};
      default: return {};
    }
  }
  switch (kind) {
    case role::copy: {
      const auto* p = static_cast<const cuMemcpy_params*>(params);
      return {as_pointer(p->dst), as_pointer(p->src)};
    }
    case role::set:
      return {as_pointer(static_cast<const cuMemsetD8_v2_params*>(params)->dstDevice), nullptr};
    default: return {};
  }
}
static_assert(offsetof(cuMemcpyHtoD_v2_params, dstDevice) == offsetof(cuMemcpy_params, dst) &&
                  offsetof(cuMemcpyHtoD_v2_params, srcHost) == offsetof(cuMemcpy_params, src) &&
                  offsetof(cuMemcpyDtoH_v2_params, dstHost) == offsetof(cuMemcpy_params, dst) &&
                  offsetof(cuMemcpyDtoHAsync_v2_params, srcDevice) == offsetof(cuMemcpy_params, src),
              "driver copy parameters start with (destination, source)");
static_assert(offsetof(cudaMemcpyAsync_v3020_params, src) == offsetof(cudaMemcpy_v3020_params, src) &&
                  offsetof(cudaMemsetAsync_v3020_params, devPtr) == 0 &&
                  offsetof(cudaMemset2D_v3020_params, devPtr) == 0 &&
                  offsetof(cudaMemcpy2DAsync_v3020_params, src) == offsetof(cudaMemcpy2D_v3020_params, src) &&
                  offsetof(cudaMemcpyPeerAsync_v4000_params, src) == offsetof(cudaMemcpyPeer_v4000_params, src),
              "runtime copy/memset parameter layouts shared by their variants");

struct allocation {
  const void* address;
  std::size_t bytes;
};

allocation allocation_of(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* params) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (id) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
        const auto* p = static_cast<const cudaMalloc_v3020_params*>(params);
        return {*p->devPtr, p->size};
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020: {
        const auto* p = static_cast<const cudaMallocAsync_v11020_params*>(params);
        return {*p->devPtr, p->size};
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020: {
        const auto* p = static_cast<const cudaMallocFromPoolAsync_v11020_params*>(params);
        return {*p->ptr, p->size};
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
        const auto* p = static_cast<const cudaMallocManaged_v6000_params*>(params);
        return {*p->devPtr, p->size};
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
        const auto* p = static_cast<const cudaMallocHost_v3020_params*>(params);
        return {*p->ptr, p->size};
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
        const auto* p = static_cast<const cudaHostAlloc_v3020_params*>(params);
        return {*p->pHost, p->size};
      }
      default: return {nullptr, 0};
    }
  }
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      const auto* p = static_cast<const cuMemAlloc_v2_params*>(params);
      return {as_pointer(*p->dptr), p->bytesize};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      const auto* p = static_cast<const cuMemAllocAsync_params*>(params);
      return {as_pointer(*p->dptr), p->bytesize};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      const auto* p = static_cast<const cuMemAllocFromPoolAsync_params*>(params);
      return {as_pointer(*p->dptr), p->bytesize};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      const auto* p = static_cast<const cuMemAllocManaged_params*>(params);
      return {as_pointer(*p->dptr), p->bytesize};
    }
    default: return {nullptr, 0};
  }
}

const void* released_address(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* params) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (id == CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020)
      return static_cast<const cudaFreeHost_v3020_params*>(params)->ptr;
    // cudaFree and cudaFreeAsync both start with devPtr.
    return static_cast<const cudaFree_v3020_params*>(params)->devPtr;
  }
  // cuMemFree_v2 and cuMemFreeAsync both start with dptr.
  return as_pointer(static_cast<const cuMemFree_v2_params*>(params)->dptr);
}
static_assert(offsetof(cudaFreeAsync_v11020_params, devPtr) == 0 &&
                  offsetof(cuMemFreeAsync_params, dptr) == 0,
              "free parameters start with the pointer");

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel"; "_ptsz"/"_ptds" stay (they
// are different entry points).
std::string api_name(const char* function) {
  std::string name = function != nullptr ? function : "cuda?";
  const std::size_t suffix = name.rfind("_v");
  if (suffix != std::string::npos && suffix + 2 < name.size() &&
      std::all_of(name.begin() + static_cast<std::ptrdiff_t>(suffix) + 2, name.end(),
                  [](unsigned char c) { return c >= '0' && c <= '9'; }))
    name.erase(suffix);
  return name;
}

// Driver entry points the collector needs for device limits, looked up in the
// libcuda the program already loaded (the collector never loads it itself).
struct driver_entry_points {
  using get_attribute_fn = int (*)(int*, int, int);
  using get_name_fn = int (*)(char*, int, int);
  using total_memory_fn = int (*)(std::size_t*, int);
  get_attribute_fn get_attribute = nullptr;
  get_name_fn get_name = nullptr;
  total_memory_fn total_memory = nullptr;

  bool load() {
    void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (cuda == nullptr) return false;
    get_attribute = reinterpret_cast<get_attribute_fn>(dlsym(cuda, "cuDeviceGetAttribute"));
    get_name = reinterpret_cast<get_name_fn>(dlsym(cuda, "cuDeviceGetName"));
    total_memory = reinterpret_cast<total_memory_fn>(dlsym(cuda, "cuDeviceTotalMem_v2"));
    return get_attribute != nullptr && get_name != nullptr;
  }
};

class cuda_collector final : public runtime::collector {
 public:
  static cuda_collector& instance() {
    // Leaked on purpose: CUPTI may call back during static destruction.
    static auto* collector = new cuda_collector;
    return *collector;
  }

  void start() {
    std::call_once(started_, [this] { subscribe(); });
  }

  void collect(std::vector<gpu_activity>& activities, std::vector<gpu_device_info>& new_devices,
               bool final) override;
  void add_metadata(runtime::metadata_list& metadata) const override;
  void abandon() noexcept override;

  void on_api(CUpti_CallbackDomain domain, CUpti_CallbackId id, const CUpti_CallbackData& call);
  void on_resource(CUpti_CallbackId id, const CUpti_ResourceData& resource);
  void buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  void buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size,
                        size_t valid_size);

 private:
  static constexpr std::size_t buffer_bytes = 4u << 20;
  // At most 64 buffers (256 MiB) in flight; CUPTI counts what it then drops.
  static constexpr std::size_t max_buffers = 64;

  cuda_collector() = default;
  void subscribe();
  const detail::site* site_for(CUpti_CallbackDomain domain, CUpti_CallbackId id, const char* function);
  void describe_device(std::uint32_t device);
  void force_flush() noexcept;
  std::int64_t to_monotonic_raw(std::int64_t cupti_ns) const noexcept {
    return cupti_ns + offset_ns_.load(std::memory_order_relaxed);
  }
  void refresh_offset() noexcept;

  std::once_flag started_;
  std::atomic<bool> active_{false};
  CUpti_SubscriberHandle subscriber_{};
  api_table apis_;
  driver_entry_points driver_;
  bool driver_loaded_ = false;
  bool using_timestamp_callback_ = false;
  std::atomic<std::int64_t> offset_ns_{0};  // CLOCK_MONOTONIC_RAW - CUPTI's clock (0 with the callback)

  std::vector<std::atomic<const detail::site*>> runtime_sites_ =
      std::vector<std::atomic<const detail::site*>>(CUPTI_RUNTIME_TRACE_CBID_SIZE);
  std::vector<std::atomic<const detail::site*>> driver_sites_ =
      std::vector<std::atomic<const detail::site*>>(CUPTI_DRIVER_TRACE_CBID_SIZE);

  // Data objects of copies and memsets, by correlation id, until the record comes.
  struct objects_of_call {
    std::uint64_t source;
    std::uint64_t destination;
    std::uint64_t cycle;
  };
  std::mutex calls_mutex_;
  std::unordered_map<std::uint32_t, objects_of_call> objects_by_call_;
  std::uint64_t cycle_ = 0;  // collect() calls so far

  std::mutex buffers_mutex_;
  std::vector<uint8_t*> free_buffers_;
  std::size_t buffers_allocated_ = 0;

  std::mutex completed_mutex_;
  record_decoder decoder_;  // guarded by completed_mutex_
  std::vector<gpu_activity> completed_;
  std::vector<gpu_device_info> new_devices_;
  std::vector<std::uint32_t> described_devices_;

  std::atomic<std::uint64_t> records_{0};
  std::atomic<std::uint64_t> records_dropped_{0};
  std::atomic<std::uint64_t> buffers_refused_{0};
  std::atomic<std::uint64_t> records_bad_time_{0};
  std::atomic<std::uint64_t> overhead_ns_{0};
};

thread_local int t_runtime_depth = 0;  // runtime API calls open on this thread

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  cuda_collector& self = cuda_collector::instance();
  if (domain == CUPTI_CB_DOMAIN_RESOURCE)
    self.on_resource(id, *static_cast<const CUpti_ResourceData*>(data));
  else
    self.on_api(domain, id, *static_cast<const CUpti_CallbackData*>(data));
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  cuda_collector::instance().buffer_requested(buffer, size, max_records);
}

void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size,
                                  size_t valid_size) {
  cuda_collector::instance().buffer_completed(context, stream, buffer, size, valid_size);
}

void cuda_collector::subscribe() {
  if (!runtime::session_active()) return;  // FERRET_BACKEND unset: stay out of the way
  std::uint32_t version = 0;
  if (const CUptiResult result = cuptiGetVersion(&version); result != CUPTI_SUCCESS) {
    runtime::print_message(fmt::format("cannot use CUPTI ({}); running without GPU data", cupti_error(result)));
    return;
  }
  std::string error;
  if (!decoder_.select_version(version, error)) {
    runtime::print_message(fmt::format("{}; running without GPU data", error));
    return;
  }
  if (const CUptiResult result = cuptiSubscribe(&subscriber_, on_callback, nullptr);
      result != CUPTI_SUCCESS) {
    runtime::print_message(fmt::format(
        "another tool holds the CUPTI subscription ({}: Nsight Systems, a sanitizer or a "
        "framework profiler?); running without GPU data",
        cupti_error(result)));
    return;
  }
  driver_loaded_ = driver_.load();
  // Before any kind is enabled, so that every record uses it.
  using_timestamp_callback_ =
      cuptiActivityRegisterTimestampCallback(timestamp_callback) == CUPTI_SUCCESS;
  if (!using_timestamp_callback_) refresh_offset();

  cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed);
  const CUpti_ActivityKind kinds[] = {
      CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
      CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
      CUPTI_ACTIVITY_KIND_MEMORY2,           CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
      CUPTI_ACTIVITY_KIND_DEVICE,            CUPTI_ACTIVITY_KIND_CONTEXT,
      CUPTI_ACTIVITY_KIND_OVERHEAD,
  };
  std::string refused;
  for (const CUpti_ActivityKind kind : kinds)
    if (const CUptiResult result = cuptiActivityEnable(kind); result != CUPTI_SUCCESS)
      refused += fmt::format("{}{} ({})", refused.empty() ? "" : ", ", static_cast<int>(kind),
                             cupti_error(result));
  if (!refused.empty())
    runtime::print_message(fmt::format("CUPTI refused activity kinds {}; their records are missing", refused));
  if (decoder_.reading_newer_version() && runtime::verbosity() >= 2)
    runtime::print_message(fmt::format("libcupti {} is newer than CUDA {}: its records are read with "
                                       "that release's layouts, for the fields they share",
                                       version, decoder_.layouts_release()));

  cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
  for (const CUpti_CallbackId id : apis_.traced_driver_calls)
    cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
  cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                      CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  active_.store(true);
  runtime::register_collector(this);
}

const detail::site* cuda_collector::site_for(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                             const char* function) {
  auto& sites = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_sites_ : driver_sites_;
  if (id >= sites.size()) return nullptr;
  if (const detail::site* known = sites[id].load(std::memory_order_acquire)) return known;
  // Racing threads get the same record: the runtime interns names.
  const detail::runtime_api* api = detail::runtime();
  if (api == nullptr) return nullptr;
  const std::string name = api_name(function);
  const detail::site* created = api->register_name(name.data(), name.size(), "cuda");
  sites[id].store(created, std::memory_order_release);
  return created;
}

void cuda_collector::on_api(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                            const CUpti_CallbackData& call) {
  const bool runtime_call = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  const std::vector<role>& roles = runtime_call ? apis_.runtime_roles : apis_.driver_roles;
  const role kind = id < roles.size() ? roles[id] : role::other;
  const bool entering = call.callbackSite == CUPTI_API_ENTER;
  if (runtime_call) {
    t_runtime_depth += entering ? 1 : -1;
  } else if (t_runtime_depth > 0) {
    // A driver call inside a runtime call is the runtime's implementation:
    // its device work carries the runtime call's correlation id.
    return;
  }

  if (entering) {
    if (kind == role::reset) force_flush();
    if (kind == role::release || kind == role::release_host)
      runtime::unregister_allocation(released_address(domain, id, call.functionParams));
    if (detail::recording())
      if (const detail::site* site = site_for(domain, id, call.functionName)) {
        detail::write(detail::word_of(site, detail::kind_begin));
        if (kind != role::other) {
          // The Python frames behind this call, as context of its GPU work.
          python::record_call_stack();
          detail::write_with_payload(detail::word_of(site, detail::kind_correlation),
                                     call.correlationId);
        }
      }
    if (kind == role::copy || kind == role::copy_peer || kind == role::copy_2d || kind == role::set) {
      const call_addresses addresses = addresses_of(domain, kind, call.functionParams);
      const std::uint64_t destination = runtime::find_data_object_id(addresses.destination);
      const std::uint64_t source =
          addresses.source != nullptr ? runtime::find_data_object_id(addresses.source) : 0;
      if (destination != 0 || source != 0) {
        std::lock_guard lock{calls_mutex_};
        objects_by_call_[call.correlationId] = {source, destination, cycle_};
      }
    }
    return;
  }

  const bool allocating = kind == role::allocate || kind == role::allocate_managed ||
                          kind == role::allocate_pinned;
  if (allocating && call.functionReturnValue != nullptr &&
      *static_cast<const int*>(call.functionReturnValue) == 0) {
    const allocation made = allocation_of(domain, id, call.functionParams);
    std::uint32_t device = 0;
    const bool on_device = kind != role::allocate_pinned;
    if (on_device && call.context != nullptr) cuptiGetDeviceId(call.context, &device);
    const memory_kind memory = kind == role::allocate_managed  ? memory_kind::managed
                               : kind == role::allocate_pinned ? memory_kind::pinned
                                                               : memory_kind::device;
    if (made.address != nullptr && made.bytes > 0)
      runtime::register_allocation(api_name(call.functionName), call.correlationId, made.address,
                                   made.bytes, memory, on_device ? static_cast<int>(device) : -1);
  }
  if (detail::recording())
    if (const detail::site* site = site_for(domain, id, call.functionName))
      detail::write(detail::word_of(site, detail::kind_end));
}

void cuda_collector::on_resource(CUpti_CallbackId id, const CUpti_ResourceData& resource) {
  if (id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    force_flush();  // the context's records, before it goes
    return;
  }
  std::uint32_t device = 0;
  std::uint32_t context = 0;
  if (id != CUPTI_CBID_RESOURCE_CONTEXT_CREATED ||
      cuptiGetDeviceId(resource.context, &device) != CUPTI_SUCCESS)
    return;
  if (cuptiGetContextId(resource.context, &context) == CUPTI_SUCCESS) {
    // Synchronization records name only the context.
    std::lock_guard lock{completed_mutex_};
    decoder_.add_context({context, device});
  }
  describe_device(device);
}

void cuda_collector::describe_device(std::uint32_t device) {
  if (!driver_loaded_) return;
  std::lock_guard lock{completed_mutex_};
  if (std::find(described_devices_.begin(), described_devices_.end(), device) != described_devices_.end())
    return;
  described_devices_.push_back(device);
  const int ordinal = static_cast<int>(device);
  const auto attribute = [&](CUdevice_attribute which) {
    int value = 0;
    driver_.get_attribute(&value, which, ordinal);
    return static_cast<std::uint32_t>(std::max(value, 0));
  };
  gpu_device_info info{};
  info.id = device;
  char name[256] = {};
  if (driver_.get_name(name, sizeof name - 1, ordinal) == 0) info.name = name;
  std::size_t memory = 0;
  if (driver_.total_memory != nullptr && driver_.total_memory(&memory, ordinal) == 0)
    info.global_memory_bytes = memory;
  info.compute_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.compute_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.multiprocessors = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.max_warps_per_multiprocessor =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) /
      std::max<std::uint32_t>(attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE), 1);
  info.max_blocks_per_multiprocessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  info.max_registers_per_multiprocessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  info.max_registers_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  info.max_shared_memory_per_multiprocessor =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  info.max_shared_memory_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  decoder_.add_device(info);
  new_devices_.push_back(std::move(info));
}

void cuda_collector::buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *size = buffer_bytes;
  std::lock_guard lock{buffers_mutex_};
  if (!free_buffers_.empty()) {
    *buffer = free_buffers_.back();
    free_buffers_.pop_back();
    return;
  }
  if (buffers_allocated_ < max_buffers) {
    // CUPTI wants 8-byte alignment; operator new gives at least 16.
    *buffer = static_cast<uint8_t*>(::operator new(buffer_bytes, std::nothrow));
    if (*buffer != nullptr) {
      ++buffers_allocated_;
      return;
    }
  }
  *buffer = nullptr;  // CUPTI drops records until a buffer comes back, and counts them
  buffers_refused_.fetch_add(1, std::memory_order_relaxed);
}

void cuda_collector::buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer,
                                      size_t /*size*/, size_t valid_size) {
  // Decoded here, never flushed from here (CUPTI forbids it).
  if (buffer != nullptr && valid_size > 0) {
    std::lock_guard lock{completed_mutex_};
    CUpti_Activity* record = nullptr;
    std::uint64_t count = 0;
    decoded out{};
    while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
      ++count;
      switch (decoder_.decode(record, out)) {
        case decoded_kind::activity: {
          gpu_activity& activity = out.activity;
          if (activity.start_ns <= 0 || activity.end_ns < activity.start_ns) {
            records_bad_time_.fetch_add(1, std::memory_order_relaxed);
            break;
          }
          activity.start_ns = to_monotonic_raw(activity.start_ns);
          activity.end_ns = to_monotonic_raw(activity.end_ns);
          completed_.push_back(activity);
          break;
        }
        case decoded_kind::device:
          if (std::find(described_devices_.begin(), described_devices_.end(), out.device.id) ==
              described_devices_.end()) {
            described_devices_.push_back(out.device.id);
            new_devices_.push_back(out.device);
          }
          break;
        case decoded_kind::overhead:
          if (out.overhead.end_ns > out.overhead.start_ns)
            overhead_ns_.fetch_add(static_cast<std::uint64_t>(out.overhead.end_ns - out.overhead.start_ns),
                                   std::memory_order_relaxed);
          break;
        case decoded_kind::context:
        case decoded_kind::ignored: break;
      }
    }
    records_.fetch_add(count, std::memory_order_relaxed);
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS && dropped > 0)
    records_dropped_.fetch_add(dropped, std::memory_order_relaxed);
  if (buffer != nullptr) {
    std::lock_guard lock{buffers_mutex_};
    free_buffers_.push_back(buffer);
  }
}

void cuda_collector::force_flush() noexcept {
  if (active_.load()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void cuda_collector::refresh_offset() noexcept {
  // Bracket CUPTI's reading between two of ours; the midpoint is its time.
  const std::int64_t before = monotonic_raw_ns();
  std::uint64_t cupti_now = 0;
  if (cuptiGetTimestamp(&cupti_now) != CUPTI_SUCCESS) return;
  const std::int64_t after = monotonic_raw_ns();
  offset_ns_.store(before + (after - before) / 2 - static_cast<std::int64_t>(cupti_now),
                   std::memory_order_relaxed);
}

void cuda_collector::collect(std::vector<gpu_activity>& activities,
                             std::vector<gpu_device_info>& new_devices, bool /*final*/) {
  if (!active_.load()) return;
  if (!using_timestamp_callback_) refresh_offset();
  // Forced: also the records of buffers not yet full, so that the trace keeps
  // up with the program and memory stays bounded.
  force_flush();
  std::vector<gpu_activity> done;
  {
    std::lock_guard lock{completed_mutex_};
    done.swap(completed_);
    new_devices.insert(new_devices.end(), new_devices_.begin(), new_devices_.end());
    new_devices_.clear();
  }
  std::lock_guard lock{calls_mutex_};
  ++cycle_;
  for (gpu_activity& activity : done) {
    if (activity.operation != runtime::gpu_operation::memcpy &&
        activity.operation != runtime::gpu_operation::memset)
      continue;
    const auto it = objects_by_call_.find(static_cast<std::uint32_t>(activity.launch.correlation));
    if (it == objects_by_call_.end()) continue;
    activity.source_object_id = it->second.source;
    activity.destination_object_id = it->second.destination;
  }
  // Calls whose records are in: a few drains later nothing refers to them.
  for (auto it = objects_by_call_.begin(); it != objects_by_call_.end();)
    it = cycle_ > it->second.cycle + 50 ? objects_by_call_.erase(it) : std::next(it);
  activities.insert(activities.end(), done.begin(), done.end());
}

void cuda_collector::add_metadata(runtime::metadata_list& metadata) const {
  const auto count = [](const std::atomic<std::uint64_t>& value) {
    return static_cast<std::int64_t>(value.load(std::memory_order_relaxed));
  };
  metadata.emplace_back("cupti-clock", using_timestamp_callback_
                                           ? std::string{"timestamp callback (CLOCK_MONOTONIC_RAW)"}
                                           : std::string{"offset to cuptiGetTimestamp"});
  metadata.emplace_back("cupti-records", count(records_));
  metadata.emplace_back("cupti-records-dropped", count(records_dropped_));
  metadata.emplace_back("cupti-buffers-refused", count(buffers_refused_));
  metadata.emplace_back("cupti-records-bad-timestamps-dropped", count(records_bad_time_));
  metadata.emplace_back("cupti-overhead-ns", count(overhead_ns_));
}

void cuda_collector::abandon() noexcept {
  // In a fork child CUPTI's state is the parent's: stop listening, quietly.
  active_.store(false);
}

}  // namespace
}  // namespace ferret::cupti

// Referenced by code built against ferret::cuda (see ferret/detail/abi.hpp).
extern "C" FERRET_EXPORT const int ferret_cuda_collector_v1 = 1;

// The driver calls this when CUDA_INJECTION64_PATH names this library
// (tools/ferret-run), from cuInit.
extern "C" FERRET_EXPORT int InitializeInjection() {
  ferret::cupti::cuda_collector::instance().start();
  return 1;
}

namespace {
// Linked into a program (ferret::cuda): start with the program. Before main()
// is fine: CUPTI takes subscriptions before CUDA is initialised.
[[maybe_unused]] const bool started_at_load = [] {
  ferret::cupti::cuda_collector::instance().start();
  return true;
}();
}  // namespace
