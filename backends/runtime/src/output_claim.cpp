// One output name, several processes; see output_claim.hpp.
#include "output_claim.hpp"

#include <errno.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "ferret/runtime/text.hpp"

namespace ferret::runtime::internal {

std::string output_beside_with_pid(const std::string& output) {
  const auto slash = output.rfind('/');
  const auto dot = output.rfind('.');
  const bool has_extension =
      dot != std::string::npos && dot > 0 && (slash == std::string::npos || dot > slash + 1);
  return has_extension ? output.substr(0, dot) + "-%p" + output.substr(dot) : output + "-%p";
}

bool launched_as_rank_other_than_zero() {
  // Open MPI, PMIx (Open MPI 5, Slurm), MPICH's PMI, MVAPICH, Slurm's srun.
  for (const char* variable :
       {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID"})
    if (const char* rank = std::getenv(variable); rank != nullptr && rank[0] != '\0')
      return std::strcmp(rank, "0") != 0;
  return false;
}

namespace {

std::string absolute_path(const std::string& output) {
  if (!output.empty() && output.front() == '/') return output;
  char directory[PATH_MAX];
  if (getcwd(directory, sizeof directory) == nullptr) return output;
  return std::string{directory} + "/" + output;
}

// The abstract socket address standing for an output (FNV-1a of its absolute
// path: abstract socket names are short, paths need not be).
struct socket_name {
  sockaddr_un address{};
  socklen_t length = 0;
  explicit socket_name(const std::string& absolute) {
    const std::string name = fmt::format("ferret-output-{:016x}", fnv1a_64(absolute));
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path + 1, name.data(), name.size());  // sun_path[0] == 0: abstract
    length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&address); }
};

}  // namespace

output_claim::outcome output_claim::hold(const std::string& output) {
  const std::string absolute = absolute_path(output);
  if (socket_ >= 0 && held_ == absolute) return outcome::held;
  const socket_name name{absolute};
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return outcome::held;
  if (bind(fd, name.get(), name.length) != 0) {
    const int error = errno;
    close(fd);
    return error == EADDRINUSE ? outcome::held_elsewhere : outcome::held;
  }
  close_if_open_on(socket_, socket_file_);
  socket_ = fd;
  socket_file_ = identity_of(fd);
  held_ = absolute;
  return outcome::held;
}

bool output_claim::held_elsewhere(const std::string& output) const {
  const std::string absolute = absolute_path(output);
  if (socket_ >= 0 && held_ == absolute) return false;
  const socket_name name{absolute};
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  // A datagram socket connects only to an address some socket is bound to.
  const bool bound = connect(fd, name.get(), name.length) == 0;
  close(fd);
  return bound;
}

void output_claim::forget_inherited() noexcept {
  close_if_open_on(socket_, socket_file_);  // never a descriptor of the program's
  socket_ = -1;
  held_.clear();
}

}  // namespace ferret::runtime::internal
