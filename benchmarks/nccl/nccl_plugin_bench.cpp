// ferret-nccl-bench: what the NCCL plugin costs on the thread that calls NCCL,
// next to a ferret region, in one program (the "discard" backend drops the
// records after counting them). The plugin is loaded as NCCL loads it
// (dlopen, ncclProfiler_v5) and its entry points are called directly, without
// NCCL (whose own cost per call is not ferret's).
//   ferret/region_macro   FERRET_REGION("x"): the baseline
//   nccl/api_call         startEvent + stopEvent of a collective API event
//                         ("ncclAllReduce ncclFloat32": region, rank, communicator, bytes)
//   nccl/enqueued         the same for an enqueued collective
//                         ("AllReduce RING/LL": region, rank, communicator, bytes, channels)
// `ferret-nccl-bench --loop ROW N PLUGIN` runs N pairs of one row, for callgrind
// (docs/performance.md: the difference between two N is the cost per pair).
#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "discard_backend.hpp"
#include "ferret/ferret.hpp"
#include "nccl_profiler_api.hpp"

namespace api = ferret::nccl::api;

namespace {

[[gnu::noinline]] void region_pairs(long count) {
  for (long i = 0; i < count; ++i) {
    FERRET_REGION("x");
    asm volatile("" ::: "memory");
  }
}

[[gnu::noinline]] void event_pairs(api::profiler_v5& plugin, void* context, api::event_descr_v5& descr,
                                   long count) {
  for (long i = 0; i < count; ++i) {
    void* handle = nullptr;
    plugin.start_event(context, &handle, &descr);
    plugin.stop_event(handle);
  }
}

}  // namespace

int main(int argc, char** argv) {
  setenv("FERRET_BACKEND", "discard", 0);
  setenv("FERRET_VERBOSE", "0", 0);
  if (argc != 5 || std::strcmp(argv[1], "--loop") != 0) {
    std::fprintf(stderr, "usage: ferret-nccl-bench --loop ferret/region_macro|nccl/api_call|nccl/enqueued N PLUGIN\n");
    return 2;
  }
  const std::string row = argv[2];
  const long count = std::atol(argv[3]);
  void* library = dlopen(argv[4], RTLD_NOW | RTLD_LOCAL);
  auto* plugin = library != nullptr ? static_cast<api::profiler_v5*>(dlsym(library, "ncclProfiler_v5")) : nullptr;
  if (plugin == nullptr) {
    std::fprintf(stderr, "ferret-nccl-bench: cannot load ncclProfiler_v5 from %s\n", argv[4]);
    return 2;
  }
  region_pairs(1);  // starts the session before the plugin's init asks for it
  void* context = nullptr;
  int mask = 0;
  plugin->init(&context, 0x1234, &mask, "bench", 1, 2, 0, nullptr);
  api::event_descr_v5 descr{};
  if (row == "nccl/api_call") {
    descr.type = api::coll_api;
    descr.coll_api = {"AllReduce", 1024, "ncclFloat32", 0, nullptr, false};
  } else if (row == "nccl/enqueued") {
    descr.type = api::coll;
    descr.coll = {1, "AllReduce", nullptr, nullptr, 1024, 0, "ncclFloat32", 2, 8, "RING", "LL", nullptr};
  }
  if (row == "ferret/region_macro") {
    region_pairs(count);
  } else if (descr.type != 0) {
    event_pairs(*plugin, context, descr, count);
  } else {
    std::fprintf(stderr, "ferret-nccl-bench: unknown row %s\n", row.c_str());
    return 2;
  }
  plugin->finalize(context);
  ferret::flush();
  std::printf("ferret-nccl-bench: the discard backend received %" PRIu64 " events, %" PRIu64 " dropped\n",
              ferret_bench::g_discard.received.load(), ferret_bench::g_discard.runtime_dropped.load());
  return ferret_bench::g_discard.received.load() > 0 ? 0 : 1;
}
