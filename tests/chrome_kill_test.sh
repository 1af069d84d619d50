#!/usr/bin/env bash
# chrome_kill_test.sh PROGRAM TRACE_CHECK [RUNS]: PROGRAM (a busy traced
# program, tests/support/busy_regions_app.cpp) is killed with SIGKILL at a
# random moment, RUNS times (default 12); every time, once nothing holds the
# trace open any more (the exit guard has closed it), the file must pass
# ferret-trace-check (strict JSON and Perfetto's rules) and keep its metadata.
set -u
program=$1
trace_check=$2
runs=${3:-12}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
for run in $(seq 1 "$runs"); do
  trace="$work/run-$run.json"
  # A small buffer: drains, and so writes, follow one another closely.
  FERRET_BACKEND=chrome FERRET_OUTPUT="$trace" FERRET_BUFFER_SIZE=256K FERRET_VERBOSE=0 \
    "$program" 30 &
  pid=$!
  # Inside the guarded run: once the guard (the program's only child process)
  # is up, or the program is gone. A fixed delay from the start instead could
  # kill a slow start (under load, under ASan) before the trace was guarded.
  until [[ -n $(cat /proc/"$pid"/task/*/children 2>/dev/null) ]] || ! kill -0 "$pid" 2>/dev/null; do
    sleep 0.01
  done
  # Then within 140 ms, at no particular point of a write (writes of 256 KiB
  # follow one another every few milliseconds; without the exit guard about
  # one kill in ten leaves the file cut inside an event).
  sleep "$(printf '0.%03d' $((RANDOM % 140)))"
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null
  # The guard writes the closing after the process is gone: wait until no
  # process has the file open. (No deadline of our own: a guard that never
  # finishes is a hang, which the test's TIMEOUT reports.)
  while fuser -s "$trace" 2>/dev/null; do
    sleep 0.05
  done
  size=$(stat -c %s "$trace" 2>/dev/null || echo 0)
  if report=$("$trace_check" --quiet "$trace" 2>&1) &&
     tail -c 100000 "$trace" | grep -q '"metadata":{"ferret-version"'; then
    echo "run $run: ok, $size bytes: $(echo "$report" | tail -n 1)"
  else
    echo "run $run: FAILED, $size bytes:"
    echo "$report" | head -n 5
    tail -c 300 "$trace"; echo
    failures=$((failures + 1))
  fi
  rm -f "$trace"  # up to 35 MB each: twelve of them would hold 400 MB of disk
done
[[ $failures == 0 ]] && echo "ok: $runs runs killed with SIGKILL, every trace complete"
exit $((failures != 0))
