# Sourced by nccl_one_gpu.sh and nccl_two_gpus.sh: BUILD (a build with
# gpu-test-nccl-collectives, ferret-run and libferret_nccl.so, or one carried by
# tests/gpu/carry.sh), the work folder, NCCL's library on LD_LIBRARY_PATH.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:-$here/../../build/gpu}" && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
program=$build/bin/gpu-test-nccl-collectives
for needed in "$program" "$build/bin/ferret-run" "$build/lib/libferret_nccl.so"; do
  [[ -e $needed ]] || { echo "nccl: $needed is missing (build gpu-test-nccl-collectives and ferret_nccl)"; exit 1; }
done
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)

# NCCL's library: the system's, else PyTorch's (the nvidia-nccl wheel, or torch/lib).
nccl_folder=
if ! ldconfig -p | grep -q 'libnccl\.so\.2 '; then
  for folder in $(python3 -c 'import nvidia.nccl, os; print(*[os.path.join(p, "lib") for p in nvidia.nccl.__path__])' 2>/dev/null) \
                $(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null) \
                /usr/local/cuda/lib64 /usr/local/cuda/lib; do
    if [[ -e $folder/libnccl.so.2 ]]; then nccl_folder=$folder; break; fi
  done
  [[ -n $nccl_folder ]] || { echo "nccl: no libnccl.so.2 (system, nvidia-nccl wheel, torch/lib, CUDA)"; exit 1; }
fi
# CUPTI for ferret-run's CUDA collector (run.sh has put it on the path already).
cupti_folder=
for folder in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  if compgen -G "$folder/libcupti.so*" > /dev/null; then cupti_folder=$folder; break; fi
done
# Libraries a carried build brought (lib/carried: OTF2, libdw, ...) that this
# machine lacks, as run.sh links them: the machine's own keep serving PyTorch.
missing_links=$work/missing-libraries
mkdir -p "$missing_links"
for library in "$build"/lib/carried/*.so*; do
  [[ -e $library ]] || continue
  ldconfig -p | grep -q "^[[:space:]]*$(basename "$library") " || ln -sf "$library" "$missing_links/"
done
export LD_LIBRARY_PATH=$build/lib:$missing_links${nccl_folder:+:$nccl_folder}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}${cupti_folder:+:$cupti_folder}
# NCCL says at init whether it loaded the plugin, and which interface version.
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV

# traced NAME ARGS...: gpu-test-nccl-collectives ARGS through ferret-run into
# $work/NAME.json, its stdout and stderr (and the summary) in $work/NAME.log.
traced() {
  local name=$1
  shift
  "$build/bin/ferret-run" --backend chrome,summary --output "$work/$name.json" -- "$program" "$@" \
    > "$work/$name.log" 2>&1
}
