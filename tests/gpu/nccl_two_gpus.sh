#!/usr/bin/env bash
# nccl_two_gpus.sh [BUILD [WORK]]: NCCL all-reduce and all-gather between two
# ranks through ferret-run, (1) one process driving both GPUs, also counted
# (nccl_peer_accesses_check.py), (2) one process per GPU, (3) a PyTorch DDP
# step (nccl_torch_ddp.py, when PyTorch is there); each trace checked by
# nccl_check.py. Exit 77 with fewer than 2 GPUs.
source "$(dirname "$0")/nccl_common.sh"
((gpus >= 2)) || { echo "nccl two GPUs: skipped ($gpus GPU(s))"; exit 77; }
failed=0
traced devices devices
echo "nccl two GPUs, one process: status $? (log: $work/devices.log)"
python3 "$here/nccl_check.py" devices "$work/devices.json" "$work/devices.log" || failed=1

# The same counted (FERRET_CUDA_PEER_ACCESSES=1): the bytes NCCL's kernels
# store to the peer against the ring's volume, nothing in no range.
if [[ -f /usr/local/cuda/compute-sanitizer/libsanitizer-public.so ]]; then
  FERRET_CUDA_PEER_ACCESSES=1 traced counted devices
  echo "nccl two GPUs, counted: status $? (log: $work/counted.log)"
  python3 "$here/nccl_peer_accesses_check.py" "$work/counted.json" || failed=1
else
  echo "nccl two GPUs, counted: skipped (no Compute Sanitizer)"
fi

rm -f "$work/unique-id"
mkdir -p "$work/ranks"
traced ranks/rank0 rank 0 2 "$work/unique-id" &
first=$!
traced ranks/rank1 rank 1 2 "$work/unique-id"
second=$?
wait "$first"
first=$?
echo "nccl two GPUs, one process per GPU: statuses $first, $second"
for rank in 0 1; do
  python3 "$here/nccl_check.py" rank "$work/ranks/rank$rank.json" "$work/ranks/rank$rank.log" || failed=1
done
# PyTorch DDP, unmodified, when PyTorch is there: one trace per process.
if python3 -c 'import torch' 2> /dev/null; then
  mkdir -p "$work/ddp"
  "$build/bin/ferret-run" --backend chrome --output "$work/ddp/" -- \
    python3 "$here/nccl_torch_ddp.py" 29533 > "$work/ddp.log" 2>&1
  echo "nccl two GPUs, PyTorch DDP: status $? (log: $work/ddp.log)"
  traces=("$work"/ddp/*.json)
  [[ ${#traces[@]} == 2 && -e ${traces[0]} ]] || { echo "FAILED: two DDP traces, got ${traces[*]}"; failed=1; }
  for trace in "${traces[@]}"; do
    [[ -e $trace ]] && { python3 "$here/nccl_check.py" ddp "$trace" "$work/ddp.log" || failed=1; }
  done
else
  echo "nccl two GPUs, PyTorch DDP: skipped (no PyTorch)"
fi
exit $failed
