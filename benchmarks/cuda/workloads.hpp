// workloads.hpp — the CUDA work that ferret-cuda-overhead times (workloads.cu).
//
// Each workload sets itself up and warms up (context, cuBLAS handle, first
// launches), calls `before_timing`, then times only its operations with
// std::chrono::steady_clock. CUDA errors throw cuda_failure.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace ferret_bench {

struct cuda_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Why no CUDA device can be used (no driver, no GPU), or empty when one can.
// Initialises the CUDA driver, so a tool injected through CUDA_INJECTION64_PATH
// loads here.
std::string unusable_device_reason();

// Name, compute capability and the driver and runtime versions of device 0.
std::string device_description();

enum class gemm_type { bf16, fp32 };

struct workload_settings {
  std::int64_t operations;  // launches (storm), iterations (loop, stencil) or calls (getters)
  std::int64_t warmup;      // the same, untimed, before `before_timing`
  gemm_type gemm;           // loop only
};

// Seconds the timed part took.
// storm: `operations` launches of an empty kernel on one stream, then one
//        stream synchronisation.
// loop:  per iteration a saxpy over 16M floats, a 4096^3 GEMM (cublasGemmEx in
//        bf16 with fp32 accumulation, or cublasSgemm), a 4-byte device-to-host
//        copy of one result into pinned memory and a stream synchronisation
//        (what reading a loss value each step does).
double run_storm(const workload_settings& settings, const std::function<void()>& before_timing);
double run_loop(const workload_settings& settings, const std::function<void()>& before_timing);
// getters: `operations` calls, in rounds of six cudaGetDevice and one
//          cudaGetLastError (what PyTorch calls per tensor operation besides
//          the launch); a partial last round keeps the count exact.
double run_getters(const workload_settings& settings, const std::function<void()>& before_timing);

// stencil: per iteration a 5-point stencil over a 4096×4096 grid split between
//          GPU 0 and GPU 1, each half reading its boundary row from the other
//          GPU's memory (peer access, no copy), then both synchronised: the
//          device-initiated traffic FERRET_CUDA_PEER_ACCESSES counts.
double run_stencil(const workload_settings& settings, const std::function<void()>& before_timing);
// Why the stencil cannot run here (fewer than two GPUs, no peer access), or empty.
std::string stencil_unusable_reason();

}  // namespace ferret_bench
