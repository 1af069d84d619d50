# Included from tests/CMakeLists.txt: the summary backend driven directly
# (unit), and FERRET_BACKEND=summary in a real run of support/test_app (process).
add_executable(summary_backend_test summary_backend_test.cpp)
target_compile_definitions(summary_backend_test PRIVATE
                           FERRET_TEST_APP="$<TARGET_FILE:ferret-test-app>")
target_link_libraries(summary_backend_test PRIVATE ferret_summary ferret_run_program doctest_main ferret_warnings)
add_dependencies(summary_backend_test ferret-test-app)
add_test(NAME summary_backend_test COMMAND summary_backend_test --test-suite-exclude=process)
set_tests_properties(summary_backend_test PROPERTIES LABELS "unit")
add_test(NAME summary_backend_process_test COMMAND summary_backend_test --test-suite=process)
set_tests_properties(summary_backend_process_test PROPERTIES LABELS "process")
