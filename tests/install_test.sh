#!/usr/bin/env bash
# Installs the build into a scratch prefix, builds examples/basic against it
# with find_package(ferret), runs it traced and checks the trace with the
# installed checker (and profiled, with the installed TAU profile checker);
# then embeds ferret in tests/package with add_subdirectory; then links a
# program without CMake, with a plain -lferret_runtime and with pkg-config,
# and traces each.
# Usage: install_test.sh <build-dir> <source-dir> <work-dir> <generator> <with-otf2: ON|OFF>
set -euo pipefail
build=$1 source=$2 work=$3 generator=$4 with_otf2=$5
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
cmake -S "$source/examples/basic" -B "$work/example" -G "$generator" \
      -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/example" > "$work/build.log"
(cd "$work" && FERRET_BACKEND=chrome FERRET_OUTPUT=heat.json "$work/example/heat" 64 2)
"$work/prefix/bin/ferret-trace-check" "$work/heat.json"
# Built with OTF2: the installed backend writes an archive the installed checker reads.
if [[ $with_otf2 == ON ]]; then
  (cd "$work" && FERRET_BACKEND=otf2 FERRET_OUTPUT=heat.otf2 "$work/example/heat" 64 2)
  "$work/prefix/bin/ferret-otf2-check" "$work/heat/traces.otf2" --threads 3 --region step
else
  echo "install_test: SKIPPED: the OTF2 backend and checker (ferret built without OTF2)"
fi
# Embedding with add_subdirectory works too.
cmake -S "$source/tests/package" -B "$work/embedded" -G "$generator" \
      -DFERRET_SOURCE_DIR="$source" > "$work/embedded-configure.log"
cmake --build "$work/embedded" > "$work/embedded-build.log"
(cd "$work" && FERRET_BACKEND=chrome FERRET_OUTPUT=consumer.json "$work/embedded/consumer")
"$work/prefix/bin/ferret-trace-check" "$work/consumer.json"
grep -q '"consumer ran"' "$work/consumer.json"
# The installed runtime finds the chrome backend by name in its own directory.
test -f "$work/prefix/lib/libferret_chrome.so" || test -f "$work/prefix/lib64/libferret_chrome.so"
# ... and the TAU backend, whose profile the installed checker accepts.
(cd "$work" && FERRET_BACKEND=tau FERRET_OUTPUT=heat-tau "$work/example/heat" 64 2)
"$work/prefix/bin/ferret-tau-check" "$work/heat-tau"
# The installed Python module records through the installed runtime.
runtime_library=$(find "$work/prefix" -name libferret_runtime.so | head -n 1)
(cd "$work" && PYTHONPATH="$(dirname "$runtime_library")/python" FERRET_BACKEND=chrome \
   FERRET_OUTPUT=python.json python3 -c 'import ferret
with ferret.region("installed module"):
    pass')
"$work/prefix/bin/ferret-trace-check" "$work/python.json"
grep -q '"installed module"' "$work/python.json"
# Without CMake. A plain -l: the installed libferret_runtime.so is a linker
# script that keeps the runtime where the compiler links --as-needed (Debian's
# g++ does), though annotated code refers to it only weakly.
libdir=$(dirname "$runtime_library")
consumer=$source/tests/package/consumer.cpp
g++ -std=c++17 -I"$work/prefix/include" "$consumer" -L"$libdir" -lferret_runtime \
    -Wl,-rpath,"$libdir" -o "$work/plain-link"
(cd "$work" && FERRET_BACKEND=chrome FERRET_OUTPUT=plain-link.json "$work/plain-link")
"$work/prefix/bin/ferret-trace-check" "$work/plain-link.json"
grep -q '"consumer ran"' "$work/plain-link.json"
# pkg-config: ferret.pc, and one for each collector a program can link.
export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046  # pkg-config's words are meant to split
g++ -std=c++17 $(pkg-config --cflags ferret) "$consumer" $(pkg-config --libs ferret) \
    -Wl,-rpath,"$(pkg-config --variable=libdir ferret)" -o "$work/pkg-config-link"
(cd "$work" && FERRET_BACKEND=chrome FERRET_OUTPUT=pkg-config-link.json "$work/pkg-config-link")
"$work/prefix/bin/ferret-trace-check" "$work/pkg-config-link.json"
grep -q '"consumer ran"' "$work/pkg-config-link.json"
for pc in "$libdir"/pkgconfig/*.pc; do
  pkg-config --exists --print-errors "$(basename "$pc" .pc)"
done
test -f "$libdir/pkgconfig/ferret.pc"
# ferret-merge is installed, and runs.
"$work/prefix/bin/ferret-merge" --help > /dev/null
# With FERRET_PYTHON_SITE_PACKAGES, Python finds the module without PYTHONPATH:
# a ferret.pth in its site directory names <prefix>/lib/python. Configured
# alone (nothing to build: the module and the .pth are the python component).
site="$work/site-packages"
cmake -S "$source" -B "$work/python-site" -G "$generator" -DFERRET_PYTHON_SITE_PACKAGES="$site" \
      -DFERRET_BUILD_TESTS=OFF -DFERRET_BUILD_EXAMPLES=OFF -DFERRET_CUDA=OFF -DFERRET_OPENMP=OFF \
      -DFERRET_LEVEL_ZERO=OFF > "$work/python-site-configure.log"
cmake --install "$work/python-site" --component python --prefix "$work/prefix" > "$work/python-site-install.log"
grep -qx "$work/prefix/lib.*/python" "$site/ferret.pth"
(cd "$work" && env -u PYTHONPATH FERRET_BACKEND=chrome FERRET_OUTPUT=site.json python3 -c '
import site, sys
site.addsitedir(sys.argv[1])  # as Python does with its own site-packages at start
import ferret
with ferret.region("found through ferret.pth"):
    pass' "$site")
"$work/prefix/bin/ferret-trace-check" "$work/site.json"
grep -q '"found through ferret.pth"' "$work/site.json"
