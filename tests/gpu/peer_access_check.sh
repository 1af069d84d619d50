#!/usr/bin/env bash
# peer_access_check.sh BUILD WORK: device-initiated traffic
# (FERRET_CUDA_PEER_ACCESSES, issue 29). First ferret's declarations of the
# Compute Sanitizer API against the toolkit's headers (sanitizer_layouts.cpp,
# compiled only) and the patch's counting called from an ordinary kernel
# (gpu-test-peer-access-patch); then BUILD/bin/gpu-test-peer-accesses counted, with its
# peer-dump backend, the summary and the Chrome trace, and peer_access_check.py
# compares the counts with what the kernels do: exactly 4N bytes loaded from
# host memory at the load's line and object, nothing for local accesses, and
# with two GPUs 4N loaded from and 4M stored to GPU 1; and each kernel, timed
# by the patch, inside its region with its bytes as arguments. Then the program without the
# sanitizer's library (one line, the program runs on). Exit 0 pass, 1 fail,
# 77 without a GPU or without the Compute Sanitizer.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/gpu_check_start.sh"
gpu_check_start "peer accesses" "$1" "$2" gpu-test-peer-accesses
sanitizer=/usr/local/cuda/compute-sanitizer
if [[ ! -f $sanitizer/include/sanitizer.h ]]; then
  echo "peer accesses: skipped: no Compute Sanitizer headers in $sanitizer"
  exit 77
fi
if ! g++ -std=c++17 -fsyntax-only -I"$sanitizer/include" -I/usr/local/cuda/include \
       -I"$root/backends/collectors/compute_sanitizer/src" "$here/sanitizer_layouts.cpp" 2> "$work/layouts.log"; then
  echo "peer accesses: FAILED: ferret's sanitizer declarations differ from the toolkit's:"
  grep -E 'error' "$work/layouts.log" | head -n 20
  exit 1
fi
echo "peer accesses: layouts match the toolkit's sanitizer headers"

source "$here/carried_libraries.sh"
use_carried_libraries "$build" "$work/libraries"

# The patch's counting on the GPU, without the sanitizer.
"$build/bin/gpu-test-peer-access-patch" | tee "$work/patch.log"
if ((PIPESTATUS[0] != 0)); then
  echo "peer accesses: FAILED: the patch's own test (above)"
  exit 1
fi

rm -rf "$work"/peer*
FERRET_CUDA_PEER_ACCESSES=1 CUDA_INJECTION64_PATH=$build/lib/libferret_cupti.so \
  FERRET_BACKEND=summary,peer_dump,chrome FERRET_OUTPUT=$work/peer \
  "$program" > "$work/peer.out" 2> "$work/peer-summary.txt"
status=$?
cat "$work/peer.out"
if ((status != 0)); then
  echo "peer accesses: FAILED: the counted run exited with $status; its stderr:"
  cat "$work/peer-summary.txt"
  exit 1
fi
if ! grep -q "ferret: FERRET_CUDA_PEER_ACCESSES=1: counting device-initiated traffic with the Compute Sanitizer" \
       "$work/peer-summary.txt" || ! grep -q "Device-initiated bytes" "$work/peer-summary.txt"; then
  echo "peer accesses: FAILED: no counting-run line or no device-initiated matrix in the summary; stderr:"
  cat "$work/peer-summary.txt"
  exit 1
fi
python3 "$here/peer_access_check.py" "$work/peer.out" "$work/peer.peer.json" "$work/peer.json" || {
  echo "peer accesses: the run's stderr:"
  cat "$work/peer-summary.txt"
  exit 1
}
FERRET_SANITIZER_LIBRARY=/nonexistent/libsanitizer-public.so FERRET_CUDA_PEER_ACCESSES=1 \
  CUDA_INJECTION64_PATH=$build/lib/libferret_cupti.so FERRET_BACKEND=summary FERRET_OUTPUT=$work/peer-missing \
  "$program" > /dev/null 2> "$work/peer-missing.txt"
status=$?
if ((status != 0)) || ! grep -q "ferret: FERRET_CUDA_PEER_ACCESSES=1: the Compute Sanitizer's library was not found" "$work/peer-missing.txt"; then
  echo "peer accesses: FAILED: without the library: status $status, stderr:"
  cat "$work/peer-missing.txt"
  exit 1
fi
echo "peer accesses: without the library: one line, the program ran on"
echo "peer accesses: passed"
