#!/usr/bin/env bash
# run.sh — what tracing costs a CUDA program: bare, under a minimal CUPTI
# tracer, and under ferret; prints two markdown tables.
#
#   bash benchmarks/cuda/run.sh <build-dir> [--quick] [--repeats N]
#
# <build-dir> is a ferret build configured with -DFERRET_BUILD_BENCHMARKS=ON on
# a machine with the CUDA toolkit; it may have been copied elsewhere: every
# program is found relative to it (bin/ferret-cuda-overhead, bin/ferret-run,
# lib/libferret_cupti.so).
#
# Table 1, per workload (storm: µs per empty-kernel launch; loop: ms per
# saxpy + GEMM + scalar read-back iteration; see main.cpp), the modes run
# interleaved (bare, cupti, ferret, ferret summary, bare, ...) R times
# (default 5, --quick 3):
#   bare            the program alone
#   cupti           the program's own minimal CUPTI tracer, every activity kind
#                   a tracing tool needs (kernel, memcpy, memset, memory2, sync,
#                   runtime, driver, overhead)
#   ferret          the bare program under bin/ferret-run --backend chrome
#                   (collector injected through CUDA_INJECTION64_PATH, trace to a
#                   temporary file, deleted after the run)
#   ferret summary  the same with --backend summary
# Columns: median and min over the runs, the median's ratio to bare's median,
# the records CUPTI delivered per run (cupti) or the events ferret's chrome
# trace holds, the most records any run dropped, and the runs that succeeded.
#
# Table 2: the storm under the CUPTI tracer with growing activity-kind lists and
# with API callbacks alone (no activity), 3 runs each, interleaved: what each
# kind and each callback domain adds per launch.
#
# --quick: 50000 launches and 100 loop iterations (instead of 100000 and 200)
# and 3 repeats. Every run's output goes to a log; with $OUT set, the report
# and the log are saved as $OUT/gpu-bench-report.md and $OUT/gpu-bench-runs.log.
# Exit status: 0; 77 when no CUDA device can be used; 1 on bad usage or when
# the benchmark program is missing.
set -uo pipefail

usage() {
  echo "usage: $0 <build-dir> [--quick] [--repeats N]" >&2
  exit 1
}
[[ $# -ge 1 ]] || usage
build_dir=$1
shift
quick=0
repeats=
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) quick=1 ;;
    --repeats)
      [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || usage
      repeats=$2
      shift ;;
    *) usage ;;
  esac
  shift
done
if ((quick)); then
  launches=50000 iterations=100 repeats=${repeats:-3}
else
  launches=100000 iterations=200 repeats=${repeats:-5}
fi
layer_repeats=3

program=$build_dir/bin/ferret-cuda-overhead
ferret_run=$build_dir/bin/ferret-run
collector=$build_dir/lib/libferret_cupti.so
if [[ ! -x $program ]]; then
  echo "$0: $program not found; configure with -DFERRET_BUILD_BENCHMARKS=ON (CUDA toolkit" \
       "needed) and build the ferret-cuda-overhead target" >&2
  exit 1
fi

# libcupti, libcudart and libcublas where CUDA installations keep them.
for dir in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib; do
  [[ -d $dir ]] && LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
done
export LD_LIBRARY_PATH

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/runs.log
results=$work/results.tsv   # table  row  mode  value  records  dropped  api_callbacks
: >"$results"
started=$SECONDS

# Nothing of the caller's tracing setup may reach the bare and cupti runs.
clean_env=(env -u CUDA_INJECTION64_PATH -u FERRET_BACKEND -u FERRET_OUTPUT)

# How the ferret rows inject the collector: ferret-run, or (builds without it)
# the variables ferret-run would set.
if [[ -x $ferret_run ]]; then
  injection="bin/ferret-run --backend chrome (ferret) or --backend summary (ferret summary)"
elif [[ -f $collector ]]; then
  injection="CUDA_INJECTION64_PATH=lib/libferret_cupti.so and FERRET_BACKEND=chrome or summary"
  injection+=" (no bin/ferret-run in the build)"
else
  injection=
fi
ferret_prefix() {  # backend: sets the array `prefix` to the command that injects ferret
  if [[ -x $ferret_run ]]; then
    prefix=("${clean_env[@]}" "$ferret_run" --backend "$1" --output "$work/trace" --)
  else
    prefix=("${clean_env[@]}" CUDA_INJECTION64_PATH="$collector" FERRET_BACKEND="$1"
            FERRET_OUTPUT="$work/trace")
  fi
}

field() {  # name line: the value of name=value in a result line
  sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"
}

