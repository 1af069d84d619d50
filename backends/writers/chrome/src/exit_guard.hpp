// The exit guard: a tiny process that closes the trace when the traced
// process dies in the middle of a write (SIGKILL, the OOM killer, a crash).
//
// Why a second process: the writer keeps the file a complete document after
// each write, but not during one. A batch of events overwrites the old
// trailer before the new trailer follows it, and a fatal signal can also cut
// a single large write(2) short at a page boundary, so a process killed at
// that moment leaves the file truncated inside an event. No order of writes
// avoids this (the document's closing has to move forward past the old one),
// and nothing in a process runs after SIGKILL.
//
// How: the writer publishes, before each trailer it writes, where the events
// end and the trailer that closes them. The guard is created with
// clone(CLONE_VM): it shares the traced process's memory (no copy of it, no
// copy-on-write cost) and reads that record after the process is gone; it
// keeps only the trace and a pipe open (none of the application's files), in
// a session of its own (a signal to the application's process group spares
// it), with every signal blocked, and blocks on the pipe. When the traced
// process dies the kernel closes the pipe's other end; the guard then cuts the
// file where the published events end and writes the published trailer. That
// is the state the writer itself leaves after a complete write, so it is
// harmless however far the writer got. After the final flush the guard is told
// the trace is finished and exits without touching the file.
//
// Where clone(CLONE_VM) is refused (some seccomp profiles), under valgrind
// (which stops the program at such a clone) and in a ThreadSanitizer build
// (which reports races all over a program sharing memory with the guard), the
// trace runs without a guard: complete after each write, not during one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <sys/types.h>

#include "ferret/runtime/backend.hpp"

namespace ferret::chrome {

class exit_guard {
 public:
  exit_guard() = default;
  exit_guard(const exit_guard&) = delete;
  exit_guard& operator=(const exit_guard&) = delete;
  /// Waits for a running guard: it closes the file as last published.
  ~exit_guard();

  /// Publishes the first record, then starts the guard of `fd`. Returns false
  /// (with errno set) when it cannot start; the writer then runs without one.
  bool start(int fd, off_t events_end, std::string_view trailer);

  /// Makes (events_end, trailer) what the guard writes if the process dies now.
  void publish(off_t events_end, std::string_view trailer);

  /// The trace is complete: the guard exits without writing. Waits for it.
  void finish() noexcept;

  /// In a fork child: lets go of the parent's guard without telling it anything.
  /// Called in the process that started the guard, it stops it as the
  /// destructor does (closing our end of the pipe there wakes the guard, which
  /// must not lose its stack while it closes the file).
  void forget() noexcept;

  bool running() const noexcept { return pid_ > 0; }

  /// False when a guard runs but its pipe is gone (the program closed our end
  /// with its other descriptors): the guard has then closed the file as last
  /// published, and exited.
  bool intact() const noexcept;
  /// Replaces such a guard by a new one for `fd`, with the last published record.
  void restart(int fd);

 private:
  struct record {
    off_t events_end = 0;
    const char* trailer = nullptr;
    std::size_t trailer_size = 0;
  };

  static int guard_main(void* self) noexcept;
  void stop(bool finished) noexcept;

  std::string slots_[2];              // the published trailer and the next one
  record records_[2];                 // records_[k] points into slots_[k]
  // Stored with release order; the guard reads them only once this process
  // is gone (plain loads: see guard_main).
  unsigned active_ = 0;               // the record the guard would use now
  bool finished_ = false;
  // Set before the guard starts and never changed after: it reads them.
  int fd_ = -1;                       // the trace (the guard's copy of the descriptor)
  int pipe_read_ = -1;                // the guard's end (closed in this process)
  int pipe_write_ = -1;               // ours: closed by the kernel when we die
  runtime::file_identity pipe_;       // what pipe_write_ is open on
  int max_descriptors_ = 0;           // for closing the others without close_range
  pid_t pid_ = -1;
  pid_t owner_ = -1;                  // the process that started the guard
  void* stack_ = nullptr;
};

}  // namespace ferret::chrome
