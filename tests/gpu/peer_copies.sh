#!/usr/bin/env bash
# peer_copies.sh BUILD WORK: peer-to-peer copies and the device×device matrix
# on two GPUs (issue 18). Runs BUILD/bin/gpu-test-peer-copies with
# FERRET_BACKEND=chrome,summary,otf2 into WORK, then peer_copies_check.py
# compares the chrome trace, the summary and the OTF2 archive with the
# program's "expected" line: bytes per (source, destination) pair, per data
# object, per region and launching call. Prints the GPUs and their link
# (nvidia-smi), the whole summary and every copy event, so that one log is
# enough to diagnose a failure. Exit 0 pass, 1 fail, 77 with fewer than two
# GPUs. Works on a carried build (tests/gpu/carry.sh) alone or from run.sh.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/gpu_check_start.sh"
gpu_check_start "peer copies" "$1" "$2" gpu-test-peer-copies 2
echo "peer copies: GPUs (index, name, bus, driver):"
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv,noheader
echo "peer copies: the link between them (nvidia-smi topo -m; NV# is NVLink, PIX/PXB/PHB/SYS PCIe):"
nvidia-smi topo -m
echo "peer copies: NVLink status of GPU 0 (nvidia-smi nvlink --status -i 0):"
nvidia-smi nvlink --status -i 0 2>&1 | head -n 24

# The libraries run.sh puts on the path, for a standalone run.
source "$here/carried_libraries.sh"
use_carried_libraries "$build" "$work/libraries"

rm -rf "$work/peer" "$work/peer.json"
FERRET_BACKEND=chrome,summary,otf2 FERRET_OUTPUT=$work/peer "$program" > "$work/peer.out" 2> "$work/peer-summary.txt"
status=$?
cat "$work/peer.out"
if ((status == 77)); then
  echo "peer copies: skipped: the program found fewer than two usable GPUs"
  exit 77
fi
if ((status != 0)); then
  echo "peer copies: FAILED: gpu-test-peer-copies exited with $status; its stderr:"
  cat "$work/peer-summary.txt"
  exit 1
fi

failed=0
if [[ -x $build/bin/ferret-trace-check ]]; then
  "$build/bin/ferret-trace-check" "$work/peer.json" || failed=1
else
  echo "peer copies: no $build/bin/ferret-trace-check: the chrome trace is not checked strictly"
fi
otf2=()
if [[ -x $build/bin/ferret-otf2-check && -f $work/peer/traces.otf2 ]]; then
  otf2=("$build/bin/ferret-otf2-check" "$work/peer/traces.otf2")
else
  echo "peer copies: no OTF2 archive or no ferret-otf2-check: the OTF2 side is not checked"
fi
python3 "$here/peer_copies_check.py" "$work/peer.out" "$work/peer.json" "$work/peer-summary.txt" \
  "${otf2[@]}" || failed=1
exit $failed
