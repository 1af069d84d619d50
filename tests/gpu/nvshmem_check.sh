#!/usr/bin/env bash
# nvshmem_check.sh BUILD WORK: NVSHMEM's puts and gets counted by
# FERRET_CUDA_PEER_ACCESSES (issue 29). Finds NVSHMEM (the nvidia-nvshmem wheel
# of the Python environment, or NVSHMEM_HOME), compiles nvshmem_put_get.cu
# with its device and host libraries, and runs the two PEs (one process each,
# PE r on GPU r) three times: bare, through ferret-run, and through ferret-run
# counting device-initiated traffic (--backend summary,chrome, one trace per
# PE). nvshmem_check.py then requires on PE 0 exactly 4N bytes stored to GPU 1
# and 4M loaded from GPU 1 by ferret_put_get, at the put's and the get's lines
# (or inside NVSHMEM's headers, where nvshmem_float_p/g are inlined), nothing
# local and no losses; on PE 1 nothing counted in the program's own kernels.
# Prints the three times. Exit 0 pass, 1 fail, 77 with fewer than two GPUs or
# without NVSHMEM or nvcc.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/gpu_check_start.sh"
gpu_check_start nvshmem "$1" "$2" ferret-run 2

say() { echo "nvshmem: $*"; }

# NVSHMEM: a folder with include/nvshmem.h, lib/libnvshmem_device.a and
# lib/libnvshmem_host.so*; NVSHMEM_HOME first, then the wheel as each Python finds it.
nvshmem=
candidates=()
[[ -n ${NVSHMEM_HOME:-} ]] && candidates+=("$NVSHMEM_HOME")
for python in python3 /opt/torch/.venv/bin/python3; do
  command -v "$python" > /dev/null || continue
  mapfile -t found < <("$python" - 2> /dev/null << 'EOF'
import os, site, sys
folders = []
try:
    import nvidia.nvshmem
    folders += list(nvidia.nvshmem.__path__)
except Exception:
    pass
for base in site.getsitepackages() + [site.getusersitepackages()] + sys.path:
    folders.append(os.path.join(base, "nvidia", "nvshmem"))
print(*[f for f in folders if os.path.isdir(f)], sep="\n")
EOF
)
  candidates+=("${found[@]}")
done
candidates+=(/opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem)
for folder in "${candidates[@]}"; do
  if [[ -f $folder/include/nvshmem.h && -f $folder/lib/libnvshmem_device.a ]] &&
     compgen -G "$folder/lib/libnvshmem_host.so*" > /dev/null; then
    nvshmem=$(cd "$folder" && pwd)
    break
  fi
done
[[ -n $nvshmem ]] || { say "skipped: no NVSHMEM (NVSHMEM_HOME, or the nvidia-nvshmem wheel with include/nvshmem.h, lib/libnvshmem_device.a, lib/libnvshmem_host.so*; looked in: ${candidates[*]:-nothing})"; exit 77; }
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[[ -x $nvcc ]] || { say "skipped: no nvcc (PATH, /usr/local/cuda/bin)"; exit 77; }
say "NVSHMEM in $nvshmem ($(ls "$nvshmem/lib" | tr '\n' ' '))"

# The host library by its development name, for -l (the wheel has only libnvshmem_host.so.3).
link_folder=$work/link
rm -rf "$link_folder"
mkdir -p "$link_folder"
host_library=$(ls "$nvshmem"/lib/libnvshmem_host.so* | head -n 1)
ln -s "$host_library" "$link_folder/libnvshmem_host.so"
# The driver's library for NVSHMEM's host code in the device library, from the toolkit's stubs.
driver=()
[[ -e /usr/local/cuda/lib64/stubs/libcuda.so ]] && driver=(-L/usr/local/cuda/lib64/stubs -lcuda)
program=$work/nvshmem-put-get
if ! "$nvcc" -std=c++17 -O2 -rdc=true -arch=sm_90 -lineinfo -I"$nvshmem/include" -I"$here" \
       "$here/nvshmem_put_get.cu" -o "$program" -L"$nvshmem/lib" -lnvshmem_device \
       -L"$link_folder" -lnvshmem_host "${driver[@]}" -Xlinker -rpath -Xlinker "$nvshmem/lib" \
       > "$work/build.log" 2>&1; then
  say "FAILED: nvcc could not build nvshmem_put_get.cu; its first errors:"
  grep -m 30 -E 'error|undefined' "$work/build.log" || tail -n 30 "$work/build.log"
  say "the names it uses, as NVSHMEM's headers spell them:"
  grep -rhoE 'NVSHMEMX_INIT_ATTR_INITIALIZER|NVSHMEMX_UNIQUEID_INITIALIZER|NVSHMEMX_INIT_WITH_UNIQUEID|int nvshmemx_(get_uniqueid|set_attr_uniqueid_args|init_attr)\([^)]*' \
    "$nvshmem/include" | sort -u | sed 's/^/  /'
  exit 1
