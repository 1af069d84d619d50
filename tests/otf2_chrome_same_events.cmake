# The heat example traced once with FERRET_BACKEND=chrome,otf2: chrome-otf2-compare
# must find the same events and thread names in heat.json and heat/traces.otf2, and otf2-print
# and python3-otf2 must read the archive cleanly. Then ferret-test-app, whose
# main thread has no name of its own: both formats must give it the same one.
include(${CMAKE_CURRENT_LIST_DIR}/otf2_read_back.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# Runs `program` with FERRET_BACKEND=chrome,otf2 into WORK/<name>, compares
# the two outputs; the comparison's line in `result`.
function(traced_and_compared name result)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env FERRET_BACKEND=chrome,otf2 FERRET_OUTPUT=${WORK}/${name}
                          ${ARGN}
                  RESULT_VARIABLE status OUTPUT_QUIET)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${ARGN} failed: ${status}")
  endif()
  execute_process(COMMAND ${COMPARE} ${WORK}/${name}.json ${WORK}/${name}/traces.otf2
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${out}${err}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "chrome and otf2 differ (${name})")
  endif()
  set(${result} "${out}" PARENT_SCOPE)
endfunction()

traced_and_compared(heat out ${HEAT} 128 3)
otf2_read_back(${WORK}/heat/traces.otf2 printed)
# heat's main thread and its 3 workers.
if(NOT out MATCHES "compared [1-9][0-9]* region names \\([1-9][0-9]* calls\\), 0 copies, 1 marks, [1-9][0-9]* counter samples, 4 thread names: the same")
  message(FATAL_ERROR "the comparison did not cover regions, the mark, counters and thread names")
endif()
# The unnamed main thread and two threads named "first" and "second".
traced_and_compared(app out ${TEST_APP} regions)
if(NOT out MATCHES ", 3 thread names: the same")
  message(FATAL_ERROR "the comparison did not cover the three threads of ferret-test-app")
endif()
