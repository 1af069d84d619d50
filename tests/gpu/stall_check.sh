#!/usr/bin/env bash
# stall_check.sh BUILD WORK: instruction samples (FERRET_CUDA_PC_SAMPLING)
# against Nsight Compute, the reference (issue 28). Runs
# BUILD/bin/gpu-test-stall-kernels sampled, with FERRET_BACKEND=chrome,summary
# and its own stall-dump backend, then the same kernels under
# `ncu --section SourceCounters` (kernel replay), and stall_check.py compares:
# per kernel, ferret's dominant stall reason must be ncu's and its top-5 source
# lines ncu's top-5 (order free within one place); the two spinning kernels
# must overlap both ways and each one's samples go to its own region. Prints
# both sides' tables, so that one log is enough to diagnose a failure. Exit 0
# pass, 1 fail, 77 without a GPU or without ncu. Works on a carried build
# (tests/gpu/carry.sh) alone or from run.sh.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/gpu_check_start.sh"
gpu_check_start "stall check" "$1" "$2" gpu-test-stall-kernels
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [[ ! -x $ncu ]]; then
  echo "stall check: skipped: no ncu (Nsight Compute), the reference"
  exit 77
fi

# The libraries run.sh puts on the path, for a standalone run.
source "$here/carried_libraries.sh"
use_carried_libraries "$build" "$work/libraries"

rm -rf "$work"/stalls* "$work"/ncu*
echo "stall check: ferret, FERRET_CUDA_PC_SAMPLING=1"
# The collector injected by the driver (at cuInit, after the program's static
# initialisers registered stall_dump; ferret-run would preload the runtime's
# session start before them).
FERRET_CUDA_PC_SAMPLING=1 CUDA_INJECTION64_PATH=$build/lib/libferret_cupti.so \
  FERRET_BACKEND=chrome,summary,stall_dump FERRET_OUTPUT=$work/stalls \
  "$program" > "$work/stalls.out" 2> "$work/stalls-summary.txt"
status=$?
cat "$work/stalls.out"
if ((status != 0)); then
  echo "stall check: FAILED: the sampled run exited with $status; its stderr:"
  cat "$work/stalls-summary.txt"
  exit 1
fi
# ncu shows a kernel's CUDA lines from the source file at the path the
# compiler recorded: a carried build names the building machine's.
source=$(strings -a "$program" | grep -m 1 '/stall_kernels\.cu$')
if [[ -n $source && ! -f $source ]] && mkdir -p "$(dirname "$source")" 2> /dev/null; then
  cp "$here/stall_kernels.cu" "$source"
fi
echo "stall check: Nsight Compute (SourceCounters, kernel replay), the bottleneck kernels"
"$ncu" --section SourceCounters --section WarpStateStats --import-source yes -f -o "$work/ncu" \
  "$program" --bottlenecks > "$work/ncu.log" 2>&1
status=$?
tail -n 5 "$work/ncu.log"
if ((status != 0)) || [[ ! -f $work/ncu.ncu-rep ]]; then
  echo "stall check: FAILED: ncu exited with $status; its log:"
  cat "$work/ncu.log"
  exit 1
fi
# Per source line (CUDA source) and per kernel (the sampling metrics).
"$ncu" -i "$work/ncu.ncu-rep" --page source --csv --print-source cuda,sass > "$work/ncu-source.csv" 2> "$work/ncu-source.err"
"$ncu" -i "$work/ncu.ncu-rep" --page source --csv --print-source sass > "$work/ncu-sass.csv" 2> "$work/ncu-sass.err"
"$ncu" -i "$work/ncu.ncu-rep" --page raw --csv > "$work/ncu-raw.csv" 2> "$work/ncu-raw.err"
"$ncu" -i "$work/ncu.ncu-rep" --page details --csv > "$work/ncu-details.csv" 2> "$work/ncu-details.err"
python3 "$here/stall_check.py" "$work"
