# otf2_print_clean(<otf2-print> <anchor> <output variable>): runs otf2-print on
# an archive and fails unless it exits 0, writes nothing on stderr and shows no
# INVALID reference; its output goes to <output variable>. Included by the
# test scripts that read archives back.
function(otf2_print_clean print anchor output)
  execute_process(COMMAND ${print} ${anchor} RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT status EQUAL 0 OR NOT err STREQUAL "")
    message(FATAL_ERROR "otf2-print: exit ${status}, stderr: ${err}")
  endif()
  if(out MATCHES "INVALID")
    message(FATAL_ERROR "otf2-print shows INVALID references")
  endif()
  set(${output} "${out}" PARENT_SCOPE)
endfunction()
