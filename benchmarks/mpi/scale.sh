#!/usr/bin/env bash
# benchmarks/mpi/scale.sh BUILD_DIR [RANKS...]: what each output costs as the
# job grows (docs/performance.md, "MPI: cost by job size"; docs/scale.md),
# oversubscribed on one machine, with tests/support/mpi_communication_app
# (ring, halo, persistent requests, collectives, sub-communicators):
#   summary  rank 0's "Reduced in MPI_Finalize" line (parts' bytes, time of the
#            reduction at rank 0), the job summary's bytes, MPI_Finalize's time
#            on rank 0 (the app's wall clock around it is not available: the
#            whole run's time is printed instead), peak RSS of rank 0 and the
#            largest of the others
#   tau, chrome, otf2, report   bytes written per rank and in all, file count,
#            peak RSS of rank 0
#   merge    ferret-merge of the chrome traces: time and peak RSS, the streamed
#            tool against the one that loaded whole files (MERGE_BEFORE, if set)
# Prints one line per measurement; the machine's load average first and last.
set -euo pipefail
build=${1:?usage: scale.sh BUILD_DIR [RANKS...]}
shift
ranks_list=("${@:-2 8 32 64}")
[[ $# -eq 0 ]] && ranks_list=(2 8 32 64)
here=$(cd "$(dirname "$0")" && pwd)
app=$build/bin/mpi_communication_app
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 \
  OMPI_MCA_hwloc_base_binding_policy=none
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
# Each rank under /usr/bin/time: its peak RSS (KiB), tagged with its rank.
cat > "$work/rss" <<'WRAP'
#!/bin/sh
exec /usr/bin/time -f "rss rank=$OMPI_COMM_WORLD_RANK kib=%M" "$@"
WRAP
chmod +x "$work/rss"
rss_of() {  # stderr file -> "rank0 KiB, largest other KiB"
  awk '/^rss rank=/ { split($2, r, "="); split($3, k, "="); if (r[2] == 0) zero = k[2]; else if (k[2] > other) other = k[2] }
       END { printf "%s %s", zero, other }' "$1"
}
for ranks in "${ranks_list[@]}"; do
  run="$work/$ranks"
  mkdir -p "$run"
  # Without ferret's backends (the layer passes through): the baseline RSS.
  start=$(date +%s.%N)
  env -u FERRET_BACKEND mpirun -np "$ranks" "$work/rss" "$app" 2> "$run/none.err" > /dev/null
  end=$(date +%s.%N)
  echo "ranks=$ranks backend=none wall_s=$(echo "$end - $start" | bc) rss_kib(rank0,max_other)=$(rss_of "$run/none.err")"
  for backend in summary tau chrome otf2 report; do
    out="$run/$backend"
    mkdir -p "$out"
    output=$out/
    [[ $backend == otf2 ]] && output=$out/run.otf2
    start=$(date +%s.%N)
    FERRET_BACKEND=$backend FERRET_OUTPUT=$output mpirun -np "$ranks" "$work/rss" "$app" \
      2> "$run/$backend.err" > /dev/null
    end=$(date +%s.%N)
    line="ranks=$ranks backend=$backend wall_s=$(echo "$end - $start" | bc) rss_kib(rank0,max_other)=$(rss_of "$run/$backend.err")"
    if [[ $backend == summary ]]; then
      bytes=$(grep -v '^rss rank=' "$run/summary.err" | wc -c)
      line+=" stderr_bytes=$bytes $(grep -o 'Reduced in MPI_Finalize: .*' "$run/summary.err" | tr ' ' '_')"
    else
      files=$(find "$out" -type f | wc -l)
      total=$(du -sb "$out" | cut -f1)
      line+=" files=$files bytes_total=$total bytes_per_rank=$((total / ranks))"
      [[ $backend == report ]] && line+=" rank0_report_bytes=$(grep -l 'ferret-job">{' "$out"/*.html | xargs wc -c | cut -d' ' -f1)"
    fi
    echo "$line"
  done
  for merge in "$here/../../tools/ferret-merge" ${MERGE_BEFORE:+"$MERGE_BEFORE"}; do
    /usr/bin/time -f "%e %M" python3 "$merge" -o "$work/merged.json" "$run/chrome" > /dev/null 2> "$work/merge.time"
    read -r seconds kib < <(tail -1 "$work/merge.time")
    echo "ranks=$ranks merge=$(basename "$(dirname "$merge")")/$(basename "$merge") input_bytes=$(du -sb "$run/chrome" | cut -f1) output_bytes=$(wc -c < "$work/merged.json") time_s=$seconds rss_kib=$kib"
  done
  rm -rf "$run"
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
