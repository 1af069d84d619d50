#!/usr/bin/env python3
"""Sustained tracing, whole process: what writing a long trace to a real file costs.

    benchmarks/sustained/run_sustained.py [--build NAME=BUILD_DIR ...] [options]

Compiles sustained.cpp against each build's headers and libferret_runtime.so
(the source tree is read from the build's CMakeCache.txt, so main's build can
run beside a branch's) and, as the baseline, with FERRET_ENABLED=0: the same
loop, untraced. Then runs the matrix (build x backend x threads, baseline
included) with interleaved repetitions, each run writing to a fresh directory
on disk, and prints a markdown table, per region (min / median over the
repetitions):

  wall       the whole process's wall time / regions per thread (with 2 threads
             equal numbers mean "as fast per thread as one")
  loop       the timed loop alone (the exit drain excluded), same unit
  blocked    the time application threads waited for the runtime
             (application-wait-ns of the verbose exit line) / all regions
  bytes/event  size of the output / events (2 per region); summary writes none

Backends: any FERRET_BACKEND name, and "discard" (benchmarks/discard_backend.cpp,
compiled in: records counted and dropped, every one checked to arrive), which
measures the runtime itself, hot path and drain, without an output format.
  peak RSS   of the process (VmHWM at exit, after the exit drain), MB
  instr      instructions of the whole process (every thread, exit included)
             / regions, from valgrind --tool=callgrind on a smaller run
             (--instructions-regions, 1 thread)

A run that drops events, fails, or writes no output fails the script.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "sustained.cpp")
# Written by the runtime at FERRET_VERBOSE >= 2 (and at 1 when it waited).
WAIT_LINE = re.compile(r"application threads waited (\d+) times for a free buffer chunk, (\d+) ns")


def source_dir_of(build_dir):
    with open(os.path.join(build_dir, "CMakeCache.txt")) as cache:
        for line in cache:
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                return line.split("=", 1)[1].strip()
    sys.exit(f"{build_dir}: no CMAKE_HOME_DIRECTORY in CMakeCache.txt")


def compile_programs(name, build_dir, work):
    source_dir = source_dir_of(build_dir)
    lib = os.path.join(build_dir, "lib")
    compiler = os.environ.get("CXX", "c++")
    common = [compiler, "-std=c++17", "-O2", "-I" + os.path.join(source_dir, "include"),
              "-I" + os.path.join(source_dir, "backends", "runtime", "include"), SOURCE, "-pthread"]
    traced = os.path.join(work, f"sustained-{name}")
    baseline = os.path.join(work, f"sustained-{name}-baseline")
    # With the "discard" backend (records counted and dropped): the runtime's
    # own cost, hot path and drain, without an output format.
    subprocess.run(common + [os.path.join(HERE, "..", "discard_backend.cpp"), "-DFERRET_RUNTIME_LINKED=1",
                             "-o", traced, "-L" + lib, "-lferret_runtime", "-Wl,-rpath," + lib], check=True)
    subprocess.run(common + ["-DFERRET_ENABLED=0", "-o", baseline], check=True)
    return traced, baseline


def tree_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for file in files:
            total += os.path.getsize(os.path.join(root, file))
    return total


def environment(backend, output):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FERRET_")}
    if backend != "baseline":
        env.update(FERRET_BACKEND=backend, FERRET_OUTPUT=output, FERRET_VERBOSE="2")
    return env


def measure(program, backend, regions, threads, work):
    """One run: wall ns, loop ns, wait ns (None: not reported), output bytes, peak RSS kB."""
    out_dir = os.path.join(work, "out")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    log = os.path.join(work, "run.log")
    with open(log, "w+") as err, open(os.path.join(work, "stdout.log"), "w+") as out:
        start = time.perf_counter()
        pid = os.posix_spawn(program, [program, str(regions), str(threads)],
                             environment(backend, out_dir + "/run"),
                             file_actions=[(os.POSIX_SPAWN_DUP2, out.fileno(), 1),
                                           (os.POSIX_SPAWN_DUP2, err.fileno(), 2)])
        _, status = os.waitpid(pid, 0)
        wall_ns = (time.perf_counter() - start) * 1e9
        out.seek(0)
        stdout = out.read()
        err.seek(0)
        stderr = err.read()
    describe = f"{program} {backend}, {threads} thread(s)"
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{describe} failed ({os.waitstatus_to_exitcode(status)}):\n{stderr}")
    if re.search(r"events were (dropped|not written)", stderr):
        sys.exit(f"{describe} dropped events:\n{stderr}")
    loop = re.search(r"loop (\d+) ns", stdout)
    if loop is None:
        sys.exit(f"{describe}: no loop time in its output:\n{stdout}")
    peak = re.search(r"peak\s+(\d+) kB", stdout)
    if peak is None:
        sys.exit(f"{describe}: no peak memory in its output:\n{stdout}")
    output_bytes = tree_bytes(out_dir)
    if backend == "discard":
        received = re.search(r"discard: (\d+) records received", stderr)
        if received is None or int(received.group(1)) != 2 * (regions // 2 * 2) * threads:
            sys.exit(f"{describe}: not every event reached the backend:\n{stderr}")
    elif backend not in ("baseline", "summary") and output_bytes == 0:
        sys.exit(f"{describe} wrote no output:\n{stderr}")
    waited = WAIT_LINE.search(stderr)
    wait_ns = int(waited.group(2)) if waited else None
    if backend != "baseline" and waited is None and "application threads waited" in stderr:
        sys.exit(f"{describe}: unreadable wait line:\n{stderr}")
    shutil.rmtree(out_dir, ignore_errors=True)
    return wall_ns, int(loop.group(1)), wait_ns, output_bytes, int(peak.group(1))


def instructions(program, backend, regions, work):
    out = os.path.join(work, "callgrind")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    result = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.%p",
                             program, str(regions), "1"],
                            env=environment(backend, out + "/run"), capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"callgrind run of {program} {backend} failed:\n{result.stderr}")
    total = 0
    for file in os.listdir(out):
        if file.startswith("callgrind."):
            with open(os.path.join(out, file)) as data:
                for line in data:
                    if line.startswith("summary:"):
                        total += int(line.split()[1])
    shutil.rmtree(out, ignore_errors=True)
    return total / regions


def min_median(values, scale=1.0, digits=1):
    if not values or any(v is None for v in values):
        return "—"
    scaled = [v * scale for v in values]
    return f"{min(scaled):.{digits}f} / {statistics.median(scaled):.{digits}f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="append", metavar="NAME=BUILD_DIR",
                        help="a configured and built ferret build (repeatable); default: this=build/release")
    parser.add_argument("--regions", type=int, default=2_000_000, help="regions per thread (default 2,000,000)")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--backends", default="discard,chrome,otf2,tau,summary")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--instructions-regions", type=int, default=200_000,
                        help="regions of the callgrind run (0: no instruction counts)")
    parser.add_argument("--work", help="scratch directory on a real disk (default: a new one under the first build)")
    parser.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                        help="extra setting for the traced runs, e.g. FERRET_BUFFER_SIZE=256K")
    args = parser.parse_args()

    builds = []
    for spec in args.build or ["this=" + os.path.join(HERE, "..", "..", "build", "release")]:
        name, _, path = spec.partition("=")
        builds.append((name, os.path.abspath(path)))
    for extra in args.env:
        key, _, value = extra.partition("=")
        os.environ[key] = value
    work = args.work or tempfile.mkdtemp(prefix="sustained-", dir=builds[0][1])
    os.makedirs(work, exist_ok=True)
    threads = [int(t) for t in args.threads.split(",")]
    backends = args.backends.split(",")

    programs = {name: compile_programs(name, path, work) for name, path in builds}
    configs = []
    for name, _ in builds:
        for count in threads:
            configs.append((name, "baseline", count))
            configs.extend((name, backend, count) for backend in backends)
    results = {config: [] for config in configs}
    for _ in range(args.repetitions):
        for config in configs:  # interleaved: each repetition runs the whole matrix
            name, backend, count = config
            traced, baseline = programs[name]
            program = baseline if backend == "baseline" else traced
            results[config].append(measure(program, backend, args.regions, count, work))

    counted = {}
    if args.instructions_regions > 0:
        for name, _ in builds:
            traced, baseline = programs[name]
            for backend in ["baseline"] + backends:
                program = baseline if backend == "baseline" else traced
                counted[(name, backend)] = instructions(program, backend, args.instructions_regions, work)
    shutil.rmtree(work, ignore_errors=True)

    settings = " ".join(args.env)
    print(f"{args.regions:,} regions per thread, {args.repetitions} interleaved repetitions (min / median)"
          + (f", {settings}" if settings else ""))
    print()
    print("| build | backend | threads | wall ns/region | loop ns/region | blocked ns/region | bytes/event "
          "| peak RSS MB | instructions/region |")
    print("|---|---|---|---|---|---|---|---|---|")
    for config in configs:
        name, backend, count = config
        runs = results[config]
        per_region = 1.0 / args.regions
        events = 2 * args.regions * count
        instr = counted.get((name, backend)) if count == 1 else None
        print(f"| {name} | {backend} | {count} "
              f"| {min_median([r[0] for r in runs], per_region)} "
              f"| {min_median([r[1] for r in runs], per_region)} "
              f"| {'0' if backend == 'baseline' else min_median([r[2] for r in runs], 1.0 / (args.regions * count), 2)} "
              f"| {'—' if backend in ('baseline', 'summary', 'discard') else min_median([r[3] for r in runs], 1.0 / events)} "
              f"| {min_median([r[4] for r in runs], 1 / 1024)} "
              f"| {'' if instr is None else f'{instr:.0f}'} |")


if __name__ == "__main__":
    main()
