// unload_app: loads the annotated library unload_plugin, records through it on
// the main thread and on two other threads (one that exits before the library
// is unloaded, one that outlives it), unloads it — with or without
// ferret::flush() first — then loads and uses it again and unloads it again.
// Every backend must keep running: no crash at the unload, in the drain that
// resolves the library's names afterwards, or at exit.
// Usage: unload_app <plugin> flush|no-flush. Prints "regions R marks M samples S".
#include <dlfcn.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "ferret/ferret.hpp"

namespace {

using work_function = void (*)(int);
constexpr int iterations = 50;

void* load(const char* path, work_function& work) {
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "unload_app: %s\n", dlerror());
    return nullptr;
  }
  work = reinterpret_cast<work_function>(dlsym(library, "unload_plugin_work"));
  return work != nullptr ? library : nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: unload_app <plugin> flush|no-flush\n");
    return 2;
  }
  const bool flush_first = std::strcmp(argv[2], "flush") == 0;
  long regions = 1, marks = 0, samples = 0;  // main's own region
  const auto count_plugin_calls = [&](long calls) {
    regions += calls * (1 + 2 * iterations);
    marks += calls * iterations;
    samples += calls * iterations;
  };
  FERRET_REGION("unload_app main");

  work_function work = nullptr;
  void* library = load(argv[1], work);
  if (library == nullptr) return 1;
  std::thread{[work] { work(iterations); }}.join();
  // This thread still runs when the library is gone, and exits later.
  std::mutex mutex;
  std::condition_variable changed;
  bool used = false, unloaded = false;
  std::thread outliving{[&] {
    work(iterations);
    std::unique_lock lock{mutex};
    used = true;
    changed.notify_all();
    changed.wait(lock, [&] { return unloaded; });
    FERRET_REGION("after the unload");
  }};
  {
    std::unique_lock lock{mutex};
    changed.wait(lock, [&] { return used; });
  }
  work(iterations);
  count_plugin_calls(3);
  if (flush_first) ferret::flush();
  dlclose(library);
  {
    std::lock_guard lock{mutex};
    unloaded = true;
    changed.notify_all();
  }
  outliving.join();
  ++regions;

  library = load(argv[1], work);
  if (library == nullptr) return 1;
  work(iterations);
  count_plugin_calls(1);
  dlclose(library);
  { FERRET_REGION("after both unloads"); }
  ++regions;
  std::printf("regions %ld marks %ld samples %ld\n", regions, marks, samples);
  return 0;
}
