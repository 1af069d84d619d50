# Included from tests/CMakeLists.txt when the MPI layer is built: the MPI
# example under `mpirun -np 2` (label "mpi"), with one Chrome trace per rank
# and, with the OTF2 backend, one archive for both ranks (and a per-process
# archive when MPI_Init never comes).
set(mpi_test_arguments -DHEAT_MPI=$<TARGET_FILE:heat_mpi> -DMPIEXEC=${MPIEXEC_EXECUTABLE}
                       -DMPIEXEC_NUMPROC_FLAG=${MPIEXEC_NUMPROC_FLAG})
if(FERRET_SANITIZE MATCHES "address")
  list(APPEND mpi_test_arguments -DLSAN_SUPPRESSIONS=${CMAKE_CURRENT_SOURCE_DIR}/support/lsan-openmpi.supp)
endif()
add_test(NAME mpi_example_chrome
         COMMAND ${CMAKE_COMMAND} ${mpi_test_arguments} -DMODE=chrome
                 -DTRACE_CHECK=$<TARGET_FILE:ferret-trace-check>
                 -DWORK=${CMAKE_CURRENT_BINARY_DIR}/mpi_example_chrome
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/mpi_example.cmake)
set_tests_properties(mpi_example_chrome PROPERTIES LABELS "process;mpi")
if(FERRET_HAVE_OTF2)
  foreach(mode otf2 otf2_without_init)
    add_test(NAME mpi_example_${mode}
             COMMAND ${CMAKE_COMMAND} ${mpi_test_arguments} -DMODE=${mode}
                     -DOTF2_CHECK=$<TARGET_FILE:ferret-otf2-check> -DOTF2_PRINT=${FERRET_OTF2_PRINT}
                     -DOTF2_PYTHON=${FERRET_OTF2_PYTHON}
                     -DWORK=${CMAKE_CURRENT_BINARY_DIR}/mpi_example_${mode}
                     -P ${CMAKE_CURRENT_SOURCE_DIR}/mpi_example.cmake)
    set_tests_properties(mpi_example_${mode} PROPERTIES LABELS "process;mpi")
  endforeach()
endif()

