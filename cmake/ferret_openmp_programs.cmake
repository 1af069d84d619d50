# OpenMP programs for the OpenMP collector's examples and tests, built with
# the LLVM whose omp-tools.h the collector uses (FERRET_LLVM_DIR):
#
#   ferret_clang_openmp_program(<name> <source> [OFFLOAD|OFFLOAD_NVIDIA] [LLVM22] [FERRET])
#     clang++ -fopenmp (OFFLOAD: -fopenmp-targets=x86_64-pc-linux-gnu, target
#     regions offloaded to the host; OFFLOAD_NVIDIA: to NVIDIA sm_90, only when
#     FERRET_CLANG_OFFLOAD_NVIDIA; LLVM22: built by the offload toolchain's
#     clang and libomptarget, only when FERRET_OPENMP_OFFLOAD_TOOLCHAIN, implied
#     by OFFLOAD_NVIDIA);
#     FERRET: annotated, linked with the OpenMP collector and the runtime. The
#     project's own compiler (g++) cannot offload, so these are custom commands.
#     Not in sanitizer builds: clang's sanitizer runtimes and GCC's cannot share
#     a process.
#   ferret_llvm_openmp_program(<name> <source> [FERRET])
#     g++ -fopenmp against LLVM's libomp (through its GNU entry points), so
#     that the program builds with the project's flags, sanitizers included.
set(FERRET_OPENMP_CLANG "${FERRET_LLVM_DIR}/bin/clang++")
find_library(FERRET_LLVM_OMP omp PATHS "${FERRET_LLVM_DIR}/lib" NO_DEFAULT_PATH)
set(FERRET_BUILD_CLANG_OPENMP OFF)
if(EXISTS "${FERRET_OPENMP_CLANG}" AND NOT FERRET_SANITIZE)
  set(FERRET_BUILD_CLANG_OPENMP ON)
endif()

# The offload toolchain of LLVM 22: LLVM 19's libomptarget rejects the cubins
# of CUDA >= 12.8, and its clang emits the runtime calls of `target` and
# `target data` without a source line. tools/build-openmp-device-runtime puts
# LLVM 22's NVIDIA device runtime (compiled from LLVM's sources), omp.h of 22
# and the links the host link needs into FERRET_OPENMP_OFFLOAD_DIR; its
# toolchain.cmake names the clang. Offload to NVIDIA also needs the CUDA
# toolkit (ptxas, nvlink).
if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(ferret_offload_default "$ENV{XDG_CACHE_HOME}/ferret/openmp-offload-llvm-22")
else()
  set(ferret_offload_default "$ENV{HOME}/.cache/ferret/openmp-offload-llvm-22")
endif()
if(NOT EXISTS "${ferret_offload_default}/toolchain.cmake")
  set(ferret_offload_default "")
endif()
set(FERRET_OPENMP_OFFLOAD_DIR "${ferret_offload_default}" CACHE PATH
    "LLVM's OpenMP NVIDIA device runtime and its toolchain (tools/build-openmp-device-runtime)")
set(FERRET_OPENMP_OFFLOAD_TOOLCHAIN OFF)
set(FERRET_CLANG_OFFLOAD_NVIDIA OFF)
set(ferret_offload_missing "")
if(NOT FERRET_OPENMP_OFFLOAD_DIR OR NOT EXISTS "${FERRET_OPENMP_OFFLOAD_DIR}/toolchain.cmake")
  set(ferret_offload_missing "no device runtime (run tools/build-openmp-device-runtime, or set FERRET_OPENMP_OFFLOAD_DIR)")
else()
  include("${FERRET_OPENMP_OFFLOAD_DIR}/toolchain.cmake")
  if(NOT EXISTS "${FERRET_OPENMP_OFFLOAD_CLANG}" OR NOT EXISTS "${FERRET_OPENMP_OFFLOAD_LIBOMPTARGET}")
    set(ferret_offload_missing "${FERRET_OPENMP_OFFLOAD_CLANG} or ${FERRET_OPENMP_OFFLOAD_LIBOMPTARGET} is gone (reinstall clang-22 and liboffload-22)")
  elseif(FERRET_SANITIZE)
    set(ferret_offload_missing "a sanitizer build")
  else()
    set(FERRET_OPENMP_OFFLOAD_TOOLCHAIN ON)
    get_filename_component(ferret_offload_runtime_dir "${FERRET_OPENMP_OFFLOAD_LIBOMPTARGET}" DIRECTORY)
    if(NOT CUDAToolkit_BIN_DIR)
      set(ferret_offload_missing "no CUDA toolkit (the CUDA collector's, FERRET_CUDA)")
    endif()
  endif()
