#!/usr/bin/env bash
# nccl_two_gpus.sh [BUILD [WORK]]: NCCL all-reduce and all-gather between two
# ranks through ferret-run, (1) one process driving both GPUs, (2) one process
# per GPU; each trace checked by nccl_check.py. Exit 77 with fewer than 2 GPUs.
source "$(dirname "$0")/nccl_common.sh"
((gpus >= 2)) || { echo "nccl two GPUs: skipped ($gpus GPU(s))"; exit 77; }
failed=0
traced devices devices
echo "nccl two GPUs, one process: status $? (log: $work/devices.log)"
python3 "$here/nccl_check.py" devices "$work/devices.json" "$work/devices.log" || failed=1

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
exit $failed
