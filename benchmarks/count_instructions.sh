#!/usr/bin/env bash
# count_instructions.sh — instructions per region enter+exit pair, from callgrind.
#
#   benchmarks/count_instructions.sh <build-dir> [pairs]
#
# Runs <build-dir>/bin/ferret-instruction-count (configure with
# -DFERRET_BUILD_BENCHMARKS=ON) under valgrind --tool=callgrind; each mode is
# one noinline function running `pairs` pairs (default 1,000,000). Prints, per
# mode, the function's instructions divided by the number of pairs:
#   self       the function's own instructions: the inline code (ferret's hot path)
#   inclusive  plus everything it called: ferret's out-of-line chunk switch (once
#              per 4096 events), NVTX's calls through its function table, the
#              vDSO behind steady_clock::now()
# then the disassembly of the traced FERRET_REGION loop (count_traced_macro).
# Set KEEP=<dir> to keep the callgrind output and the annotations.
set -euo pipefail

usage() {
  echo "usage: $0 <build-dir> [pairs]" >&2
  exit 1
}
[[ $# -ge 1 && $# -le 2 ]] || usage
build_dir=$1
pairs=${2:-1000000}
[[ $pairs =~ ^[1-9][0-9]*$ ]] || usage
program=$build_dir/bin/ferret-instruction-count
if [[ ! -x $program ]]; then
  echo "$0: $program not found; configure with -DFERRET_BUILD_BENCHMARKS=ON and build" \
       "the ferret-instruction-count target" >&2
  exit 1
fi
for tool in valgrind callgrind_annotate objdump; do
  command -v "$tool" >/dev/null || { echo "$0: $tool is not installed" >&2; exit 1; }
done

work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$work"' EXIT

# The program selects its own "discard" backend; make sure nothing in the
# caller's environment replaces it or attaches an NVTX tool.
if ! env -u NVTX_INJECTION64_PATH -u FERRET_OUTPUT FERRET_BACKEND=discard FERRET_VERBOSE=0 \
       valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
       "$program" "$pairs" >"$work/run.log" 2>&1; then
  echo "$0: the run failed:" >&2
  cat "$work/run.log" >&2
  exit 1
fi
grep '^ferret-instruction-count:' "$work/run.log" || true

callgrind_annotate --inclusive=no --threshold=100 "$work/callgrind.out" >"$work/self.txt"
callgrind_annotate --inclusive=yes --threshold=100 "$work/callgrind.out" >"$work/inclusive.txt"

# Lines look like "29,000,030 ( 1.71%)  ???:count_traced_macro [/path/to/program]".
count_of() {  # file function
  awk -v fn="$2" '
    { for (i = 2; i <= NF; ++i) if ($i ~ (":" fn "$")) { gsub(",", "", $1); print $1; exit } }
  ' "$1"
}

printf '\n%-22s %12s %12s   %s\n' mode self/pair inclusive/pair "(pairs: $pairs)"
printf '%-22s %12s %12s\n' ---------------------- ------------ ------------
for mode in empty_loop compiled_out not_recording traced_macro traced_literal traced_name \
            nvtx3_no_tool rdtsc steady_clock; do
  self=$(count_of "$work/self.txt" "count_$mode")
  inclusive=$(count_of "$work/inclusive.txt" "count_$mode")
  if [[ -z $self || -z $inclusive ]]; then
    printf '%-22s %12s %12s\n' "$mode" - -  # not built (e.g. no NVTX3 headers)
    continue
  fi
  awk -v m="$mode" -v s="$self" -v i="$inclusive" -v n="$pairs" \
      'BEGIN { printf "%-22s %12.2f %12.2f\n", m, s / n, i / n }'
done
cat <<'EOF'
(rdtsc and steady_clock: two clock reads per iteration, i.e. what a pair's two timestamps cost.)
EOF

echo
echo "Disassembly of count_traced_macro (FERRET_REGION with recording on):"
objdump -d --no-show-raw-insn --disassemble=count_traced_macro "$program" |
  sed -n '/<count_traced_macro>:/,/^$/p'
