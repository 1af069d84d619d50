#!/usr/bin/env bash
# Builds ferret and runs the whole test suite three times: with warnings as
# errors (plus the benchmarks, built and smoke-run); under AddressSanitizer +
# UndefinedBehaviorSanitizer; and the threaded tests under ThreadSanitizer.
# .ci/run calls this script.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)
bash "$root/tools/install-deps" test

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

run release -- -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFERRET_BUILD_BENCHMARKS=ON
run asan-ubsan -- -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFERRET_SANITIZE=address,undefined
run tsan -L threaded -- -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFERRET_SANITIZE=thread
