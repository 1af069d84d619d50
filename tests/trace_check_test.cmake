# Unit tests of tools/ferret-trace-check; included from tests/CMakeLists.txt.
add_executable(trace_check_test ${CMAKE_CURRENT_LIST_DIR}/trace_check_test.cpp)
target_link_libraries(trace_check_test PRIVATE ferret::trace_check doctest_main ferret_warnings)
add_test(NAME trace_check_test COMMAND trace_check_test)