# run_once table row mode command...: runs one case, appends its numbers to
# $results (an empty value when it failed), its whole output to the log.
run_once() {
  local table=$1 row=$2 mode=$3
  shift 3
  local output status line value records dropped callbacks
  output=$(timeout --kill-after=10 300 "$@" 2>&1)
  status=$?
  rm -f "$work"/trace*
  {
    echo "### $table | $row | $mode (exit $status): $*"
    echo "$output"
  } >>"$log"
  line=$(grep '^result ' <<<"$output" | tail -n 1)
  value=$(sed -n 's/.* per_op_[um]s=\([0-9.]*\).*/\1/p' <<<"$line")
  if [[ $status -ne 0 || -z $value ]]; then
    echo "  $table / $row / $mode: failed (exit $status), see the log" >&2
    value=
  fi
  records=$(field records "$line")
  dropped=$(field dropped "$line")
  callbacks=$(field api_callbacks "$line")
  # ferret rows: the chrome backend's exit line says how many events it wrote.
  if [[ $mode == ferret* ]]; then
    records=$(sed -n 's/^ferret: .*(\([0-9]*\) events).*/\1/p' <<<"$output" | tail -n 1)
    dropped=$(grep -ciE '^ferret: .*(dropped|lost)' <<<"$output")
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$table" "$row" "$mode" "$value" "${records:-}" \
    "${dropped:-}" "${callbacks:-}" >>"$results"
}

# The arguments of one workload, and the command of one mode.
workload_args() {  # workload
  if [[ $1 == storm ]]; then
    echo "--workload=storm --launches=$launches"
  else
    echo "--workload=loop --iterations=$iterations"
  fi
}
run_mode() {  # workload mode
  local -a args prefix
  read -r -a args <<<"$(workload_args "$1")"
  case $2 in
    bare | cupti) prefix=("${clean_env[@]}") ;;
    ferret) ferret_prefix chrome ;;
    "ferret summary") ferret_prefix summary ;;
  esac
  local program_mode=bare
  [[ $2 == cupti ]] && program_mode=cupti
  run_once modes "$1" "$2" "${prefix[@]}" "$program" "${args[@]}" --mode=$program_mode
}

# A first short run: is there a GPU, what is it; it also loads the libraries
# into the page cache and wakes the GPU before anything is timed.
probe=$("${clean_env[@]}" "$program" --workload=storm --launches=1000 --mode=bare 2>&1)
probe_status=$?
if [[ $probe_status -eq 77 ]]; then
  echo "$probe"
  exit 77
elif [[ $probe_status -ne 0 ]]; then
  echo "$0: the probe run failed (exit $probe_status):" >&2
  echo "$probe" >&2
  exit 1
fi
device_info=$(grep '^info ' <<<"$probe" | head -n 1 | sed 's/^info //')
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
"${clean_env[@]}" "$program" --workload=loop --iterations=2 --mode=bare >>"$log" 2>&1

# Table 2: configuration name, then the program's CUPTI arguments ("" = bare).
layers=(
  "bare" ""
  "kernel" "--kinds=kernel"
  "+ memcpy, memset, memory2, sync" "--kinds=kernel,memcpy,memset,memory2,sync"
  "+ runtime" "--kinds=kernel,memcpy,memset,memory2,sync,runtime"
  "+ driver" "--kinds=kernel,memcpy,memset,memory2,sync,runtime,driver"
  "+ overhead (all: the cupti mode)" "--kinds=all"
  "runtime API callbacks, no activity" "--kinds=none --callbacks=runtime"
  "runtime + driver API callbacks, no activity" "--kinds=none --callbacks=both"
)

modes=(bare cupti)
if [[ -n $injection ]]; then
  modes+=(ferret "ferret summary")
fi
echo "ferret-cuda-overhead: ${#modes[@]} modes x $repeats runs per workload, then" \
     "$((${#layers[@]} / 2)) storm configurations x $layer_repeats runs" >&2
for workload in storm loop; do
  echo "  $workload ..." >&2
  for ((rep = 1; rep <= repeats; ++rep)); do
    for mode in "${modes[@]}"; do
      run_mode "$workload" "$mode"
    done
  done
done

