#!/usr/bin/env bash
# Packs the LLVM offload runtime for the GPU machine, which has no LLVM:
#   bash tests/gpu/pack-llvm-offload.sh <dest-dir> [llvm-lib-dir]
# writes <dest-dir>/llvm-offload.tar.xz, one flat folder of libraries:
# libomptarget.so.<version> of llvm-lib-dir (default /usr/lib/llvm-22/lib: Debian's
# liboffload-22, its CUDA plugin built in; it dlopens libcuda.so at run time)
# and every library it needs (libomp.so.5 of the system — on bookworm LLVM
# 19's, which libomptarget 22 finds every symbol it needs in — libLLVM, libz3,
# ICU, ...) except the C and C++ runtimes, which the GPU machine has (its own,
# newer, libstdc++ must not be shadowed), plus the development name libomp.so
# (-> libomp.so.5), which libomptarget dlopens to connect to the OpenMP tool
# interface. libcuda.so is the GPU machine's own: tests/gpu/run.sh links it
# there. libLLVM needs glibc >= 2.36 and GLIBCXX_3.4.30 there. The OpenMP
# collector's libdw travels with the build (tests/gpu/carry.sh).
#
# Before writing, the archive is checked: unpacked into an empty folder, every
# library of it resolves (ldd in a clean environment, LD_LIBRARY_PATH = that
# folder) to the folder itself or to a C/C++ runtime library.
# tests/gpu/run.sh unpacks <build>/llvm-offload.tar.xz for the OpenMP cases.
set -euo pipefail

(($# >= 1 && $# <= 2)) || { echo "usage: $0 <dest-dir> [llvm-lib-dir]" >&2; exit 2; }
dest=$1
llvm_lib=${2:-/usr/lib/llvm-22/lib}
fail() { echo "pack-llvm-offload: $*" >&2; exit 1; }

# The C and C++ runtimes (and the loader), left to the machine.
is_system_runtime() {
  case $1 in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | \
      librt.so.* | libstdc++.so.* | libgcc_s.so.*) return 0 ;;
  esac
  return 1
}

roots=("$llvm_lib"/libomptarget.so.[0-9]*.[0-9]*)
[[ -f ${roots[0]} ]] || fail "no libomptarget.so.<version> in $llvm_lib (apt-get install liboffload-22)"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/pack" "$stage/check"
# ldd lists the whole closure of each root; cp -L copies what links point to,
# under the name the dependents ask for.
for root in "${roots[@]}"; do
  cp -L "$root" "$stage/pack/"
  while read -r name arrow path _; do
    [[ $arrow == "=>" ]] || continue
    is_system_runtime "$name" && continue
    [[ $path == /* ]] || fail "$(basename "$root") needs $name, which is not found here"
    [[ -e $stage/pack/$name ]] || cp -L "$path" "$stage/pack/$name"
  done < <(ldd "$root")
done

[[ -e $stage/pack/libomp.so.5 ]] || fail "$(basename "${roots[0]}") does not need libomp.so.5"
ln -s libomp.so.5 "$stage/pack/libomp.so"

# Mostly libLLVM's code: xz's x86 filter and its strongest preset (4.4 minutes
# of one core; 203 MB -> 42 MiB, 1.4 MiB less than preset 9e alone) keep the
# archive within the GPU machine's carry limit beside carry.sh's 19 MiB.
archive=$stage/llvm-offload.tar.xz
tar -C "$stage/pack" -cf - . | xz --x86 --lzma2=preset=9e > "$archive"

# The check: the unpacked set alone, nothing from this machine's LLVM folders.
tar -C "$stage/check" -xJf "$archive"
problems=0
for library in "$stage/check"/*; do
  [[ -L $library ]] && continue
  while read -r name arrow path _; do
    [[ $arrow == "=>" ]] || continue
    if [[ $path == "not" ]]; then
      echo "pack-llvm-offload: $(basename "$library") needs $name: not found" >&2
      problems=$((problems + 1))
    elif ! is_system_runtime "$name" && [[ $path != "$stage/check/$name" ]]; then
      echo "pack-llvm-offload: $(basename "$library") takes $name from $path, not from the archive" >&2
      problems=$((problems + 1))
    fi
  done < <(env -i LD_LIBRARY_PATH="$stage/check" /usr/bin/ldd "$library")
done
((problems == 0)) || fail "the archive is not self-sufficient ($problems problems above)"

mkdir -p "$dest"
cp "$archive" "$dest/llvm-offload.tar.xz"
echo "pack-llvm-offload: $dest/llvm-offload.tar.xz: $(ls "$stage/check" | wc -l) libraries," \
     "$(du -sh --apparent-size "$stage/check" | cut -f1) unpacked," \
     "$(du -h --apparent-size "$dest/llvm-offload.tar.xz" | cut -f1) packed"
