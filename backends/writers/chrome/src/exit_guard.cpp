// The exit guard; see exit_guard.hpp for why and how.
#include "exit_guard.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ferret::chrome {
namespace {

constexpr std::size_t guard_stack_bytes = std::size_t{64} << 10;

// The guard runs in the traced process's memory with that process's thread
// pointer: it calls nothing that uses thread-local state while the process
// lives (errno is written only by a failing call, and its calls fail only
// once the process is gone), no allocator, no lock, and no code a sanitizer
// instruments (its runtime would take the guard for the thread whose thread
// pointer it has): only functions with this attribute, system calls, and
// plain or volatile loads — no std::atomic member, no std::min.
#define FERRET_GUARD_CODE __attribute__((no_sanitize("address", "thread", "undefined")))

FERRET_GUARD_CODE void close_range_in_guard(int first, int last) noexcept {
  if (first > last) return;
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, static_cast<unsigned>(first), static_cast<unsigned>(last), 0U) == 0)
    return;
#endif
  for (int fd = first; fd <= last; ++fd) ::syscall(SYS_close, fd);
}

// Valgrind stops the whole program at a clone(CLONE_VM) ("does not support
// general clone()") instead of refusing it; it always preloads its core.
bool under_valgrind() noexcept {
  const char* preload = std::getenv("LD_PRELOAD");
  return preload != nullptr && std::strstr(preload, "/vgpreload_core") != nullptr;
}

// ThreadSanitizer does not know a clone(CLONE_VM) process: with the guard
// running it reports races and double locks all over the traced program.
#if defined(__SANITIZE_THREAD__)
constexpr bool under_thread_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool under_thread_sanitizer = true;
#else
constexpr bool under_thread_sanitizer = false;
#endif
#else
constexpr bool under_thread_sanitizer = false;
#endif

}  // namespace

FERRET_GUARD_CODE int exit_guard::guard_main(void* self) noexcept {
  exit_guard& guard = *static_cast<exit_guard*>(self);
  ::syscall(SYS_setsid);
  ::syscall(SYS_prctl, PR_SET_NAME, "ferret-guard", 0, 0, 0);
  // Keep the trace and the pipe's read end only: holding a copy of the
  // application's sockets or pipes would keep them open after it closes them.
  const int low = guard.fd_ < guard.pipe_read_ ? guard.fd_ : guard.pipe_read_;
  const int high = guard.fd_ < guard.pipe_read_ ? guard.pipe_read_ : guard.fd_;
  close_range_in_guard(0, low - 1);
  close_range_in_guard(low + 1, high - 1);
  close_range_in_guard(high + 1, guard.max_descriptors_ > 0 ? guard.max_descriptors_ - 1 : 65535);
  char byte = 0;
  // Nothing is ever written to the pipe: read returns 0 once every write end
  // is closed, i.e. when the traced process finished or died. With every
  // signal blocked nothing interrupts it; any other outcome leaves the file.
  if (::syscall(SYS_read, guard.pipe_read_, &byte, 1) != 0) return 1;
  // The traced process is gone (or done): nothing writes these any more.
  if (*static_cast<const volatile bool*>(&guard.finished_)) return 0;
  const record& last = guard.records_[*static_cast<const volatile unsigned*>(&guard.active_)];
  if (::syscall(SYS_ftruncate, guard.fd_, last.events_end) != 0) return 1;
  const char* data = last.trailer;
  std::size_t left = last.trailer_size;
  off_t offset = last.events_end;
  while (left > 0) {
    const long written = ::syscall(SYS_pwrite64, guard.fd_, data, left, offset);
    if (written <= 0) return 1;
    data += written;
    left -= static_cast<std::size_t>(written);
    offset += written;
  }
  return 0;
}

bool exit_guard::start(int fd, off_t events_end, std::string_view trailer) {
  if (under_valgrind() || under_thread_sanitizer) {
    errno = ENOTSUP;
    return false;
  }
  publish(events_end, trailer);
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return false;
  void* stack = ::mmap(nullptr, guard_stack_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    const int error = errno;
    ::close(ends[0]);
    ::close(ends[1]);
    errno = error;
    return false;
  }
  fd_ = fd;
  pipe_read_ = ends[0];
  pipe_write_ = ends[1];
  pipe_ = runtime::identity_of(pipe_write_);
  rlimit descriptors{};
  if (::getrlimit(RLIMIT_NOFILE, &descriptors) == 0 && descriptors.rlim_cur != RLIM_INFINITY)
    max_descriptors_ = static_cast<int>(std::min<rlim_t>(descriptors.rlim_cur, 1 << 20));
  // Every signal blocked in the guard (it inherits this thread's mask): only
  // SIGKILL can end it, and its read is never interrupted.
  sigset_t all{};
  sigset_t previous{};
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  // No exit signal: the application never sees a SIGCHLD for the guard, and
  // its wait(-1) never reaps it (only __WCLONE waits do).
  const pid_t pid = ::clone(&exit_guard::guard_main, static_cast<char*>(stack) + guard_stack_bytes,
                            CLONE_VM, this);
  const int error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  // The guard's end. The field keeps the number: the guard, sharing this
  // memory, may read it after this line.
  ::close(ends[0]);
  if (pid < 0) {
    ::close(pipe_write_);
    pipe_write_ = -1;
    ::munmap(stack, guard_stack_bytes);
    errno = error;
    return false;
  }
  pid_ = pid;
  owner_ = ::getpid();
  stack_ = stack;
  return true;
}

void exit_guard::publish(off_t events_end, std::string_view trailer) {
  // Fill the record the guard does not use, then switch to it with one store.
  const unsigned next = 1U - active_;
  slots_[next].assign(trailer);
  records_[next] = record{events_end, slots_[next].data(), slots_[next].size()};
  __atomic_store_n(&active_, next, __ATOMIC_RELEASE);
}

void exit_guard::stop(bool finished) noexcept {
  if (pid_ <= 0) return;
  __atomic_store_n(&finished_, finished, __ATOMIC_RELEASE);
  // Unless the program closed it already (and may use the number now).
  runtime::close_if_open_on(pipe_write_, pipe_);
  pipe_write_ = -1;
  // The guard shares this memory: wait until it is gone before freeing any.
  while (::waitpid(pid_, nullptr, __WCLONE) < 0 && errno == EINTR) {
  }
  ::munmap(stack_, guard_stack_bytes);
  stack_ = nullptr;
  pid_ = -1;
}

void exit_guard::finish() noexcept { stop(true); }

bool exit_guard::intact() const noexcept {
  return pid_ <= 0 || runtime::still_open_on(pipe_write_, pipe_);
}

void exit_guard::restart(int fd) {
  const record last = records_[active_];
  const std::string trailer{last.trailer, last.trailer_size};
  stop(false);
  start(fd, last.events_end, trailer);
}

void exit_guard::forget() noexcept {
  if (pid_ > 0 && ::getpid() == owner_) {
    stop(false);
    return;
  }
  runtime::close_if_open_on(pipe_write_, pipe_);
  pipe_write_ = -1;
  pid_ = -1;  // the parent's child, not ours
  if (stack_ != nullptr) ::munmap(stack_, guard_stack_bytes);  // our copy of it
  stack_ = nullptr;
}

// Without a final flush (the backend destroyed early): the guard writes the
// last published trailer, which is what the file already ends with.
exit_guard::~exit_guard() { stop(false); }

}  // namespace ferret::chrome
