#!/usr/bin/env bash
# report_example.sh <build> [<out>]: on the GPU machine, runs the CUDA example
# (examples/cuda, cuda-streams) with FERRET_BACKEND=report,summary and leaves
# <out>/streams.html and <out>/streams-summary.txt (default <out>: $OUT).
# Back on a machine with Chromium, the page is checked against the summary
# and photographed, one PNG per view:
#   python3 tests/report/check_report.py --chromium chromium --gpu \
#     --screenshots <build>/bin/ferret-report-screenshots --work /tmp/streams-report \
#     --page <out>/streams.html --summary-file <out>/streams-summary.txt
#   <build>/bin/ferret-report-screenshots <out>/streams.html docs/images/report 1400x1000
set -euo pipefail
build=$(realpath "${1:?usage: report_example.sh <build> [<out>]}")
out=${2:-${OUT:?set OUT or name an output directory}}
mkdir -p "$out"
out=$(realpath "$out")
example=$build/bin/cuda-streams
[[ -x $example ]] || { echo "report_example: no $example (build the target cuda-streams)" >&2; exit 1; }
cd "$out"
status=0
FERRET_BACKEND=report,summary FERRET_OUTPUT="$out/streams" "$example" 2> streams-stderr.txt || status=$?
# The summary: from its first line to the runtime's exit lines.
sed -n '/^ferret summary: /,/^ferret: /p' streams-stderr.txt | sed '$d' > streams-summary.txt
cat streams-stderr.txt
[[ -s streams.html && -s streams-summary.txt ]] || { echo "report_example: no report or no summary" >&2; exit 1; }
echo "report_example: $out/streams.html ($(stat -c %s streams.html) bytes), exit status $status"
