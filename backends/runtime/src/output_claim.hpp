// output_claim.hpp — one output name, several processes.
//
// A FERRET_OUTPUT without %p that is not a directory names one output for
// every process that inherits it: fork() children, but also programs a traced
// program starts (PyTorch's compile workers, a script's subprocesses) and MPI
// ranks. The first process to start holds the name (of the ranks of a
// parallel launch, rank 0); every other one writes beside it with its pid added (run.json: run-<pid>.json), so that no process
// overwrites another's trace. The hold is an abstract Unix socket bound to a
// name derived from the output's absolute path: it leaves no file behind and
// ends with the process, however it ends.
#pragma once

#include <string>

#include "ferret/runtime/backend.hpp"

namespace ferret::runtime::internal {

// The output pattern with "-%p" before its extension (run.json: run-%p.json).
std::string output_beside_with_pid(const std::string& output);

// True for a process that a parallel launcher (mpirun, srun) started as a rank
// other than 0: rank 0 holds a shared name, the others write beside it without
// a word (an MPI-aware backend, OTF2, still writes one archive for all ranks).
bool launched_as_rank_other_than_zero();

class output_claim {
 public:
  enum class outcome { held, held_elsewhere };
  // Holds `output` (an expanded path) for this process, unless another live
  // process holds it. A name already held by this process stays held; one
  // that cannot be checked (no Unix sockets) counts as held.
  outcome hold(const std::string& output);
  // Whether another live process holds `output`, without holding it: for a
  // name that is a directory now, the holder's own outputs (a TAU profile, an
  // OTF2 archive) or a directory of the user's, which processes share.
  bool held_elsewhere(const std::string& output) const;
  // In a fork() child: the parent's hold is the parent's.
  void forget_inherited() noexcept;

 private:
  int socket_ = -1;
  file_identity socket_file_;  // what socket_ is open on (the program may close it)
  std::string held_;  // the absolute path of the output held through socket_
};

}  // namespace ferret::runtime::internal
