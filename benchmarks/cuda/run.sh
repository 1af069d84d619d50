#!/usr/bin/env bash
# run.sh — what tracing costs a CUDA program: bare, under a minimal CUPTI
# subscriber in every configuration ferret's collector is made of, under
# ferret, and (PyTorch) under torch.profiler; prints markdown tables.
#
#   bash benchmarks/cuda/run.sh <build-dir> [--quick] [--repeats N] [--only T,...] [--cpus LIST]
#
# <build-dir> is a ferret build configured with -DFERRET_BUILD_BENCHMARKS=ON on
# a machine with the CUDA toolkit; it may have been copied elsewhere: every
# program is found relative to it (bin/ferret-cuda-overhead, bin/ferret-run,
# bin/ferret-torch-small-ops.py, lib/libferret_cupti.so).
#
# Tables (--only picks some, comma-separated; all by default). Within a table
# the rows run interleaved (row 1, row 2, ..., row 1, ...) R times, and the
# table gives the median and the minimum of each row:
#   storm    100 000 empty-kernel launches (µs per launch): bare; CUPTI's
#            kernel kind alone; + the callbacks of the runtime's launch calls;
#            + the driver's launch callbacks alone (no runtime domain); + the
#            runtime API's activity records (how Kineto times calls), alone
#            and with the driver's launch callbacks;
#            + every callback ferret subscribes to; + every activity kind
#            ferret enables but OVERHEAD; + OVERHEAD (ferret's CUPTI
#            configuration, without ferret's own work); ferret (chrome trace) with FERRET_CUDA_API=work (default)
#            and =all; the classic minimal tracer (8 kinds with runtime and
#            driver API records). Target (issue 14): ferret's added time per
#            launch ≤ 1.2× the kernel kind's.
#   getters  700 000 calls of cudaGetDevice/cudaGetLastError, as PyTorch makes
#            them per operation (ns per call): bare; ferret counting them
#            (work), not subscribed to them (work-uncounted), recording them
#            (all); the raw subscriber's callback on exactly ferret's calls,
#            and on ferret's driver calls alone (does an unsubscribed runtime
#            domain spare the getters CUPTI's dispatch?), and what the runtime
#            API's activity records cost them (counts without callbacks). The log's result lines
#            also give kernels_joined: kernel records whose correlation id a
#            launch callback saw.
#   loop     200 iterations of saxpy + 4096³ bf16 GEMM + a 4-byte copy back
#            (ms per iteration): bare, the classic minimal tracer, ferret;
#            ferret with instruction samples, with sampled link and memory
#            counters every 1 ms (target, issue 29: ≤ 1.02× bare), and Nsight Compute's source
#            counters (kernel replay, 10 iterations) for the same view.
#   torch    20 000 small PyTorch operations (µs per operation,
#            ferret-torch-small-ops.py): bare; ferret with FERRET_CUDA_API=work
#            and driver, each with and without Python call paths
#            (FERRET_PYTHON=0); torch.profiler without and with with_stack.
#            Targets (issue 27): ferret's added time ≤ 0.7× torch.profiler's,
#            with call paths against with_stack. Left out without a python3
#            whose torch sees the GPU.
#   train    2 000 training steps of a small MLP (µs per step), the same rows.
#   stencil  200 iterations of a 5-point stencil split between two GPUs, each
#            half reading its halo row from the other GPU's memory (µs per
#            iteration): bare; ferret; ferret counting device-initiated
#            traffic (FERRET_CUDA_PEER_ACCESSES=1, the Compute Sanitizer), and
#            the same with a patch that returns at once (the sanitizer's own
#            share, FERRET_PEER_ACCESS_EMPTY_PATCH=1).
#            Target (issue 29): counting ≤ 4× bare. Left out (not asked by
#            default) without two GPUs.
# R is 11 for storm and getters, 5 for loop, torch and train; --quick: 9 and 3, and
# half the launches, calls, iterations and operations; --repeats N: N for all;
# --repeats N,M: N for storm and getters, M for the others. --rows REGEX keeps
# bare and the rows whose label matches the extended regular expression (a
# verdict pass needs fewer rows run more often than the whole breakdown).
# --cpus LIST pins every run to those CPUs (taskset -c; "none": not pinned). By
# default, on a machine with 8 or more CPUs, runs are pinned to CPUs 2-5: the
# same four for every row (the program's thread, ferret's drain thread, CUPTI's
# worker and Python's have room), away from CPU 0 and its interrupts, so that a
# run's threads do not wander between runs.
# Columns: median and minimum, what a row adds to bare (median − median, and
# min − min), the ratio to bare, the records CUPTI delivered per run (raw
# subscriber) or the events of ferret's chrome trace, the most any run
# dropped, and the runs that succeeded.
#
# Every run's output goes to a log; with $OUT set, the report and the log are
# saved as $OUT/gpu-bench-report.md and $OUT/gpu-bench-runs.log. Exit status:
# 0; 77 when no CUDA device can be used; 1 on bad usage or when the benchmark
# program is missing.
set -uo pipefail

