# Included from tests/CMakeLists.txt: the chrome backend, driven directly
# (no runtime session), every file it writes checked by ferret::trace_check.
add_executable(chrome_backend_test chrome_backend_test.cpp)
target_link_libraries(chrome_backend_test PRIVATE ferret_chrome ferret::trace_check doctest_main
                                                  ferret_warnings)
add_test(NAME chrome_backend_test COMMAND chrome_backend_test)
