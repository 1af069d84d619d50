# Included from tests/CMakeLists.txt: how the runtime attributes GPU work
# (a fake collector stands in for CUPTI, so no GPU is needed).
add_executable(gpu_correlation_test gpu_correlation_test.cpp)
target_link_libraries(gpu_correlation_test PRIVATE ${memory_backend_linked} doctest_main ferret_warnings)
add_test(NAME gpu_correlation_test COMMAND gpu_correlation_test)
set_tests_properties(gpu_correlation_test PROPERTIES ENVIRONMENT "${memory_environment}" LABELS "unit")
