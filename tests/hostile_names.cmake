# Hostile names through every backend in one run: support/hostile_names_app
# traced with FERRET_BACKEND=chrome,otf2,tau,summary. Each output passes its
# checker (ferret-trace-check; ferret-otf2-check, otf2-print and python3-otf2;
# ferret-tau-check) and keeps every event: the region calls, marks and counter
# samples the program made are the same number in each (the summary, a table of
# the busiest regions, shows at most as many).
include(${CMAKE_CURRENT_LIST_DIR}/otf2_read_back.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} -E env FERRET_BACKEND=chrome,otf2,tau,summary
                        FERRET_OUTPUT=${WORK}/run FERRET_VERBOSE=1 ${PROGRAM}
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(WRITE ${WORK}/stderr "${err}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the program failed (${status}); stderr in ${WORK}/stderr")
endif()
if(NOT out MATCHES "regions ([0-9]+) marks ([0-9]+) samples ([0-9]+)")
  message(FATAL_ERROR "the program did not say what it recorded: ${out}")
endif()
set(regions ${CMAKE_MATCH_1})
set(marks ${CMAKE_MATCH_2})
set(samples ${CMAKE_MATCH_3})
math(EXPR user_event_samples "${marks} + ${samples}")
message(STATUS "recorded: ${regions} region calls, ${marks} marks, ${samples} counter samples")

function(expect what actual expected)
  if(NOT "${actual}" STREQUAL "${expected}")
    message(FATAL_ERROR "${what}: ${actual}, but the program recorded ${expected}")
  endif()
  message(STATUS "${what}: ${actual}")
endfunction()

# Chrome: complete events, instants and counter samples.
execute_process(COMMAND ${TRACE_CHECK} ${WORK}/run.json RESULT_VARIABLE status OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT status EQUAL 0 OR NOT out MATCHES ": ok, [0-9]+ events \\(([^)]*)\\)")
  message(FATAL_ERROR "ferret-trace-check: ${out}${err}")
endif()
set(phases "${CMAKE_MATCH_1}")
foreach(phase X i C)
  if(NOT phases MATCHES "(^|, )${phase}: ([0-9]+)")
    message(FATAL_ERROR "no '${phase}' events in the chrome trace: ${phases}")
  endif()
  set(chrome_${phase} ${CMAKE_MATCH_2})
endforeach()
expect("chrome: complete events (X)" ${chrome_X} ${regions})
expect("chrome: instants (i)" ${chrome_i} ${marks})
expect("chrome: counter samples (C)" ${chrome_C} ${samples})

# OTF2: Enter events, markers and metric samples; read by three readers.
set(anchor ${WORK}/run/traces.otf2)
execute_process(COMMAND ${OTF2_CHECK} ${anchor} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "ferret-otf2-check: ${out}${err}")
endif()
string(REGEX MATCHALL "events \\(([0-9]+) enter" enters "${out}")
set(otf2_enters 0)
foreach(location ${enters})
  string(REGEX REPLACE "events \\(([0-9]+) enter" "\\1" count "${location}")
  math(EXPR otf2_enters "${otf2_enters} + ${count}")
endforeach()
if(NOT out MATCHES "metric samples: ([0-9]+), markers: ([0-9]+)")
  message(FATAL_ERROR "ferret-otf2-check gave no totals: ${out}")
endif()
expect("otf2: Enter events" ${otf2_enters} ${regions})
expect("otf2: metric samples" ${CMAKE_MATCH_1} ${samples})
expect("otf2: markers" ${CMAKE_MATCH_2} ${marks})
otf2_read_back(${anchor} printed)
execute_process(COMMAND ${OTF2_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/support/otf2_python_reader.py ${anchor}
                OUTPUT_VARIABLE out)
if(NOT out MATCHES "\\(([0-9]+) enter, [0-9]+ leave, ([0-9]+) metric")
  message(FATAL_ERROR "python3-otf2 gave no totals: ${out}")
endif()
expect("python3-otf2: Enter events" ${CMAKE_MATCH_1} ${regions})
expect("python3-otf2: metric samples" ${CMAKE_MATCH_2} ${samples})

# TAU: calls of the flat entries; marks and counter samples as user events.
execute_process(COMMAND ${TAU_CHECK} ${WORK}/run RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0 OR NOT out MATCHES "; ([0-9]+) calls, ([0-9]+) user event samples")
  message(FATAL_ERROR "ferret-tau-check: ${out}${err}")
endif()
expect("tau: calls" ${CMAKE_MATCH_1} ${regions})
expect("tau: user event samples" ${CMAKE_MATCH_2} ${user_event_samples})

# summary: its host-region table shows the busiest regions (the rest elided as
# "… N more regions"): the calls it shows are at most those recorded, and all
# of them when nothing is elided.
file(READ ${WORK}/stderr err)
string(FIND "${err}" "\nHost regions\n" table)
if(table EQUAL -1)
  message(FATAL_ERROR "the summary printed no host-region table")
endif()
string(SUBSTRING "${err}" ${table} -1 rows)
string(REGEX MATCHALL "\n +[0-9]+ +[0-9.]+ +" counts "${rows}")
set(summary_calls 0)
foreach(row ${counts})
  string(REGEX REPLACE "\n +([0-9]+) .*" "\\1" count "${row}")
  math(EXPR summary_calls "${summary_calls} + ${count}")
endforeach()
if(summary_calls GREATER regions OR (summary_calls LESS regions AND NOT rows MATCHES "more regions"))
  message(FATAL_ERROR "summary: ${summary_calls} host region calls shown, ${regions} recorded")
endif()
message(STATUS "summary: ${summary_calls} of ${regions} host region calls in the rows shown")

# Integers given to set_metadata are written exactly in every format that shows
# run metadata: 2^53 + 1, UINT64_MAX, INT64_MIN.
file(READ ${WORK}/run.json chrome_text)
file(STRINGS ${WORK}/run/traces.otf2 otf2_text)  # properties live in the anchor file
file(READ ${WORK}/run/profile.0.0.0 tau_text)
foreach(format chrome otf2 tau)
  foreach(number 9007199254740993 18446744073709551615 -9223372036854775808)
    string(FIND "${${format}_text}" "${number}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${format}: the metadata integer ${number} is not written exactly")
    endif()
  endforeach()
endforeach()
message(STATUS "chrome, otf2, tau: metadata integers exact")
