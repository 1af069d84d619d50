// gpu-test-vmm: memory allocated with the driver's virtual memory management,
// as NVIDIA's vectorAddMMAP sample, PyTorch's expandable segments and JAX do:
//   region allocate: for A, B and C (1 MiB each) reserve an address range,
//                    create physical memory on device 0 (cuMemCreate), map it
//                    (cuMemMap) and make it accessible (cuMemSetAccess);
//                    release the handles (the mappings keep the memory)
//   region compute:  copy host x -> A and host y -> B, kernel C = A + B, copy C -> host z
//   region free:     unmap and free the ranges
// Nothing is registered by the program: the mapped ranges must become data
// objects of their own ("cuMemMap@allocate"), and every allocation record
// must find its call. Prints one line "expected {json}".
#include <cuda.h>

#include <ferret/ferret.hpp>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_check.hpp"

#define CHECK_CU(call)                                                                 \
  do {                                                                                 \
    if (const CUresult status = (call); status != CUDA_SUCCESS) {                      \
      const char* text = nullptr;                                                      \
      cuGetErrorString(status, &text);                                                 \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, text); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

constexpr int elements = 1 << 18;  // floats: 1 MiB
constexpr std::size_t bytes = elements * sizeof(float);

__global__ void add(int n, const float* a, const float* b, float* c) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) c[i] = a[i] + b[i];
}

struct mapped_range {
  CUdeviceptr address = 0;
  std::size_t size = 0;
};

mapped_range allocate(std::size_t wanted) {
  CUmemAllocationProp properties{};
  properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  properties.location.id = 0;
  std::size_t granularity = 0;
  CHECK_CU(cuMemGetAllocationGranularity(&granularity, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  mapped_range range;
  range.size = (wanted + granularity - 1) / granularity * granularity;
  CHECK_CU(cuMemAddressReserve(&range.address, range.size, 0, 0, 0));
  CUmemGenericAllocationHandle handle;
  CHECK_CU(cuMemCreate(&handle, range.size, &properties, 0));
  CHECK_CU(cuMemMap(range.address, range.size, 0, handle, 0));
  CUmemAccessDesc access{};
  access.location = properties.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK_CU(cuMemSetAccess(range.address, range.size, &access, 1));
  CHECK_CU(cuMemRelease(handle));  // the mapping keeps the memory
  return range;
}

void release(const mapped_range& range) {
  CHECK_CU(cuMemUnmap(range.address, range.size));
  CHECK_CU(cuMemAddressFree(range.address, range.size));
}

int main() {
  CHECK_CUDA(cudaFree(nullptr));  // the runtime's primary context, current for the driver calls
  std::vector<float> x(elements, 1.0f), y(elements, 2.0f), z(elements, 0.0f);
  mapped_range a, b, c;
  {
    FERRET_REGION("allocate");
    a = allocate(bytes);
    b = allocate(bytes);
    c = allocate(bytes);
  }
  {
    FERRET_REGION("compute");
    CHECK_CUDA(cudaMemcpy(reinterpret_cast<void*>(a.address), x.data(), bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(reinterpret_cast<void*>(b.address), y.data(), bytes, cudaMemcpyHostToDevice));
    add<<<elements / 256, 256>>>(elements, reinterpret_cast<const float*>(a.address),
                                 reinterpret_cast<const float*>(b.address), reinterpret_cast<float*>(c.address));
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpy(z.data(), reinterpret_cast<void*>(c.address), bytes, cudaMemcpyDeviceToHost));
  }
  if (z[0] != 3.0f || z[elements - 1] != 3.0f) {
    std::fprintf(stderr, "wrong result %f\n", static_cast<double>(z[0]));
    return 1;
  }
  {
    FERRET_REGION("free");
    release(a);
    release(b);
    release(c);
  }
  std::printf("expected {\"bytes\": %zu, \"mapped\": %zu}\n", bytes, a.size);
  return 0;
}
