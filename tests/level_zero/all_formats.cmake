# The Level Zero example on ferret's test driver, traced once into every
# format: FERRET_BACKEND=chrome,otf2,tau,summary. Three steps over two queues:
# 6 uploads (HtoD), 3 saxpy, 3 scale, 3 barriers, 3 copies back (DtoH).
#   chrome   ferret-trace-check passes; the kernels, copies and barriers counted
#   OTF2     the same events as the chrome file (chrome-otf2-compare), the 9
#            copies and their bytes (ferret-otf2-check), clean in otf2-print
#            and python3-otf2
#   TAU      ferret-tau-check passes; each queue a virtual thread with its
#            kernels and copies
#   summary  18 GPU operations, the kernels and the named data object
include(${CMAKE_CURRENT_LIST_DIR}/../otf2_read_back.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} -E env ZE_ENABLE_ALT_DRIVERS=${DRIVER}
                        FERRET_BACKEND=chrome,otf2,tau,summary FERRET_OUTPUT=run ${PROGRAM}
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE status ERROR_VARIABLE summary)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the example failed (${status}): ${summary}")
endif()
function(run_checked what)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK} RESULT_VARIABLE status
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${what}: ${out}${err}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed")
  endif()
endfunction()
function(expect_count text pattern expected what)
  string(REGEX MATCHALL "${pattern}" found "${text}")
  list(LENGTH found count)
  if(NOT count EQUAL expected)
    message(FATAL_ERROR "${what}: ${count}, expected ${expected}")
  endif()
endfunction()

run_checked(ferret-trace-check ${TRACE_CHECK} run.json)
file(READ ${WORK}/run.json chrome)
expect_count("${chrome}" "\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"saxpy\"" 3 "chrome saxpy kernels")
expect_count("${chrome}" "\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"scale\"" 3 "chrome scale kernels")
expect_count("${chrome}" "\"ph\":\"X\",\"cat\":\"memcpy\",\"name\":\"Memcpy HtoD\"" 6 "chrome HtoD copies")
expect_count("${chrome}" "\"ph\":\"X\",\"cat\":\"memcpy\",\"name\":\"Memcpy DtoH\"" 3 "chrome DtoH copies")
expect_count("${chrome}" "\"ph\":\"b\",\"cat\":\"sync\"" 3 "chrome barriers")
expect_count("${chrome}" "\"source object\":\"input x\"" 3 "chrome copies of the named data object")

run_checked(chrome-otf2-compare ${COMPARE} run.json run/traces.otf2)
run_checked(ferret-otf2-check ${OTF2_CHECK} run/traces.otf2 --copies 9 --copy-bytes 147456
            --region step --region setup --region zeCommandQueueExecuteCommandLists)
otf2_read_back(${WORK}/run/traces.otf2 printed)

run_checked(ferret-tau-check ${TAU_CHECK} run)
file(READ ${WORK}/run/profile.0.0.1 copy_queue)
file(READ ${WORK}/run/profile.0.0.2 compute_queue)
if(NOT copy_queue MATCHES "\n\"Memory copy Host to Device\" 6 "
   OR NOT compute_queue MATCHES "\n\"saxpy\" 3 " OR NOT compute_queue MATCHES "\n\"scale\" 3 "
   OR NOT compute_queue MATCHES "\n\"Memory copy Device to Host\" 3 ")
  message(FATAL_ERROR "the TAU profiles lack a queue's kernels or copies:\n${copy_queue}\n${compute_queue}")
endif()

if(NOT summary MATCHES "18 GPU operations" OR NOT summary MATCHES "\n +3 +[0-9.]+ +[0-9.]+ +- +0 +saxpy"
   OR NOT summary MATCHES "input x")
  message(FATAL_ERROR "the summary lacks the operations, the kernels or the data object:\n${summary}")
endif()
