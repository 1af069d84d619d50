# Included from tests/CMakeLists.txt when the OTF2 backend is built: the
# backend driven directly, and the heat example traced to an OTF2 archive; every
# archive read back with the OTF2 reader API (ferret-otf2-check), otf2-print and
# Debian's python3-otf2 (otf2_read_back.cmake, support/otf2_python_reader.py).
find_program(FERRET_OTF2_PRINT otf2-print REQUIRED)
# python3-otf2 installs for Debian's own Python only.
find_program(FERRET_OTF2_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
execute_process(COMMAND ${FERRET_OTF2_PYTHON} -c "import otf2" RESULT_VARIABLE otf2_python_status
                OUTPUT_QUIET ERROR_QUIET)
if(NOT FERRET_OTF2_PYTHON OR NOT otf2_python_status EQUAL 0)
  message(FATAL_ERROR "ferret's OTF2 tests read archives with Debian's python3-otf2, which "
                      "${FERRET_OTF2_PYTHON} cannot import: install python3-otf2 "
                      "(tools/install-deps test), or set FERRET_OTF2_PYTHON")
endif()
set(otf2_readers -DOTF2_PRINT=${FERRET_OTF2_PRINT} -DOTF2_PYTHON=${FERRET_OTF2_PYTHON})

# The python3-otf2 check itself: a good archive passes, broken ones fail.
add_test(NAME otf2_python_reader_test
         COMMAND ${FERRET_OTF2_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/otf2_python_reader_test.py)
set_tests_properties(otf2_python_reader_test PROPERTIES LABELS "unit")
add_executable(otf2_backend_test otf2_backend_test.cpp)
target_compile_definitions(otf2_backend_test PRIVATE FERRET_OTF2_PRINT="${FERRET_OTF2_PRINT}"
  FERRET_OTF2_PYTHON="${FERRET_OTF2_PYTHON}"
  FERRET_OTF2_PYTHON_READER="${CMAKE_CURRENT_SOURCE_DIR}/support/otf2_python_reader.py")
target_link_libraries(otf2_backend_test PRIVATE ferret_otf2 ferret_otf2_check doctest_main
                                                ferret_warnings)
add_test(NAME otf2_backend_test COMMAND otf2_backend_test)
set_tests_properties(otf2_backend_test PROPERTIES LABELS "unit")

# The memory of OTF2's buffers (chunk_pool) and the definition chunk size.
add_executable(otf2_memory_test otf2_memory_test.cpp
               ${PROJECT_SOURCE_DIR}/backends/writers/otf2/src/otf2_chunks.cpp
               ${PROJECT_SOURCE_DIR}/backends/writers/otf2/src/otf2_definitions.cpp)
target_include_directories(otf2_memory_test PRIVATE ${PROJECT_SOURCE_DIR}/backends/writers/otf2/src)
target_link_libraries(otf2_memory_test PRIVATE PkgConfig::OTF2 fmt::fmt-header-only doctest_main
                                               ferret_warnings)
add_test(NAME otf2_memory_test COMMAND otf2_memory_test)
set_tests_properties(otf2_memory_test PROPERTIES LABELS "unit")

# The writers at their limits, run as a user runs them: a run that records
# nothing (every backend), OTF2's marker limit, many short-lived threads into OTF2.
add_executable(ferret-writer-limits support/writer_limits_app.cpp)
target_link_libraries(ferret-writer-limits PRIVATE ferret::chrome Threads::Threads ferret_warnings)
add_dependencies(ferret-writer-limits ferret_otf2 ferret_tau ferret_summary ferret_report)
add_executable(writer_limits_test writer_limits_test.cpp)
target_compile_definitions(writer_limits_test PRIVATE
  FERRET_WRITER_LIMITS_APP="$<TARGET_FILE:ferret-writer-limits>"
  FERRET_OTF2_PRINT="${FERRET_OTF2_PRINT}" FERRET_OTF2_PYTHON="${FERRET_OTF2_PYTHON}"
  FERRET_OTF2_PYTHON_READER="${CMAKE_CURRENT_SOURCE_DIR}/support/otf2_python_reader.py")
target_link_libraries(writer_limits_test PRIVATE ferret_run_program ferret::trace_check ferret_otf2_check
                                                 ferret::tau_check doctest_main ferret_warnings)
add_test(NAME writer_limits_test COMMAND writer_limits_test)
set_tests_properties(writer_limits_test PROPERTIES LABELS "process")

add_test(NAME otf2_example
         COMMAND ${CMAKE_COMMAND} -DHEAT=$<TARGET_FILE:heat> -DCHECK=$<TARGET_FILE:ferret-otf2-check>
                 ${otf2_readers} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/otf2_example
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/otf2_example.cmake)
set_tests_properties(otf2_example PROPERTIES LABELS "process")

# One run written by both backends (FERRET_BACKEND=chrome,otf2) shows the same
# events in both: region calls and durations, copies, marks, counter samples,
# thread names.
add_library(ferret_chrome_otf2_compare STATIC support/chrome_otf2_compare.cpp)
target_include_directories(ferret_chrome_otf2_compare PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(ferret_chrome_otf2_compare PUBLIC ferret_otf2_check
                      PRIVATE nlohmann_json::nlohmann_json fmt::fmt-header-only ferret_warnings)
add_executable(chrome-otf2-compare chrome_otf2_compare_main.cpp)
target_link_libraries(chrome-otf2-compare PRIVATE ferret_chrome_otf2_compare ferret_warnings)
add_test(NAME otf2_chrome_same_events
         COMMAND ${CMAKE_COMMAND} -DHEAT=$<TARGET_FILE:heat> -DTEST_APP=$<TARGET_FILE:ferret-test-app>
                 -DCOMPARE=$<TARGET_FILE:chrome-otf2-compare> ${otf2_readers}
                 -DWORK=${CMAKE_CURRENT_BINARY_DIR}/otf2_chrome_same_events
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/otf2_chrome_same_events.cmake)
set_tests_properties(otf2_chrome_same_events PROPERTIES LABELS "process")
