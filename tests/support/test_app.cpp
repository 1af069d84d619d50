// test_app: a small annotated program that process_test runs with different
// environments, to check what users see: messages, files, exit paths, fork.
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ferret/ferret.hpp"

namespace {

void some_regions(const char* name, int count) {
  for (int i = 0; i < count; ++i) {
    ferret::region r{"work"};
    ferret::mark("tick");
  }
  ferret::set_thread_name(name);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "regions";
  std::printf("pid %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  FERRET_REGION("main");

  if (mode == "regions" || mode == "many-regions") {
    const int count = mode == "regions" ? 100 : 50000;
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) threads.emplace_back(some_regions, t == 0 ? "first" : "second", count);
    for (auto& t : threads) t.join();
    std::puts("finished");
    return 0;
  }
  if (mode == "level-zero-loaded") {
    // A program that uses Level Zero, linked without ferret's collector for it.
    if (dlopen("libze_loader.so.1", RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      std::printf("skipped: no Level Zero loader (%s)\n", dlerror());
      return 0;
    }
    some_regions("loaded", 10);
    std::puts("finished");
    return 0;
  }
  if (mode == "open-at-exit") {
    // A thread that exits with two regions open, then exit() with two open on
    // main ("main" and "phase").
    std::thread worker{[] {
      ferret::set_thread_name("worker");
      ferret::begin("task");
      ferret::begin("step");
    }};
    worker.join();
    ferret::begin("phase");
    { FERRET_REGION("done"); }
    std::exit(0);
  }
  if (mode == "never-ended") {
    // Two million begins without an end: what they cost must stay bounded.
    for (int i = 0; i < 2'000'000; ++i) ferret::begin("open");
    std::exit(0);
  }
  if (mode == "exit-from-thread") {
    std::thread worker{[] {
      some_regions("exiting worker", 10);
      std::exit(3);
    }};
    worker.join();  // never returns: the worker ends the process
    return 1;
  }
  if (mode == "exit-while-recording") {
    // exit() from a thread while two others record: the exit path (the final
    // drain, then static destruction) runs beside them.
    std::atomic<bool> started{false};
    const auto record = [&started] {
      for (;;) {
        ferret::region r{"work"};
        ferret::mark("tick");
        started.store(true);
      }
    };
    std::thread first{record}, second{record};
    std::thread exiting{[&started] {
      while (!started.load()) {
      }
      some_regions("exiting worker", 1000);
      std::exit(0);
    }};
    exiting.join();  // never returns: the worker ends the process
    return 1;
  }
  if (mode == "sigterm") {
    some_regions("main", 10);
    ::kill(getpid(), SIGTERM);
    ::pause();
    return 1;
  }
  if (mode == "sigterm-busy") {
    // 300,000 records still buffered when the signal comes (with a large
    // buffer and no periodic drain).
    some_regions("main", 100000);
    ::kill(getpid(), SIGTERM);
    ::pause();
    return 1;
  }
  if (mode == "fork") {
    { FERRET_REGION("parent before fork"); }
    const pid_t child = fork();
    if (child == 0) {
      { FERRET_REGION("child"); }
      std::exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    { FERRET_REGION("parent after fork"); }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  if (mode == "fork-two-threads") {
    // Children whose first events come from two threads at once: both start
    // the child's session, or one waits for the other to.
    for (int i = 0; i < 20; ++i) {
      const pid_t child = fork();
      if (child == 0) {
        std::atomic<int> ready{0};
        const auto work = [&ready](const char* name) {
          ready.fetch_add(1);
          while (ready.load() < 2) {
          }
          some_regions(name, 2000);
        };
        std::thread first{work, "first"}, second{work, "second"};
        first.join();
        second.join();
        std::exit(0);
      }
      int status = 0;
      waitpid(child, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    }
    return 0;
  }
  if (mode == "spawn") {
    // A program the traced one starts (fork and exec, as subprocess.Popen
    // does) inherits FERRET_OUTPUT and traces while the parent does.
    { FERRET_REGION("parent before spawn"); }
    const pid_t child = fork();
    if (child == 0) {
      execl("/proc/self/exe", "test_app", "spawned", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    { FERRET_REGION("parent after spawn"); }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  if (mode == "spawned") {
    FERRET_REGION("spawned child");
    return 0;
  }
  if (mode == "fork-exec") {
    { FERRET_REGION("parent"); }
    const pid_t child = fork();
    if (child == 0) {
      execl("/bin/true", "true", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return 0;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
