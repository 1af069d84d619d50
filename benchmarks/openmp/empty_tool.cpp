// empty_tool.cpp — libferret-bench-empty-tool.so: an OMPT tool that registers
// the host callbacks ferret's collector registers, with empty bodies. Loaded
// through OMP_TOOL_LIBRARIES by ferret-openmp-bench's "empty tool" run, it
// separates what the OpenMP runtime spends on having a tool (its OMPT
// bookkeeping and the indirect calls) from what ferret's callbacks add.
#include <omp-tools.h>

namespace {

void thread_begin(ompt_thread_t, ompt_data_t*) {}
void parallel_begin(ompt_data_t*, const ompt_frame_t*, ompt_data_t*, unsigned int, int, const void*) {}
void parallel_end(ompt_data_t*, ompt_data_t*, int, const void*) {}
void implicit_task(ompt_scope_endpoint_t, ompt_data_t*, ompt_data_t*, unsigned int, unsigned int, int) {}
void work(ompt_work_t, ompt_scope_endpoint_t, ompt_data_t*, ompt_data_t*, uint64_t, const void*) {}
void masked(ompt_scope_endpoint_t, ompt_data_t*, ompt_data_t*, const void*) {}
void sync_region(ompt_sync_region_t, ompt_scope_endpoint_t, ompt_data_t*, ompt_data_t*, const void*) {}
void task_create(ompt_data_t*, const ompt_frame_t*, ompt_data_t*, int, int, const void*) {}
void task_schedule(ompt_data_t*, ompt_task_status_t, ompt_data_t*) {}
void mutex_acquire(ompt_mutex_t, unsigned int, unsigned int, ompt_wait_id_t, const void*) {}
void mutex(ompt_mutex_t, ompt_wait_id_t, const void*) {}
void nest_lock(ompt_scope_endpoint_t, ompt_wait_id_t, const void*) {}

int initialize(ompt_function_lookup_t lookup, int, ompt_data_t*) {
  const auto set = reinterpret_cast<ompt_set_callback_t>(lookup("ompt_set_callback"));
  if (set == nullptr) return 0;
  const auto on = [set](ompt_callbacks_t which, auto function) {
    set(which, reinterpret_cast<ompt_callback_t>(function));
  };
  on(ompt_callback_thread_begin, &thread_begin);
  on(ompt_callback_parallel_begin, &parallel_begin);
  on(ompt_callback_parallel_end, &parallel_end);
  on(ompt_callback_implicit_task, &implicit_task);
  on(ompt_callback_work, &work);
  on(ompt_callback_masked, &masked);
  on(ompt_callback_sync_region, &sync_region);
  on(ompt_callback_sync_region_wait, &sync_region);
  on(ompt_callback_task_create, &task_create);
  on(ompt_callback_task_schedule, &task_schedule);
  on(ompt_callback_mutex_acquire, &mutex_acquire);
  on(ompt_callback_mutex_acquired, &mutex);
  on(ompt_callback_mutex_released, &mutex);
  on(ompt_callback_nest_lock, &nest_lock);
  return 1;
}

void finalize(ompt_data_t*) {}

}  // namespace

extern "C" ompt_start_tool_result_t* ompt_start_tool(unsigned int, const char*) {
  static ompt_start_tool_result_t result{&initialize, &finalize, ompt_data_t{0}};
  return &result;
}