fi
say "built $program"

source "$here/carried_libraries.sh"
use_carried_libraries "$build" "$work/libraries"
# NVSHMEM dlopens its bootstrap (nvshmem_bootstrap_uid.so.3) by name.
export LD_LIBRARY_PATH=$nvshmem/lib:$LD_LIBRARY_PATH
if ldd "$program" | grep -q 'not found'; then
  say "FAILED: libraries the program does not find:"
  ldd "$program" | grep 'not found'
  exit 1
fi
# One host: the unique id's socket on loopback, no network transport.
# NVLink multicast stays off on the GPU machines (it can take shared GPUs down).
export NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=${NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME:-lo}
export NVSHMEM_REMOTE_TRANSPORT=none NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0

# run_pes NAME [ferret-run options]: the two PEs, each in $work/NAME/pe<r>.out
# (stdout) and .log (stderr: the summary), traces $work/NAME/pe<r>.json; the
# pair's wall time in milliseconds in $work/NAME/ms. No options: bare.
run_pes() {
  local name=$1 pe status start
  shift
  local folder=$work/$name
  rm -rf "$folder"
  mkdir -p "$folder"
  local pids=() statuses=()
  start=$(date +%s%N)
  for pe in 0 1; do
    local launcher=()
    (($#)) && launcher=("$build/bin/ferret-run" "$@" --output "$folder/pe$pe.json" --)
    timeout 300 "${launcher[@]}" "$program" "$pe" "$folder/unique-id" \
      > "$folder/pe$pe.out" 2> "$folder/pe$pe.log" &
    pids+=($!)
  done
  for pe in 0 1; do
    wait "${pids[$pe]}"
    statuses+=($?)
  done
  echo $((($(date +%s%N) - start) / 1000000)) > "$folder/ms"
  status=0
  for pe in 0 1; do
    if ((statuses[pe] != 0)); then
      status=1
      if ((statuses[pe] == 124)); then
        say "$name: PE $pe did not finish in 300 s (NVSHMEM's bootstrap waiting?); its stderr:"
      else
        say "$name: PE $pe exited with ${statuses[pe]}; its stdout and stderr:"
        cat "$folder/pe$pe.out"
      fi
      tail -n 40 "$folder/pe$pe.log"
    fi
  done
  return $status
}

failed=0
run_pes bare || failed=1
run_pes ferret --backend summary,chrome || failed=1
FERRET_CUDA_PEER_ACCESSES=1 run_pes counted --backend summary,chrome || failed=1
for name in bare ferret counted; do
  kernel_ms=$(sed -n 's/^expected .*"kernel_ms": \([0-9.]*\).*/\1/p' "$work/$name/pe0.out" 2> /dev/null)
  say "times: $name: $(cat "$work/$name/ms") ms for the two PEs, ferret_put_get ${kernel_ms:-?} ms"
done
if ((failed == 0)); then
  if ! grep -q "ferret: FERRET_CUDA_PEER_ACCESSES=1: counting device-initiated traffic with the Compute Sanitizer" \
         "$work/counted/pe0.log"; then
    say "FAILED: the counted run did not say it counts device-initiated traffic; PE 0's stderr:"
    tail -n 40 "$work/counted/pe0.log"
    failed=1
  fi
  python3 "$here/nvshmem_check.py" "$work/counted" || failed=1
fi
((failed == 0)) && say "passed" || say "FAILED (logs in $work)"
exit $failed
