// The first region on a thread does not hold the thread's set-up: binding the
// thread to the session, taking its first chunk of buffer and faulting that
// chunk's pages in all happen before the begin reads the clock.
//
// Observed without timing: FERRET_CLOCK=monotonic_raw makes every event read
// clock_gettime, which this program defines for the whole process (the
// runtime's calls included). Each reading on a watched thread notes how many
// page faults the thread has taken so far (getrusage): none may come between
// the begin's reading and the end's.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <thread>

#include "ferret/ferret.hpp"

namespace {

struct clock_readings {
  int count = 0;
  long faults_before[8] = {};  // the thread's minor page faults at each reading
};

thread_local bool t_watched = false;
thread_local clock_readings t_readings;

}  // namespace

extern "C" int clock_gettime(clockid_t clock, timespec* time) noexcept {
  const int result = static_cast<int>(syscall(SYS_clock_gettime, clock, time));
  if (t_watched && clock == CLOCK_MONOTONIC_RAW && t_readings.count < 8) {
    rusage usage{};
    getrusage(RUSAGE_THREAD, &usage);
    t_readings.faults_before[t_readings.count++] = usage.ru_minflt;
  }
  return result;
}

namespace {

// The clock readings of a thread's first region, an empty one.
clock_readings first_region() {
  t_readings = {};
  t_watched = true;
  { ferret::region first{"first"}; }
  t_watched = false;
  return t_readings;
}

void check_no_setup_inside(const clock_readings& readings) {
  REQUIRE(readings.count == 2);  // the begin's reading and the end's
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer faults in the shadow of each first write to the buffer;
  // the plain and AddressSanitizer builds check ferret's own faults.
  MESSAGE("page faults inside the first region not checked under ThreadSanitizer: "
          << readings.faults_before[1] - readings.faults_before[0]);
#else
  CHECK(readings.faults_before[1] == readings.faults_before[0]);
#endif
}

}  // namespace

TEST_CASE("the first region of a thread does not hold the thread's set-up") {
  // Another thread starts the session: what follows is each thread's own set-up.
  std::thread{[] { ferret::region start{"start"}; }}.join();
  SUBCASE("the main thread") { check_no_setup_inside(first_region()); }
  SUBCASE("a new thread") {
    clock_readings readings;
    std::thread{[&readings] { readings = first_region(); }}.join();
    check_no_setup_inside(readings);
  }
}
