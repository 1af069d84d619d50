#!/usr/bin/env bash
# Prints the rows of backends/collectors/python/src/cpython_layouts.cpp, one per CPython whose headers are
# given (the folder holding Python.h and internal/):
#   bash tools/python-layouts/python-layouts.sh /usr/include/python3.11 ~/.pyenv/versions/*/include/python3.*
# Check a new row by running tests/python with that release before adding it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for include in "$@"; do
  cc -w -I"$include" -I"$include/internal" "$here/python-layout-probe.c" -o "$work/probe"
  "$work/probe" 2> /dev/null
done