echo "  storm per CUPTI kind and callback domain ..." >&2
for ((rep = 1; rep <= layer_repeats; ++rep)); do
  for ((i = 0; i < ${#layers[@]}; i += 2)); do
    name=${layers[i]}
    read -r -a cupti_args <<<"${layers[i + 1]}"
    if [[ ${#cupti_args[@]} -eq 0 ]]; then
      run_once layers "$name" bare "${clean_env[@]}" "$program" --workload=storm \
        --launches="$launches" --mode=bare
    else
      run_once layers "$name" cupti "${clean_env[@]}" "$program" --workload=storm \
        --launches="$launches" --mode=cupti "${cupti_args[@]}"
    fi
  done
done

# stats table row mode: "median|min|runs ok|runs|median records|most dropped|median callbacks"
# (empty when none; "|" because read collapses empty tab-separated fields)
stats() {
  awk -F'\t' -v table="$1" -v row="$2" -v mode="$3" '
    function median(values, n,    sorted, i, j, t) {
      if (n == 0) return ""
      for (i = 1; i <= n; ++i) sorted[i] = values[i]
      for (i = 2; i <= n; ++i)
        for (j = i; j > 1 && sorted[j - 1] > sorted[j]; --j) {
          t = sorted[j]; sorted[j] = sorted[j - 1]; sorted[j - 1] = t
        }
      return n % 2 ? sorted[(n + 1) / 2] : (sorted[n / 2] + sorted[n / 2 + 1]) / 2
    }
    $1 == table && $2 == row && $3 == mode {
      ++runs
      if ($4 != "") { ok_values[++ok] = $4 + 0; if (min == "" || $4 + 0 < min) min = $4 + 0 }
      if ($5 != "") records[++nrecords] = $5 + 0
      if ($6 != "" && (dropped == "" || $6 + 0 > dropped)) dropped = $6 + 0
      if ($7 != "") callbacks[++ncallbacks] = $7 + 0
    }
    END {
      printf "%s|%s|%d|%d|%s|%s|%s\n", median(ok_values, ok), min, ok, runs,
             median(records, nrecords), dropped, median(callbacks, ncallbacks)
    }' "$results"
}
number() {  # printf format, value ("" stays "—")
  # shellcheck disable=SC2059  # the format is the caller's
  if [[ -z $2 ]]; then echo "—"; else LC_ALL=C printf "$1" "$2"; fi
}
ratio() {  # value bare: "1.23×"
  if [[ -z $1 || -z $2 ]]; then
    echo "—"
  else
    LC_ALL=C awk -v v="$1" -v b="$2" 'BEGIN { printf "%.2f×", v / b }'
  fi
}

report() {
  echo "## GPU tracing overhead (ferret-cuda-overhead)"
  echo
  echo "- GPU: ${gpu_name:-unknown (no nvidia-smi)}, driver ${driver:-unknown}; $device_info"
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'), host $(uname -n)"
  echo "- Storm: $launches empty-kernel launches + 1 sync; loop: $iterations iterations of saxpy" \
       "(16M floats) + 4096³ bf16 GEMM + 4-byte D2H copy + sync; warm-up excluded"
  if [[ -n $injection ]]; then
    echo "- ferret rows: the bare program under $injection"
  else
    echo "- ferret rows left out: neither bin/ferret-run nor lib/libferret_cupti.so in $build_dir"
  fi
  echo
  echo "| workload | mode | median | min | ratio to bare | records/events per run | dropped |" \
       "runs ok |"
  echo "|---|---|---|---|---|---|---|---|"
  local workload mode unit format median min ok runs records dropped callbacks bare_median
  for workload in storm loop; do
    unit="µs/launch" format="%.3f"
    [[ $workload == loop ]] && unit="ms/iter" format="%.4f"
    IFS='|' read -r bare_median _ <<<"$(stats modes "$workload" bare)"
    for mode in "${modes[@]}"; do
      IFS='|' read -r median min ok runs records dropped callbacks \
        <<<"$(stats modes "$workload" "$mode")"
      echo "| $workload | $mode | $(number "$format" "$median")${median:+ $unit} |" \
           "$(number "$format" "$min") | $(ratio "$median" "$bare_median") |" \
           "$(number %.0f "$records") | ${dropped:-—} | $ok/$runs |"
    done
  done
  echo
  echo "Storm under the CUPTI tracer, per activity kind and API callback domain" \
       "($layer_repeats runs each, µs per launch):"
  echo
  echo "| configuration | median | min | ratio to bare | added µs/launch | records per run |" \
       "API callbacks per run | dropped | runs ok |"
  echo "|---|---|---|---|---|---|---|---|---|"
  local name added
  IFS='|' read -r bare_median _ <<<"$(stats layers bare bare)"
  for ((i = 0; i < ${#layers[@]}; i += 2)); do
    name=${layers[i]}
    if [[ -z ${layers[i + 1]} ]]; then mode=bare; else mode=cupti; fi
    IFS='|' read -r median min ok runs records dropped callbacks \
      <<<"$(stats layers "$name" "$mode")"
    added="—"
    if [[ -n $median && -n $bare_median ]]; then
      added=$(LC_ALL=C awk -v v="$median" -v b="$bare_median" 'BEGIN { printf "%+.3f", v - b }')
    fi
    echo "| $name | $(number %.3f "$median") | $(number %.3f "$min") |" \
         "$(ratio "$median" "$bare_median") | $added | $(number %.0f "$records") |" \
         "$(number %.0f "$callbacks") | ${dropped:-—} | $ok/$runs |"
  done
  echo
  echo "Total time: $((SECONDS - started)) s. Records: CUPTI activity records of the timed part" \
       "and teardown (cupti), events in ferret's chrome trace (ferret); dropped: most records" \
       "a run dropped (cupti), ferret exit lines reporting drops (ferret)."
}

report_text=$(report)
echo "$report_text"
if [[ -n ${OUT:-} ]]; then
  mkdir -p "$OUT"
  echo "$report_text" >"$OUT/gpu-bench-report.md"
  cp "$log" "$OUT/gpu-bench-runs.log"
fi
