# The backends that FERRET_BACKEND loads with dlopen keep their thread-locals
# in static TLS (initial-exec, FERRET_TLS_MODEL): none calls __tls_get_addr.
# With the default model glibc mallocs each thread's block on first use, and
# GCC 12's LeakSanitizer takes such a block that lands 16 bytes into a page
# for a pre-2.25 glibc block and scans a wild range at exit: its tracer
# crashed in about 3% of ASan runs of writer_limits_test's threads case
# (google/sanitizers#1322). Which page offset a block gets is chance; whether
# a library can have such a block at all is not.
set(dynamic)
foreach(library IN LISTS LIBRARIES)
  execute_process(COMMAND ${READELF} -W --dyn-syms ${library} OUTPUT_VARIABLE symbols
                  RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "${READELF} failed on ${library}")
  endif()
  if(symbols MATCHES " __tls_get_addr")
    list(APPEND dynamic ${library})
  endif()
endforeach()
if(dynamic)
  string(REPLACE ";" "\n  " dynamic "${dynamic}")
  message(FATAL_ERROR "thread-locals outside static TLS (__tls_get_addr imported; mark them "
                      "FERRET_TLS_MODEL):\n  ${dynamic}")
endif()