usage() {
  echo "usage: $0 <build-dir> [--quick] [--repeats N[,M]] [--rows REGEX]" \
       "[--only storm,getters,loop,torch,train,stencil] [--cpus LIST|none]" >&2
  exit 1
}
[[ $# -ge 1 ]] || usage
build_dir=$1
shift
quick=0
repeats=
row_pattern=
only=storm,getters,loop,torch,train
cpus=auto
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) quick=1 ;;
    --repeats)
      [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*(,[1-9][0-9]*)?$ ]] || usage
      repeats=$2
      shift ;;
    --rows)
      [[ $# -ge 2 && -n $2 ]] || usage
      row_pattern=$2
      shift ;;
    --cpus)
      [[ $# -ge 2 && $2 =~ ^(none|[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*)$ ]] || usage
      cpus=$2
      shift ;;
    --only)
      [[ $# -ge 2 && $2 =~ ^(storm|getters|loop|torch|train|stencil)(,(storm|getters|loop|torch|train|stencil))*$ ]] || usage
      only=$2
      shift ;;
    *) usage ;;
  esac
  shift
done
if ((quick)); then
  launches=50000 calls=350000 iterations=100 torch_ops=10000 train_steps=1000 fine=9 coarse=3
else
  launches=100000 calls=700000 iterations=200 torch_ops=20000 train_steps=2000 fine=11 coarse=5
fi
[[ -n $repeats ]] && fine=${repeats%,*} coarse=${repeats#*,}
wanted() { [[ ,$only, == *,$1,* ]]; }
if [[ $cpus == auto ]]; then
  cpus=none
  command -v taskset > /dev/null && (($(nproc) >= 8)) && cpus=2-5
fi
if [[ $cpus != none ]] && ! taskset -c "$cpus" true 2> /dev/null; then
  echo "$0: cannot pin to CPUs $cpus (taskset -c failed); running unpinned" >&2
  cpus=none
fi
pinning=()
[[ $cpus != none ]] && pinning=(taskset -c "$cpus")

program=$build_dir/bin/ferret-cuda-overhead
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
ferret_run=$build_dir/bin/ferret-run
collector=$build_dir/lib/libferret_cupti.so
torch_script=$build_dir/bin/ferret-torch-small-ops.py
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
results=$work/results.tsv   # table  row  value  records  dropped
: >"$results"
started=$SECONDS
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg 2> /dev/null)

# Nothing of the caller's tracing setup may reach the runs.
clean_env=(env -u CUDA_INJECTION64_PATH -u FERRET_BACKEND -u FERRET_OUTPUT -u FERRET_CUDA_API)

# How the ferret rows inject the collector: ferret-run, or (builds without it)
# the variables ferret-run would set.
if [[ -x $ferret_run ]]; then
  injection="bin/ferret-run --backend chrome"
elif [[ -f $collector ]]; then
  injection="CUDA_INJECTION64_PATH=lib/libferret_cupti.so FERRET_BACKEND=chrome (no bin/ferret-run in the build)"
else
  injection=
fi

# The tables' rows: "label|how". how: bare | cupti KINDS CALLBACKS |
# ferret FERRET_CUDA_API | profiler (torch only).
storm_rows=(
  "bare|bare"
  "CUPTI kernel kind alone|cupti kernel none"
  "kernel + launch callbacks|cupti kernel launch"
  "kernel + driver launch callbacks alone|cupti kernel driver-launch"
  "kernel + driver launch activity records, no callback|cupti kernel driver-launch-records"
  "kernel + driver launch records + one external correlation id|cupti kernel driver-launch-records-external"
  "kernel + runtime API activity records|cupti kernel,runtime none"
  "kernel + runtime API activity records + driver launch callbacks|cupti kernel,runtime driver-launch"
  "kernel + ferret's callbacks|cupti kernel ferret"
  "ferret's kinds but overhead, and its callbacks|cupti kernel,memcpy,memcpy2,memset,memory2,sync,device,context ferret"
  "ferret's kinds and callbacks (CUPTI's part of ferret)|cupti ferret ferret"
  "ferret, FERRET_CUDA_API=work (default)|ferret work"
  "ferret, FERRET_CUDA_API=all|ferret all"
  "ferret, FERRET_CUDA_API=driver|ferret driver"
  "classic minimal tracer (8 kinds with runtime and driver records)|cupti all none"
)
getters_rows=(
  "bare|bare"
  "ferret, work (counted)|ferret work"
  "ferret, work-uncounted (not subscribed)|ferret work-uncounted"
  "ferret, all (recorded)|ferret all"
  "ferret, driver (the runtime untouched)|ferret driver"
  "raw callback on ferret's calls, no activity|cupti none ferret"
  "raw callback on ferret's driver calls alone|cupti none driver-ferret"
  "runtime API activity records, no callback|cupti runtime none"
  "runtime API activity records + ferret's driver calls|cupti runtime driver-ferret"
)
loop_rows=(
  "bare|bare"
  "classic minimal tracer|cupti all none"
  "ferret, work (default)|ferret work"
  "ferret, driver|ferret driver"
  "ferret, instruction samples (FERRET_CUDA_PC_SAMPLING=1)|ferret work FERRET_CUDA_PC_SAMPLING=1"
  "ferret, link and memory counters every 1 ms (FERRET_CUDA_METRICS_SAMPLING=1ms)|ferret work FERRET_CUDA_METRICS_SAMPLING=1ms"
  "Nsight Compute, SourceCounters (kernel replay; 10 iterations)|ncu"
)
torch_rows=(
  "bare|bare"
  "ferret, work (default)|ferret work"
  "ferret, driver|ferret driver"
  "ferret, driver, FERRET_PYTHON=0|ferret driver FERRET_PYTHON=0"
  "ferret, work, FERRET_PYTHON=0|ferret work FERRET_PYTHON=0"
  "torch.profiler (CPU and CUDA activities)|profiler"
  "torch.profiler with_stack=True|profiler-stack"
)
# The same rows on training steps of a small MLP.
train_rows=("${torch_rows[@]}")
stencil_rows=(
  "bare|bare"
  "ferret, work (default)|ferret work"
  "ferret, counting device-initiated traffic (FERRET_CUDA_PEER_ACCESSES=1)|ferret work FERRET_CUDA_PEER_ACCESSES=1"
  "the same with an empty patch (the Compute Sanitizer's own cost)|ferret work FERRET_CUDA_PEER_ACCESSES=1 FERRET_PEER_ACCESS_EMPTY_PATCH=1"
)

# The command of one row of one table, into the array `command`.
row_command() {  # table how...
  local table=$1
  shift
  local -a workload prefix=("${pinning[@]}" "${clean_env[@]}")
  case $table in
    storm) workload=("$program" --workload=storm --launches="$launches") ;;
    getters) workload=("$program" --workload=getters --calls="$calls") ;;
    loop) workload=("$program" --workload=loop --iterations="$iterations") ;;
    torch) workload=(python3 "$torch_script" --ops "$torch_ops") ;;
    train) workload=(python3 "$torch_script" --workload train --ops "$train_steps") ;;
    stencil) workload=("$program" --workload=stencil --iterations="$iterations") ;;
  esac
  case $1 in
    bare)
      command=("${prefix[@]}" "${workload[@]}")
      [[ $table != torch && $table != train ]] && command+=(--mode=bare) ;;
    cupti) command=("${prefix[@]}" "${workload[@]}" --mode=cupti --kinds="$2" --callbacks="$3") ;;
    profiler) command=("${prefix[@]}" "${workload[@]}" --profiler) ;;
    ncu)
      # The same per-line stall view from Nsight Compute: every kernel replayed,
      # so far fewer iterations (the program times iterations itself).
      command=("${prefix[@]}" "$ncu" --section SourceCounters -f -o "$work/ncu-loop"
               "${workload[@]/--iterations=*/--iterations=10}" --mode=bare) ;;
    profiler-stack) command=("${prefix[@]}" "${workload[@]}" --stack) ;;
    ferret)
      # Settings after the API one (FERRET_PYTHON=0) go into the environment.
      prefix+=("${@:3}")
      if [[ -x $ferret_run ]]; then
        prefix+=(FERRET_CUDA_API="$2" "$ferret_run" --backend chrome --output "$work/trace" --)
      else
        prefix+=(FERRET_CUDA_API="$2" CUDA_INJECTION64_PATH="$collector" FERRET_BACKEND=chrome
                 FERRET_OUTPUT="$work/trace")
      fi
      command=("${prefix[@]}" "${workload[@]}")
      [[ $table != torch && $table != train ]] && command+=(--mode=bare) ;;
  esac
}

