# The OpenMP offload program (to the host) traced once into every format:
# FERRET_BACKEND=chrome,otf2,tau. The chrome file and the OTF2 archive must
# show the same events (chrome-otf2-compare), the archive must hold the target
# regions and the two 8000-byte copies (ferret-otf2-check) and read cleanly in
# otf2-print and python3-otf2, and the TAU profile must pass ferret-tau-check and hold the
# target region on the host and the copies on the device's virtual thread.
include(${CMAKE_CURRENT_LIST_DIR}/../otf2_read_back.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${LLVM_LIB_DIR}
                        FERRET_BACKEND=chrome,otf2,tau FERRET_OUTPUT=run ${PROGRAM}
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE status ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the program failed (${status}): ${err}")
endif()
function(run_checked what)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK} RESULT_VARIABLE status
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${what}: ${out}${err}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed")
  endif()
endfunction()
run_checked(chrome-otf2-compare ${COMPARE} run.json run/traces.otf2)
run_checked(ferret-otf2-check ${OTF2_CHECK} run/traces.otf2 --copies 2 --copy-bytes 16000
            --region "target [device 0]" --region "target enter data [device 0]"
            --region "transfer to device" --region "kernel submission" --region parallel)
otf2_read_back(${WORK}/run/traces.otf2 printed)
run_checked(ferret-tau-check ${TAU_CHECK} run)
file(READ ${WORK}/run/profile.0.0.0 host)
file(GLOB profiles ${WORK}/run/profile.0.0.*)
list(LENGTH profiles threads)
math(EXPR last "${threads} - 1")
file(READ ${WORK}/run/profile.0.0.${last} device)
if(NOT host MATCHES "\n\"target \\[device 0\\]" OR NOT device MATCHES "\n\"Memory copy Host to Device\" 1 ")
  message(FATAL_ERROR "the TAU profile lacks the target region or the device's copy")
endif()
