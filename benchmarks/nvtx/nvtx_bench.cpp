// nvtx_bench.cpp — ferret-nvtx-bench: what an NVTX range costs when ferret is
// the NVTX tool, next to a ferret region and NVTX without a tool, in one run.
//
// This program links ferret::nvtx, so NVTX's static hook hands its ranges to
// ferret (the "discard" backend drops the records after counting them).
// Rows, 1 thread, real time per push+pop pair (region enter+exit):
//   ferret/region_macro          FERRET_REGION("x"): the reference
//   ferret/region_name           ferret::region r{registered name}
//   ferret/region_runtime_string ferret::region r{ferret::register_name(buffer)}: ferret's own
//                                API for a name that arrives as a run-time string
//   nvtx/no_tool                 nvtxRangePushA/Pop through an NVTX instance with no
//                                tool (nvtx_no_tool.cpp): what NVTX costs untraced
//   nvtx/push_literal            nvtxRangePushA("x")/Pop, ferret the tool
//   nvtx/push_new_buffer         the same name in a fresh buffer each time (as PyTorch)
//   nvtx/push_long_name          a 48-byte name
//   nvtx/push_ex_registered      nvtxDomainRangePushEx, registered string, a domain
//   nvtx/push_ex_payload         nvtxRangePushEx with a double payload (+ a counter sample)
// `ferret-nvtx-bench --loop ROW N` runs N pairs of one row outside Google
// Benchmark, for valgrind --tool=callgrind (instructions per pair).
#include <ferret/ferret.hpp>
#include <nvtx3/nvToolsExt.h>

#include <benchmark/benchmark.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "discard_backend.hpp"
#include "nvtx_rows.hpp"

namespace ferret_bench {
namespace {

constexpr const char* long_name = "DistributedDataParallel.forward: bucket 17 of 32";

ferret::name g_name;
nvtxDomainHandle_t g_domain = nullptr;
nvtxStringHandle_t g_registered = nullptr;
char g_buffers[2][64];

const std::map<std::string, std::function<void(long)>>& rows() {
  static const std::map<std::string, std::function<void(long)>> table{
      {"ferret/region_macro", [](long n) {
         for (long i = 0; i < n; ++i) {
           FERRET_REGION("x");
           nvtx_clobber();
         }
       }},
      {"ferret/region_name", [](long n) {
         for (long i = 0; i < n; ++i) {
           ferret::region r{g_name};
           nvtx_clobber();
         }
       }},
      {"ferret/region_runtime_string", [](long n) {
         for (long i = 0; i < n; ++i) {
           char* buffer = g_buffers[i & 1];
           std::memcpy(buffer, "x", 2);
           ferret::region r{ferret::register_name(buffer)};
           nvtx_clobber();
         }
       }},
      {"nvtx/no_tool", [](long n) {
         for (long i = 0; i < n; ++i) nvtx_no_tool_pair("x");
       }},
      {"nvtx/push_literal", [](long n) {
         for (long i = 0; i < n; ++i) {
           nvtxRangePushA("x");
           nvtx_clobber();
           nvtxRangePop();
         }
       }},
      {"nvtx/push_new_buffer", [](long n) {
         for (long i = 0; i < n; ++i) {
           char* buffer = g_buffers[i & 1];
           std::memcpy(buffer, "x", 2);
           nvtxRangePushA(buffer);
           nvtx_clobber();
           nvtxRangePop();
         }
       }},
      {"nvtx/push_long_name", [](long n) {
         for (long i = 0; i < n; ++i) {
           nvtxRangePushA(long_name);
           nvtx_clobber();
           nvtxRangePop();
         }
       }},
      {"nvtx/push_ex_registered", [](long n) {
         nvtxEventAttributes_t event{};
         event.version = NVTX_VERSION;
         event.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
         event.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
         event.message.registered = g_registered;
         for (long i = 0; i < n; ++i) {
           nvtxDomainRangePushEx(g_domain, &event);
           nvtx_clobber();
           nvtxDomainRangePop(g_domain);
         }
       }},
      {"nvtx/push_ex_payload", [](long n) {
         nvtxEventAttributes_t event{};
         event.version = NVTX_VERSION;
         event.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
         event.messageType = NVTX_MESSAGE_TYPE_ASCII;
         event.message.ascii = "x";
         event.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
         event.payload.dValue = 1.5;
         for (long i = 0; i < n; ++i) {
           nvtxRangePushEx(&event);
           nvtx_clobber();
           nvtxRangePop();
         }
       }},
  };
  return table;
}

void run_row(benchmark::State& state, const std::function<void(long)>& row) {
  for (auto _ : state) row(1);
}

}  // namespace
}  // namespace ferret_bench

int main(int argc, char** argv) {
  using namespace ferret_bench;
  setenv("FERRET_BACKEND", "discard", 0);
  setenv("FERRET_VERBOSE", "0", 0);
  g_name = ferret::register_name("x");
  g_domain = nvtxDomainCreateA("bench");
  g_registered = nvtxDomainRegisterStringA(g_domain, "x");
  if (argc == 4 && std::strcmp(argv[1], "--loop") == 0) {
    const auto row = rows().find(argv[2]);
    if (row == rows().end()) {
      std::fprintf(stderr, "ferret-nvtx-bench: no row '%s'\n", argv[2]);
      return 2;
    }
    row->second(std::atol(argv[3]));
    return 0;
  }
  for (const auto& [name, row] : rows())
    benchmark::RegisterBenchmark(name.c_str(), [&row = row](benchmark::State& state) { run_row(state, row); })
        ->UseRealTime()
        ->MinTime(0.2);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  ferret::flush();
  std::printf("ferret-nvtx-bench: the discard backend received %" PRIu64 " events, %" PRIu64
              " dropped\n",
              g_discard.received.load(), g_discard.runtime_dropped.load());
  return g_discard.received.load() > 0 ? 0 : 1;
}
