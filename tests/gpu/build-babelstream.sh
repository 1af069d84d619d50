#!/usr/bin/env bash
# build-babelstream.sh SOURCE BUILD: builds BabelStream's OpenMP model
# (https://github.com/UoB-HPC/BabelStream, src/main.cpp + src/omp/OMPStream.cpp,
# a checkout at SOURCE) for NVIDIA sm_90 with the offload toolchain that BUILD
# was configured with (FERRET_OPENMP_OFFLOAD_DIR, tools/build-openmp-device-runtime),
# into BUILD/bin/babelstream-omp: a program ferret's authors did not write, for
# tests/gpu/openmp_programs.sh to trace unmodified through ferret-run and time
# against its bare run. BabelStream's own CMake (MODEL=omp OFFLOAD=NVIDIA:sm_90)
# passes -Xopenmp-target -march=sm_90, which Debian's clang-22 has no device
# runtime for; these are its flags with the toolchain's.
set -euo pipefail
source=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
cache_value() { sed -n "s|^$1:[A-Z]*=||p" "$build/CMakeCache.txt"; }
toolchain=$(cache_value FERRET_OPENMP_OFFLOAD_DIR)
cuda=$(dirname "$(cache_value CUDAToolkit_BIN_DIR)")
[[ -n $toolchain && -f $toolchain/toolchain.cmake ]] ||
  { echo "build-babelstream: $build has no offload toolchain (tools/build-openmp-device-runtime)" >&2; exit 1; }
clang=$(sed -n 's|^set(FERRET_OPENMP_OFFLOAD_CLANG "\(.*\)")$|\1|p' "$toolchain/toolchain.cmake")
libomptarget=$(sed -n 's|^set(FERRET_OPENMP_OFFLOAD_LIBOMPTARGET "\(.*\)")$|\1|p' "$toolchain/toolchain.cmake")
mkdir -p "$build/bin"
"$clang" -std=c++17 -O3 -g -fopenmp --offload-arch=sm_90 --cuda-path="$cuda" -I"$toolchain/include" \
  --libomptarget-nvptx-bc-path="$toolchain/libomptarget-nvptx.bc" -DOMP -DOMP_TARGET_GPU -DDEFAULT \
  -Wno-inconsistent-missing-override -Wno-pass-failed -I"$source/src" -I"$source/src/omp" \
  "$source/src/main.cpp" "$source/src/omp/OMPStream.cpp" -o "$build/bin/babelstream-omp" \
  -Xoffload-linker -L"$toolchain/nvptx64-nvidia-cuda" -L"$toolchain/lib" \
  -Wl,-rpath,"$(dirname "$libomptarget")"
echo "build-babelstream: $build/bin/babelstream-omp ($(git -C "$source" rev-parse --short HEAD 2> /dev/null || echo "no git"))"