endif()
if(ferret_offload_missing STREQUAL "")
  set(FERRET_CLANG_OFFLOAD_NVIDIA ON)
  get_filename_component(FERRET_OPENMP_CUDA_PATH "${CUDAToolkit_BIN_DIR}" DIRECTORY)
  message(STATUS "ferret: OpenMP offload to NVIDIA sm_90 with ${FERRET_OPENMP_OFFLOAD_CLANG} "
                 "(LLVM ${FERRET_OPENMP_OFFLOAD_LLVM_VERSION}) and the device runtime in ${FERRET_OPENMP_OFFLOAD_DIR}")
else()
  if(FERRET_OPENMP_OFFLOAD_TOOLCHAIN)
    message(STATUS "ferret: OpenMP programs of LLVM ${FERRET_OPENMP_OFFLOAD_LLVM_VERSION} offload to the host "
                   "only, not to NVIDIA GPUs: ${ferret_offload_missing}")
  else()
    message(STATUS "ferret: no OpenMP programs of LLVM 22 (GPU offload, exact target locations): "
                   "${ferret_offload_missing}")
  endif()
endif()

function(ferret_clang_openmp_program name source)
  cmake_parse_arguments(PARSE_ARGV 2 arg "OFFLOAD;OFFLOAD_NVIDIA;LLVM22;FERRET" "" "")
  set(output ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/${name})
  set(compiler ${FERRET_OPENMP_CLANG})
  set(flags -std=c++17 -O2 -g -fopenmp -Wall -Wextra)
  set(libraries)
  set(depends ${source})
  set(runtime_dir ${FERRET_LLVM_DIR}/lib)
  if(arg_OFFLOAD)
    list(APPEND flags -fopenmp-targets=x86_64-pc-linux-gnu)
  endif()
  if(arg_LLVM22 OR arg_OFFLOAD_NVIDIA)
    # omp.h of 22 and the development names libomp.so, libomptarget.so.
    set(compiler ${FERRET_OPENMP_OFFLOAD_CLANG})
    set(runtime_dir ${ferret_offload_runtime_dir})
    list(APPEND flags -I${FERRET_OPENMP_OFFLOAD_DIR}/include)
    list(APPEND libraries -L${FERRET_OPENMP_OFFLOAD_DIR}/lib)
  endif()
  if(arg_OFFLOAD_NVIDIA)
    # The device runtime twice: its bitcode for the compile step, -lompdevice
    # (found through -L) for the device link.
    list(APPEND flags --offload-arch=sm_90 --cuda-path=${FERRET_OPENMP_CUDA_PATH}
         --libomptarget-nvptx-bc-path=${FERRET_OPENMP_OFFLOAD_DIR}/libomptarget-nvptx.bc)
    list(APPEND libraries -Xoffload-linker -L${FERRET_OPENMP_OFFLOAD_DIR}/nvptx64-nvidia-cuda)
    list(APPEND depends ${FERRET_OPENMP_OFFLOAD_DIR}/libomptarget-nvptx.bc)
  endif()
  if(arg_FERRET)
    list(APPEND flags -I${PROJECT_SOURCE_DIR}/include -I${PROJECT_SOURCE_DIR}/backends/runtime/include
         -DFERRET_RUNTIME_LINKED=1 -DFERRET_OMPT_LINKED=1)
    list(APPEND libraries -L${CMAKE_LIBRARY_OUTPUT_DIRECTORY} -lferret_ompt -lferret_runtime
         -Wl,-rpath,${CMAKE_LIBRARY_OUTPUT_DIRECTORY})
    list(APPEND depends ferret_ompt ferret_runtime)
  endif()
  add_custom_command(OUTPUT ${output}
    COMMAND ${compiler} ${flags} ${source} -o ${output} ${libraries} -Wl,-rpath,${runtime_dir}
    DEPENDS ${depends}
    COMMENT "Building ${name} with ${compiler}"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS ${output})
endfunction()

function(ferret_llvm_openmp_program name source)
  cmake_parse_arguments(PARSE_ARGV 2 arg "FERRET" "" "")
  add_executable(${name} ${source})
  target_compile_options(${name} PRIVATE -fopenmp)
  # Linked without -fopenmp, so that g++ does not add libgomp.
  target_link_libraries(${name} PRIVATE ${FERRET_LLVM_OMP})
  if(arg_FERRET)
    target_link_libraries(${name} PRIVATE ferret::ompt)
  endif()
  set_target_properties(${name} PROPERTIES BUILD_RPATH "${FERRET_LLVM_DIR}/lib")
endfunction()
