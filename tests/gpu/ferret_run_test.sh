#!/usr/bin/env bash
# ferret-run without a GPU: the environment it hands the program, exit statuses,
# usage errors and messages. Usage: ferret_run_test.sh <path to ferret-run>
set -uo pipefail
ferret_run=$(readlink -f "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# Runs ferret-run with the given arguments under a clean ferret environment;
# sets status, out and err.
run() {
  out=$(env -u FERRET_BACKEND -u FERRET_OUTPUT -u FERRET_VERBOSE -u CUDA_INJECTION64_PATH \
            "${extra_environment[@]}" "$ferret_run" "$@" 2> "$work/err")
  status=$?
  err=$(< "$work/err")
}
extra_environment=()

expect_status() {
  [[ $status == "$1" ]] || fail "ferret-run $2: exit status $status, expected $1 (stderr: $err)"
}
expect_in() {  # expect_in <text> <needle> <what>
  [[ $1 == *"$2"* ]] || fail "$3: '$2' not in: $1"
}
# The value of variable $1 in `env` output held in $out.
variable() {
  grep -E "^$1=" <<< "$out" | head -n 1 | cut -d= -f2-
}

# Nothing recorded: the program says so at exit, in one line (what was seen).
run -- true
expect_status 0 "-- true"
[[ $err == "ferret: nothing recorded in true: no annotations, no CUDA, no OpenMP, no MPI" ]] ||
  fail "-- true printed on stderr: $err"

run --backend chrome -- sh -c 'exit 3'
expect_status 3 "--backend chrome -- sh -c 'exit 3'"

# A program that is not there: one line of ferret-run's, and 127 as a shell answers.
run -- ./no-such-program
expect_status 127 "-- ./no-such-program"
[[ $err == "ferret-run: no program './no-such-program' (not a file, or not in PATH, or not executable)" ]] ||
  fail "-- ./no-such-program printed on stderr: $err"

run printf '%s|' 'two words' last
expect_status 0 "printf"
[[ $out == "two words|last|" ]] || fail "arguments not passed intact: '$out'"

# The environment the program sees.
run --backend chrome --output "$work/trace.json" -- env
expect_status 0 "-- env"
injected=$(variable CUDA_INJECTION64_PATH)
[[ $injected == /*/libferret_cupti.so && -f $injected ]] ||
  fail "CUDA_INJECTION64_PATH is '$injected', not the absolute path of libferret_cupti.so"
[[ $(variable FERRET_BACKEND) == chrome ]] || fail "--backend chrome gave FERRET_BACKEND=$(variable FERRET_BACKEND)"
[[ $(variable FERRET_OUTPUT) == "$work/trace.json" ]] || fail "--output gave FERRET_OUTPUT=$(variable FERRET_OUTPUT)"
[[ -z $(variable FERRET_VERBOSE) ]] || fail "FERRET_VERBOSE set without --verbose"
[[ $(variable LD_PRELOAD) == /*/libferret_runtime.so* ]] ||
  fail "LD_PRELOAD is '$(variable LD_PRELOAD)', not the runtime"

run -b tau -o "$work/short" -v env
[[ $(variable FERRET_BACKEND) == tau ]] || fail "-b tau gave FERRET_BACKEND=$(variable FERRET_BACKEND)"
[[ $(variable FERRET_OUTPUT) == "$work/short" ]] || fail "-o gave FERRET_OUTPUT=$(variable FERRET_OUTPUT)"
[[ $(variable FERRET_VERBOSE) == 2 ]] || fail "-v gave FERRET_VERBOSE=$(variable FERRET_VERBOSE)"

run --backend=summary --output="$work/out" env
[[ $(variable FERRET_BACKEND) == summary ]] || fail "--backend=summary gave FERRET_BACKEND=$(variable FERRET_BACKEND)"
[[ $(variable FERRET_OUTPUT) == "$work/out" ]] || fail "--output= gave FERRET_OUTPUT=$(variable FERRET_OUTPUT)"

run -- env
[[ $(variable FERRET_BACKEND) == chrome,summary ]] || fail "default FERRET_BACKEND is $(variable FERRET_BACKEND)"
[[ -z $(variable FERRET_OUTPUT) ]] || fail "FERRET_OUTPUT set without --output"

extra_environment=(FERRET_BACKEND=summary)
run -- env
[[ $(variable FERRET_BACKEND) == summary ]] || fail "FERRET_BACKEND from the environment not kept: $(variable FERRET_BACKEND)"
run --backend chrome -- env
[[ $(variable FERRET_BACKEND) == chrome ]] || fail "--backend does not override the environment"

# An injection path set before is replaced, and never silently.
extra_environment=(CUDA_INJECTION64_PATH=/opt/other/libinject.so)
run -- env
expect_status 0 "with CUDA_INJECTION64_PATH set"
expect_in "$err" "replacing CUDA_INJECTION64_PATH=/opt/other/libinject.so" "stderr"
[[ $(variable CUDA_INJECTION64_PATH) == "$injected" ]] || fail "CUDA_INJECTION64_PATH not replaced"
extra_environment=(CUDA_INJECTION64_PATH="$injected")
run -- env
[[ -z $(grep -v '^ferret: nothing recorded in env: ' <<< "$err") ]] ||
  fail "an injection path that already names the collector gave a message: $err"
extra_environment=()

run --verbose -- env
expect_status 0 "--verbose"
[[ $(variable FERRET_VERBOSE) == 2 ]] || fail "--verbose gave FERRET_VERBOSE=$(variable FERRET_VERBOSE)"
expect_in "$err" "ferret-run: CUDA_INJECTION64_PATH=$injected FERRET_BACKEND=chrome,summary" "--verbose stderr"

run --help
expect_status 0 "--help"
expect_in "$out" "usage: ferret-run" "--help stdout"

# Bad arguments: status 2, one line saying what is wrong, then the usage.
for arguments in "--bogus -- true|unknown option '--bogus'" \
                 "--backends chrome true|unknown option '--backends' (did you mean --backend?)" \
                 "--out=x true|unknown option '--out=x' (did you mean --output?)" \
                 "-x true|unknown option '-x'" \
                 "-b|-b needs a value" \
                 "|no program given" \
                 "--backend chrome|no program given" \
                 "--backend|--backend needs a value" \
                 "--output|--output needs a value" \
                 "--backend= true|--backend needs a value" \
                 "--output= true|--output needs a value"; do
  read -r -a words <<< "${arguments%%|*}"
  message=${arguments#*|}
  run "${words[@]}"
  expect_status 2 "${arguments%%|*}"
  [[ $(head -n 1 <<< "$err") == "ferret-run: $message" ]] ||
    fail "ferret-run ${arguments%%|*}: first stderr line is '$(head -n 1 <<< "$err")'"
  expect_in "$err" "usage: ferret-run" "ferret-run ${arguments%%|*} stderr"
done

# Without the collector beside it: a clear message and status 125, nothing run.
mkdir -p "$work/prefix/bin" "$work/prefix/lib"
cp "$ferret_run" "$work/prefix/bin/ferret-run"
ferret_run=$work/prefix/bin/ferret-run
run -- touch "$work/ran"
expect_status 125 "without the collector"
expect_in "$err" "ferret-run: no collector in $work/prefix/lib (libferret_cupti.so for CUDA," "stderr"
[[ ! -e $work/ran ]] || fail "the program ran without the collector"

# Installed layouts: lib64 and lib/<multiarch> next to bin.
for library_folder in lib64 lib/x86_64-linux-gnu; do
  rm -rf "$work/prefix/lib" "$work/prefix/lib64"
  mkdir -p "$work/prefix/$library_folder"
  touch "$work/prefix/$library_folder/libferret_cupti.so"
  run -- env
  expect_status 0 "with the collector in $library_folder"
  [[ $(variable CUDA_INJECTION64_PATH) == "$work/prefix/$library_folder/libferret_cupti.so" ]] ||
    fail "collector in $library_folder not found: $(variable CUDA_INJECTION64_PATH)"
done

if ((failures)); then
  echo "ferret_run_test: $failures failures" >&2
  exit 1
fi
echo "ferret_run_test: all checks passed"
