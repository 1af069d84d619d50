# Included from tests/CMakeLists.txt when the CUDA toolkit is found: the CUDA
# collector's API callbacks (which calls become regions, which are counted,
# whether device records find their call) from synthesised CUPTI callbacks
# and records. No libcupti calls, no driver, no GPU.
add_executable(cupti_api_calls_test ${CMAKE_CURRENT_LIST_DIR}/cupti_api_calls_test.cpp)
target_link_libraries(cupti_api_calls_test PRIVATE ferret_cupti_calls ferret_cupti_decode
                                                   ${memory_backend_linked} doctest_main ferret_warnings)
add_test(NAME cupti_api_calls_test COMMAND cupti_api_calls_test)
set_tests_properties(cupti_api_calls_test PROPERTIES ENVIRONMENT "${memory_environment}" LABELS "unit")
