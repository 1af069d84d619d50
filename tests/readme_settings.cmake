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

# The same for the table of backends and collectors (`ferret-info
# --markdown-components`, from the runtime's components table): whole, and
# no row of a component besides.
execute_process(COMMAND ${INFO} --markdown-components OUTPUT_VARIABLE components RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "ferret-info --markdown-components failed")
endif()
string(FIND "${readme}" "${components}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md's table of backends and collectors is not `ferret-info "
                      "--markdown-components` as printed; paste it from there:\n${components}")
endif()
string(REGEX MATCHALL "\n\\| `[a-z0-9_]+` \\| (backend|collector) \\|" generated_rows "\n${components}")
string(REGEX MATCHALL "\n\\| `[a-z0-9_]+` \\| (backend|collector) \\|" readme_rows "${readme}")
list(LENGTH generated_rows generated_count)
list(LENGTH readme_rows readme_count)
if(generated_count EQUAL 0 OR NOT readme_count EQUAL generated_count)
  message(FATAL_ERROR "README.md has ${readme_count} rows of backends and collectors, "
                      "`ferret-info --markdown-components` ${generated_count}")
endif()
