// ferret-level-zero-append: what an append costs the program (no ferret in
// it; run.sh runs it bare, behind the tracing layer alone, and under ferret).
//   ferret-level-zero-append regular|immediate [appends]
// regular: kernel launches appended to a regular list, reset every 1000
// (the collector records each, with its own timestamp event); immediate: the
// same on an immediate list, the host waiting for the list every 1000 (the
// driver runs each). Prints the minimum and median ns per append over 9 rounds.
#include <level_zero/ze_api.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                       \
  do {                                                                    \
    if (const ze_result_t result = (call); result != ZE_RESULT_SUCCESS) { \
      std::fprintf(stderr, "%s failed: 0x%x\n", #call, unsigned(result)); \
      std::exit(1);                                                       \
    }                                                                     \
  } while (0)

namespace {

double now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  const bool immediate = argc > 1 && std::strcmp(argv[1], "immediate") == 0;
  const long appends = argc > 2 ? std::atol(argv[2]) : 100000;
  constexpr long batch = 1000;
  CHECK(zeInit(0));
  std::uint32_t count = 1;
  ze_driver_handle_t driver = nullptr;
  CHECK(zeDriverGet(&count, &driver));
  count = 1;
  ze_device_handle_t device = nullptr;
  CHECK(zeDeviceGet(driver, &count, &device));
  ze_context_desc_t context_desc{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ze_context_handle_t context = nullptr;
  CHECK(zeContextCreate(driver, &context_desc, &context));
  const unsigned char il[4] = {0x03, 0x02, 0x23, 0x07};
  ze_module_desc_t module_desc{ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, sizeof il, il,
                               nullptr, nullptr};
  ze_module_handle_t module = nullptr;
  CHECK(zeModuleCreate(context, device, &module_desc, &module, nullptr));
  ze_kernel_desc_t kernel_desc{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "spin"};
  ze_kernel_handle_t spin = nullptr;
  CHECK(zeKernelCreate(module, &kernel_desc, &spin));
  const std::uint32_t microseconds = 0;
  CHECK(zeKernelSetArgumentValue(spin, 0, sizeof microseconds, &microseconds));
  ze_command_queue_desc_t queue_desc{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                                     ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_list_handle_t list = nullptr;
  if (immediate) {
    CHECK(zeCommandListCreateImmediate(context, device, &queue_desc, &list));
  } else {
    ze_command_list_desc_t list_desc{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, 0, 0};
    CHECK(zeCommandListCreate(context, device, &list_desc, &list));
  }
  // The host waits on this event after each batch of an immediate list.
  ze_event_pool_desc_t pool_desc{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
  ze_event_pool_handle_t pool = nullptr;
  CHECK(zeEventPoolCreate(context, &pool_desc, 1, &device, &pool));
  ze_event_desc_t event_desc{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST,
                             ZE_EVENT_SCOPE_FLAG_HOST};
  ze_event_handle_t batch_done = nullptr;
  CHECK(zeEventCreate(pool, &event_desc, &batch_done));

  const ze_group_count_t one{1, 1, 1};
  std::vector<double> per_append;
  for (int round = 0; round < 9; ++round) {
    const double start = now_ns();
    for (long i = 0; i < appends; ++i) {
      const bool last_of_batch = (i + 1) % batch == 0;
      CHECK(zeCommandListAppendLaunchKernel(list, spin, &one, immediate && last_of_batch ? batch_done : nullptr, 0,
                                            nullptr));
      if (!last_of_batch) continue;
      if (immediate) {
        CHECK(zeEventHostSynchronize(batch_done, UINT64_MAX));
        CHECK(zeEventHostReset(batch_done));
      } else {
        CHECK(zeCommandListReset(list));
      }
    }
    per_append.push_back((now_ns() - start) / static_cast<double>(appends));
  }
  std::sort(per_append.begin(), per_append.end());
  std::printf("%s appends: %.0f ns min, %.0f ns median (9 rounds of %ld)\n", immediate ? "immediate" : "regular",
              per_append.front(), per_append[per_append.size() / 2], appends);
  CHECK(zeEventDestroy(batch_done));
  CHECK(zeEventPoolDestroy(pool));
  CHECK(zeCommandListDestroy(list));
  CHECK(zeKernelDestroy(spin));
  CHECK(zeModuleDestroy(module));
  CHECK(zeContextDestroy(context));
  return 0;
}
