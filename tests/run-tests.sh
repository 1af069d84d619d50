#!/usr/bin/env bash
# Builds ferret and runs the whole test suite three times: with warnings as
# errors (plus the benchmarks, built and smoke-run); under AddressSanitizer +
# UndefinedBehaviorSanitizer; and the threaded tests under ThreadSanitizer.
# .ci/run calls this script.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)
bash "$root/tools/install-deps" test

# The three builds and the tests' traces take about 2 GiB; a disk with less
# free fails tests with "No space left on device", far from the cause.
free_mib=$(df -Pm "$root" | awk 'NR == 2 { print $4 }')
echo "run-tests: ${free_mib} MiB free on the disk of $root"
if (( free_mib < 2560 )); then
  echo "run-tests: warning: the suite needs about 2.5 GiB of free disk; tests that write traces may fail" >&2
fi

run() {  # run <name> <ctest args...> -- <cmake args...>
  local name=$1; shift
  local ctest_args=()
  while [[ $1 != -- ]]; do ctest_args+=("$1"); shift; done
  shift
  local build="$root/build/$name"
  echo "== $name"
  # OTF2 is installed above: its tests must run, not vanish with the backend.
  cmake -S "$root" -B "$build" -G Ninja -DFERRET_WERROR=ON -DFERRET_BUILD_TESTS=ON -DFERRET_OTF2=ON "$@" > /dev/null
  cmake --build "$build" -j "$jobs"
  ctest --test-dir "$build" --output-on-failure -j "$jobs" "${ctest_args[@]}"
}

# Line tables (-g1) are all a sanitizer's report needs; full debug information
# made the three builds 4.5 GiB instead of 1.9.
optimized=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
           "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
run release -- "${optimized[@]}" -DFERRET_BUILD_BENCHMARKS=ON
run asan-ubsan -- "${optimized[@]}" -DFERRET_SANITIZE=address,undefined
run tsan -L threaded -- "${optimized[@]}" -DFERRET_SANITIZE=thread
