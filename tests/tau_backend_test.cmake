# Included from tests/CMakeLists.txt: the TAU profile checker's own tests, the
# backend driven directly (unit), and FERRET_BACKEND=tau in real runs (process):
# every profile any of them writes passes ferret::tau_check.
add_executable(tau_check_test tau_check_test.cpp)
target_link_libraries(tau_check_test PRIVATE ferret::tau_check doctest_main ferret_warnings)
add_test(NAME tau_check_test COMMAND tau_check_test)

# A program with a known call tree on two threads, built of sleeps.
add_executable(ferret-tau-known-tree support/known_tree_app.cpp)
target_link_libraries(ferret-tau-known-tree PRIVATE ferret::tau Threads::Threads ferret_warnings)

# 120,000 nested regions, for the memory bound.
add_executable(ferret-deep-nesting support/deep_nesting_app.cpp)
target_link_libraries(ferret-deep-nesting PRIVATE ferret::tau ferret_warnings)

add_executable(tau_backend_test tau_backend_test.cpp)
target_compile_definitions(tau_backend_test PRIVATE
                           FERRET_KNOWN_TREE_APP="$<TARGET_FILE:ferret-tau-known-tree>"
                           FERRET_DEEP_NESTING_APP="$<TARGET_FILE:ferret-deep-nesting>")
target_link_libraries(tau_backend_test PRIVATE ferret_tau ferret::tau_check ferret_run_program
                                               doctest_main ferret_warnings)
add_dependencies(tau_backend_test ferret-tau-known-tree ferret-deep-nesting)
add_test(NAME tau_backend_test COMMAND tau_backend_test --test-suite-exclude=process)
add_test(NAME tau_backend_process_test COMMAND tau_backend_test --test-suite=process)
set_tests_properties(tau_check_test tau_backend_test PROPERTIES LABELS "unit")
set_tests_properties(tau_backend_process_test PROPERTIES LABELS "process")

# The example, profiled, passes the checker.
add_test(NAME example_tau_profile
         COMMAND ${CMAKE_COMMAND} -E env FERRET_BACKEND=tau
                 FERRET_OUTPUT=${CMAKE_CURRENT_BINARY_DIR}/heat-tau $<TARGET_FILE:heat> 128 3)
set_tests_properties(example_tau_profile PROPERTIES FIXTURES_SETUP heat_tau LABELS "process")
add_test(NAME example_tau_profile_check
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/support/expect_output.sh "heat-tau: ok, 4 profiles, metric TIME"
                 $<TARGET_FILE:ferret-tau-check> ${CMAKE_CURRENT_BINARY_DIR}/heat-tau)
set_tests_properties(example_tau_profile_check PROPERTIES FIXTURES_REQUIRED heat_tau LABELS "process")
