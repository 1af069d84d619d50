# cmake -DCOMPILER=<c++> -DINCLUDE=<ferret's include/> -DSOURCE=<file> -DLINES=<n;n;...>
#       [-DDEFINES=<-D...>] -P expect_warnings.cmake
# Compiles SOURCE (syntax only) and requires a warning on each of LINES and on
# no other line.
execute_process(COMMAND ${COMPILER} -std=c++17 -fsyntax-only -Wall -Wextra ${DEFINES} -I${INCLUDE} ${SOURCE}
                RESULT_VARIABLE failed OUTPUT_VARIABLE diagnostics ERROR_VARIABLE diagnostics)
if(failed)
  message(FATAL_ERROR "${SOURCE} did not compile:\n${diagnostics}")
endif()
get_filename_component(file_name ${SOURCE} NAME)
string(REGEX MATCHALL "${file_name}:[0-9]+:[0-9]+: warning" warnings "${diagnostics}")
set(warned_lines)
foreach(warning IN LISTS warnings)
  string(REGEX REPLACE "^.*:([0-9]+):[0-9]+: warning$" "\\1" line "${warning}")
  list(APPEND warned_lines ${line})
endforeach()
list(REMOVE_DUPLICATES warned_lines)
list(SORT warned_lines COMPARE NATURAL)
set(expected ${LINES})
list(SORT expected COMPARE NATURAL)
if(NOT warned_lines STREQUAL expected)
  message(FATAL_ERROR "warnings on lines '${warned_lines}', expected on '${expected}' (${DEFINES}):\n${diagnostics}")
endif()
message(STATUS "warned on lines ${warned_lines} (${DEFINES})")
