#!/usr/bin/env bash
# ferret-run where nothing can be recorded says so in one line at the
# program's exit (what was seen, what was not), with the program's exit
# status; where something was recorded, in the program or in a process it
# started, it says nothing more. A program with the API alone, run without
# ferret-run, says that it has no runtime. Usage:
#   ferret_run_report_test.sh FERRET-RUN GOMP-PROGRAM ANNOTATED-APP HEADER-ONLY-APP TRACE-CHECK WORK
#                             [STATIC-PROGRAM]
set -euo pipefail
ferret_run=$1 gomp_program=$2 annotated_app=$3 header_only_app=$4 trace_check=$5 work=$6
static_program=${7-}
rm -rf "$work"
mkdir -p "$work"
cd "$work"
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# run EXPECTED-STATUS COMMAND...: runs it under ferret-run, stderr in $work/err.
run() {
  local expected=$1 status=0
  shift
  "$ferret_run" --backend chrome -- "$@" > out 2> err || status=$?
  [[ $status == "$expected" ]] || fail "$*: exit status $status, expected $expected"
}
# one_line PATTERN: stderr is exactly one line, matching PATTERN (grep -E).
one_line() {
  if [[ $(wc -l < err) != 1 ]] || ! grep -Eq "$1" err; then
    fail "stderr is not one line matching '$1':"
    cat err >&2
  fi
}
nothing='^ferret: nothing recorded in'
seen_nothing='no annotations, no CUDA, no OpenMP, no MPI$'

run 0 true
one_line "$nothing true: $seen_nothing"
run 1 false
one_line "$nothing false: $seen_nothing"
run 7 bash -c 'exit 7'
one_line "$nothing bash: $seen_nothing"

# GNU libgomp: seen, and said what it lacks.
run 0 "$gomp_program"
one_line "$nothing ferret-gomp-plain: no annotations, no CUDA, an OpenMP runtime without OMPT \(GNU libgomp; "
grep -q '^499500$' out || fail "the libgomp program's output: $(cat out)"
# ... also when a process the program started ran it.
# (bash: it ends with exit(), which runs the report; dash, Debian's sh, ends
# with _exit(), which runs nothing.)
run 0 bash -c "$gomp_program > /dev/null; true"
one_line "$nothing bash or the processes it started: no annotations, no CUDA, an OpenMP runtime without OMPT"

# Recorded in a process the program started: its own line, no other.
run 0 bash -c "FERRET_OUTPUT=child.json $annotated_app regions > /dev/null; true"
one_line '^ferret: chrome trace: child.json \('
"$trace_check" child.json > /dev/null || fail "child.json does not pass ferret-trace-check"

# ferret-run under ferret-run: the outer program reports for all.
run 0 bash -c "$ferret_run --backend chrome -- $gomp_program > /dev/null; true"
one_line "$nothing bash or the processes it started: no annotations, no CUDA, an OpenMP runtime without OMPT"

# Annotated code that does not link the runtime finds the preloaded one.
FERRET_OUTPUT=header-only.json run 0 "$header_only_app"
one_line '^ferret: chrome trace: header-only.json \('
grep -q '"header only step"' header-only.json || fail "header-only.json lacks the annotated region"

# Run without ferret-run, with a backend asked for: it says, once, that it has
# no runtime (not silence); with none asked for, it says nothing.
status=0
FERRET_BACKEND=chrome "$header_only_app" > out 2> err || status=$?
[[ $status == 0 ]] || fail "$header_only_app alone: exit status $status"
one_line '^ferret: FERRET_BACKEND is set, but no ferret runtime is loaded in this program, so nothing is recorded: link ferret::runtime or a backend target \(the API alone, ferret::ferret, refers to the runtime only weakly, and linkers drop a plain -lferret_runtime of a build tree\), or run the program under ferret-run$'
for unset_or_off in "" "none" "Off; no"; do
  FERRET_BACKEND=$unset_or_off "$header_only_app" > out 2> err || fail "$header_only_app alone failed"
  [[ ! -s err ]] || fail "FERRET_BACKEND='$unset_or_off': $header_only_app alone printed: $(cat err)"
done

# A statically linked program: nothing can be loaded into it; said at start.
if [[ -n $static_program ]]; then
  run 3 "$static_program"
  one_line '^ferret-run: .*ferret-static-app is statically linked: ferret cannot be loaded into it'
else
  echo "skipped: the statically linked program (not built under sanitizers)"
fi

if ((failures > 0)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "ferret-run report: all cases passed"
