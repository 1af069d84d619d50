# Included from tests/CMakeLists.txt when the CUDA toolkit is found: why a
# CUPTI subscription failed, from CUPTI's result and the driver found (no
# GPU; the process case needs a machine without a CUDA driver, else it says
# it skipped).
add_executable(ferret-cuda-linked-app ${CMAKE_CURRENT_LIST_DIR}/support/cuda_linked_app.cpp)
target_link_libraries(ferret-cuda-linked-app PRIVATE ferret::cuda ferret_warnings)
add_dependencies(ferret-cuda-linked-app ferret_chrome)
add_executable(cupti_subscription_test ${CMAKE_CURRENT_LIST_DIR}/cupti_subscription_test.cpp)
target_compile_definitions(cupti_subscription_test PRIVATE
  FERRET_CUDA_LINKED_PROGRAM="$<TARGET_FILE:ferret-cuda-linked-app>")
target_link_libraries(cupti_subscription_test PRIVATE ferret_cupti_subscription ferret_run_program
                                                      doctest_main ${CMAKE_DL_LIBS} ferret_warnings)
add_dependencies(cupti_subscription_test ferret-cuda-linked-app)
add_test(NAME cupti_subscription_test COMMAND cupti_subscription_test)
set_tests_properties(cupti_subscription_test PROPERTIES LABELS "unit;process")

# Instruction samples: stall reasons, settings, cubins kept, attribution (no GPU).
add_executable(cupti_sampling_test ${CMAKE_CURRENT_LIST_DIR}/cupti_sampling_test.cpp)
target_link_libraries(cupti_sampling_test PRIVATE ferret_cupti_sampling doctest_main ferret_warnings)
add_test(NAME cupti_sampling_test COMMAND cupti_sampling_test)
set_tests_properties(cupti_sampling_test PROPERTIES LABELS "unit")

# Sampled counters: the setting, which are sampled, their clock and intervals (no GPU).
add_executable(cupti_metrics_test ${CMAKE_CURRENT_LIST_DIR}/cupti_metrics_test.cpp)
target_link_libraries(cupti_metrics_test PRIVATE ferret_cupti_sampling doctest_main ferret_warnings)
add_test(NAME cupti_metrics_test COMMAND cupti_metrics_test)
set_tests_properties(cupti_metrics_test PROPERTIES LABELS "unit")
