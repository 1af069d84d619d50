"""capture_cost.py RUNTIME [DEPTH...]: what one Python call-stack capture costs, without a GPU.

ferret captures the launching thread's Python frames at every CUDA launch (FERRET_PYTHON=1);
this calls the same entry point (ferret::runtime::record_launch_context, through ctypes with the
GIL held) from a Python function DEPTH frames deep, in a loop from one line as a training loop
launches, against a ctypes call of a runtime function that does nothing. RUNTIME is the build's
lib/libferret_runtime.so; run it with FERRET_BACKEND=summary (a session records) and
FERRET_PYTHON=1 or 0. Prints one line per depth: ns per call, median and minimum of 9 rounds of
200 000 calls, and the capture's share (call + capture minus the call alone).

    FERRET_BACKEND=summary FERRET_VERBOSE=0 python3 benchmarks/python/capture_cost.py \\
        build/lib/libferret_runtime.so 3 20
"""
import ctypes
import sys
import time

runtime = ctypes.PyDLL(sys.argv[1])
record_launch_context = runtime._ZN6ferret7runtime21record_launch_contextEv
load_launch_context_sources = runtime._ZN6ferret7runtime27load_launch_context_sourcesEv
does_nothing = runtime._ZN6ferret7runtime14session_activeEv
load_launch_context_sources()

CALLS, ROUNDS = 200_000, 9


def at_depth(depth, call):
    if depth > 0:
        return at_depth(depth - 1, call)
    start = time.perf_counter_ns()
    for _ in range(CALLS):
        call()
    return (time.perf_counter_ns() - start) / CALLS


for depth in (int(value) for value in sys.argv[2:] or ["3"]):
    alone, captured = [], []
    for _ in range(ROUNDS):  # interleaved
        alone.append(at_depth(depth, does_nothing))
        captured.append(at_depth(depth, record_launch_context))
    alone.sort()
    captured.sort()
    median = ROUNDS // 2
    print(f"depth {depth}: call {alone[median]:.0f} ns (min {alone[0]:.0f}), call + capture "
          f"{captured[median]:.0f} ns (min {captured[0]:.0f}): capture {captured[median] - alone[median]:.0f} ns "
          f"by medians, {captured[0] - alone[0]:.0f} ns by minima")
