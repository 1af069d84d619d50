// gpu-test-peer-copies: exactly known traffic between two GPUs, for
// tests/gpu/peer_copies.sh. Every copy sits in a region of its own and moves a
// distinct number of MiB, so that each can be recognised in the outputs:
//   setup                  cudaMalloc the four device buffers below, one stream
//                          per GPU, pinned host memory
//   fill on GPU n          one kernel per GPU writes a pattern into "GPU n source"
//   <call>, peer access on   (both directions enabled; when cudaDeviceCanAccessPeer
//                            says no, "unavailable" and the same copies run without)
//     cudaMemcpyPeer       GPU 0 -> GPU 1, 1 MiB
//     cudaMemcpyPeerAsync  GPU 1 -> GPU 0, 2 MiB
//     cudaMemcpy default   GPU 0 -> GPU 1, 3 MiB (UVA: cudaMemcpyDefault)
//   <call>, peer access off  (cudaDeviceDisablePeerAccess both ways)
//     cudaMemcpyPeer       GPU 1 -> GPU 0, 4 MiB
//     cudaMemcpyPeerAsync  GPU 0 -> GPU 1, 5 MiB
//     cudaMemcpy default   GPU 1 -> GPU 0, 6 MiB
//   verify                 both destinations back to "host check" (DtoH),
//                          compared with the pattern
// Data objects: "GPU 0 source" (9 MiB), "GPU 1 destination" (9 MiB), "GPU 1
// source" (12 MiB), "GPU 0 destination" (12 MiB), each the whole of its
// cudaMalloc; "host check" (12 MiB, pinned). Copies land at distinct offsets,
// so every byte is checked.
// Prints "link: {json}" (what the runtime says of the pair) and one line
// "expected {json}": the copies, the bytes per (source, destination) pair and
// per data object, the kernels. Exit 77 with fewer than two GPUs.
#include <ferret/ferret.hpp>

#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "cuda_check.hpp"

namespace {

constexpr std::size_t mebibyte = std::size_t{1} << 20;
constexpr int host_end = -1;  // the host in (source, destination) pairs

__global__ void fill_pattern(std::uint32_t* values, std::size_t count, std::uint32_t seed) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < count) values[i] = seed * 0x9E3779B9u ^ static_cast<std::uint32_t>(i);
}

std::uint32_t pattern(std::size_t i, std::uint32_t seed) {
  return seed * 0x9E3779B9u ^ static_cast<std::uint32_t>(i);
}

// One device buffer, registered as a data object over its whole allocation.
struct device_buffer {
  const char* name;
  int device;
  std::size_t bytes;
  std::uint32_t* values = nullptr;
  ferret::data_object_id object = 0;
};

enum class copy_call { peer, peer_async, uva };

const char* call_name(copy_call call) {
  switch (call) {
    case copy_call::peer: return "cudaMemcpyPeer";
    case copy_call::peer_async: return "cudaMemcpyPeerAsync";
    case copy_call::uva: return "cudaMemcpy";
  }
  return "?";
}

// What the program moved, for the expected line.
struct copy_done {
  std::string region;
  std::string call;
  int from, to;
  std::size_t bytes;
  std::string kind;
  const char* source_object;
  const char* destination_object;
};

std::string device_json(int end) { return end == host_end ? "\"host\"" : std::to_string(end); }

}  // namespace

