// Names of the communication kinds (backend.hpp), for backends and messages.
#include "ferret/runtime/backend.hpp"

namespace ferret::runtime {

std::string_view to_string(communication_kind kind) noexcept {
  switch (kind) {
    case communication_kind::send: return "send";
    case communication_kind::isend: return "isend";
    case communication_kind::isend_complete: return "isend-complete";
    case communication_kind::receive: return "receive";
    case communication_kind::irecv_request: return "irecv-request";
    case communication_kind::irecv: return "irecv";
    case communication_kind::collective_begin: return "collective-begin";
    case communication_kind::collective_end: return "collective-end";
  }
  return "unknown";
}

std::string_view to_string(collective_kind kind) noexcept {
  switch (kind) {
    case collective_kind::barrier: return "Barrier";
    case collective_kind::broadcast: return "Bcast";
    case collective_kind::gather: return "Gather";
    case collective_kind::gatherv: return "Gatherv";
    case collective_kind::scatter: return "Scatter";
    case collective_kind::scatterv: return "Scatterv";
    case collective_kind::allgather: return "Allgather";
    case collective_kind::allgatherv: return "Allgatherv";
    case collective_kind::alltoall: return "Alltoall";
    case collective_kind::alltoallv: return "Alltoallv";
    case collective_kind::alltoallw: return "Alltoallw";
    case collective_kind::allreduce: return "Allreduce";
    case collective_kind::reduce: return "Reduce";
    case collective_kind::reduce_scatter: return "Reduce_scatter";
    case collective_kind::scan: return "Scan";
    case collective_kind::exscan: return "Exscan";
    case collective_kind::reduce_scatter_block: return "Reduce_scatter_block";
  }
  return "unknown";
}

}  // namespace ferret::runtime
