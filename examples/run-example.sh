#!/usr/bin/env bash
# Quick start: builds ferret and the heat example into build/ (the build the
# README's other commands use, without tests), runs it with the chrome backend,
# and checks the trace. Open the printed file in https://ui.perfetto.dev
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
bash "$root/tools/install-deps" example
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFERRET_BUILD_TESTS=OFF > /dev/null
cmake --build "$build" --target heat ferret-trace-check ferret_chrome
trace="$root/heat.json"
FERRET_BACKEND=chrome FERRET_OUTPUT="$trace" "$build/bin/heat" 512 4
"$build/bin/ferret-trace-check" --summary "$trace"
echo "open $trace in https://ui.perfetto.dev"
