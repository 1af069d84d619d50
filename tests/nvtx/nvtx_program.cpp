// A program annotated with NVTX's C API (and a few ferret regions), run
// without a GPU: synthetic launches stand in for kernels. check_outputs.py
// runs it once into every backend and checks what each output shows.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "ferret/ferret.hpp"
#include "support/synthetic_gpu.hpp"

namespace {

nvtxEventAttributes_t attributes() {
  nvtxEventAttributes_t event{};
  event.version = NVTX_VERSION;
  event.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  return event;
}

int failures = 0;
void expect(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "nvtx_program: expected %s\n", what);
    ++failures;
  }
}
// Without a tool NVTX tracks no levels: it returns NVTX_NO_PUSH_POP_TRACKING.
void expect_level(int level, int expected, const char* what) {
  if (level != NVTX_NO_PUSH_POP_TRACKING) expect(level == expected, what);
}

}  // namespace

int main() {
  using ferret::testing::synthetic_launch;

  // Push/pop ranges nested with ferret's own regions; a kernel inside.
  expect_level(nvtxRangePushA("outer"), 0, "the first push at level 0");
  {
    FERRET_REGION("ferret inside");
    expect_level(nvtxRangePushA("inner"), 1, "the second push at level 1");
    synthetic_launch("kernel_in_inner");
    expect_level(nvtxRangePop(), 1, "the pop of level 1");
  }
  nvtxRangePop();

  // One buffer reused for another name (as PyTorch's strings may be).
  char buffer[32];
  std::strcpy(buffer, "alpha");
  nvtxRangePushA(buffer);
  nvtxRangePop();
  std::strcpy(buffer, "beta");
  nvtxRangePushA(buffer);
  synthetic_launch("kernel_in_beta");
  nvtxRangePop();

  // A domain with a named category, a registered string and payloads.
  nvtxDomainHandle_t solver = nvtxDomainCreateA("Solver");
  nvtxDomainNameCategoryA(solver, 1, "phases");
  nvtxStringHandle_t assemble = nvtxDomainRegisterStringA(solver, "assemble");
  for (int step = 0; step < 3; ++step) {
    nvtxEventAttributes_t range = attributes();
    range.category = 1;
    range.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    range.message.registered = assemble;
    range.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    range.payload.dValue = 2.5 * (step + 1);
    nvtxDomainRangePushEx(solver, &range);
    synthetic_launch("kernel_in_assemble");
    nvtxDomainRangePop(solver);
  }
  nvtxEventAttributes_t residual = attributes();
  residual.messageType = NVTX_MESSAGE_TYPE_ASCII;
  residual.message.ascii = "residual";
  residual.payloadType = NVTX_PAYLOAD_TYPE_INT64;
  residual.payload.llValue = 42;
  nvtxDomainMarkEx(solver, &residual);
  nvtxMarkA("checkpoint");

  // Start/end ranges: on one thread, and ended by another thread.
  const nvtxRangeId_t io = nvtxRangeStartA("io");
  nvtxRangeEnd(io);
  const nvtxRangeId_t request = nvtxRangeStartA("async request");
  std::thread{[request] { nvtxRangeEnd(request); }}.join();

  // A pop with nothing open; a wide-character name.
  const int unbalanced = nvtxRangePop();
  if (unbalanced != NVTX_NO_PUSH_POP_TRACKING) expect(unbalanced < 0, "a pop with nothing open to fail");
  nvtxRangePushW(L"gr\u00f6\u00dfe");
  nvtxRangePop();

  // Left open at exit: closed and counted by the backends.
  nvtxRangePushA("left open");
  return failures == 0 ? 0 : 1;
}
