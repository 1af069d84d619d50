// The table of ferret's backends and collectors (ferret/runtime/components.hpp).
#include "ferret/runtime/components.hpp"

#include <iterator>

namespace ferret::runtime {
namespace {

constexpr component_kind backend = component_kind::backend;
constexpr component_kind collector = component_kind::collector;

constexpr component table[] = {
    {"chrome", "chrome", backend,
     "Chrome trace JSON for Perfetto and chrome://tracing, in FERRET_OUTPUT.json",
     "FERRET_BACKEND=chrome"},
    {"otf2", "otf2", backend,
     "OTF2 archive for Vampir and otf2-print, in the folder FERRET_OUTPUT; built with the OTF2 library",
     "FERRET_BACKEND=otf2"},
    {"tau", "tau", backend, "TAU profiles (profile.N.C.T) for ParaProf and pprof, in the folder FERRET_OUTPUT",
     "FERRET_BACKEND=tau"},
    {"summary", "summary", backend, "tables of time, GPU work and data objects at exit, on stderr or in FERRET_OUTPUT when it ends in .txt",
     "FERRET_BACKEND=summary"},
    {"report", "report", backend, "one HTML page of the run, written at exit, in FERRET_OUTPUT.html",
     "FERRET_BACKEND=report"},
    {"cuda", "cupti", collector, "CUDA kernels, copies, memsets, allocations and API calls, through CUPTI",
     "linking ferret::cuda (pkg-config ferret-cuda), or ferret-run (CUDA_INJECTION64_PATH)"},
    {"openmp", "ompt", collector,
     "OpenMP constructs and target offload, through OMPT (LLVM's libomp; GNU's libgomp has no OMPT)",
     "linking ferret::ompt (pkg-config ferret-ompt), or ferret-run (OMP_TOOL_LIBRARIES)"},
    {"level_zero", "level_zero", collector,
     "Level Zero API calls and device work (Intel GPUs), through the loader's tracing layer",
     "linking ferret::level_zero (pkg-config ferret-level_zero), or ferret-run (LD_PRELOAD)"},
    {"nvtx", "nvtx", collector, "NVTX ranges, marks and payloads, as regions, marks and counters",
     "linking ferret::cuda or ferret::nvtx, or ferret-run (NVTX_INJECTION64_PATH)"},
    {"nccl", "nccl", collector, "NCCL calls, collectives and kernel launches, as NCCL's profiler plugin",
     "ferret-run (NCCL_PROFILER_PLUGIN)"},
    {"mpi", "mpi", collector, "MPI calls and messages; the ranks as one trace",
     "linking ferret::mpi (pkg-config ferret-mpi), or LD_PRELOAD of libferret_mpi.so"},
    {"python", "python", collector, "Python call paths as the calling context of GPU work",
     "the CUDA and Level Zero collectors, which load it (FERRET_PYTHON)"},
};

}  // namespace

component_table components() noexcept { return {table, std::size(table)}; }

}  // namespace ferret::runtime
