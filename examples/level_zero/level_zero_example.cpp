// level-zero-example: y = 2 (a x + y) on a Level Zero device, over two command
// queues, annotated with ferret. Each step uploads x and y on a copy queue,
// which signals an event; the compute queue waits for it, runs saxpy and
// scale, and copies y back. The host input is a named data object.
// Run it traced:
//   FERRET_BACKEND=chrome,summary FERRET_OUTPUT=level-zero.json ./level-zero-example
// and open level-zero.json in https://ui.perfetto.dev: under the device one
// track per queue, the copies of one queue before the kernels of the other,
// and flow arrows from each zeCommandQueueExecuteCommandLists to its work.
// Without an Intel GPU, run it on ferret's test driver (README: Level Zero).
#include <ferret/ferret.hpp>
#include <level_zero/ze_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

// The kernels as SPIR-V (kernels.spvasm, assembled at build time).
const unsigned char kernels_spirv[] = {
#include "kernels_spv.inc"
};

void check(ze_result_t result, const char* call, int line) {
  if (result == ZE_RESULT_SUCCESS) return;
  std::fprintf(stderr, "level-zero-example: line %d: %s failed: 0x%x\n", line, call,
               static_cast<unsigned>(result));
  std::exit(1);
}
#define CHECK_ZE(call) check((call), #call, __LINE__)

constexpr std::uint32_t elements = 4096;
constexpr std::uint32_t group_size = 256;
constexpr int steps = 3;
constexpr float a = 3.0f;
constexpr float factor = 2.0f;

ze_kernel_handle_t make_kernel(ze_module_handle_t module, const char* name) {
  ze_kernel_desc_t desc{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, name};
  ze_kernel_handle_t kernel = nullptr;
  CHECK_ZE(zeKernelCreate(module, &desc, &kernel));
  CHECK_ZE(zeKernelSetGroupSize(kernel, group_size, 1, 1));
  return kernel;
}

ze_command_queue_handle_t make_queue(ze_context_handle_t context, ze_device_handle_t device, std::uint32_t index) {
  ze_command_queue_desc_t desc{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, index, 0,
                               ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_queue_handle_t queue = nullptr;
  CHECK_ZE(zeCommandQueueCreate(context, device, &desc, &queue));
  return queue;
}

ze_command_list_handle_t make_list(ze_context_handle_t context, ze_device_handle_t device) {
  ze_command_list_desc_t desc{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, 0, 0};
  ze_command_list_handle_t list = nullptr;
  CHECK_ZE(zeCommandListCreate(context, device, &desc, &list));
  return list;
}

}  // namespace

