// A small C library standing in for a GPU runtime, called from Python through
// ctypes: ctypes.CDLL calls it with the GIL released (as PyTorch launches its
// kernels), ctypes.PyDLL with the GIL held.
#include <pthread.h>

#include <thread>

#include "support/synthetic_gpu.hpp"

extern "C" {

__attribute__((visibility("default"))) void fake_gpu_launch(const char* kernel) {
  ferret::testing::synthetic_launch(kernel);
}

// From a thread of its own that never runs Python, named as PyTorch names
// its autograd threads.
__attribute__((visibility("default"))) void fake_gpu_launch_from_native_thread(const char* kernel) {
  std::thread{[kernel] {
    pthread_setname_np(pthread_self(), "native_gpu_0");
    ferret::testing::synthetic_launch(kernel);
  }}.join();
}

__attribute__((visibility("default"))) void fake_gpu_copy(unsigned long long bytes) {
  ferret::testing::synthetic_copy(bytes);
}

}  // extern "C"
