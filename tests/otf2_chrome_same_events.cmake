# The heat example traced once with FERRET_BACKEND=chrome,otf2: chrome-otf2-compare
# must find the same events in heat.json and heat/traces.otf2, and otf2-print
# and python3-otf2 must read the archive cleanly.
include(${CMAKE_CURRENT_LIST_DIR}/otf2_read_back.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} -E env FERRET_BACKEND=chrome,otf2 FERRET_OUTPUT=${WORK}/heat
                        ${HEAT} 128 3
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "heat failed: ${status}")
endif()
execute_process(COMMAND ${COMPARE} ${WORK}/heat.json ${WORK}/heat/traces.otf2
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "chrome and otf2 differ")
endif()
otf2_read_back(${WORK}/heat/traces.otf2 printed)
if(NOT out MATCHES "compared [1-9][0-9]* region names \\([1-9][0-9]* calls\\), 0 copies, 1 marks, [1-9][0-9]* counter samples: the same")
  message(FATAL_ERROR "the comparison did not cover regions, the mark and counters")
endif()
