// An unmodified Level Zero program (no ferret): what ferret-run must trace.
// One immediate list (a copy in, saxpy, a copy out) and a regular list run
// twice on a queue (a kernel and a copy). Exit status 0 when the results are right.
#include <level_zero/ze_api.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#define CHECK(call)                                                         \
  do {                                                                      \
    if (const ze_result_t result = (call); result != ZE_RESULT_SUCCESS) {   \
      std::fprintf(stderr, "%s failed: 0x%x\n", #call, unsigned(result));   \
      return 1;                                                             \
    }                                                                       \
  } while (0)

int main() {
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
  ze_kernel_desc_t kernel_desc{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "saxpy"};
  ze_kernel_handle_t saxpy = nullptr;
  CHECK(zeKernelCreate(module, &kernel_desc, &saxpy));

  constexpr std::size_t n = 1024;
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  ze_device_mem_alloc_desc_t memory_desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  void* dx = nullptr;
  void* dy = nullptr;
  CHECK(zeMemAllocDevice(context, &memory_desc, n * sizeof(float), 64, device, &dx));
  CHECK(zeMemAllocDevice(context, &memory_desc, n * sizeof(float), 64, device, &dy));

  ze_command_queue_desc_t queue_desc{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                                     ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_list_handle_t immediate = nullptr;
  CHECK(zeCommandListCreateImmediate(context, device, &queue_desc, &immediate));
  ze_event_pool_desc_t pool_desc{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
  ze_event_pool_handle_t pool = nullptr;
  CHECK(zeEventPoolCreate(context, &pool_desc, 1, &device, &pool));
  ze_event_desc_t event_desc{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST,
                             ZE_EVENT_SCOPE_FLAG_HOST};
  ze_event_handle_t done = nullptr;
  CHECK(zeEventCreate(pool, &event_desc, &done));

  const float a = 3.0f;
  CHECK(zeKernelSetArgumentValue(saxpy, 0, sizeof a, &a));
  CHECK(zeKernelSetArgumentValue(saxpy, 1, sizeof dx, &dx));
  CHECK(zeKernelSetArgumentValue(saxpy, 2, sizeof dy, &dy));
  CHECK(zeKernelSetGroupSize(saxpy, 128, 1, 1));
  const ze_group_count_t groups{n / 128, 1, 1};
  CHECK(zeCommandListAppendMemoryCopy(immediate, dx, x.data(), n * sizeof(float), nullptr, 0, nullptr));
  CHECK(zeCommandListAppendMemoryCopy(immediate, dy, y.data(), n * sizeof(float), nullptr, 0, nullptr));
  CHECK(zeCommandListAppendLaunchKernel(immediate, saxpy, &groups, nullptr, 0, nullptr));
  CHECK(zeCommandListAppendMemoryCopy(immediate, y.data(), dy, n * sizeof(float), done, 0, nullptr));
  CHECK(zeEventHostSynchronize(done, UINT64_MAX));
  if (y[0] != 5.0f) return 2;

  // The same kernel again through a regular list, run twice: y = 3 x + y each time.
  ze_command_list_desc_t list_desc{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, 0, 0};
  ze_command_list_handle_t list = nullptr;
  CHECK(zeCommandListCreate(context, device, &list_desc, &list));
  CHECK(zeCommandListAppendLaunchKernel(list, saxpy, &groups, nullptr, 0, nullptr));
  CHECK(zeCommandListAppendBarrier(list, nullptr, 0, nullptr));
  CHECK(zeCommandListAppendMemoryCopy(list, y.data(), dy, n * sizeof(float), nullptr, 0, nullptr));
  CHECK(zeCommandListClose(list));
  ze_command_queue_handle_t queue = nullptr;
  CHECK(zeCommandQueueCreate(context, device, &queue_desc, &queue));
  for (int run = 0; run < 2; ++run) {
    CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, nullptr));
    CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
  }
  if (y[n - 1] != 11.0f) return 3;

  CHECK(zeCommandQueueDestroy(queue));
  CHECK(zeCommandListDestroy(list));
  CHECK(zeEventDestroy(done));
  CHECK(zeEventPoolDestroy(pool));
  CHECK(zeCommandListDestroy(immediate));
  CHECK(zeMemFree(context, dx));
  CHECK(zeMemFree(context, dy));
  CHECK(zeKernelDestroy(saxpy));
  CHECK(zeModuleDestroy(module));
  CHECK(zeContextDestroy(context));
  return 0;
}
