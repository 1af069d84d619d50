// ferret/runtime/per_thread.hpp — per-thread state of a library that may be
// loaded with dlopen (by NVTX, the CUDA driver, ctypes): one pointer of TLS,
// the state itself on the heap.
//
// The header's hot path reads its thread slot with initial-exec TLS, and a
// shared object with any initial-exec access must fit its whole TLS segment
// into the few hundred bytes glibc keeps for dlopen'ed objects ("cannot
// allocate memory in static TLS block"). So big per-thread tables live behind
// this pointer: allocated at the thread's first use, freed at its exit.
#pragma once

#include <pthread.h>

#include <new>

namespace ferret::runtime {

/// `T` must be default-constructible. get() returns nullptr only when memory
/// ran out; it never throws.
template <class T>
class per_thread {
 public:
  static T* get() noexcept {
    if (T* state = current_) return state;
    return make();
  }

 private:
  static T* make() noexcept {
    static const bool keyed = pthread_key_create(&key_, &release) == 0;
    T* made = new (std::nothrow) T{};
    if (made == nullptr) return nullptr;
    if (keyed) pthread_setspecific(key_, made);  // freed at thread exit; else kept
    current_ = made;
    return made;
  }
  // At thread exit. A later use on this thread (another library's TLS
  // destructor) makes a fresh one, which glibc's next round frees.
  static void release(void* state) noexcept {
    current_ = nullptr;
    delete static_cast<T*>(state);
  }

  // One pointer of initial-exec TLS (no __tls_get_addr call): small enough for
  // the space glibc keeps for dlopen'ed objects.
  static inline thread_local T* current_ __attribute__((tls_model("initial-exec"))) = nullptr;
  static inline pthread_key_t key_{};
};

}  // namespace ferret::runtime
