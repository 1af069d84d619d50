// fake_sanitizer.cpp — a stand-in for the Compute Sanitizer's
// libsanitizer-public.so, so that the peer-access counter's host side (slots,
// read-backs, contexts and streams coming and going) runs without a GPU.
// Device memory is host memory; a copy happens at once (a kernel has already
// run when the test read-back comes); a context's allocations are freed when
// the test says the context is gone, as the driver frees them, so that a
// counter still using them is a use after free (ASan) or reads nothing.
// The test drives the callbacks through the fake_sanitizer_* functions.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "sanitizer_api.hpp"

namespace api = ferret::compute_sanitizer::api;

namespace {

std::mutex g_mutex;
api::callback_fn g_callback = nullptr;
void* g_userdata = nullptr;
std::map<void*, CUcontext> g_allocations;
std::map<api::launch_handle, const void*> g_launch_data;
std::map<std::pair<CUmodule, std::string>, std::pair<std::uint64_t, std::uint64_t>> g_functions;
std::atomic<int> g_read_back_ms{0};  // how long a copy to the host waits (for its kernel)

}  // namespace

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_EXPORT api::result sanitizerSubscribe(api::subscriber_handle* subscriber, api::callback_fn callback,
                                           void* userdata) {
  std::lock_guard lock{g_mutex};
  if (g_callback != nullptr) return 17;  // one subscriber, as the real one
  g_callback = callback;
  g_userdata = userdata;
  *subscriber = reinterpret_cast<api::subscriber_handle>(&g_callback);
  return api::success;
}

FAKE_EXPORT api::result sanitizerUnsubscribe(api::subscriber_handle) {
  std::lock_guard lock{g_mutex};
  g_callback = nullptr;
  g_launch_data.clear();  // the next subscriber's launch handles start afresh
  return api::success;
}

FAKE_EXPORT api::result sanitizerEnableDomain(std::uint32_t, api::subscriber_handle, int) { return api::success; }

FAKE_EXPORT api::result sanitizerEnableCallback(std::uint32_t, api::subscriber_handle, int, api::callback_id) {
  return api::success;
}

FAKE_EXPORT api::result sanitizerAddPatches(const void*, CUcontext) { return api::success; }
FAKE_EXPORT api::result sanitizerPatchInstructions(int, CUmodule, const char*) { return api::success; }
FAKE_EXPORT api::result sanitizerPatchModule(CUmodule) { return api::success; }

FAKE_EXPORT api::result sanitizerSetLaunchCallbackData(api::launch_handle launch, CUfunction, api::stream_handle,
                                                       const void* data) {
  std::lock_guard lock{g_mutex};
  g_launch_data[launch] = data;
  return api::success;
}

FAKE_EXPORT api::result sanitizerGetFunctionPcAndSize(CUmodule module, const char* name, std::uint64_t* pc,
                                                      std::uint64_t* size) {
  std::lock_guard lock{g_mutex};
  const auto found = g_functions.find({module, name});
  if (found == g_functions.end()) return 3;
  *pc = found->second.first;
  *size = found->second.second;
  return api::success;
}

FAKE_EXPORT api::result sanitizerAlloc(CUcontext context, void** address, std::size_t bytes) {
  *address = std::calloc(1, bytes);
  if (*address == nullptr) return 2;
  std::lock_guard lock{g_mutex};
  g_allocations[*address] = context;
  return api::success;
}

FAKE_EXPORT api::result sanitizerFree(CUcontext, void* address) {
  std::lock_guard lock{g_mutex};
  if (g_allocations.erase(address) == 0) return 1;  // not ours, or freed with its context
  std::free(address);
  return api::success;
}

FAKE_EXPORT api::result sanitizerMemcpyHostToDeviceAsync(void* destination, void* source, std::size_t bytes,
                                                         api::stream_handle) {
  std::memcpy(destination, source, bytes);
  return api::success;
}

FAKE_EXPORT api::result sanitizerMemcpyDeviceToHost(void* destination, void* source, std::size_t bytes,
                                                    api::stream_handle) {
  std::this_thread::sleep_for(std::chrono::milliseconds{g_read_back_ms.load()});
  std::memcpy(destination, source, bytes);
  return api::success;
}

FAKE_EXPORT api::result sanitizerMemset(void* address, int value, std::size_t bytes, api::stream_handle) {
  std::memset(address, value, bytes);
  return api::success;
}

FAKE_EXPORT api::result sanitizerGetResultString(api::result, const char** text) {
  *text = "a fake sanitizer error";
  return api::success;
}

// The test's side.

/// Calls the subscriber as the sanitizer would.
FAKE_EXPORT void fake_sanitizer_callback(int domain, api::callback_id id, const void* data) {
  api::callback_fn callback = nullptr;
  void* userdata = nullptr;
  {
    std::lock_guard lock{g_mutex};
    callback = g_callback;
    userdata = g_userdata;
  }
  if (callback != nullptr) callback(userdata, domain, id, data);
}

/// What the subscriber gave a launch (its patch's userdata), or nullptr.
FAKE_EXPORT const void* fake_sanitizer_launch_data(api::launch_handle launch) {
  std::lock_guard lock{g_mutex};
  const auto found = g_launch_data.find(launch);
  return found != g_launch_data.end() ? found->second : nullptr;
}

/// A function of a module, where its code lies.
FAKE_EXPORT void fake_sanitizer_define_function(CUmodule module, const char* name, std::uint64_t pc,
                                                std::uint64_t size) {
  std::lock_guard lock{g_mutex};
  g_functions[{module, name}] = {pc, size};
}

/// The context is gone: its memory with it.
FAKE_EXPORT void fake_sanitizer_context_gone(CUcontext context) {
  std::lock_guard lock{g_mutex};
  for (auto it = g_allocations.begin(); it != g_allocations.end();) {
    if (it->second != context) {
      ++it;
      continue;
    }
    std::free(it->first);
    it = g_allocations.erase(it);
  }
}

/// From now on a copy to the host waits this long, as for a kernel still running.
FAKE_EXPORT void fake_sanitizer_read_back_takes(int milliseconds) { g_read_back_ms.store(milliseconds); }

/// The subscriber's allocations alive in a context.
FAKE_EXPORT std::size_t fake_sanitizer_allocations(CUcontext context) {
  std::lock_guard lock{g_mutex};
  std::size_t count = 0;
  for (const auto& [address, owner] : g_allocations) count += owner == context;
  return count;
}
