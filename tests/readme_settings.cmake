# README.md's table of environment variables is `ferret-info --markdown`, the
# table generated from the runtime's own settings table, in both directions:
# the generated table appears in the README whole (every row, in order), and
# the README has no row of a FERRET_ variable besides (a removed or renamed
# setting, or one documented but never implemented).
execute_process(COMMAND ${INFO} --markdown OUTPUT_VARIABLE table RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "ferret-info --markdown failed")
endif()
file(READ ${README} readme)

# The variables each text has a row for (names only: no ';' to split a list).
function(variables_with_rows text result)
  string(REGEX MATCHALL "(^|\n)\\| `FERRET_[A-Z0-9_]*` \\|" rows "${text}")
  set(names)
  foreach(row IN LISTS rows)
    string(REGEX REPLACE "^\n?\\| `(FERRET_[A-Z0-9_]*)` \\|$" "\\1" name "${row}")
    list(APPEND names ${name})
  endforeach()
  set(${result} ${names} PARENT_SCOPE)
endfunction()
variables_with_rows("${table}" settings)
variables_with_rows("${readme}" documented)
list(LENGTH settings count)
if(count EQUAL 0)
  message(FATAL_ERROR "ferret-info --markdown printed no FERRET_ variable:\n${table}")
endif()

set(missing ${settings})
if(documented)
  list(REMOVE_ITEM missing ${documented})
endif()
set(unknown ${documented})
list(REMOVE_ITEM unknown ${settings})
if(missing OR unknown)
  message(FATAL_ERROR "README.md's table of environment variables differs from "
                      "`ferret-info --markdown`: no row for '${missing}'; rows of no setting: '${unknown}'")
endif()
list(LENGTH documented documented_count)
if(NOT documented_count EQUAL count)
  message(FATAL_ERROR "README.md has ${documented_count} rows of FERRET_ variables, "
                      "`ferret-info --markdown` ${count}: one is there twice")
endif()
string(FIND "${readme}" "${table}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md's table of environment variables is not `ferret-info --markdown` "
                      "as printed (a row's text differs, or the order); paste it from there:\n${table}")
endif()
