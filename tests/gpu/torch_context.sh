#!/usr/bin/env bash
# torch_context.sh BUILD WORK: the PyTorch case of Python call paths and NVTX
# ranges as calling context (docs/calling-context.md). Runs torch_context.py
# under ferret-run into chrome and summary, keeps the summary's tables
# (torch-context-summary.txt, for docs/gpu-results.md) and prints the
# "torch context:" lines of torch_context_check.py. Then the overhead:
# benchmarks/python/run.sh. Exit status 77 without PyTorch or a GPU.
set -uo pipefail
build=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
python=${FERRET_GPU_PYTHON:-python3}
if ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
  echo "torch context: skipped: no PyTorch with a GPU for $python"
  exit 77
fi
"$build/bin/ferret-run" --backend chrome,summary --output "$work/torch-context.json" -- \
  "$python" "$here/torch_context.py" > "$work/torch-context.out" 2> "$work/torch-context-summary.txt"
status=$?
if ((status != 0)); then
  echo "torch context: FAILED: the traced script exited with $status"
  tail -n 20 "$work/torch-context-summary.txt"
  exit 1
fi
"$python" "$here/torch_context_check.py" "$work/torch-context.json" "$work/torch-context-summary.txt" \
  "$here/torch_context.py"
