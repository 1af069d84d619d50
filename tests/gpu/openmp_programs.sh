#!/usr/bin/env bash
# openmp_programs.sh BUILD WORK: OpenMP programs offloading to GPU 0, traced
# through ferret-run (both collectors, FERRET_BACKEND=chrome,summary,
# OMP_TARGET_OFFLOAD=MANDATORY), checked by openmp_programs_check.py:
#   - BUILD/bin/openmp-example-gpu, the OpenMP example with its target part on
#     the GPU: its target constructs located at the example's lines for them,
#     its kernels and copies joined to them;
#   - BUILD/bin/babelstream-omp (tests/gpu/build-babelstream.sh), a program we
#     did not write, unmodified: every kernel joined to its submission, and its
#     cost: three bare runs against three traced ones (wall time, and the Triad
#     bandwidth BabelStream measures itself).
# Needs the LLVM offload runtime's folder in FERRET_GPU_TEST_LLVM_LIBS
# (tests/gpu/run.sh unpacks tests/gpu/pack-llvm-offload.sh's archive there);
# it goes on these programs' LD_LIBRARY_PATH only. Prints lines starting
# "openmp example:" and "openmp babelstream:"; exit 0 pass, 1 fail, 77 skipped.
set -uo pipefail
build=$(cd "$1" && pwd)
work=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2> /dev/null | wc -l)
if ((gpus == 0)); then
  echo "openmp example: skipped: nvidia-smi sees no GPU"
  exit 77
fi
if [[ -z ${FERRET_GPU_TEST_LLVM_LIBS:-} ]]; then
  echo "openmp example: skipped: no LLVM offload runtime (FERRET_GPU_TEST_LLVM_LIBS; tests/gpu/run.sh sets it)"
  exit 77
fi
library_path=$FERRET_GPU_TEST_LLVM_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
status=0

# traced NAME OUTPUT PROGRAM ARGS...: one run through ferret-run, its stderr in WORK/NAME.err.
traced() {
  local name=$1 output=$2
  shift 2
  env LD_LIBRARY_PATH="$library_path" OMP_TARGET_OFFLOAD=MANDATORY FERRET_BACKEND=chrome,summary \
    "$build/bin/ferret-run" --output "$output" -- "$@" > "$work/$name.out" 2> "$work/$name.err"
}

example=$build/bin/openmp-example-gpu
if [[ -x $example ]]; then
  elements=1048576 sweeps=3  # the example's defaults
  if traced example "$work/example.json" "$example" "$elements"; then
    "$build/bin/ferret-trace-check" "$work/example.json" > "$work/example.check" 2>&1 ||
      { echo "openmp example: FAILED: ferret-trace-check: $(tail -n 3 "$work/example.check")"; status=1; }
    python3 "$here/openmp_programs_check.py" example "$work/example.json" \
      "$root/examples/openmp/openmp_example.cpp" "$elements" "$sweeps" || status=1
  else
    echo "openmp example: FAILED: exit status $?: $(tail -n 5 "$work/example.err")"
    status=1
  fi
else
  echo "openmp example: FAILED: no $example"
  status=1
fi

babelstream=$build/bin/babelstream-omp
if [[ -x $babelstream ]]; then
  iterations=100  # BabelStream's default, with its default arrays (3 x 256 MiB)
  seconds() { date +%s.%N; }
  since() { awk -v now="$(seconds)" -v start="$1" 'BEGIN {printf "%.3f", now - start}'; }
  triad() { awk '$1 == "Triad" {print $2}' "$1"; }
  bare_times=() traced_times=() bare_triad=() traced_triad=()
  for run in 1 2 3; do
    start=$(seconds)
    if ! env LD_LIBRARY_PATH="$library_path" OMP_TARGET_OFFLOAD=MANDATORY \
         "$babelstream" -n "$iterations" > "$work/babelstream-bare-$run.out" 2>&1; then
      echo "openmp babelstream: FAILED: the bare run: $(tail -n 5 "$work/babelstream-bare-$run.out")"
      status=1
      break
    fi
    bare_times+=("$(since "$start")")
    bare_triad+=("$(triad "$work/babelstream-bare-$run.out")")
    start=$(seconds)
    if ! traced "babelstream-traced-$run" "$work/babelstream-$run.json" "$babelstream" -n "$iterations"; then
      echo "openmp babelstream: FAILED: the traced run: $(tail -n 5 "$work/babelstream-traced-$run.err")"
      status=1
      break
    fi
    traced_times+=("$(since "$start")")
    traced_triad+=("$(triad "$work/babelstream-traced-$run.out")")
  done
  if ((${#traced_times[@]} == 3)); then
    "$build/bin/ferret-trace-check" "$work/babelstream-1.json" > "$work/babelstream.check" 2>&1 ||
      { echo "openmp babelstream: FAILED: ferret-trace-check: $(tail -n 3 "$work/babelstream.check")"; status=1; }
    python3 "$here/openmp_programs_check.py" babelstream "$work/babelstream-1.json" "$iterations" || status=1
    median() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
    bare=$(median "${bare_times[@]}") with=$(median "${traced_times[@]}")
    echo "openmp babelstream: wall time, median of 3: bare $bare s, traced $with s" \
         "($(awk -v with="$with" -v bare="$bare" 'BEGIN {printf "%+.1f", 100 * (with - bare) / bare}') %)"
    echo "openmp babelstream: Triad MB/s, median of 3: bare $(median "${bare_triad[@]}")," \
         "traced $(median "${traced_triad[@]}") (runs: bare ${bare_triad[*]}; traced ${traced_triad[*]})"
  fi
else
  echo "openmp babelstream: skipped: no $babelstream (tests/gpu/build-babelstream.sh)"
fi
exit $status
