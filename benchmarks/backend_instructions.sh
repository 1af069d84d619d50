#!/usr/bin/env bash
# backend_instructions.sh — instructions per region of a whole traced program,
# per backend, from callgrind: the annotation, the runtime's drain and the
# writer, at exit included.
#
#   benchmarks/backend_instructions.sh <source-dir> <build-dir> [regions] [backend...]
#
# Compiles benchmarks/backend_regions.cpp of this script's tree against
# <source-dir>/include and <build-dir>/lib/libferret_runtime.so (so the same
# program measures any checkout: main's build beside this one's), then runs it
# under valgrind --tool=callgrind with FERRET_BACKEND=<backend> (default: none
# tau otf2 chrome summary; "none" records nothing), writing into a scratch
# directory. Prints, per backend, all instructions of the process (every
# thread) divided by the number of regions (default 1,000,000).
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 <source-dir> <build-dir> [regions] [backend...]" >&2; exit 1; }
source_dir=$(cd "$1" && pwd)
build_dir=$(cd "$2" && pwd)
regions=${3:-1000000}
shift $(( $# >= 3 ? 3 : 2 ))
backends=("$@")
[[ ${#backends[@]} -gt 0 ]] || backends=(none tau otf2 chrome summary)
command -v valgrind >/dev/null || { echo "$0: valgrind is not installed" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
g++ -std=c++17 -O2 -DFERRET_RUNTIME_LINKED=1 -I"$source_dir/include" "$here/backend_regions.cpp" \
    -o "$work/backend_regions" -L"$build_dir/lib" -lferret_runtime -Wl,-rpath,"$build_dir/lib" -pthread

printf "%-8s %14s %12s\n" backend instructions per-region
for backend in "${backends[@]}"; do
  rm -rf "$work/out" && mkdir -p "$work/out"
  env -u FERRET_OUTPUT FERRET_BACKEND="$backend" FERRET_OUTPUT="$work/out/run" FERRET_VERBOSE=0 \
    valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.%p" \
    "$work/backend_regions" "$regions" >"$work/run.log" 2>&1 ||
    { echo "$0: the run with $backend failed:" >&2; cat "$work/run.log" >&2; exit 1; }
  total=$(sed -n 's/^summary: //p' "$work"/callgrind.* | awk '{ s += $1 } END { print s }')
  rm -f "$work"/callgrind.*
  printf "%-8s %14d %12.1f\n" "$backend" "$total" "$(echo "$total / $regions" | bc -l)"
done
