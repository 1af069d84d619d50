#!/usr/bin/env bash
# metrics_sampling_check.sh BUILD WORK: sampled GPU counters
# (FERRET_CUDA_METRICS_SAMPLING, CUPTI's PM sampling; issue 29, level 1).
# Runs BUILD/bin/gpu-test-peer-accesses through ferret-run at 1ms with its
# metrics_dump backend and the summary; metrics_sampling_check.py then checks
# the intervals against the program's regions: present for each GPU it used,
# in order, about 1 ms long, PCIe bytes during the host reads, with two GPUs
# NVLink bytes at least the peer kernel's during it, and links quiet while
# idle. Then a refused value (one line, the program runs on). Exit 0 pass,
# 1 fail, 77 without a GPU.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/gpu_check_start.sh"
gpu_check_start "metrics sampling" "$1" "$2" gpu-test-peer-accesses
source "$here/carried_libraries.sh"
use_carried_libraries "$build" "$work/libraries"

rm -rf "$work"/metrics*
FERRET_CUDA_METRICS_SAMPLING=1ms "$build/bin/ferret-run" --backend summary,metrics_dump \
  --output "$work/metrics" -- "$program" > "$work/metrics.out" 2> "$work/metrics-summary.txt"
status=$?
cat "$work/metrics.out"
grep '^ferret: FERRET_CUDA_METRICS_SAMPLING' "$work/metrics-summary.txt"
if ((status != 0)); then
  echo "metrics sampling: FAILED: the sampled run exited with $status; its stderr:"
  cat "$work/metrics-summary.txt"
  exit 1
fi
python3 "$here/metrics_sampling_check.py" "$work/metrics.out" "$work/metrics.metrics.json" 1000000 || {
  echo "metrics sampling: the run's stderr:"
  cat "$work/metrics-summary.txt"
  exit 1
}
FERRET_CUDA_METRICS_SAMPLING=often "$build/bin/ferret-run" --backend summary --output "$work/metrics-refused" \
  -- "$program" > /dev/null 2> "$work/metrics-refused.txt"
status=$?
if ((status != 0)) || ! grep -q "ferret: FERRET_CUDA_METRICS_SAMPLING='often' is not valid" "$work/metrics-refused.txt"; then
  echo "metrics sampling: FAILED: a refused value: status $status, stderr:"
  cat "$work/metrics-refused.txt"
  exit 1
fi
echo "metrics sampling: a refused value: one line, the program ran on"
echo "metrics sampling: passed"
