// hostile_app: an annotated program that does what programs do and tracers
// forget (hostile_test runs it): annotates from a signal handler, closes
// every descriptor, runs where no thread can be started, registers names with
// NULs inside, ends regions it never began. Prints what it did on stdout.
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <thread>

#include "ferret/ferret.hpp"

namespace {

volatile sig_atomic_t g_alarms = 0;

void on_alarm(int) {
  ferret::mark("alarm");
  g_alarms = g_alarms + 1;
}

// Work between annotations, so that the trace stays small (about 100,000
// regions a second) while the handlers still land inside annotations and
// chunk switches.
void some_work() {
  volatile double x = 1.0;
  for (int i = 0; i < 2000; ++i) x = x * 1.000001 + 0.5;
}

// SIGALRM every 100 µs while the main thread records regions and counter
// samples, until 3000 alarms came: each handler call records one mark.
int signal_marks() {
  ferret::mark("alarm");  // the name's first use, outside the handler (README)
  struct sigaction action{};
  action.sa_handler = on_alarm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &action, nullptr);
  const itimerval every{{0, 100}, {0, 100}};
  setitimer(ITIMER_REAL, &every, nullptr);
  const ferret::counter progress{"progress"};
  for (long i = 0; g_alarms < 3000; ++i) {
    ferret::region r{"work"};
    progress.record(static_cast<double>(i));
    some_work();
  }
  const itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  std::printf("alarms %d\n", static_cast<int>(g_alarms) + 1);
  return 0;
}

// The /proc/self/task/<tid> directory of the thread named `name`, or "".
std::string task_of(const char* name) {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return {};
  std::string found;
  while (dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    const std::string task = std::string{"/proc/self/task/"} + entry->d_name;
    std::ifstream comm{task + "/comm"};
    std::string thread_name;
    std::getline(comm, thread_name);
    if (thread_name == name) found = task;
  }
  closedir(tasks);
  return found;
}

// How many of 50 looks, 10 ms apart, find the thread running or runnable
// (state R): an idle thread sleeps; a spinning one is always R, however
// loaded the machine.
int times_running(const std::string& task) {
  int running = 0;
  for (int look = 0; look < 50; ++look) {
    std::ifstream stat_file{task + "/stat"};
    std::string stat_line;
    std::getline(stat_file, stat_line);
    const std::size_t name_end = stat_line.rfind(')');
    if (name_end != std::string::npos && name_end + 2 < stat_line.size() && stat_line[name_end + 2] == 'R')
      ++running;
    usleep(10000);
  }
  return running;
}

// Records, closes every descriptor above stderr (as daemons do), opens its
// own file (which gets the lowest number, one ferret had), records on, and
// sleeps: ferret must neither write into that file nor spin.
int close_descriptors() {
  for (int i = 0; i < 100; ++i) ferret::region r{"before closing"};
  ferret::flush();
  for (int fd = 3; fd < 65536; ++fd) close(fd);
  const int own = open("own.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::string written;
  for (int i = 0; i < 100; ++i) {
    ferret::region r{"after closing"};
    const std::string line = "application line " + std::to_string(i) + "\n";
    if (write(own, line.data(), line.size()) == static_cast<ssize_t>(line.size())) written += line;
    if (i % 10 == 0) ferret::flush();
  }
  const std::string drainer = task_of("ferret-drain");
  std::printf("drainer running %d of 50 times\n", drainer.empty() ? -1 : times_running(drainer));
  close(own);
  std::ifstream reread{"own.txt"};
  const std::string content{std::istreambuf_iterator<char>{reread}, std::istreambuf_iterator<char>{}};
  std::printf("own file %s\n", content == written ? "intact" : "changed");
  return 0;
}

// No thread can be started (as with `ulimit -u` reached): the default stack
// is larger than the address space. 20,000 regions fill a small buffer many times.
int no_thread() {
  pthread_attr_t huge;
  pthread_attr_init(&huge);
  pthread_attr_setstacksize(&huge, std::size_t{1} << 47);
  pthread_setattr_default_np(&huge);
  pthread_attr_destroy(&huge);
  for (int i = 0; i < 20000; ++i) ferret::region r{"work"};
  try {
    std::thread{[] {}}.join();
    std::puts("a thread started");
  } catch (...) {
    std::puts("no thread");
  }
  return 0;
}

int nul_names() {
  const auto inside = ferret::register_name(std::string_view{"nul\0inside", 10});
  const auto other = ferret::register_name(std::string_view{"nul\0other", 9});
  ferret::mark(inside);
  ferret::mark(other);
  ferret::mark(other);
  return 0;
}

int unmatched() {
  {
    ferret::region r{"open"};
    for (int i = 0; i < 3; ++i) ferret::end("never begun");
  }
  const ferret::counter value{"value"};
  value.record(1.0);
  value.record(std::numeric_limits<double>::quiet_NaN());
  value.record(std::numeric_limits<double>::infinity());
  value.record(-std::numeric_limits<double>::infinity());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "signal-marks") return signal_marks();
  if (mode == "close-descriptors") return close_descriptors();
  if (mode == "no-thread") return no_thread();
  if (mode == "nul-names") return nul_names();
  if (mode == "unmatched") return unmatched();
  std::fprintf(stderr, "hostile_app: unknown mode '%s'\n", mode.c_str());
  return 2;
}
