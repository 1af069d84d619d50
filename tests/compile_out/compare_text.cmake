# cmake -DOBJCOPY=... -DFIRST=a.o -DSECOND=b.o -DEXPECT=same|different -DWORK=dir -P compare_text.cmake
# Compares the machine code (all .text* sections) of two object files.
foreach(side FIRST SECOND)
  execute_process(COMMAND ${OBJCOPY} -O binary --only-section=.text* ${${side}} ${WORK}/${side}.bin
                  RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "objcopy failed on ${${side}}")
  endif()
  file(SIZE ${WORK}/${side}.bin ${side}_SIZE)
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK}/FIRST.bin ${WORK}/SECOND.bin
                RESULT_VARIABLE differ)
message(STATUS "${FIRST}: ${FIRST_SIZE} bytes of code; ${SECOND}: ${SECOND_SIZE} bytes")
if(EXPECT STREQUAL "same" AND differ)
  message(FATAL_ERROR "machine code differs, expected identical")
elseif(EXPECT STREQUAL "different" AND NOT differ)
  message(FATAL_ERROR "machine code identical, expected a difference")
endif()