field() {  # name line: the value of name=value in a result line
  sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"
}

# run_once table label how...: runs one row once, appends its numbers to
# $results (an empty value when it failed), its whole output to the log.
run_once() {
  local table=$1 label=$2
  shift 2
  local -a command
  row_command "$table" "$@"
  local output status line value records dropped
  output=$(timeout --kill-after=10 300 "${command[@]}" 2>&1)
  status=$?
  rm -rf "$work"/trace*
  {
    echo "### $table | $label (exit $status): ${command[*]}"
    echo "$output"
  } >>"$log"
  line=$(grep '^result ' <<<"$output" | tail -n 1)
  value=$(sed -n 's/.* per_op_[um]s=\([0-9.]*\).*/\1/p' <<<"$line")
  if [[ $status -ne 0 || -z $value ]]; then
    echo "  $table / $label: failed (exit $status), see the log" >&2
    value=
  fi
  records=$(field records "$line")
  dropped=$(field dropped "$line")
  if [[ $1 == ferret ]]; then
    # The chrome backend's exit line says how many events it wrote.
    records=$(sed -n 's/^ferret: chrome trace: .*(\([0-9]*\) events).*/\1/p' <<<"$output" | tail -n 1)
    dropped=$(grep -ciE '^ferret: .*(dropped|lost)' <<<"$output")
  elif [[ $table == torch || $table == train ]]; then
    records= dropped=
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$table" "$label" "$value" "${records:-}" "${dropped:-}" >>"$results"
}

