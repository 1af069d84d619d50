#!/usr/bin/env bash
# full_disk_test.sh PROGRAM [ARGS...]: PROGRAM traced with FERRET_BACKEND=otf2,tau
# onto a full filesystem (a small tmpfs, filled up first), at FERRET_VERBOSE=1
# and 0. It must run to its end, and each output that fails must be one ferret
# line on stderr, with none of the OTF2 library's own "[OTF2] ..." lines.
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
[[ $failures == 0 ]] && echo "ok: one line per failed output, no OTF2 lines, the program ran to its end"
exit $((failures != 0))
INSIDE
