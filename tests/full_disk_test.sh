#!/usr/bin/env bash
# full_disk_test.sh PROGRAM [ARGS...]: PROGRAM traced with FERRET_BACKEND=otf2,tau
# onto a full filesystem (a small tmpfs, filled up first), at FERRET_VERBOSE=1
# and 0. It must run to its end, and each output that fails must be one ferret
# line on stderr, with none of the OTF2 library's own "[OTF2] ..." lines.
# Then FERRET_BACKEND=chrome: on the full disk one line and no file left
# behind; on a disk with 64 KiB free (less than PROGRAM's trace), the run ends
# with one line saying how many events were not written, and the file is a
# closed JSON document whose metadata counts them.
#
# Mounting a tmpfs needs root and a private mount namespace (unshare -m, which
# also unmounts it whatever happens): without them the test skips, saying why
# (exit 77).
set -u
if [[ $(id -u) != 0 ]] || ! unshare -m true 2>/dev/null; then
  echo "SKIPPED: mounting a tmpfs needs root and a private mount namespace (unshare -m)"
  exit 77
fi
exec unshare -m bash -s -- "$@" <<'INSIDE'
set -u
disk=$(mktemp -d)
work=$(mktemp -d)
trap 'umount "$disk" 2>/dev/null; rm -rf "$disk" "$work"' EXIT
if ! mount -t tmpfs -o size=64k tmpfs "$disk"; then
  echo "SKIPPED: cannot mount a tmpfs"
  exit 77
fi
dd if=/dev/zero of="$disk/fill" bs=4k 2>/dev/null  # until it is full
failures=0
for verbose in 1 0; do
  rm -rf "$disk/run"
  FERRET_BACKEND=otf2,tau FERRET_OUTPUT="$disk/run" FERRET_VERBOSE=$verbose "$@" \
    > "$work/out" 2> "$work/err"
  status=$?
  echo "== FERRET_VERBOSE=$verbose: exit $status, stderr:"
  cat "$work/err"
  if [[ $status != 0 ]]; then
    echo "FAILED: the program exited with $status"
    failures=$((failures + 1))
  fi
  if grep -q '\[OTF2\]' "$work/err"; then
    echo "FAILED: the OTF2 library's own lines reached stderr"
    failures=$((failures + 1))
  fi
  for output in "otf2 archive: .*(incomplete: |cannot write)|cannot write the OTF2 archive" \
                "tau profile: .*: not written: .*No space left on device|cannot write the TAU profile"; do
    count=$(grep -cE "^ferret: ($output)" "$work/err")
    if [[ $count != 1 ]]; then
      echo "FAILED: $count lines match '$output', expected one"
      failures=$((failures + 1))
    fi
  done
  others=$(grep -vcE '^ferret: (otf2 archive: |tau profile: |cannot write the)' "$work/err")
  if [[ $others != 0 ]]; then
    echo "FAILED: $others other lines on stderr"
    failures=$((failures + 1))
  fi
done
run_chrome() {  # run_chrome VERBOSE PROGRAM [ARGS...]: exit status and stderr checked
  local verbose=$1
  shift
  rm -rf "$disk"/run*
  FERRET_BACKEND=chrome FERRET_OUTPUT="$disk/run.json" FERRET_VERBOSE=$verbose "$@" \
    > "$work/out" 2> "$work/err"
  local status=$?
  echo "== chrome, FERRET_VERBOSE=$verbose: exit $status, stderr:"
  cat "$work/err"
  if [[ $status != 0 ]]; then
    echo "FAILED: the program exited with $status"
    failures=$((failures + 1))
  fi
}
expect_one_line() {  # expect_one_line REGEX: the only line on stderr matches it
  local count others
  count=$(grep -cE "$1" "$work/err")
  others=$(grep -vcE "$1" "$work/err")
  if [[ $count != 1 || $others != 0 ]]; then
    echo "FAILED: $count lines match '$1' (expected one), $others other lines"
    failures=$((failures + 1))
  fi
}
for verbose in 1 0; do
  run_chrome $verbose "$@"
  expect_one_line "^ferret: cannot write the chrome trace to '$disk/run.json': No space left on device; running untraced$"
  if [[ -e $disk/run.json ]]; then
    echo "FAILED: an untraced run left $disk/run.json behind"
    failures=$((failures + 1))
  fi
done
rm -f "$disk/fill"  # 64 KiB free: the trace outgrows them during the run
for verbose in 1 0; do
  run_chrome $verbose "$@"
  expect_one_line '^ferret: chrome trace: .*, incomplete: write: No space left on device; [1-9][0-9]* events not written$'
  if ! python3 - "$disk/run.json" <<'CHECK'
import json, sys
with open(sys.argv[1]) as f:
    metadata = json.load(f)["metadata"]
lost = metadata.get("events-not-written", 0)
print("parsed; events-not-written: %d, write-error: %s" % (lost, metadata.get("write-error")))
sys.exit(0 if lost > 0 else 1)
CHECK
  then
    echo "FAILED: the trace is not a closed document that counts its loss"
    failures=$((failures + 1))
  fi
done
[[ $failures == 0 ]] && echo "ok: one line per failed output, no OTF2 lines, the program ran to its end"
exit $((failures != 0))
INSIDE
