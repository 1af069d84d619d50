#!/usr/bin/env bash
# nccl_one_gpu.sh [BUILD [WORK]]: NCCL on one GPU through ferret-run — does NCCL
# load ferret's profiler plugin, and which regions appear? A one-rank
# communicator's all-reduce and all-gather (NCCL runs them without enqueuing)
# and a send/receive to itself (enqueued: the plugin sees it). Checked by
# nccl_check.py; exit 77 without a GPU.
source "$(dirname "$0")/nccl_common.sh"
((gpus >= 1)) || { echo "nccl one GPU: skipped (no GPU)"; exit 77; }
traced one one
status=$?
echo "nccl one GPU: gpu-test-nccl-collectives one, status $status (log: $work/one.log)"
python3 "$here/nccl_check.py" one "$work/one.json" "$work/one.log"
