#!/usr/bin/env bash
# chrome_writer.sh <build-dir> [baseline-ref] [regions]: the chrome writer
# alone (benchmarks/chrome_writer.cpp), this tree's beside a baseline's.
#
# Compiles the benchmark twice against <build-dir>/lib/libferret_runtime.so:
# with this tree's chrome writer sources, and with those of git revision
# <baseline-ref> (default main) of the same repository. Then, for each:
#   - wall ns per region and bytes per event, min and median of 5 interleaved
#     runs of <regions> regions (default 2,000,000) written to a file in $TMPDIR;
#   - instructions per region from callgrind: the difference between runs of
#     2x and x regions (x = regions / 10), divided by x, so that setup cancels.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 <build-dir> [baseline-ref] [regions]" >&2; exit 1; }
build_dir=$(cd "$1" && pwd)
baseline=${2:-main}
regions=${3:-2000000}
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/.." && pwd)
command -v valgrind >/dev/null || { echo "$0: valgrind is not installed" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/baseline-src"
# The writer's sources moved (backends/chrome until the tree was regrouped).
baseline_chrome=backends/writers/chrome/src
git -C "$source_dir" cat-file -e "$baseline:$baseline_chrome" 2>/dev/null || baseline_chrome=backends/chrome
git -C "$source_dir" archive "$baseline" "$baseline_chrome" | tar -x -C "$work/baseline-src"
build() {  # build <name> <chrome-source-dir>
  g++ -std=c++17 -O2 -DNDEBUG -DFMT_HEADER_ONLY=1 -I"$2" -I"$source_dir/backends/runtime/include" \
      -I"$source_dir/include" "$here/chrome_writer.cpp" "$2"/*.cpp -o "$work/$1" \
      -L"$build_dir/lib" -lferret_runtime -Wl,-rpath,"$build_dir/lib" -pthread
}
build baseline "$work/baseline-src/$baseline_chrome"
build current "$source_dir/backends/writers/chrome/src"

declare -A ns bytes
for round in 1 2 3 4 5; do
  for variant in baseline current; do
    line=$("$work/$variant" "$regions" "$work/out.json")
    ns[$variant]+="$(echo "$line" | sed -E 's/.* ([0-9.]+) ns per region.*/\1/') "
    bytes[$variant]=$(echo "$line" | sed -E 's/.* ([0-9.]+) bytes per event.*/\1/')
    rm -f "$work/out.json"
  done
done
instructions() {  # instructions <variant> <regions>
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$work/$1" "$2" "$work/out.json" \
    >/dev/null 2>&1
  sed -n 's/^summary: //p' "$work/cg.out"
  rm -f "$work/cg.out" "$work/out.json"
}
small=$((regions / 10))
printf "%-9s %14s %14s %14s %12s\n" writer "ns/region min" "ns/region med" "instr/region" bytes/event
for variant in baseline current; do
  read -r -a times <<<"$(echo "${ns[$variant]}" | tr ' ' '\n' | sort -g | tr '\n' ' ')"
  difference=$(( $(instructions "$variant" $((2 * small))) - $(instructions "$variant" "$small") ))
  printf "%-9s %14s %14s %14.1f %12s\n" "$variant" "${times[0]}" "${times[2]}" \
    "$(echo "$difference / $small" | bc -l)" "${bytes[$variant]}"
done
echo "(baseline: $baseline_chrome of $baseline; current: this tree's)"
