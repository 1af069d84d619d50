#!/usr/bin/env bash
# carry.sh BUILD DEST: assembles in DEST what tests/gpu/run.sh needs on a GPU
# machine that has the NVIDIA driver and CUDA toolkit but none of Debian's -dev
# packages: the GPU tests' programs from the build's bin/, its lib/, otf2-print,
# and in lib/carried/ the shared libraries they load from the system here (OTF2,
# libdw and its compressors).
# run.sh uses a carried library only when the GPU machine has none of that name,
# so the machine's own (newer) libraries keep serving its programs (PyTorch).
# glibc, libstdc++ and the CUDA toolkit's libraries are never carried.
# The NCCL cases (nccl_one_gpu.sh, nccl_two_gpus.sh) need lib/libferret_nccl.so,
# bin/gpu-test-nccl-collectives and ferret-run: build ferret_nccl with the GPU tests.
set -euo pipefail
build=$(cd "$1" && pwd)
rm -rf "$2"
mkdir -p "$2"
dest=$(cd "$2" && pwd)
mkdir -p "$dest/bin" "$dest/lib/carried"
cp -a "$build/lib/." "$dest/lib/"
for program in gpu_trace_test gpu_cuda_api_test 'gpu-test-*' cuda-streams ferret-run ferret-otf2-check \
               ferret-trace-check ferret-tau-check ferret-cuda-overhead ferret-torch-small-ops.py \
               openmp-example-gpu babelstream-omp; do
  for file in "$build"/bin/$program; do
    if [[ -e $file ]]; then cp -a "$file" "$dest/bin/"; fi
  done
done
if command -v otf2-print > /dev/null; then cp "$(command -v otf2-print)" "$dest/bin/"; fi
never='/(ld-linux[^/]*|lib(c|m|dl|rt|pthread|util|stdc\+\+|gcc_s|cuda|cudart|cupti|nvidia-[^/]*)\.so[^/]*)$'
# The libraries of OpenMP offload programs (libomptarget, libLLVM and its
# dependencies) are left out: they travel in tests/gpu/pack-llvm-offload.sh's
# archive, which goes beside the carried build (DEST/llvm-offload.tar.xz).
for file in "$dest"/lib/*.so "$dest"/bin/*; do
  [[ -f $file && ! -L $file ]] || continue
  dependencies=$(ldd "$file" 2> /dev/null || true)
  [[ $dependencies == *libomptarget* ]] && continue
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' <<< "$dependencies"
done | sort -u | while read -r library; do
  # Not the build's own, the C/C++ runtimes, CUDA's (the GPU machine has the toolkit), LLVM's.
  if [[ $library != "$build"/* && $library != "$dest"/* && ! $library =~ $never &&
        $library != /usr/local/cuda* && $library != /usr/lib/llvm-* ]]; then
    cp -L "$library" "$dest/lib/carried/"
  fi
done
# Debug information is most of a RelWithDebInfo build (88 MB of 106); the
# carry limit is 64 MiB for everything a GPU pass takes along. The OpenMP
# offload programs keep theirs (a few hundred KiB): the OpenMP collector reads
# their constructs' file and line from it, and the GPU pass checks them.
for file in "$dest"/bin/* "$dest"/lib/*.so* "$dest"/lib/carried/*; do
  [[ -f $file && ! -L $file ]] && head -c 4 "$file" | grep -q ELF || continue
  [[ $(ldd "$file" 2> /dev/null || true) == *libomptarget* ]] && continue
  strip --strip-debug "$file"
done
du -sh "$dest"
ls "$dest/lib/carried"
