// workloads.cu — the storm and loop workloads of ferret-cuda-overhead.
#include "workloads.hpp"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace ferret_bench {
namespace {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw cuda_failure(std::string(call) + " failed: " + cudaGetErrorString(status));
  }
}

void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw cuda_failure(std::string(call) + " failed: " + cublasGetStatusString(status));
  }
}

// Launches are asynchronous: their errors show at the next check or sync.
void check_launches(const char* what) { check(cudaGetLastError(), what); }

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Owns one device allocation.
class device_buffer {
 public:
  explicit device_buffer(std::size_t bytes) { check(cudaMalloc(&address_, bytes), "cudaMalloc"); }
  ~device_buffer() { cudaFree(address_); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(address_);
  }

 private:
  void* address_ = nullptr;
};

class stream_handle {
 public:
  stream_handle() {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~stream_handle() { cudaStreamDestroy(stream_); }
  stream_handle(const stream_handle&) = delete;
  stream_handle& operator=(const stream_handle&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class cublas_handle {
 public:
  explicit cublas_handle(cudaStream_t stream) {
    check(cublasCreate(&handle_), "cublasCreate");
    check(cublasSetStream(handle_, stream), "cublasSetStream");
  }
  ~cublas_handle() { cublasDestroy(handle_); }
  cublas_handle(const cublas_handle&) = delete;
  cublas_handle& operator=(const cublas_handle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

__global__ void empty_kernel() {}

__global__ void saxpy(std::size_t count, float a, const float* x, float* y) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) y[i] = a * x[i] + y[i];
}

// Values in [-1, 1) from a hash of the index: GEMM inputs of zeros would draw
// less power and so run at other clocks than real data.
__device__ float pseudo_random(std::size_t i, unsigned seed) {
  unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  return static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

__global__ void fill(std::size_t count, unsigned seed, float* values) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) values[i] = pseudo_random(i, seed);
}

__global__ void fill(std::size_t count, unsigned seed, __nv_bfloat16* values) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) values[i] = __float2bfloat16(pseudo_random(i, seed));
}

constexpr unsigned threads_per_block = 256;

unsigned blocks_for(std::size_t count) {
  return static_cast<unsigned>((count + threads_per_block - 1) / threads_per_block);
}

template <typename T>
void fill_random(T* values, std::size_t count, unsigned seed, cudaStream_t stream) {
  fill<<<blocks_for(count), threads_per_block, 0, stream>>>(count, seed, values);
  check_launches("fill kernel");
}

constexpr std::size_t saxpy_elements = std::size_t{1} << 24;  // 16M floats
constexpr int gemm_size = 4096;

