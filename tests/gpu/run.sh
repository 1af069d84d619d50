#!/usr/bin/env bash
# The GPU pass in one command, for a machine with a GPU:
#   bash tests/gpu/run.sh [build-dir [benchmark options]]
# Uses build-dir (default build/gpu) when it holds the GPU test programs (a
# build carried from another machine: tests/gpu/carry.sh); otherwise configures and builds
# (Release) into build/gpu. Then runs gpu_trace_test and gpu_cuda_api_test
# directly (CTest files hold the absolute paths of the machine that configured
# them), the OpenMP programs on the GPU (tests/gpu/openmp_programs.sh, with the
# LLVM offload runtime of tests/gpu/pack-llvm-offload.sh carried beside the
# build), then benchmarks/cuda/run.sh when present (with the benchmark options given, by
# default --quick: the whole pass must fit in one 10-minute command on the GPU
# machine), the peer copy case on two GPUs (tests/gpu/peer_copies.sh), and prints a
# summary: date, GPU, test results, benchmark table.
# With $OUT set, the summary, the logs and the traces (one archive) are saved
# there, the benchmark's own files in $OUT/benchmark. FERRET_GPU_TEST_CASES=<filter>
# runs only the test cases it names (doctest's -tc), without the benchmarks
# (and the OpenMP programs only when the filter names "openmp").
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/gpu}
shift $(($# > 0 ? 1 : 0))
benchmark_options=("$@")
((${#benchmark_options[@]})) || benchmark_options=(--quick)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

note() { echo "run.sh: $*"; }

if [[ ! -x $build/bin/gpu_trace_test ]]; then
  [[ $build == "$root/build/gpu" ]] || note "no GPU test programs in $build"
  build=$root/build/gpu
  note "configuring and building (Release) into $build"
  benchmarks=OFF
  [[ -f $root/benchmarks/cuda/CMakeLists.txt ]] && benchmarks=ON
  if ! { cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFERRET_CUDA=ON \
           -DFERRET_BUILD_TESTS=ON -DFERRET_BUILD_BENCHMARKS=$benchmarks &&
         cmake --build "$build" --target gpu_trace_test gpu_cuda_api_test cuda-streams ferret_report ferret_nccl; } > "$work/build.log" 2>&1; then
    tail -n 30 "$work/build.log"
    note "the build failed (log above)"
    [[ -n ${OUT:-} ]] && cp "$work/build.log" "$OUT/build.log"
    exit 1
  fi
  [[ $benchmarks == ON ]] && { cmake --build "$build" --target ferret-cuda-overhead >> "$work/build.log" 2>&1 ||
                               note "the CUDA benchmark did not build (see build.log)"; }
fi
build=$(cd "$build" && pwd)

# The build's own libraries, and CUPTI from the toolkit: a folder holding
# links to libcupti alone, so that the toolkit's other libraries (cuBLAS,
# cudart) do not displace those a program (PyTorch) brings.
cupti_links=$work/cupti
mkdir -p "$cupti_links"
for folder in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  if compgen -G "$folder/libcupti.so*" > /dev/null; then
    ln -s "$folder"/libcupti.so* "$cupti_links/"
    break
  fi
done
compgen -G "$cupti_links/libcupti.so*" > /dev/null || note "libcupti not found in the usual places"
# Libraries carried from the build machine (tests/gpu/carry.sh), only those this
# machine lacks.
missing_links=$work/missing
mkdir -p "$missing_links"
for library in "$build"/lib/carried/*.so*; do
  [[ -e $library ]] || continue
  ldconfig -p | grep -q "^[[:space:]]*$(basename "$library") " || ln -s "$library" "$missing_links/"
done
export LD_LIBRARY_PATH=$build/lib:$cupti_links:$missing_links${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# The LLVM offload runtime for the OpenMP cases (tests/gpu/pack-llvm-offload.sh
# put it beside the build, with the libomp.so that libomptarget dlopens to
# connect to the tool interface) in a folder of its own, named to
# gpu_trace_test and openmp_programs.sh, which put it on the OpenMP programs'
# LD_LIBRARY_PATH alone: its LLVM, ICU, zlib, ... must not displace the
# libraries of the CUDA and PyTorch programs.
llvm_offload=
if [[ -f $build/llvm-offload.tar.xz ]]; then
  llvm_offload=$work/llvm-offload
  mkdir -p "$llvm_offload"
  if tar -C "$llvm_offload" -xJf "$build/llvm-offload.tar.xz"; then
    # Its CUDA plugin dlopens "libcuda.so", the development name, which a
    # driver-only installation lacks: point it at the driver's libcuda.so.1.
    if ! ldconfig -p | grep -q "^[[:space:]]*libcuda.so "; then
      cuda_driver=$(ldconfig -p | awk '$1 == "libcuda.so.1" {print $NF; exit}')
      [[ -n $cuda_driver ]] && ln -sf "$cuda_driver" "$llvm_offload/libcuda.so"
    fi
    export FERRET_GPU_TEST_LLVM_LIBS=$llvm_offload
    note "LLVM offload runtime for the OpenMP case: $build/llvm-offload.tar.xz unpacked"
  else
    note "cannot unpack $build/llvm-offload.tar.xz: the OpenMP case uses the system's LLVM, if any"
    llvm_offload=
  fi
else
  note "no $build/llvm-offload.tar.xz (tests/gpu/pack-llvm-offload.sh): the OpenMP case uses the system's LLVM, if any"
fi

mkdir -p "$work/traces"
# FERRET_GPU_TEST_CASES=<doctest -tc filter> reruns some cases, without the benchmarks.
test_filter=()
[[ -n ${FERRET_GPU_TEST_CASES:-} ]] && test_filter=("-tc=$FERRET_GPU_TEST_CASES")
FERRET_GPU_TEST_OUTPUT=$work/traces "$build/bin/gpu_trace_test" "${test_filter[@]}" 2>&1 |
  tee "$work/gpu_trace_test.log"
test_status=${PIPESTATUS[0]}

# The CUDA collector's API side: event polling, FERRET_CUDA_API, PyTorch
# against torch.profiler (tests/gpu/cuda_api_test.cpp).
cuda_api_status=none
if [[ -x $build/bin/gpu_cuda_api_test ]]; then
  mkdir -p "$work/traces/cuda-api"
  FERRET_GPU_TEST_OUTPUT=$work/traces/cuda-api "$build/bin/gpu_cuda_api_test" "${test_filter[@]}" 2>&1 |
    tee "$work/gpu_cuda_api_test.log"
  cuda_api_status=${PIPESTATUS[0]}
else
  note "no $build/bin/gpu_cuda_api_test: the CUDA API cases are left out"
fi

# OpenMP programs on the GPU: the example's target part and BabelStream
# (unmodified, with its overhead): tests/gpu/openmp_programs.sh. Also with a
# test filter that names the OpenMP cases.
openmp_status=none
if [[ -n $llvm_offload && ( -z ${FERRET_GPU_TEST_CASES:-} || ${FERRET_GPU_TEST_CASES:-} == *openmp* ) ]]; then
  bash "$root/tests/gpu/openmp_programs.sh" "$build" "$work/traces/openmp" 2>&1 | tee "$work/openmp_programs.log"
  openmp_status=${PIPESTATUS[0]}
fi

benchmark_status=none
if [[ -f $root/benchmarks/cuda/run.sh && -z ${FERRET_GPU_TEST_CASES:-} ]]; then
  OUT=${OUT:+$OUT/benchmark} bash "$root/benchmarks/cuda/run.sh" "$build" "${benchmark_options[@]}" 2>&1 |
    tee "$work/benchmark.log"
  benchmark_status=${PIPESTATUS[0]}
fi

# The CUDA example's HTML report (FERRET_BACKEND=report), for the README's screenshots.
if [[ -z ${FERRET_GPU_TEST_CASES:-} ]]; then
  if bash "$root/tests/gpu/report_example.sh" "$build" "$work/report" > "$work/report.log" 2>&1; then
    note "$(tail -n 1 "$work/report.log")"
  else
    note "the CUDA example's report failed (report.log)"
  fi
fi

# NVTX ranges and Python call paths as calling context (PyTorch), and what the
# Python context costs: tests/gpu/torch_context.sh, benchmarks/python/run.sh.
context_status=none
if [[ -z ${FERRET_GPU_TEST_CASES:-} ]]; then
  bash "$root/tests/gpu/torch_context.sh" "$build" "$work/traces/torch-context" 2>&1 |
    tee "$work/torch_context.log"
  context_status=${PIPESTATUS[0]}
  bash "$root/benchmarks/python/run.sh" "$build" 2>&1 | tee "$work/python_benchmark.log"
fi

# Instruction samples against Nsight Compute (tests/gpu/stall_check.sh); also
# with a test filter that names it.
stall_status=none
if [[ -z ${FERRET_GPU_TEST_CASES:-} || ${FERRET_GPU_TEST_CASES:-} == *stall* ]]; then
  bash "$root/tests/gpu/stall_check.sh" "$build" "$work/traces/stalls" 2>&1 | tee "$work/stall_check.log"
  stall_status=${PIPESTATUS[0]}
fi

# Device-initiated traffic through the Compute Sanitizer (tests/gpu/peer_access_check.sh);
# also with a test filter that names it.
peer_access_status=none
if [[ -z ${FERRET_GPU_TEST_CASES:-} || ${FERRET_GPU_TEST_CASES:-} == *peer_access* ]]; then
  bash "$root/tests/gpu/peer_access_check.sh" "$build" "$work/traces/peer-accesses" 2>&1 |
    tee "$work/peer_access_check.log"
  peer_access_status=${PIPESTATUS[0]}
fi

# NVSHMEM's puts and gets counted as device-initiated traffic (tests/gpu/nvshmem_check.sh):
# skipped, 77, with fewer than two GPUs or without NVSHMEM; also with a test filter that names it.
nvshmem_status=none
if [[ -z ${FERRET_GPU_TEST_CASES:-} || ${FERRET_GPU_TEST_CASES:-} == *nvshmem* ]]; then
  bash "$root/tests/gpu/nvshmem_check.sh" "$build" "$work/traces/nvshmem" 2>&1 | tee "$work/nvshmem_check.log"
  nvshmem_status=${PIPESTATUS[0]}
fi

# Sampled counters through CUPTI's PM sampling (tests/gpu/metrics_sampling_check.sh);
# also with a test filter that names it.
metrics_status=none
if [[ -z ${FERRET_GPU_TEST_CASES:-} || ${FERRET_GPU_TEST_CASES:-} == *metrics_sampling* ]]; then
  bash "$root/tests/gpu/metrics_sampling_check.sh" "$build" "$work/traces/metrics-sampling" 2>&1 |
    tee "$work/metrics_sampling_check.log"
  metrics_status=${PIPESTATUS[0]}
fi

# Peer copies and the device×device matrix on two GPUs (tests/gpu/peer_copies.sh);
# skipped with fewer than two GPUs.
peer_status=none
if [[ -z ${FERRET_GPU_TEST_CASES:-} ]]; then
  if [[ -x $build/bin/gpu-test-peer-copies ]]; then
    bash "$root/tests/gpu/peer_copies.sh" "$build" "$work/traces/peer-copies" 2>&1 |
      tee "$work/peer_copies.log"
    peer_status=${PIPESTATUS[0]}
  else
    note "no $build/bin/gpu-test-peer-copies: the peer copy case is left out"
  fi
fi

# NCCL's profiler plugin: one rank on one GPU, then two ranks (skipped, 77,
# with fewer than two GPUs): tests/gpu/nccl_one_gpu.sh, nccl_two_gpus.sh.
nccl_one_status=none nccl_two_status=none
if [[ -z ${FERRET_GPU_TEST_CASES:-} && -x $build/bin/gpu-test-nccl-collectives ]]; then
  bash "$root/tests/gpu/nccl_one_gpu.sh" "$build" "$work/traces/nccl" 2>&1 | tee "$work/nccl.log"
  nccl_one_status=${PIPESTATUS[0]}
  bash "$root/tests/gpu/nccl_two_gpus.sh" "$build" "$work/traces/nccl" 2>&1 | tee -a "$work/nccl.log"
  nccl_two_status=${PIPESTATUS[0]}
fi

case $test_status in
  0) tests=passed ;;
  77) tests=skipped ;;
  *) tests="FAILED (status $test_status)" ;;
esac
{
  echo "# GPU pass, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || echo unknown)"
  echo "build: $build"
  echo "gpu_trace_test: $tests"
  grep -E '^(skipped:|clock alignment:|overlap:|openmp offload:|\[doctest\] (test cases|assertions):)' "$work/gpu_trace_test.log"
  if [[ $cuda_api_status != none ]]; then
    case $cuda_api_status in
      0) echo "gpu_cuda_api_test: passed" ;;
      77) echo "gpu_cuda_api_test: skipped" ;;
      *) echo "gpu_cuda_api_test: FAILED (status $cuda_api_status)" ;;
    esac
    grep -E '^(skipped:|cuda-api-test:|\[doctest\] (test cases|assertions):)' "$work/gpu_cuda_api_test.log"
  fi
  if [[ $openmp_status != none ]]; then
    echo "tests/gpu/openmp_programs.sh: status $openmp_status"
    grep -E '^(openmp (example|babelstream):|FAILED:)' "$work/openmp_programs.log"
  fi
  if [[ $stall_status != none ]]; then
    echo "tests/gpu/stall_check.sh: status $stall_status"
    grep -E '^stall check: (FAIL|passed|FAILED|[a-z_]+: (ferret|ncu|top))' "$work/stall_check.log"
  fi
  if [[ $peer_access_status != none ]]; then
    echo "tests/gpu/peer_access_check.sh: status $peer_access_status"
    grep -E '^peer access(es| patch): (FAILED|passed|skipped|layouts|one GPU|without)' "$work/peer_access_check.log"
  fi
  if [[ $nvshmem_status != none ]]; then
    echo "tests/gpu/nvshmem_check.sh: status $nvshmem_status"
    grep -E '^nvshmem: (FAILED|passed|skipped|times|PE 0: the (store|load))' "$work/nvshmem_check.log"
  fi
  if [[ $metrics_status != none ]]; then
    echo "tests/gpu/metrics_sampling_check.sh: status $metrics_status"
    grep -E '^(metrics sampling: (FAILED|ok|passed|skipped|device)|ferret: FERRET_CUDA_METRICS_SAMPLING)' \
      "$work/metrics_sampling_check.log"
  fi
  if [[ $benchmark_status != none ]]; then
    echo "benchmarks/cuda/run.sh: status $benchmark_status"
    grep -E '^(\||###|Target:|ferret.s added)' "$work/benchmark.log"
  fi
  if [[ $peer_status != none ]]; then
    echo "tests/gpu/peer_copies.sh: status $peer_status"
    grep -E '^peer copies: (FAILED|passed|skipped|the runtime on the link)' "$work/peer_copies.log"
  fi
  if [[ $context_status != none ]]; then
    echo "tests/gpu/torch_context.sh: status $context_status"
    grep -E '^(torch context|python context)' "$work/torch_context.log" "$work/python_benchmark.log" |
      sed 's/^[^:]*://'
    grep -E '^\|' "$work/python_benchmark.log"
  fi
  if [[ $nccl_one_status != none ]]; then
    echo "tests/gpu/nccl_one_gpu.sh: status $nccl_one_status; nccl_two_gpus.sh: status $nccl_two_status"
    grep -E '^(NCCL:|NCCL says:|plugin interface:|nccl regions:|one-rank collectives|nccl (one|devices|rank|ddp):|nccl two GPUs|FAILED:)' "$work/nccl.log"
  fi
} > "$work/summary.md"
echo
cat "$work/summary.md"

if [[ -n ${OUT:-} ]]; then
  cp "$work/summary.md" "$work/gpu_trace_test.log" "$OUT/"
  [[ -f $work/gpu_cuda_api_test.log ]] && cp "$work/gpu_cuda_api_test.log" "$OUT/"
  [[ -f $work/build.log ]] && cp "$work/build.log" "$OUT/"
  [[ -f $work/benchmark.log ]] && cp "$work/benchmark.log" "$OUT/"
  [[ -f $work/report.log ]] && cp "$work/report.log" "$OUT/"
  [[ -f $work/nccl.log ]] && cp "$work/nccl.log" "$OUT/"
  [[ -d $work/report ]] && cp -r "$work/report" "$OUT/report"
  for file in "$work/torch_context.log" "$work/python_benchmark.log" "$work/peer_copies.log" \
              "$work/peer_access_check.log" "$work/nvshmem_check.log" "$work/metrics_sampling_check.log" \
              "$work/openmp_programs.log" \
              "$work/traces/torch-context/torch-context-summary.txt"; do
    [[ -f $file ]] && cp "$file" "$OUT/"
  done
  tar -czf "$OUT/traces.tar.gz" -C "$work" traces
fi
[[ $test_status == 0 || $test_status == 77 ]] &&
  [[ $cuda_api_status == none || $cuda_api_status == 0 || $cuda_api_status == 77 ]] &&
  [[ $openmp_status == none || $openmp_status == 0 || $openmp_status == 77 ]] &&
  [[ $benchmark_status == none || $benchmark_status == 0 ]] &&
  [[ $context_status == none || $context_status == 0 || $context_status == 77 ]] &&
  [[ $peer_status == none || $peer_status == 0 || $peer_status == 77 ]] &&
  [[ $stall_status == none || $stall_status == 0 || $stall_status == 77 ]] &&
  [[ $peer_access_status == none || $peer_access_status == 0 || $peer_access_status == 77 ]] &&
  [[ $nvshmem_status == none || $nvshmem_status == 0 || $nvshmem_status == 77 ]] &&
  [[ $metrics_status == none || $metrics_status == 0 || $metrics_status == 77 ]] &&
  [[ $nccl_one_status == none || $nccl_one_status == 0 || $nccl_one_status == 77 ]] &&
  [[ $nccl_two_status == none || $nccl_two_status == 0 || $nccl_two_status == 77 ]]
