#!/usr/bin/env bash
# benchmarks/level_zero/run.sh <build dir>: the append cost on ferret's test
# driver, three configurations interleaved (repeat the whole script to see the
# spread): bare loader; the loader's tracing layer enabled, no tracer; ferret
# (ferret-run, summary backend, FERRET_LEVEL_ZERO_API=work).
set -euo pipefail
build=${1:?usage: run.sh <build dir>}
export ZE_ENABLE_ALT_DRIVERS=$build/lib/libferret_ze_test_driver.so
program=$build/bin/ferret-level-zero-append
for mode in regular immediate; do
  for round in 1 2 3; do
    echo "round $round: bare:          $(env -u ZE_ENABLE_TRACING_LAYER "$program" "$mode")"
    echo "round $round: tracing layer: $(ZE_ENABLE_TRACING_LAYER=1 "$program" "$mode")"
    echo "round $round: ferret:        $(FERRET_VERBOSE=0 "$build/bin/ferret-run" --backend summary -- "$program" "$mode" 2>/dev/null)"
  done
done
