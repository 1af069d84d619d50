# gpu_check_start.sh — sourced by the GPU checks that also run standalone
# (stall_check.sh, peer_copies.sh, peer_access_check.sh,
# metrics_sampling_check.sh, nvshmem_check.sh): their common start.
#   gpu_check_start NAME BUILD WORK [PROGRAM [GPUS]]
# Sets `build` and `work` (absolute; WORK made) and, with PROGRAM, `program`
# (BUILD/bin/PROGRAM). Says "NAME: FAILED: ..." and exits 1 when the program
# is missing; "NAME: skipped: ..." and exits 77 with fewer than GPUS GPUs
# (default 1).
gpu_check_start() {
  local name=$1 needed=${5:-1} gpus
  build=$(cd "$2" && pwd)
  mkdir -p "$3"
  work=$(cd "$3" && pwd)
  if [[ -n ${4:-} ]]; then
    program=$build/bin/$4
    if [[ ! -x $program ]]; then
      echo "$name: FAILED: no $program"
      exit 1
    fi
  fi
  gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ' || true)
  if ((gpus < needed)); then
    if ((gpus == 0)); then
      echo "$name: skipped: no GPU (nvidia-smi sees none)"
    else
      echo "$name: skipped: $gpus GPU(s), $needed are needed"
    fi
    exit 77
  fi
}