# A rank that ends outside MPI_Finalize: one message per rank, no hang.
add_executable(mpi_exit_without_finalize support/mpi_exit_without_finalize.cpp)
target_compile_definitions(mpi_exit_without_finalize PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
target_link_libraries(mpi_exit_without_finalize PRIVATE ferret::mpi MPI::MPI_C ferret_warnings)
if(FERRET_HAVE_OTF2)
  add_test(NAME mpi_exit_without_finalize
           COMMAND ${CMAKE_COMMAND} ${mpi_test_arguments} -DMODE=exit_without_finalize
                   -DPROGRAM=$<TARGET_FILE:mpi_exit_without_finalize>
                   -DWORK=${CMAKE_CURRENT_BINARY_DIR}/mpi_exit_without_finalize
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/mpi_example.cmake)
  set_tests_properties(mpi_exit_without_finalize PROPERTIES LABELS "process;mpi")
endif()

# A rank that returns without MPI_Finalize while the others wait in it: they
# learn it (the rank says so at exit) and write their own summaries.
add_executable(mpi_rank_departs support/mpi_rank_departs.cpp)
target_compile_definitions(mpi_rank_departs PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
target_link_libraries(mpi_rank_departs PRIVATE ferret::mpi MPI::MPI_C ferret_warnings)
add_test(NAME mpi_rank_departs
         COMMAND ${CMAKE_COMMAND} ${mpi_test_arguments} -DMODE=rank_departs
                 -DPROGRAM=$<TARGET_FILE:mpi_rank_departs>
                 -DWORK=${CMAKE_CURRENT_BINARY_DIR}/mpi_rank_departs
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/mpi_example.cmake)
set_tests_properties(mpi_rank_departs PROPERTIES LABELS "process;mpi")

# MPI communication on 4 ranks (ring, halo, shift, collectives, sub-communicators):
# every message in the merged Chrome trace (ferret-merge) as a flow from its
# send to its receive, no receive before its send, also with skewed clocks.
add_executable(mpi_communication_app support/mpi_communication_app.cpp)
target_compile_definitions(mpi_communication_app PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
target_link_libraries(mpi_communication_app PRIVATE ferret::mpi MPI::MPI_C ferret_warnings)
find_program(FERRET_TEST_PYTHON3 NAMES python3 REQUIRED)
set(mpi_communication_sanitizer_arguments)
if(FERRET_SANITIZE MATCHES "address")
  set(mpi_communication_sanitizer_arguments
      --lsan-suppressions ${CMAKE_CURRENT_SOURCE_DIR}/support/lsan-openmpi.supp)
endif()
add_test(NAME mpi_communication_chrome
         COMMAND ${FERRET_TEST_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi_communication_test.py
                 --mode chrome --app $<TARGET_FILE:mpi_communication_app> --mpiexec ${MPIEXEC_EXECUTABLE}
                 --merge ${PROJECT_SOURCE_DIR}/tools/ferret-merge
                 --trace-check $<TARGET_FILE:ferret-trace-check>
                 ${mpi_communication_sanitizer_arguments}
                 --work ${CMAKE_CURRENT_BINARY_DIR}/mpi_communication_chrome)
set_tests_properties(mpi_communication_chrome PROPERTIES LABELS "process;mpi")
add_test(NAME mpi_communication_skewed_clocks
         COMMAND ${FERRET_TEST_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi_communication_test.py
                 --mode skew --app $<TARGET_FILE:mpi_communication_app> --mpiexec ${MPIEXEC_EXECUTABLE}
                 --merge ${PROJECT_SOURCE_DIR}/tools/ferret-merge
                 --trace-check $<TARGET_FILE:ferret-trace-check>
                 ${mpi_communication_sanitizer_arguments}
                 --work ${CMAKE_CURRENT_BINARY_DIR}/mpi_communication_skewed_clocks)
# The clock tests measure offsets by ping-pong: each estimate is checked within
# half its shortest round trip (its bound), and the corrected merge must put
# every receive after its send, which needs the estimates closer than a
# message's latency: they run alone, as round trips grow on a loaded machine.
set_tests_properties(mpi_communication_skewed_clocks PROPERTIES LABELS "process;mpi" RUN_SERIAL TRUE)
if(FERRET_HAVE_OTF2)
  foreach(mode otf2 otf2-skew)
    string(REPLACE "-" "_" name mpi_communication_${mode})
    add_test(NAME ${name}
             COMMAND ${FERRET_TEST_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi_communication_test.py
                     --mode ${mode} --app $<TARGET_FILE:mpi_communication_app>
                     --mpiexec ${MPIEXEC_EXECUTABLE} --merge ${PROJECT_SOURCE_DIR}/tools/ferret-merge
                     --trace-check $<TARGET_FILE:ferret-trace-check>
                     --otf2-print ${FERRET_OTF2_PRINT} --otf2-check $<TARGET_FILE:ferret-otf2-check>
                     --otf2-python ${FERRET_OTF2_PYTHON} ${mpi_communication_sanitizer_arguments}
                     --work ${CMAKE_CURRENT_BINARY_DIR}/${name})
    set_tests_properties(${name} PROPERTIES LABELS "process;mpi")
    if(mode STREQUAL "otf2-skew")
      set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
    endif()
  endforeach()
endif()
add_test(NAME mpi_communication_summary
         COMMAND ${FERRET_TEST_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi_communication_test.py
                 --mode summary --app $<TARGET_FILE:mpi_communication_app> --mpiexec ${MPIEXEC_EXECUTABLE}
                 --merge ${PROJECT_SOURCE_DIR}/tools/ferret-merge
                 --trace-check $<TARGET_FILE:ferret-trace-check>
                 ${mpi_communication_sanitizer_arguments}
                 --work ${CMAKE_CURRENT_BINARY_DIR}/mpi_communication_summary)
set_tests_properties(mpi_communication_summary PROPERTIES LABELS "process;mpi")
add_test(NAME mpi_communication_tau
         COMMAND ${FERRET_TEST_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi_communication_test.py
                 --mode tau --app $<TARGET_FILE:mpi_communication_app> --mpiexec ${MPIEXEC_EXECUTABLE}
                 --merge ${PROJECT_SOURCE_DIR}/tools/ferret-merge
                 --trace-check $<TARGET_FILE:ferret-trace-check> --tau-check $<TARGET_FILE:ferret-tau-check>
                 ${mpi_communication_sanitizer_arguments}
                 --work ${CMAKE_CURRENT_BINARY_DIR}/mpi_communication_tau)
set_tests_properties(mpi_communication_tau PROPERTIES LABELS "process;mpi")
# A job of 16 ranks on the CI machine's 2 cores (oversubscribed): rank 0's job
# summary against the per-rank numbers of the one TAU directory of all ranks,
# and rank 0's report's rank view (drawn by Chromium where there is one).
find_program(FERRET_CHROMIUM NAMES chromium chromium-browser google-chrome)
set(mpi_job_chromium)
if(FERRET_CHROMIUM)
  set(mpi_job_chromium --chromium ${FERRET_CHROMIUM})
endif()
add_test(NAME mpi_job_summary_16_ranks
         COMMAND ${FERRET_TEST_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi_communication_test.py
                 --mode job --app $<TARGET_FILE:mpi_communication_app> --mpiexec ${MPIEXEC_EXECUTABLE}
                 --merge ${PROJECT_SOURCE_DIR}/tools/ferret-merge
                 --trace-check $<TARGET_FILE:ferret-trace-check> --tau-check $<TARGET_FILE:ferret-tau-check>
                 ${mpi_job_chromium} ${mpi_communication_sanitizer_arguments}
                 --work ${CMAKE_CURRENT_BINARY_DIR}/mpi_job_summary_16_ranks)
set_tests_properties(mpi_job_summary_16_ranks PROPERTIES LABELS "process;mpi" PROCESSORS 2)

# ferret-merge streams the ranks' traces: bounded memory on 8 MB of synthetic traces.
add_test(NAME ferret_merge_memory
         COMMAND ${FERRET_TEST_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/ferret_merge_memory_test.py
                 --merge ${PROJECT_SOURCE_DIR}/tools/ferret-merge
                 --work ${CMAKE_CURRENT_BINARY_DIR}/ferret_merge_memory)
set_tests_properties(ferret_merge_memory PROPERTIES LABELS "mpi")