// The buffers and handle of one loop iteration.
class loop_state {
 public:
  loop_state(gemm_type gemm, cudaStream_t stream)
      : gemm_(gemm),
        stream_(stream),
        x_(saxpy_elements * sizeof(float)),
        y_(saxpy_elements * sizeof(float)),
        a_(matrix_bytes(gemm)),
        b_(matrix_bytes(gemm)),
        c_(matrix_bytes(gemm)),
        blas_(stream) {
    check(cudaMallocHost(&result_, sizeof(float)), "cudaMallocHost");
    fill_random(x_.as<float>(), saxpy_elements, 1, stream);
    fill_random(y_.as<float>(), saxpy_elements, 2, stream);
    if (gemm == gemm_type::bf16) {
      fill_random(a_.as<__nv_bfloat16>(), matrix_elements, 3, stream);
      fill_random(b_.as<__nv_bfloat16>(), matrix_elements, 4, stream);
    } else {
      fill_random(a_.as<float>(), matrix_elements, 3, stream);
      fill_random(b_.as<float>(), matrix_elements, 4, stream);
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  ~loop_state() { cudaFreeHost(result_); }
  loop_state(const loop_state&) = delete;
  loop_state& operator=(const loop_state&) = delete;

  void iterate() {
    saxpy<<<blocks_for(saxpy_elements), threads_per_block, 0, stream_>>>(
        saxpy_elements, 1.0e-3f, x_.as<float>(), y_.as<float>());
    const float alpha = 1.0f;
    const float beta = 0.0f;
    if (gemm_ == gemm_type::bf16) {
      check(cublasGemmEx(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, gemm_size, gemm_size, gemm_size,
                         &alpha, a_.as<__nv_bfloat16>(), CUDA_R_16BF, gemm_size,
                         b_.as<__nv_bfloat16>(), CUDA_R_16BF, gemm_size, &beta,
                         c_.as<__nv_bfloat16>(), CUDA_R_16BF, gemm_size, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
    } else {
      check(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, gemm_size, gemm_size, gemm_size,
                        &alpha, a_.as<float>(), gemm_size, b_.as<float>(), gemm_size, &beta,
                        c_.as<float>(), gemm_size),
            "cublasSgemm");
    }
    check(cudaMemcpyAsync(result_, y_.as<float>(), sizeof(float), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

 private:
  static constexpr std::size_t matrix_elements = std::size_t{gemm_size} * gemm_size;
  static std::size_t matrix_bytes(gemm_type gemm) {
    return matrix_elements * (gemm == gemm_type::bf16 ? sizeof(__nv_bfloat16) : sizeof(float));
  }

  gemm_type gemm_;
  cudaStream_t stream_;
  device_buffer x_, y_, a_, b_, c_;
  cublas_handle blas_;
  float* result_ = nullptr;
};

}  // namespace

std::string unusable_device_reason() {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) return cudaGetErrorString(status);
  if (devices == 0) return "no CUDA device";
  return {};
}

std::string device_description() {
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  int driver = 0;
  int runtime = 0;
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  return std::string("gpu=\"") + properties.name + "\" sm=" + std::to_string(properties.major) +
         std::to_string(properties.minor) + " cuda_driver=" + std::to_string(driver) +
         " cuda_runtime=" + std::to_string(runtime);
}

double run_storm(const workload_settings& settings, const std::function<void()>& before_timing) {
  check(cudaSetDevice(0), "cudaSetDevice");
  const stream_handle stream;
  for (std::int64_t i = 0; i < settings.warmup; ++i) empty_kernel<<<1, 1, 0, stream.get()>>>();
  check_launches("empty kernel (warm-up)");
  check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
  before_timing();

  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < settings.operations; ++i) empty_kernel<<<1, 1, 0, stream.get()>>>();
  check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
  const double seconds = seconds_since(start);
  check_launches("empty kernel");
  return seconds;
}

double run_loop(const workload_settings& settings, const std::function<void()>& before_timing) {
  check(cudaSetDevice(0), "cudaSetDevice");
  const stream_handle stream;
  loop_state loop(settings.gemm, stream.get());
  for (std::int64_t i = 0; i < settings.warmup; ++i) loop.iterate();
  check_launches("saxpy (warm-up)");
  before_timing();

  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < settings.operations; ++i) loop.iterate();
  const double seconds = seconds_since(start);
  check_launches("saxpy");
  return seconds;
}

namespace {
void call_getters(std::int64_t calls) {
  int device = -1;
  for (std::int64_t i = 0; i < calls; ++i) {
    if (i % 7 == 6)
      check(cudaGetLastError(), "cudaGetLastError");
    else
      check(cudaGetDevice(&device), "cudaGetDevice");
  }
}
}  // namespace

double run_getters(const workload_settings& settings, const std::function<void()>& before_timing) {
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "cudaFree");  // the context, before anything is timed
  call_getters(settings.warmup);
  before_timing();

  const auto start = std::chrono::steady_clock::now();
  call_getters(settings.operations);
  return seconds_since(start);
}

namespace {

// A 5-point stencil over a grid split in two halves, one per GPU; each half's
// boundary row is read straight from the other GPU's memory (peer access)
// instead of being copied: device-initiated traffic, as halo exchanges over
// NVLink do it.
__global__ void stencil_half(const float* in, float* out, const float* row_above, const float* row_below,
                             int rows, int width) {
  const int column = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y;
  if (column >= width || row >= rows) return;
  const float* here = in + static_cast<std::size_t>(row) * width;
  const float up = row > 0 ? here[column - width] : row_above[column];
  const float down = row + 1 < rows ? here[column + width] : row_below[column];
  const float left = column > 0 ? here[column - 1] : 0.0f;
  const float right = column + 1 < width ? here[column + 1] : 0.0f;
  out[static_cast<std::size_t>(row) * width + column] = 0.2f * (here[column] + up + down + left + right);
}

class stencil_state {
 public:
  static constexpr int rows = 2048;   // per GPU
  static constexpr int width = 4096;
  stencil_state() {
    for (int device = 0; device < 2; ++device) {
      check(cudaSetDevice(device), "cudaSetDevice");
      check(cudaDeviceEnablePeerAccess(1 - device, 0), "cudaDeviceEnablePeerAccess");
      for (float*& grid : grids_[device]) {
        check(cudaMalloc(&grid, bytes()), "cudaMalloc");
        check(cudaMemset(grid, 0, bytes()), "cudaMemset");
      }
      check(cudaMalloc(&edge_[device], width * sizeof(float)), "cudaMalloc");  // the grid's outer edge
      check(cudaMemset(edge_[device], 0, width * sizeof(float)), "cudaMemset");
    }
  }
  ~stencil_state() {
    for (int device = 0; device < 2; ++device) {
      cudaSetDevice(device);
      for (float* grid : grids_[device]) cudaFree(grid);
      cudaFree(edge_[device]);
    }
  }
  stencil_state(const stencil_state&) = delete;
  stencil_state& operator=(const stencil_state&) = delete;

  void iterate() {
    const dim3 block{256};
    const dim3 grid{width / 256, rows};
    for (int device = 0; device < 2; ++device) {
      check(cudaSetDevice(device), "cudaSetDevice");
      const float* peer = grids_[1 - device][current_];
      // GPU 0 holds the top half: below it is GPU 1's first row; GPU 1's above is GPU 0's last.
      const float* above = device == 0 ? edge_[0] : peer + static_cast<std::size_t>(rows - 1) * width;
      const float* below = device == 0 ? peer : edge_[1];
      stencil_half<<<grid, block>>>(grids_[device][current_], grids_[device][1 - current_], above, below, rows,
                                    width);
    }
    for (int device = 0; device < 2; ++device) {
      check(cudaSetDevice(device), "cudaSetDevice");
      check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    }
    current_ = 1 - current_;
  }

 private:
  static std::size_t bytes() { return static_cast<std::size_t>(rows) * width * sizeof(float); }
  float* grids_[2][2] = {};
  float* edge_[2] = {};
  int current_ = 0;
};

}  // namespace

std::string stencil_unusable_reason() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 2) return "fewer than two GPUs";
  int peer = 0;
  if (cudaDeviceCanAccessPeer(&peer, 0, 1) != cudaSuccess || peer == 0) return "GPU 0 cannot access GPU 1's memory";
  return {};
}

double run_stencil(const workload_settings& settings, const std::function<void()>& before_timing) {
  stencil_state stencil;
  for (std::int64_t i = 0; i < settings.warmup; ++i) stencil.iterate();
  check_launches("stencil (warm-up)");
  before_timing();

  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < settings.operations; ++i) stencil.iterate();
  const double seconds = seconds_since(start);
  check_launches("stencil");
  return seconds;
}

}  // namespace ferret_bench
