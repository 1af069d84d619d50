// A program annotated with NVTX's C API (and a few ferret regions), run
// without a GPU: synthetic launches stand in for kernels. check_outputs.py
// runs it once into every backend and checks what each output shows.
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <cstddef>
#include <cstdint>
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

  // NVTX's payload extension, as NCCL 2.28 uses it: a range pushed with the
  // core call and popped with nvtxRangePopPayload (ncclCommInitRank's).
  struct comm_parameters {
    std::uint64_t hash;
    std::int32_t ranks;
  };
  nvtxPayloadSchemaEntry_t entries[2] = {};
  entries[0].type = NVTX_PAYLOAD_ENTRY_TYPE_UINT64;
  entries[0].name = "hash";
  entries[0].offset = offsetof(comm_parameters, hash);
  entries[1].type = NVTX_PAYLOAD_ENTRY_TYPE_INT32;
  entries[1].name = "ranks";
  entries[1].offset = offsetof(comm_parameters, ranks);
  nvtxPayloadSchemaAttr_t schema{};
  schema.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NAME | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
  schema.name = "comm parameters";
  schema.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
  schema.entries = entries;
  schema.numEntries = 2;
  schema.payloadStaticSize = sizeof(comm_parameters);
  schema.schemaId = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 7;
  nvtxDomainHandle_t comms = nvtxDomainCreateA("Comms");
  const std::uint64_t registered = nvtxPayloadSchemaRegister(comms, &schema);
  expect(registered == 0 || registered == schema.schemaId, "a static schema registered under its own id");
  nvtxEventAttributes_t init = attributes();
  init.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  init.message.registered = nvtxDomainRegisterStringA(comms, "commInit");
  nvtxDomainRangePushEx(comms, &init);
  synthetic_launch("kernel_in_comm_init");
  const comm_parameters parameters{0x6fc5c2d6dfbad2edu, 2};
  const nvtxPayloadData_t payload{schema.schemaId, sizeof parameters, &parameters};
  nvtxRangePopPayload(comms, &payload, 1);
  // Ranges and marks that carry only a payload: named by its schema.
  nvtxRangePushPayload(comms, &payload, 1);
  synthetic_launch("kernel_in_payload_range");
  nvtxRangePopPayload(comms, &payload, 1);
  nvtxMarkPayload(comms, &payload, 1);
  const nvtxRangeId_t exchange = nvtxRangeStartPayload(comms, &payload, 1);
  nvtxRangeEndPayload(comms, exchange, &payload, 1);

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
