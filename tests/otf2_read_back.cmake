# otf2_read_back(<anchor> <output variable>): reads an OTF2 archive with two
# readers independent of ferret's own (ferret-otf2-check), and fails the test
# script on any problem:
#   otf2-print    exit 0, nothing on stderr, no INVALID reference; its output
#                 goes to <output variable>
#   python3-otf2  Debian's Python bindings (support/otf2_python_reader.py):
#                 definitions, balance, time order, event counts
# The including script gets the programs as -DOTF2_PRINT=... -DOTF2_PYTHON=...
# (FERRET_OTF2_PRINT and FERRET_OTF2_PYTHON in tests/otf2_backend_test.cmake).
function(otf2_read_back anchor output)
  if(NOT OTF2_PRINT OR NOT OTF2_PYTHON)
    message(FATAL_ERROR "otf2_read_back needs -DOTF2_PRINT=... and -DOTF2_PYTHON=...")
  endif()
  execute_process(COMMAND ${OTF2_PRINT} ${anchor} RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT status EQUAL 0 OR NOT err STREQUAL "")
    message(FATAL_ERROR "otf2-print: exit ${status}, stderr: ${err}")
  endif()
  if(out MATCHES "INVALID")
    message(FATAL_ERROR "otf2-print shows INVALID references")
  endif()
  execute_process(COMMAND ${OTF2_PYTHON} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/support/otf2_python_reader.py
                          ${anchor}
                  RESULT_VARIABLE status OUTPUT_VARIABLE python_out ERROR_VARIABLE python_err)
  if(NOT status EQUAL 0 OR NOT python_err STREQUAL "")
    message(FATAL_ERROR "python3-otf2 (exit ${status}):\n${python_out}${python_err}")
  endif()
  message(STATUS "otf2-print: clean; ${python_out}")
  set(${output} "${out}" PARENT_SCOPE)
endfunction()
