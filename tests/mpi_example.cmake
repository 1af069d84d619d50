# The MPI example run with `mpirun -np 2` (OpenMPI, also as root in CI).
# MODE=chrome: one Chrome trace per rank (the pid in each name), both passing
#   ferret-trace-check, each with the rank's metadata and the region recorded
#   before MPI_Init; then with one file name: rank 0's there, rank 1's beside it.
# MODE=otf2: ONE archive for both ranks, read back with ferret-otf2-check (two
#   process location groups, each rank's threads, the expected regions,
#   balance, time order, events before MPI_Init) and otf2-print (exit 0, empty
#   stderr, no INVALID reference).
include(${CMAKE_CURRENT_LIST_DIR}/otf2_read_back.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
# A 2-core container: shared memory between the ranks only (no network
# probing), no cross-memory attach (ptrace is often denied), two slots whatever
# the core count; root is allowed because CI runs as root.
set(mpi_environment
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
    OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none)
if(LSAN_SUPPRESSIONS)
  # Under AddressSanitizer: OpenMPI's own leaks only, named in the file.
  # The slow unwinder: OpenMPI is built without frame pointers, and only a
  # complete stack reaches the OpenMPI frames that the suppressions name.
  list(APPEND mpi_environment
       "LSAN_OPTIONS=suppressions=${LSAN_SUPPRESSIONS}:fast_unwind_on_malloc=0:print_suppressions=0")
endif()

function(run_ranks backend output)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${mpi_environment} FERRET_BACKEND=${backend}
                          FERRET_OUTPUT=${output} FERRET_VERBOSE=1
                          ${MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} 2 ${HEAT_MPI} 20000 120
                  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 120)
  message(STATUS "mpirun: ${out}${err}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "mpirun -np 2 heat_mpi with ${backend} failed: ${status}")
  endif()
  # ferret says only where each output went (FERRET_VERBOSE=1): a complete one.
  string(REGEX REPLACE "ferret: (chrome trace|otf2 archive): [^\n]*\n" "" rest "${err}")
  if(NOT rest STREQUAL "" OR err MATCHES "incomplete")
    message(FATAL_ERROR "unexpected messages from the ranks:\n${err}")
  endif()
endfunction()

# Both traces pass ferret-trace-check, with ranks 0 and 1 and every region;
# prints the rank of each trace into `ranks` (in the order of `traces`).
function(check_rank_traces traces ranks)
  list(LENGTH traces count)
  if(NOT count EQUAL 2)
    message(FATAL_ERROR "expected one trace per rank, found ${count}: ${traces}")
  endif()
  execute_process(COMMAND ${TRACE_CHECK} ${traces} RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  message(STATUS "${out}${err}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "ferret-trace-check failed")
  endif()
  set(ranks_seen "")
  foreach(trace ${traces})
    file(READ ${trace} text)
    if(NOT text MATCHES "\"mpi-size\":2")
      message(FATAL_ERROR "${trace}: no mpi-size 2 in the metadata")
    endif()
    if(NOT text MATCHES "\"mpi-rank\":([01])")
      message(FATAL_ERROR "${trace}: no mpi-rank in the metadata")
    endif()
    list(APPEND ranks_seen ${CMAKE_MATCH_1})
    foreach(region startup solve allreduce sweep exchange_halo analyse)
      if(NOT text MATCHES "\"name\":\"[^\"]*${region}")
        message(FATAL_ERROR "${trace}: no region ${region}")
      endif()
    endforeach()
  endforeach()
  set(${ranks} ${ranks_seen} PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "chrome")
  run_ranks(chrome ${WORK}/traces/)
  file(GLOB traces ${WORK}/traces/ferret-heat_mpi-*.json)
  check_rank_traces("${traces}" ranks_seen)
  list(SORT ranks_seen)
  if(NOT ranks_seen STREQUAL "0;1")
    message(FATAL_ERROR "ranks in the traces: ${ranks_seen}")
  endif()
  message(STATUS "two traces, ranks 0 and 1, all regions present")
  # One file name for both ranks: rank 0 writes it, rank 1 beside it with its
  # pid, silently (run_ranks allows no other message).
  run_ranks(chrome ${WORK}/heat.json)
  file(GLOB beside ${WORK}/heat-*.json)
  check_rank_traces("${WORK}/heat.json;${beside}" ranks_seen)
  if(NOT ranks_seen STREQUAL "0;1")
    message(FATAL_ERROR "heat.json and ${beside}: ranks ${ranks_seen}, expected 0 and 1")
  endif()
  message(STATUS "one name: rank 0 in heat.json, rank 1 beside it")
elseif(MODE STREQUAL "otf2")
  run_ranks(otf2 ${WORK}/heat.otf2)
  file(GLOB anchors ${WORK}/*/traces.otf2 ${WORK}/traces.otf2)
  list(LENGTH anchors count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "expected one archive for both ranks, found ${count}: ${anchors}")
  endif()
  set(anchor ${WORK}/heat/traces.otf2)
  # Per rank: the main and the analysis thread.
  execute_process(COMMAND ${OTF2_CHECK} ${anchor} --processes 2 --threads 4 --streams 0
                          --region startup --region solve --region allreduce --region sweep
                          --region exchange_halo --region analyse --region "hot end"
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${out}${err}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "ferret-otf2-check failed")
  endif()
  otf2_read_back(${anchor} out)
  # Both ranks' main threads enter "startup" (recorded before MPI_Init).
  string(REGEX MATCHALL "\nENTER [^\n]*\"startup\"" startups "${out}")
  list(LENGTH startups startup_count)
  if(NOT startup_count EQUAL 2)
    message(FATAL_ERROR "otf2-print shows ${startup_count} ENTER startup events, expected 2")
  endif()
  # Only rank 0 enters "hot end", so the ranks' local region ids differ: rank 1's
  # events (location ids from 1 << 32) reach their regions through its mapping
  # tables, and none of them may land on rank 0's extra region.
  set(rank1 "\nENTER +42949672[0-9][0-9] +[0-9]+ +Region: ")
  foreach(region solve exchange_halo sweep allreduce analyse)
    if(NOT out MATCHES "${rank1}\"${region}\"")
      message(FATAL_ERROR "rank 1 never enters ${region}")
    endif()
  endforeach()
  if(out MATCHES "${rank1}\"hot end\"")
    message(FATAL_ERROR "a rank 1 event maps to rank 0's region \"hot end\"")
  endif()
  if(NOT out MATCHES "\nENTER +0 +[0-9]+ +Region: \"hot end\"")
    message(FATAL_ERROR "rank 0 never enters \"hot end\"")
  endif()
  execute_process(COMMAND ${OTF2_PRINT} -G ${anchor} OUTPUT_VARIABLE definitions)
  foreach(rank 0 1)
    if(NOT definitions MATCHES "\"MPI Rank ${rank}\"")
      message(FATAL_ERROR "no location group \"MPI Rank ${rank}\" in the definitions")
    endif()
  endforeach()
  message(STATUS "one archive, two ranks, otf2-print clean")
elseif(MODE STREQUAL "otf2_without_init")
  # The MPI layer is loaded but MPI_Init never comes (heat_mpi refuses its
  # arguments first): what was held is written to a per-process archive at exit.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env FERRET_BACKEND=otf2 FERRET_OUTPUT=${WORK}/alone.otf2
                          ${HEAT_MPI} 0
                  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE status ERROR_VARIABLE err TIMEOUT 60)
  if(NOT status EQUAL 2)
    message(FATAL_ERROR "heat_mpi 0 should exit with 2 (usage), got ${status}: ${err}")
  endif()
  set(anchor ${WORK}/alone/traces.otf2)
  execute_process(COMMAND ${OTF2_CHECK} ${anchor} --processes 1 --threads 1 --region startup
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${out}${err}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "ferret-otf2-check failed")
  endif()
  execute_process(COMMAND ${OTF2_PRINT} -G ${anchor} OUTPUT_VARIABLE definitions)
  if(NOT definitions MATCHES "\"heat_mpi \\([0-9]+\\)\"")
    message(FATAL_ERROR "the process location group is not named after the program and its pid")
  endif()
  message(STATUS "no MPI_Init: a per-process archive with the events held")
elseif(MODE STREQUAL "exit_without_finalize")
  # mpirun reports the missing MPI_Finalize with a failure status of its own;
  # what matters here is that it ends (TIMEOUT) and that each rank says why the
  # archive is incomplete.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${mpi_environment} FERRET_BACKEND=otf2
                          FERRET_OUTPUT=${WORK}/unfinished.otf2
                          ${MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} 2 ${PROGRAM}
                  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 60)
  message(STATUS "mpirun (${status}): ${out}${err}")
  if(status MATCHES "timeout|Process terminated")
    message(FATAL_ERROR "the ranks hung at exit: ${status}")
  endif()
  string(REGEX MATCHALL "is incomplete: rank [01] ended outside MPI_Finalize" lines "${err}")
  list(LENGTH lines count)
  if(NOT count EQUAL 2)
    message(FATAL_ERROR "expected one message per rank about the incomplete archive, got ${count}")
  endif()
elseif(MODE STREQUAL "rank_departs")
  # 3 ranks with the summary; rank 2 returns without MPI_Finalize while ranks
  # 0 and 1 wait in it. They must end (mpirun may report the missing
  # MPI_Finalize with a failure status of its own) and say why there is no job
  # summary; rank 2 says it left.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${mpi_environment} FERRET_BACKEND=summary
                          ${MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} 3 ${PROGRAM}
                  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 60)
  message(STATUS "mpirun (${status}): ${out}${err}")
  if(status MATCHES "timeout|Process terminated")
    message(FATAL_ERROR "the ranks in MPI_Finalize hung: ${status}")
  endif()
  if(NOT err MATCHES "ferret: rank 2 ended without MPI_Finalize: the other ranks write their own outputs")
    message(FATAL_ERROR "rank 2 did not say that it left without MPI_Finalize")
  endif()
  string(REGEX MATCHALL "ferret: rank 2 ended without MPI_Finalize: this rank writes its own outputs"
         lines "${err}")
  list(LENGTH lines count)
  if(NOT count EQUAL 2 OR err MATCHES "ferret job summary")
    message(FATAL_ERROR "expected ranks 0 and 1 to write their own summaries, no job summary (${count})")
  endif()
else()
  message(FATAL_ERROR "MODE must be chrome, otf2, otf2_without_init, exit_without_finalize or rank_departs")
endif()
