// output_files.cpp — opening, checking and closing the backends' files so
// that writing them never hurts the program: no blocking open (a FIFO), no
// signal (a file-size limit, a closed pipe), no descriptor of the program's
// written to or closed (a program that closes every descriptor and reuses the
// numbers).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "runtime_state.hpp"

namespace ferret::runtime {

namespace {

// The ancestor directory of `path` that exists, and the one below it that
// does not (empty when the parent exists).
std::pair<std::string, std::string> missing_directory(const std::string& path) {
  std::string missing;
  std::string at = path;
  for (;;) {
    const std::size_t slash = at.rfind('/');
    if (slash == std::string::npos) return {".", missing};
    if (slash == 0) return {"/", missing};
    at.resize(slash);
    struct stat status{};
    if (stat(at.c_str(), &status) == 0) return {at, missing};
    missing = at;
  }
}

std::string kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  return "not a file";
}

}  // namespace

int open_output_file(const std::string& path, std::string& reason) noexcept {
  try {
    int fd = -1;
    // O_NONBLOCK: opening a FIFO for writing would wait for a reader, for ever
    // (without one it fails with ENXIO instead). Not truncated before it is
    // known to be a regular file.
    do {
      fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      int error = errno;
      struct stat status{};
      if (stat(path.c_str(), &status) == 0 && !S_ISREG(status.st_mode)) {
        reason = kind_of(status.st_mode) + ", not a regular file";
        error = EINVAL;
      } else if (error == ENOENT) {
        // The directory FERRET_OUTPUT needs could not be made: say why.
        const auto [existing, missing] = missing_directory(path);
        if (!missing.empty() && access(existing.c_str(), W_OK | X_OK) != 0)
          reason = fmt::format("cannot create the directory '{}': {}", missing, std::strerror(errno));
        else
          reason = std::strerror(error);
      } else {
        reason = std::strerror(error);
      }
      errno = error;
      return -1;
    }
    struct stat status{};
    if (fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
      reason = kind_of(status.st_mode) + ", not a regular file";
      ::close(fd);
      errno = EINVAL;
      return -1;
    }
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 || ftruncate(fd, 0) != 0) {
      const int error = errno;
      reason = std::strerror(error);
      ::close(fd);
      errno = error;
      return -1;
    }
    return fd;
  } catch (...) {
    reason = "out of memory";
    return -1;
  }
}

file_identity identity_of(int fd) noexcept {
  struct stat status{};
  if (fd < 0 || fstat(fd, &status) != 0) return {};
  return {static_cast<std::uint64_t>(status.st_dev), static_cast<std::uint64_t>(status.st_ino)};
}

bool still_open_on(int fd, const file_identity& file) noexcept {
  const file_identity now = identity_of(fd);
  return now.inode != 0 && now.device == file.device && now.inode == file.inode;
}

void close_if_open_on(int fd, const file_identity& file) noexcept {
  if (still_open_on(fd, file)) ::close(fd);
}

namespace internal {

output_signals_held::output_signals_held() noexcept {
  sigset_t ours;
  sigemptyset(&ours);
  sigaddset(&ours, SIGXFSZ);
  sigaddset(&ours, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &ours, &previous_mask_);
  sigpending(&pending_before_);
}

output_signals_held::~output_signals_held() {
  const int saved_errno = errno;
  sigset_t pending;
  sigpending(&pending);
  for (const int signal_number : {SIGXFSZ, SIGPIPE}) {
    if (!sigismember(&pending, signal_number) || sigismember(&pending_before_, signal_number))
      continue;
    // Raised by a write of ours (the kernel sends both to the writing thread):
    // taken back, so that unblocking does not deliver it.
    sigset_t just_this;
    sigemptyset(&just_this);
    sigaddset(&just_this, signal_number);
    const timespec no_wait{0, 0};
    while (sigtimedwait(&just_this, nullptr, &no_wait) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
  errno = saved_errno;
}

}  // namespace internal
}  // namespace ferret::runtime
