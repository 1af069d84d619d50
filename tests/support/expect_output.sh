#!/usr/bin/env bash
# expect_output.sh PATTERN COMMAND [ARGUMENTS...]: runs COMMAND and passes only
# when it exits 0 and its output (stdout and stderr as one text, as CTest
# matches it: '.' matches a newline too) matches the extended regular
# expression PATTERN. CTest's PASS_REGULAR_EXPRESSION alone ignores the exit
# status: a crash or a sanitizer report after the expected line would pass.
# A non-zero status is passed on (77 stays a skip where the test declares
# SKIP_RETURN_CODE 77).
set -u
pattern=$1
shift
output=$(mktemp)
trap 'rm -f "$output"' EXIT
"$@" 2>&1 | tee "$output"
status=${PIPESTATUS[0]}
if ((status != 0)); then
  echo "expect_output: $1 exited with status $status" >&2
  exit "$status"
fi
if ! grep -zEq -- "$pattern" "$output"; then
  echo "expect_output: the output does not match: $pattern" >&2
  exit 1
fi
