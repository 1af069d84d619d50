# The heat example traced with FERRET_BACKEND=otf2, then read back with
# ferret-otf2-check (balance, time order, regions, locations, the mark),
# otf2-print and python3-otf2 (otf2_read_back.cmake). Every event heat records
# is there: setup and solve, step, sweep and barrier per worker and step, one
# counter sample per step, each read by both the OTF2 reader API and otf2-print.
include(${CMAKE_CURRENT_LIST_DIR}/otf2_read_back.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(workers 3)
execute_process(COMMAND ${CMAKE_COMMAND} -E env FERRET_BACKEND=otf2 FERRET_OUTPUT=${WORK}/heat.otf2
                        ${HEAT} 128 ${workers}
                RESULT_VARIABLE status OUTPUT_VARIABLE heat_out)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "heat failed: ${status}")
endif()
if(NOT heat_out MATCHES "([0-9]+) steps on a")
  message(FATAL_ERROR "heat did not say how many steps it made: ${heat_out}")
endif()
set(steps ${CMAKE_MATCH_1})
math(EXPR regions "2 + 3 * ${workers} * ${steps}")
set(anchor ${WORK}/heat/traces.otf2)
execute_process(COMMAND ${CHECK} ${anchor} --threads 4 --streams 0 --copies 0
                        --region step --region sweep --region barrier --marker stop
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "ferret-otf2-check failed")
endif()

function(expect what actual expected)
  if(NOT "${actual}" STREQUAL "${expected}")
    message(FATAL_ERROR "${what}: ${actual}, but heat recorded ${expected} (${steps} steps)")
  endif()
endfunction()
string(REGEX MATCHALL "events \\(([0-9]+) enter" enters "${out}")
set(total 0)
foreach(location ${enters})
  string(REGEX REPLACE "events \\(([0-9]+) enter" "\\1" count "${location}")
  math(EXPR total "${total} + ${count}")
endforeach()
expect("ferret-otf2-check: Enter events" ${total} ${regions})
if(NOT out MATCHES "metric samples: ([0-9]+)")
  message(FATAL_ERROR "ferret-otf2-check printed no metric samples")
endif()
expect("ferret-otf2-check: metric samples" ${CMAKE_MATCH_1} ${steps})

otf2_read_back(${anchor} out)
foreach(record ENTER LEAVE METRIC)
  string(REGEX MATCHALL "\n${record} " found "${out}")
  list(LENGTH found count_${record})
endforeach()
expect("otf2-print: ENTER events" ${count_ENTER} ${regions})
expect("otf2-print: LEAVE events" ${count_LEAVE} ${regions})
expect("otf2-print: METRIC events" ${count_METRIC} ${steps})
message(STATUS "otf2-print: ${regions} ENTER and LEAVE, ${steps} METRIC events, no INVALID, empty stderr")
