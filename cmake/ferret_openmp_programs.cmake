# OpenMP programs for the OpenMP collector's examples and tests, built with
# the LLVM whose omp-tools.h the collector uses (FERRET_LLVM_DIR):
#
#   ferret_clang_openmp_program(<name> <source> [OFFLOAD|OFFLOAD_NVIDIA] [FERRET])
#     clang++ -fopenmp (OFFLOAD: -fopenmp-targets=x86_64-pc-linux-gnu, target
#     regions offloaded to the host; OFFLOAD_NVIDIA: to NVIDIA sm_90, only when
#     FERRET_CLANG_OFFLOAD_NVIDIA); FERRET: annotated, linked with the
#     OpenMP collector and the runtime. The project's own compiler (g++) cannot
#     offload, so these are custom commands. Not in sanitizer builds: clang's
#     sanitizer runtimes and GCC's cannot share a process.
#   ferret_llvm_openmp_program(<name> <source> [FERRET])
#     g++ -fopenmp against LLVM's libomp (through its GNU entry points), so
#     that the program builds with the project's flags, sanitizers included.
set(FERRET_OPENMP_CLANG "${FERRET_LLVM_DIR}/bin/clang++")
find_library(FERRET_LLVM_OMP omp PATHS "${FERRET_LLVM_DIR}/lib" NO_DEFAULT_PATH)
set(FERRET_BUILD_CLANG_OPENMP OFF)
if(EXISTS "${FERRET_OPENMP_CLANG}" AND NOT FERRET_SANITIZE)
  set(FERRET_BUILD_CLANG_OPENMP ON)
endif()

# NVIDIA offload needs the CUDA toolkit (ptxas, nvlink) and LLVM's device
# runtime bitcode, which Debian installs where clang does not look.
set(FERRET_OPENMP_NVPTX_BITCODE "${FERRET_LLVM_DIR}/lib/libomptarget-nvptx-sm_90.bc")
set(FERRET_CLANG_OFFLOAD_NVIDIA OFF)
if(FERRET_BUILD_CLANG_OPENMP AND CUDAToolkit_BIN_DIR AND EXISTS "${FERRET_OPENMP_NVPTX_BITCODE}")
  set(FERRET_CLANG_OFFLOAD_NVIDIA ON)
  get_filename_component(FERRET_OPENMP_CUDA_PATH "${CUDAToolkit_BIN_DIR}" DIRECTORY)
endif()

function(ferret_clang_openmp_program name source)
  cmake_parse_arguments(PARSE_ARGV 2 arg "OFFLOAD;OFFLOAD_NVIDIA;FERRET" "" "")
  set(output ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/${name})
  set(flags -std=c++17 -O2 -g -fopenmp -Wall -Wextra)
  set(libraries)
  set(depends ${source})
  if(arg_OFFLOAD)
    list(APPEND flags -fopenmp-targets=x86_64-pc-linux-gnu)
  endif()
  if(arg_OFFLOAD_NVIDIA)
    list(APPEND flags -fopenmp-targets=nvptx64-nvidia-cuda --offload-arch=sm_90
         --cuda-path=${FERRET_OPENMP_CUDA_PATH}
         --libomptarget-nvptx-bc-path=${FERRET_OPENMP_NVPTX_BITCODE})
  endif()
  if(arg_FERRET)
    list(APPEND flags -I${PROJECT_SOURCE_DIR}/include -I${PROJECT_SOURCE_DIR}/backends/runtime/include
         -DFERRET_RUNTIME_LINKED=1 -DFERRET_OMPT_LINKED=1)
    list(APPEND libraries -L${CMAKE_LIBRARY_OUTPUT_DIRECTORY} -lferret_ompt -lferret_runtime
         -Wl,-rpath,${CMAKE_LIBRARY_OUTPUT_DIRECTORY})
    list(APPEND depends ferret_ompt ferret_runtime)
  endif()
  add_custom_command(OUTPUT ${output}
    COMMAND ${FERRET_OPENMP_CLANG} ${flags} ${source} -o ${output} ${libraries}
            -Wl,-rpath,${FERRET_LLVM_DIR}/lib
    DEPENDS ${depends}
    COMMENT "Building ${name} with ${FERRET_OPENMP_CLANG}"
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
