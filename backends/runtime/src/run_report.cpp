// run_report.cpp — under ferret-run, one line at exit when nothing was
// recorded, saying what was seen and what was not.
//
// ferret-run preloads the runtime into the program and so into every process
// it starts, and names a file they share (FERRET_RUN_STATUS, an unlinked file
// the program holds open, reached through /proc/<pid>/fd/<n>). At exit each
// process started by the program appends what it saw (one line of flags); the
// program itself (pid FERRET_RUN_PID: ferret-run exec'd it) reads them at its
// own exit and, if no process recorded or tried to, says why nothing was.
#include <fcntl.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/ranges.h>

#include "runtime_state.hpp"

namespace ferret::runtime::internal {
namespace {

// What one process saw, as bits (written in decimal, one line per process).
enum seen : unsigned {
  seen_recording = 1,  // a session started, or its start was refused with a line of its own
  seen_annotations = 2,
  seen_cuda = 4,
  seen_gnu_openmp = 8,
  seen_llvm_openmp = 16,
  seen_mpi = 32,
  seen_level_zero = 64,
  seen_nccl = 128,
  seen_python = 256,
};

struct library_mark {
  std::string_view prefix;  // of the file name
  seen flag;
};
constexpr library_mark library_marks[] = {
    {"libcuda.so", seen_cuda},          {"libgomp.so", seen_gnu_openmp},
    {"libomp.so", seen_llvm_openmp},    {"libiomp5.so", seen_llvm_openmp},
    {"libmpi.so", seen_mpi},            {"libmpich.so", seen_mpi},
    {"libze_loader.so", seen_level_zero}, {"libnccl.so", seen_nccl},
    {"libpython3", seen_python},
};

unsigned seen_here() {
  unsigned flags = 0;
  const runtime_state::asked done = runtime_state::instance().asked_so_far();
  if (done.tried_recording) flags |= seen_recording;
  if (done.attached) flags |= seen_annotations;
  const std::vector<std::string> loaded = loaded_library_files();
  for (const library_mark& mark : library_marks)
    if (library_loaded(loaded, mark.prefix)) flags |= mark.flag;
  return flags;
}

std::string what_was_seen(unsigned flags) {
  std::vector<std::string> parts;
  if ((flags & seen_annotations) == 0) parts.emplace_back("no annotations");
  parts.emplace_back((flags & seen_cuda) != 0 ? "CUDA loaded but never initialised" : "no CUDA");
  if ((flags & seen_gnu_openmp) != 0)
    parts.emplace_back(
        "an OpenMP runtime without OMPT (GNU libgomp; LLVM's libomp, e.g. clang++ -fopenmp, "
        "is traced)");
  else if ((flags & seen_llvm_openmp) != 0)
    parts.emplace_back("LLVM's OpenMP runtime, which never started ferret's OpenMP tool");
  else
    parts.emplace_back("no OpenMP");
  parts.emplace_back((flags & seen_mpi) != 0 ? "MPI without ferret's MPI layer (libferret_mpi)"
                                             : "no MPI");
  if ((flags & seen_level_zero) != 0) parts.emplace_back("Level Zero loaded but never initialised");
  if ((flags & seen_nccl) != 0) parts.emplace_back("NCCL without a communicator");
  if ((flags & seen_python) != 0) parts.emplace_back("Python without import ferret or GPU work");
  return fmt::format("{}", fmt::join(parts, ", "));
}

// What the processes the program started wrote, OR'ed; nullopt if the file
// cannot be read (the program closed it): then nothing is known of them.
std::optional<unsigned> seen_by_others(const char* status, bool& any) {
  const int fd = open(status, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char block[4096];
  ssize_t got = 0;
  while ((got = read(fd, block, sizeof block)) > 0 || (got < 0 && errno == EINTR))
    if (got > 0) text.append(block, static_cast<std::size_t>(got));
  close(fd);
  unsigned flags = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    flags |= static_cast<unsigned>(std::strtoul(text.substr(start, end - start).c_str(), nullptr, 10));
    any = true;
    start = end + 1;
  }
  return flags;
}

void report_at_exit() noexcept {
  try {
    const char* status = std::getenv("FERRET_RUN_STATUS");
    const char* program_pid = std::getenv("FERRET_RUN_PID");
    if (status == nullptr || program_pid == nullptr) return;
    const unsigned flags = seen_here();
    if (std::to_string(getpid()) != program_pid) {
      // A process the program started: tell the program, if there is anything to tell.
      if (flags == 0) return;
      const int fd = open(status, O_WRONLY | O_APPEND | O_CLOEXEC);
      if (fd < 0) return;
      const std::string line = fmt::format("{}\n", flags);
      [[maybe_unused]] const ssize_t ignored = ::write(fd, line.data(), line.size());
      close(fd);
      return;
    }
    bool others = false;
    const std::optional<unsigned> theirs = seen_by_others(status, others);
    if (!theirs) return;
    const unsigned all = flags | *theirs;
    if ((all & seen_recording) != 0) return;  // the outputs, or why there are none, were said
    message("nothing recorded in {}{}: {}", executable_name(),
            others ? " or the processes it started" : "", what_was_seen(all));
  } catch (...) {
  }
}

// At load, so that the report runs after the session's own exit handler,
// which is registered later.
[[maybe_unused]] const bool registered = [] {
  if (std::getenv("FERRET_RUN_STATUS") != nullptr) std::atexit(report_at_exit);
  return true;
}();

}  // namespace
}  // namespace ferret::runtime::internal