# run_table table repeats rows...: every row once, in order, `repeats` times.
run_table() {
  local table=$1 repeats=$2
  shift 2
  local rep row
  echo "  $table: $# rows x $repeats runs ..." >&2
  for ((rep = 1; rep <= repeats; ++rep)); do
    for row in "$@"; do
      local -a how
      read -r -a how <<<"${row#*|}"
      if [[ -n $row_pattern && ${how[0]} != bare ]] && ! grep -qE -- "$row_pattern" <<<"${row%%|*}"; then
        continue
      fi
      if [[ ${how[0]} == ferret && -z $injection ]]; then continue; fi
      if [[ ${how[0]} == ncu && ! -x $ncu ]]; then continue; fi
      run_once "$table" "${row%%|*}" "${how[@]}"
    done
  done
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

torch_note= torch_version=
if wanted torch || wanted train; then
  if [[ ! -f $torch_script ]]; then
    torch_note="left out: no $torch_script"
  elif ! torch_probe=$(python3 -c 'import torch; assert torch.cuda.is_available(), "torch sees no GPU"; print(torch.__version__)' 2>&1); then
    torch_note="left out: python3 cannot use torch on the GPU ($(tail -n 1 <<<"$torch_probe"))"
  else
    torch_version=$(tail -n 1 <<<"$torch_probe")
  fi
fi


# stats table label: "median|min|runs ok|runs|median records|most dropped"
# (empty when none; "|" because read collapses empty tab-separated fields)
stats() {
  awk -F'\t' -v table="$1" -v row="$2" '
    function median(values, n,    sorted, i, j, t) {
      if (n == 0) return ""
      for (i = 1; i <= n; ++i) sorted[i] = values[i]
      for (i = 2; i <= n; ++i)
        for (j = i; j > 1 && sorted[j - 1] > sorted[j]; --j) {
          t = sorted[j]; sorted[j] = sorted[j - 1]; sorted[j - 1] = t
        }
      return n % 2 ? sorted[(n + 1) / 2] : (sorted[n / 2] + sorted[n / 2 + 1]) / 2
    }
    $1 == table && $2 == row {
      ++runs
      if ($3 != "") { ok_values[++ok] = $3 + 0; if (min == "" || $3 + 0 < min) min = $3 + 0 }
      if ($4 != "") records[++nrecords] = $4 + 0
      if ($5 != "" && (dropped == "" || $5 + 0 > dropped)) dropped = $5 + 0
    }
    END {
      printf "%s|%s|%d|%d|%s|%s\n", median(ok_values, ok), min, ok, runs,
             median(records, nrecords), dropped
    }' "$results"
}
calc() {  # awk expression over v, w: the result, or "" when an input is empty
  local expression=$1 v=${2:-} w=${3:-}
  [[ -z $v || ( $expression == *w* && -z $w ) ]] && return
  LC_ALL=C awk -v v="$v" -v w="$w" "BEGIN { print $expression }"
}
shown() {  # printf format, value ("" stays "—")
  # shellcheck disable=SC2059  # the format is the caller's
  if [[ -z $2 ]]; then echo "—"; else LC_ALL=C printf "$1" "$2"; fi
}

# table_report table unit format scale rows...: one markdown table. Values are
# multiplied by `scale` for display (1000: µs shown as ns).
table_report() {
  local table=$1 unit=$2 format=$3 scale=$4
  shift 4
  local bare_median bare_min row label median min ok runs records dropped added=${format/\%/%+}
  IFS='|' read -r bare_median bare_min _ <<<"$(stats "$table" bare)"
  echo "| configuration | median $unit | min | added (median) | added (min) | ratio to bare |" \
       "records/events per run | dropped | runs ok |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for row in "$@"; do
    label=${row%%|*}
    IFS='|' read -r median min ok runs records dropped <<<"$(stats "$table" "$label")"
    [[ $runs == 0 ]] && continue
    echo "| $label | $(shown "$format" "$(calc "v * $scale" "$median")") |" \
         "$(shown "$format" "$(calc "v * $scale" "$min")") |" \
         "$(shown "$added" "$(calc "(v - w) * $scale" "$median" "$bare_median")") |" \
         "$(shown "$added" "$(calc "(v - w) * $scale" "$min" "$bare_min")") |" \
         "$(shown "%.2f×" "$(calc "v / w" "$median" "$bare_median")") |" \
         "$(shown %.0f "$records") | ${dropped:-—} | $ok/$runs |"
  done
}

# What `label` adds over bare divided by what `reference` adds, by medians and by minima.
added_ratio() {  # table label reference -> "median_ratio|min_ratio"
  local b_med b_min l_med l_min r_med r_min
  IFS='|' read -r b_med b_min _ <<<"$(stats "$1" bare)"
  IFS='|' read -r l_med l_min _ <<<"$(stats "$1" "$2")"
  IFS='|' read -r r_med r_min _ <<<"$(stats "$1" "$3")"
  local by_median by_min
  by_median=$(calc "(v - w)" "$l_med" "$b_med")
  by_median=$(calc "v / w" "$by_median" "$(calc "(v - w)" "$r_med" "$b_med")")
  by_min=$(calc "(v - w)" "$l_min" "$b_min")
  by_min=$(calc "v / w" "$by_min" "$(calc "(v - w)" "$r_min" "$b_min")")
  echo "$by_median|$by_min"
}
verdict() {  # value limit -> "met" / "not met" / "—"
  [[ -z $1 ]] && { echo "—"; return; }
  LC_ALL=C awk -v v="$1" -v l="$2" 'BEGIN { print (v <= l ? "met" : "not met") }'
}

report() {
  echo "## GPU tracing overhead (benchmarks/cuda/run.sh)"
  echo
  echo "- GPU: ${gpu_name:-unknown (no nvidia-smi)}, driver ${driver:-unknown}; $device_info"
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'), host $(uname -n); tables: $only" \
       "($fine runs each for storm and getters, $coarse for loop and torch, interleaved)"
  if [[ $cpus != none ]]; then
    echo "- Pinned: every run on CPUs $cpus of $(nproc) (taskset -c); load average at the start $load_at_start"
  else
    echo "- Not pinned ($(nproc) CPUs); load average at the start $load_at_start"
  fi
  if [[ -n $injection ]]; then
    echo "- ferret rows: the bare program under $injection, FERRET_CUDA_API as named"
  else
    echo "- ferret rows left out: neither bin/ferret-run nor lib/libferret_cupti.so in $build_dir"
  fi
  if wanted storm; then
    echo
    echo "### Launch storm: $launches empty-kernel launches, µs per launch"
    echo
    table_report storm "µs/launch" "%.3f" 1 "${storm_rows[@]}"
    local ratios by_median by_min
    ratios=$(added_ratio storm "ferret, FERRET_CUDA_API=work (default)" "CUPTI kernel kind alone")
    IFS='|' read -r by_median by_min <<<"$ratios"
    echo
    echo "Target: ferret's added time per launch ≤ 1.2× the kernel kind's:" \
         "$(shown %.2f× "$by_median") by medians ($(verdict "$by_median" 1.2))," \
         "$(shown %.2f× "$by_min") by minima ($(verdict "$by_min" 1.2))."
    local median low high rounds
    IFS='|' read -r median low high rounds <<<"$(round_ratios storm \
      "ferret, FERRET_CUDA_API=work (default)" "CUPTI kernel kind alone")"
    echo "Round by round: $(shown %.2f× "$median") median, $(shown %.2f "$low")–$(shown %.2f× "$high")" \
         "over $rounds rounds."
    ratios=$(added_ratio storm "ferret, FERRET_CUDA_API=work (default)" \
                               "ferret's kinds and callbacks (CUPTI's part of ferret)")
    IFS='|' read -r by_median by_min <<<"$ratios"
    echo "ferret's added time over CUPTI's part of it (its kinds and callbacks in the raw" \
         "subscriber): $(shown %.2f× "$by_median") by medians, $(shown %.2f× "$by_min") by minima."
  fi
  if wanted getters; then
    echo
    echo "### Calls that launch nothing: $calls calls of cudaGetDevice / cudaGetLastError" \
         "(6:1, as PyTorch per operation), ns per call"
    echo
    table_report getters "ns/call" "%.1f" 1000 "${getters_rows[@]}"
  fi
  if wanted loop; then
    echo
    echo "### Loop: $iterations iterations of saxpy (16M floats) + 4096³ bf16 GEMM + 4-byte" \
         "copy back + sync, ms per iteration"
    echo
    table_report loop "ms/iter" "%.4f" 1 "${loop_rows[@]}"
  fi
  if wanted torch; then
    echo
    if [[ -n $torch_note ]]; then
      echo "### PyTorch small operations: $torch_note"
    else
      echo "### PyTorch $torch_version: $torch_ops small operations (x * 0.999 + 0.001 on 4096" \
           "floats), µs per operation"
      echo
      table_report torch "µs/op" "%.3f" 1 "${torch_rows[@]}"
      torch_verdicts torch
    fi
  fi
  if wanted train && [[ -z $torch_note ]]; then
    echo
    echo "### PyTorch $torch_version: $train_steps training steps of a small MLP (256-256-10," \
         "batch 64, SGD), µs per step"
    echo
    table_report train "µs/step" "%.1f" 1 "${train_rows[@]}"
    torch_verdicts train
  fi
  if wanted stencil; then
    echo
    echo "### Stencil on two GPUs: $iterations iterations of a 5-point stencil over 4096×4096" \
         "floats split in halves, each reading its halo row from the other GPU, µs per iteration"
    echo
    table_report stencil "µs/iter" "%.1f" 1 "${stencil_rows[@]}"
    local counted
    counted=$(stats stencil "ferret, counting device-initiated traffic (FERRET_CUDA_PEER_ACCESSES=1)" | cut -d'|' -f1)
    local bare_median
    bare_median=$(stats stencil bare | cut -d'|' -f1)
    if [[ -n $counted && -n $bare_median ]]; then
      echo
      echo "Target (issue 29): counting ≤ 4× bare: $(awk -v c="$counted" -v b="$bare_median" \
           'BEGIN { r = c / b; printf "%.2f× by medians (%s)", r, r <= 4 ? "met" : "not met" }')."
    fi
  fi
  echo
  echo "Total time: $((SECONDS - started)) s. Records: CUPTI activity records of the timed part" \
       "and teardown (raw subscriber), events in ferret's chrome trace (ferret); dropped: most" \
       "records a run dropped (raw subscriber), ferret exit lines reporting drops (ferret)."
}

# Issue 27's targets for a PyTorch table: ferret's added time (median over
# bare's) at most 0.7x torch.profiler's, with Python call paths against
# with_stack=True and without (FERRET_PYTHON=0) against the plain profiler.
# Per-round ratios of added times: in round i, (label_i - bare_i) / (reference_i - bare_i);
# rows of one round ran next to each other, so the round's machine state cancels.
round_ratios() {  # table label reference -> "median|min|max|rounds" (empty when none)
  awk -F'\t' -v table="$1" -v label="$2" -v reference="$3" '
    $1 != table || $3 == "" { if ($1 == table) ++seen[$2]; next }
    { i = ++seen[$2]; value[$2, i] = $3 + 0; have[$2, i] = 1 }
    END {
      n = 0
      for (i = 1; i <= seen["bare"]; ++i) {
        if (!have["bare", i] || !have[label, i] || !have[reference, i]) continue
        d = value[reference, i] - value["bare", i]
        if (d <= 0) continue
        r[++n] = (value[label, i] - value["bare", i]) / d
      }
      if (n == 0) { print "|||0"; exit }
      for (i = 2; i <= n; ++i) for (j = i; j > 1 && r[j - 1] > r[j]; --j) { t = r[j]; r[j] = r[j - 1]; r[j - 1] = t }
      m = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
      printf "%s|%s|%s|%d\n", m, r[1], r[n], n
    }' "$results"
}

torch_verdicts() {  # table
  local table=$1 bare added_profiler added_stack row ours ratio reference_label median low high rounds
  IFS='|' read -r bare _ <<<"$(stats "$table" bare)"
  IFS='|' read -r added_profiler _ <<<"$(stats "$table" "torch.profiler (CPU and CUDA activities)")"
  IFS='|' read -r added_stack _ <<<"$(stats "$table" "torch.profiler with_stack=True")"
  added_profiler=$(calc "v - w" "$added_profiler" "$bare")
  added_stack=$(calc "v - w" "$added_stack" "$bare")
  echo
  for row in "ferret, work (default)|$added_stack|with_stack=True" "ferret, driver|$added_stack|with_stack=True" \
             "ferret, work, FERRET_PYTHON=0|$added_profiler|without stacks" \
             "ferret, driver, FERRET_PYTHON=0|$added_profiler|without stacks"; do
    IFS='|' read -r ours _ <<<"$(stats "$table" "${row%%|*}")"
    [[ -z $ours ]] && continue
    IFS='|' read -r _ reference against <<<"$row"
    ratio=$(calc "(v - w) / $([[ -n $reference ]] && echo "$reference" || echo 0)" "$ours" "$bare")
    [[ -z $reference ]] && ratio=
    if [[ $against == with_stack=True ]]; then reference_label="torch.profiler with_stack=True"
    else reference_label="torch.profiler (CPU and CUDA activities)"; fi
    IFS='|' read -r median low high rounds <<<"$(round_ratios "$table" "${row%%|*}" "$reference_label")"
    echo "- ${row%%|*}: added $(shown %.3f "$(calc "v - w" "$ours" "$bare")") against torch.profiler" \
         "$against $(shown %.3f "$reference"): $(shown %.2f× "$ratio") by medians" \
         "(target ≤ 0.70×: $(verdict "$ratio" 0.7)); round by round $(shown %.2f× "$median")" \
         "median, $(shown %.2f "$low")–$(shown %.2f× "$high") over $rounds rounds"
  done
}

# The report of what has run; also on SIGTERM (a device call's time limit), so
# that a pass cut short still says what its finished rounds measured.
finish() {
  report_text=$(report)
  [[ -n ${1:-} ]] && report_text+=$'\n\n'"$1"
  echo "$report_text"
  if [[ -n ${OUT:-} ]]; then
    mkdir -p "$OUT"
    echo "$report_text" >"$OUT/gpu-bench-report.md"
    cp "$log" "$OUT/gpu-bench-runs.log"
  fi
  exit 0
}
trap 'finish "Stopped early (SIGTERM): the rows above hold the rounds that finished."' TERM

echo "ferret-cuda-overhead: tables $only" >&2
wanted storm && run_table storm "$fine" "${storm_rows[@]}"
wanted getters && run_table getters "$fine" "${getters_rows[@]}"
wanted loop && run_table loop "$coarse" "${loop_rows[@]}"
wanted torch && [[ -z $torch_note ]] && run_table torch "$coarse" "${torch_rows[@]}"
wanted train && [[ -z $torch_note ]] && run_table train "$coarse" "${train_rows[@]}"
wanted stencil && run_table stencil "$coarse" "${stencil_rows[@]}"
finish