int main() {
  int devices = 0;
  if (const cudaError_t status = cudaGetDeviceCount(&devices); status != cudaSuccess) {
    std::printf("gpu-test-peer-copies: skipped: no usable GPU (%s)\n", cudaGetErrorString(status));
    return 77;
  }
  if (devices < 2) {
    std::printf("gpu-test-peer-copies: skipped: %d GPU, two are needed\n", devices);
    return 77;
  }

  // Peer access and the link as the runtime describes it (the performance
  // rank orders links: lower is faster; NVLink vs PCIe is not named here).
  int access_01 = 0, access_10 = 0, rank_01 = -1, atomics_01 = 0;
  CHECK_CUDA(cudaDeviceCanAccessPeer(&access_01, 0, 1));
  CHECK_CUDA(cudaDeviceCanAccessPeer(&access_10, 1, 0));
  CHECK_CUDA(cudaDeviceGetP2PAttribute(&rank_01, cudaDevP2PAttrPerformanceRank, 0, 1));
  CHECK_CUDA(cudaDeviceGetP2PAttribute(&atomics_01, cudaDevP2PAttrNativeAtomicSupported, 0, 1));
  const bool peer_access = access_01 != 0 && access_10 != 0;
  std::printf("link: {\"can access peer 0 to 1\": %s, \"can access peer 1 to 0\": %s, "
              "\"performance rank 0 to 1\": %d, \"native atomics 0 to 1\": %s}\n",
              access_01 ? "true" : "false", access_10 ? "true" : "false", rank_01,
              atomics_01 ? "true" : "false");
  if (!peer_access)
    std::printf("gpu-test-peer-copies: cudaDeviceCanAccessPeer says no: the \"peer access "
                "unavailable\" copies run without it\n");

  device_buffer source_0{"GPU 0 source", 0, 9 * mebibyte};
  device_buffer destination_1{"GPU 1 destination", 1, 9 * mebibyte};
  device_buffer source_1{"GPU 1 source", 1, 12 * mebibyte};
  device_buffer destination_0{"GPU 0 destination", 0, 12 * mebibyte};
  device_buffer* const buffers[] = {&source_0, &destination_1, &source_1, &destination_0};
  cudaStream_t streams[2] = {};
  const std::size_t check_bytes = 12 * mebibyte;
  std::uint32_t* host_check = nullptr;
  ferret::data_object_id host_check_object = 0;
  {
    FERRET_REGION("setup");
    for (device_buffer* buffer : buffers) {
      CHECK_CUDA(cudaSetDevice(buffer->device));
      CHECK_CUDA(cudaMalloc(&buffer->values, buffer->bytes));
      buffer->object = ferret::register_data_object(buffer->name, buffer->values, buffer->bytes,
                                                    ferret::memory_kind::device, buffer->device);
    }
    for (int device = 0; device < 2; ++device) {
      CHECK_CUDA(cudaSetDevice(device));
      CHECK_CUDA(cudaStreamCreateWithFlags(&streams[device], cudaStreamNonBlocking));
    }
    CHECK_CUDA(cudaMallocHost(&host_check, check_bytes));
    host_check_object = ferret::register_data_object("host check", host_check, check_bytes,
                                                     ferret::memory_kind::pinned, -1);
  }

  // Region names made at run time are registered names (FERRET_REGION takes literals).
  std::vector<std::pair<std::string, int>> kernel_regions;  // (region, device)
  for (device_buffer* source : {&source_0, &source_1}) {
    const std::string region = "fill on GPU " + std::to_string(source->device);
    const ferret::region scope{ferret::register_name(region)};
    CHECK_CUDA(cudaSetDevice(source->device));
    const std::size_t count = source->bytes / sizeof(std::uint32_t);
    constexpr unsigned threads = 256;
    fill_pattern<<<static_cast<unsigned>((count + threads - 1) / threads), threads, 0,
                   streams[source->device]>>>(source->values, count,
                                              static_cast<std::uint32_t>(source->device + 1));
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(streams[source->device]));
    kernel_regions.emplace_back(region, source->device);
  }

  std::vector<copy_done> copies;
  // Where the next copy lands in each destination (and reads its source).
  std::size_t offset_01 = 0, offset_10 = 0;
  const auto copy = [&](copy_call call, int from, std::size_t mebibytes, const char* access) {
    device_buffer& source = from == 0 ? source_0 : source_1;
    device_buffer& destination = from == 0 ? destination_1 : destination_0;
    std::size_t& offset = from == 0 ? offset_01 : offset_10;
    const std::size_t bytes = mebibytes * mebibyte;
    const std::string region = std::string{call == copy_call::uva ? "cudaMemcpy default"
                                                                  : call_name(call)} +
                               ", peer access " + access;
    auto* to_address = reinterpret_cast<char*>(destination.values) + offset;
    const auto* from_address = reinterpret_cast<const char*>(source.values) + offset;
    {
      const ferret::region scope{ferret::register_name(region)};
      CHECK_CUDA(cudaSetDevice(from));
      switch (call) {
        case copy_call::peer:
          CHECK_CUDA(cudaMemcpyPeer(to_address, destination.device, from_address, from, bytes));
          break;
        case copy_call::peer_async:
          CHECK_CUDA(cudaMemcpyPeerAsync(to_address, destination.device, from_address, from, bytes,
                                         streams[from]));
          CHECK_CUDA(cudaStreamSynchronize(streams[from]));
          break;
        case copy_call::uva:
          CHECK_CUDA(cudaMemcpy(to_address, from_address, bytes, cudaMemcpyDefault));
          break;
      }
      // A copy between devices may return before it is done, and the readback
      // runs on the other device's stream: wait on both.
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaSetDevice(destination.device));
      CHECK_CUDA(cudaDeviceSynchronize());
    }
    offset += bytes;
    copies.push_back({region, call_name(call), from, destination.device, bytes, "PtoP",
                      source.name, destination.name});
  };

  const char* first_access = peer_access ? "on" : "unavailable";
  if (peer_access) {
    FERRET_REGION("enable peer access");
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaDeviceEnablePeerAccess(1, 0));
    CHECK_CUDA(cudaSetDevice(1));
    CHECK_CUDA(cudaDeviceEnablePeerAccess(0, 0));
  }
  copy(copy_call::peer, 0, 1, first_access);
  copy(copy_call::peer_async, 1, 2, first_access);
  copy(copy_call::uva, 0, 3, first_access);
  if (peer_access) {
    FERRET_REGION("disable peer access");
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaDeviceDisablePeerAccess(1));
    CHECK_CUDA(cudaSetDevice(1));
    CHECK_CUDA(cudaDeviceDisablePeerAccess(0));
  }
  copy(copy_call::peer, 1, 4, "off");
  copy(copy_call::peer_async, 0, 5, "off");
  copy(copy_call::uva, 1, 6, "off");

  // Every destination byte came from the same offset of the other GPU's source.
  bool correct = true;
  for (device_buffer* destination : {&destination_1, &destination_0}) {
    {
      FERRET_REGION("verify");
      CHECK_CUDA(cudaSetDevice(destination->device));
      CHECK_CUDA(cudaMemcpy(host_check, destination->values, destination->bytes,
                            cudaMemcpyDeviceToHost));
    }
    copies.push_back({"verify", "cudaMemcpy", destination->device, host_end, destination->bytes,
                      "DtoH", destination->name, "host check"});
    const auto seed = static_cast<std::uint32_t>((1 - destination->device) + 1);
    for (std::size_t i = 0; i < destination->bytes / sizeof(std::uint32_t); ++i)
      if (host_check[i] != pattern(i, seed)) {
        std::fprintf(stderr, "gpu-test-peer-copies: %s[%zu] = %u, expected %u\n",
                     destination->name, i, host_check[i], pattern(i, seed));
        correct = false;
        break;
      }
  }

  ferret::unregister_data_object(host_check_object);
  CHECK_CUDA(cudaFreeHost(host_check));
  for (device_buffer* buffer : buffers) {
    ferret::unregister_data_object(buffer->object);
    CHECK_CUDA(cudaSetDevice(buffer->device));
    CHECK_CUDA(cudaFree(buffer->values));
  }
  for (int device = 0; device < 2; ++device) {
    CHECK_CUDA(cudaSetDevice(device));
    CHECK_CUDA(cudaStreamDestroy(streams[device]));
  }

  // The expected line: per copy, then summed per pair and per data object.
  std::string json = "{\"peer access\": " + std::string{peer_access ? "true" : "false"} +
                     ", \"copies\": [";
  for (std::size_t i = 0; i < copies.size(); ++i) {
    const copy_done& done = copies[i];
    json += (i == 0 ? "" : ", ") + std::string{"{\"region\": \""} + done.region +
            "\", \"call\": \"" + done.call + "\", \"from\": " + device_json(done.from) +
            ", \"to\": " + device_json(done.to) + ", \"bytes\": " + std::to_string(done.bytes) +
            ", \"kind\": \"" + done.kind + "\", \"source object\": \"" + done.source_object +
            "\", \"destination object\": \"" + done.destination_object + "\"}";
  }
  json += "], \"pairs\": [";
  std::vector<copy_done> pairs;  // summed per (from, to); region and objects unused
  for (const copy_done& done : copies) {
    bool found = false;
    for (copy_done& pair : pairs)
      if (pair.from == done.from && pair.to == done.to) {
        pair.bytes += done.bytes;
        found = true;
      }
    if (!found) pairs.push_back(done);
  }
  for (std::size_t i = 0; i < pairs.size(); ++i)
    json += (i == 0 ? "" : ", ") + std::string{"{\"from\": "} + device_json(pairs[i].from) +
            ", \"to\": " + device_json(pairs[i].to) +
            ", \"bytes\": " + std::to_string(pairs[i].bytes) + "}";
  json += "], \"objects\": {";
  const char* const object_names[] = {"GPU 0 source", "GPU 1 destination", "GPU 1 source",
                                      "GPU 0 destination", "host check"};
  for (std::size_t i = 0; i < std::size(object_names); ++i) {
    const std::string name = object_names[i];
    std::size_t peer_bytes = 0, to_host_bytes = 0;
    for (const copy_done& done : copies)
      if (name == done.source_object || name == done.destination_object)
        (done.kind == "PtoP" ? peer_bytes : to_host_bytes) += done.bytes;
    json += (i == 0 ? "\"" : ", \"") + name + "\": {\"PtoP\": " + std::to_string(peer_bytes) +
            ", \"DtoH\": " + std::to_string(to_host_bytes) + "}";
  }
  json += "}, \"kernels\": [";
  for (std::size_t i = 0; i < kernel_regions.size(); ++i)
    json += (i == 0 ? "" : ", ") + std::string{"{\"region\": \""} + kernel_regions[i].first +
            "\", \"device\": " + std::to_string(kernel_regions[i].second) +
            ", \"kernel\": \"fill_pattern\"}";
  json += "]}";
  std::printf("expected %s\n", json.c_str());
  if (!correct) return 1;
  std::printf("gpu-test-peer-copies: results correct\n");
  return 0;
}
