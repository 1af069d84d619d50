#!/usr/bin/env bash
# run.sh BUILD [repetitions]: the cost of Python call paths (docs/performance.md).
# Runs torch_context_bench.py bare, under ferret-run with FERRET_PYTHON=0 and
# with FERRET_PYTHON=1 (backend summary), interleaved, `repetitions` times
# (default 9: this VM needs at least 9 for stable medians), and prints a
# markdown table: min and median seconds per workload and variant, and the
# Python context's cost over ferret without it (target: at most 10 %).
set -uo pipefail
build=$1 repetitions=${2:-9}
here=$(cd "$(dirname "$0")" && pwd)
python=${FERRET_GPU_PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
  echo "python context benchmark: skipped: no PyTorch with a GPU for $python"
  exit 77
fi
variant_command() {
  case $1 in
    bare) echo "" ;;
    ferret-no-python) echo "env FERRET_PYTHON=0 $build/bin/ferret-run --backend summary --" ;;
    ferret-python) echo "env FERRET_PYTHON=1 $build/bin/ferret-run --backend summary --" ;;
  esac
}
variants=(bare ferret-no-python ferret-python)
for ((r = 0; r < repetitions; ++r)); do
  for variant in "${variants[@]}"; do
    # shellcheck disable=SC2046
    $(variant_command "$variant") "$python" "$here/torch_context_bench.py" 2> /dev/null |
      sed "s/^/$variant /" >> "$work/times" || echo "run.sh: $variant failed" >&2
  done
done
"$python" - "$work/times" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    variant, *workload, seconds = line.split()
    times.setdefault(" ".join(workload), {}).setdefault(variant, []).append(float(seconds))
print("| workload | variant | runs | min s | median s | median vs ferret without Python |")
print("|---|---|---|---|---|---|")
for workload, variants in times.items():
    reference = statistics.median(variants.get("ferret-no-python", [float("nan")]))
    for variant in ("bare", "ferret-no-python", "ferret-python"):
        values = variants.get(variant, [])
        if not values:
            continue
        median = statistics.median(values)
        print("| %s | %s | %d | %.4f | %.4f | %+.1f %% |" % (workload, variant, len(values), min(values),
                                                           median, 100.0 * (median / reference - 1)))
PY
