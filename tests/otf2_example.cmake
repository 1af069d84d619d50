# The heat example traced with FERRET_BACKEND=otf2, then read back with
# ferret-otf2-check (balance, time order, regions, locations, the mark),
# otf2-print and python3-otf2 (otf2_read_back.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/otf2_read_back.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} -E env FERRET_BACKEND=otf2 FERRET_OUTPUT=${WORK}/heat.otf2
                        ${HEAT} 128 3
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "heat failed: ${status}")
endif()
set(anchor ${WORK}/heat/traces.otf2)
execute_process(COMMAND ${CHECK} ${anchor} --threads 4 --streams 0 --copies 0
                        --region step --region sweep --region barrier --marker stop
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "ferret-otf2-check failed")
endif()
otf2_read_back(${anchor} out)
string(REGEX MATCHALL "\nENTER " enters "${out}")
list(LENGTH enters enter_count)
if(enter_count LESS 100)
  message(FATAL_ERROR "otf2-print shows only ${enter_count} ENTER events")
endif()
message(STATUS "otf2-print: ${enter_count} ENTER events, no INVALID, empty stderr")