int main() {
  FERRET_FUNCTION();
  ferret::set_metadata("elements", static_cast<std::int64_t>(elements));
  CHECK_ZE(zeInit(ZE_INIT_FLAG_GPU_ONLY));
  std::uint32_t count = 1;
  ze_driver_handle_t driver = nullptr;
  CHECK_ZE(zeDriverGet(&count, &driver));
  count = 1;
  ze_device_handle_t device = nullptr;
  CHECK_ZE(zeDeviceGet(driver, &count, &device));
  ze_context_desc_t context_desc{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ze_context_handle_t context = nullptr;
  CHECK_ZE(zeContextCreate(driver, &context_desc, &context));

  std::vector<float> x(elements), y(elements);
  for (std::uint32_t i = 0; i < elements; ++i) {
    x[i] = static_cast<float>(i % 16);
    y[i] = 1.0f;
  }
  // The host input, by name in every output (the copies that read it).
  ferret::data_object input{"input x", x.data(), x.size() * sizeof(float)};

  ze_module_handle_t module = nullptr;
  ze_kernel_handle_t saxpy = nullptr;
  ze_kernel_handle_t scale = nullptr;
  void* device_x = nullptr;
  void* device_y = nullptr;
  ze_command_queue_handle_t copy_queue = nullptr;
  ze_command_queue_handle_t compute_queue = nullptr;
  ze_command_list_handle_t upload = nullptr;
  ze_command_list_handle_t compute = nullptr;
  ze_event_pool_handle_t pool = nullptr;
  ze_event_handle_t uploaded = nullptr;
  {
    FERRET_REGION("setup");
    ze_module_desc_t module_desc{ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV,
                                 sizeof kernels_spirv, kernels_spirv, nullptr, nullptr};
    CHECK_ZE(zeModuleCreate(context, device, &module_desc, &module, nullptr));
    saxpy = make_kernel(module, "saxpy");
    scale = make_kernel(module, "scale");
    ze_device_mem_alloc_desc_t memory_desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    CHECK_ZE(zeMemAllocDevice(context, &memory_desc, elements * sizeof(float), 64, device, &device_x));
    CHECK_ZE(zeMemAllocDevice(context, &memory_desc, elements * sizeof(float), 64, device, &device_y));
    CHECK_ZE(zeKernelSetArgumentValue(saxpy, 0, sizeof a, &a));
    CHECK_ZE(zeKernelSetArgumentValue(saxpy, 1, sizeof device_x, &device_x));
    CHECK_ZE(zeKernelSetArgumentValue(saxpy, 2, sizeof device_y, &device_y));
    CHECK_ZE(zeKernelSetArgumentValue(scale, 0, sizeof device_y, &device_y));
    CHECK_ZE(zeKernelSetArgumentValue(scale, 1, sizeof factor, &factor));
    copy_queue = make_queue(context, device, 0);
    compute_queue = make_queue(context, device, 1);
    ze_event_pool_desc_t pool_desc{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
    CHECK_ZE(zeEventPoolCreate(context, &pool_desc, 1, &device, &pool));
    ze_event_desc_t event_desc{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST,
                               ZE_EVENT_SCOPE_FLAG_HOST};
    CHECK_ZE(zeEventCreate(pool, &event_desc, &uploaded));

    // Recorded once, run at every step: the upload signals `uploaded`, the
    // compute list waits for it.
    upload = make_list(context, device);
    CHECK_ZE(zeCommandListAppendMemoryCopy(upload, device_x, x.data(), elements * sizeof(float), nullptr, 0, nullptr));
    CHECK_ZE(zeCommandListAppendMemoryCopy(upload, device_y, y.data(), elements * sizeof(float), uploaded, 0, nullptr));
    CHECK_ZE(zeCommandListClose(upload));
    compute = make_list(context, device);
    const ze_group_count_t groups{elements / group_size, 1, 1};
    CHECK_ZE(zeCommandListAppendLaunchKernel(compute, saxpy, &groups, nullptr, 1, &uploaded));
    CHECK_ZE(zeCommandListAppendBarrier(compute, nullptr, 0, nullptr));
    CHECK_ZE(zeCommandListAppendLaunchKernel(compute, scale, &groups, nullptr, 0, nullptr));
    CHECK_ZE(zeCommandListAppendMemoryCopy(compute, y.data(), device_y, elements * sizeof(float), nullptr, 0, nullptr));
    CHECK_ZE(zeCommandListClose(compute));
  }

  for (int step = 0; step < steps; ++step) {
    FERRET_REGION("step");
    CHECK_ZE(zeEventHostReset(uploaded));
    CHECK_ZE(zeCommandQueueExecuteCommandLists(copy_queue, 1, &upload, nullptr));
    CHECK_ZE(zeCommandQueueExecuteCommandLists(compute_queue, 1, &compute, nullptr));
    CHECK_ZE(zeCommandQueueSynchronize(compute_queue, UINT64_MAX));
    CHECK_ZE(zeCommandQueueSynchronize(copy_queue, UINT64_MAX));
  }

  // y = 2 (a x + y), applied `steps` times from y = 1.
  bool right = true;
  for (std::uint32_t i = 0; i < elements; ++i) {
    float expected = 1.0f;
    for (int step = 0; step < steps; ++step) expected = factor * (a * static_cast<float>(i % 16) + expected);
    right = right && y[i] == expected;
  }

  {
    FERRET_REGION("teardown");
    CHECK_ZE(zeCommandListDestroy(upload));
    CHECK_ZE(zeCommandListDestroy(compute));
    CHECK_ZE(zeEventDestroy(uploaded));
    CHECK_ZE(zeEventPoolDestroy(pool));
    CHECK_ZE(zeCommandQueueDestroy(copy_queue));
    CHECK_ZE(zeCommandQueueDestroy(compute_queue));
    CHECK_ZE(zeMemFree(context, device_x));
    CHECK_ZE(zeMemFree(context, device_y));
    CHECK_ZE(zeKernelDestroy(saxpy));
    CHECK_ZE(zeKernelDestroy(scale));
    CHECK_ZE(zeModuleDestroy(module));
    CHECK_ZE(zeContextDestroy(context));
  }
  if (!right) {
    std::fprintf(stderr, "level-zero-example: wrong results\n");
    return 1;
  }
  std::printf("level-zero-example: %d steps over %u elements, results right\n", steps, elements);
  return 0;
}
