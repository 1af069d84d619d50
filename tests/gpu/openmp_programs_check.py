#!/usr/bin/env python3
"""Checks the chrome trace of an OpenMP program traced on a GPU by
tests/gpu/openmp_programs.sh.

  openmp_programs_check.py example TRACE SOURCE ELEMENTS SWEEPS
      the OpenMP example (examples/openmp/openmp_example.cpp, built for NVIDIA):
      its target constructs located at SOURCE's lines for them, one kernel per
      sweep joined to its submission inside "offload/sweep", the mapped array
      copied once in and twice out, named "grid".
  openmp_programs_check.py babelstream TRACE ITERATIONS
      BabelStream's OpenMP model, unmodified: two initialisation kernels (its
      constructor and main each call init_arrays) and five per iteration, each
      joined to the kernel submission of its own target region.
Prints one line per finding; exit status 1 when any check failed."""
import json
import os
import sys

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f"FAILED: {what}")


def gpu_operations(trace, category):
    return [e for e in trace["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") == category and e["pid"] & 0x80000000]


def host_regions(trace, name):
    return [e for e in trace["traceEvents"]
            if e.get("ph") == "X" and e.get("name") == name and not e["pid"] & 0x80000000]


def pragma_line(source, text):
    with open(source) as lines:
        found = [number for number, line in enumerate(lines, 1) if line.lstrip().startswith(text)]
    check(len(found) == 1, f"one '{text}' in {source}: {found}")
    return found[0] if found else -1


def check_example(trace, source, elements, sweeps):
    target_data = pragma_line(source, "#pragma omp target data")
    target = pragma_line(source, "#pragma omp target teams")
    expected = {"target enter data [device 0]": target_data, "alloc": target_data,
                "transfer to device": target_data, "target [device 0]": target}
    locations = trace["metadata"].get("source-locations", {})
    for name, line in expected.items():
        sites = locations.get(name, [])
        check(len(sites) == 1, f"{name}: one location, not {sites}")
        for site in sites:
            check(os.path.basename(site.get("file", "")) == os.path.basename(source) and
                  site.get("line") == line and "offload(" in site.get("function", ""),
                  f"{name} at {os.path.basename(source)}:{line} in offload(), not {site}")
    kernels = gpu_operations(trace, "kernel")
    check(len(kernels) == sweeps, f"{sweeps} kernels, not {len(kernels)}")
    for kernel in kernels:
        context = kernel["args"].get("context", "")
        check(kernel["name"].startswith("__omp_offloading_") and
              context == "offload/sweep/target [device 0]/kernel submission",
              f"kernel {kernel['name']} in context {context!r}")
        check(kernel["args"]["grid"][0] == 2, f"kernel grid {kernel['args']['grid']} (num_teams(2))")
    array_bytes = elements * 8
    copies = [c for c in gpu_operations(trace, "memcpy") if c["args"]["bytes"] == array_bytes]
    to_device = [c for c in copies if c["args"]["kind"] == "HtoD"]
    from_device = [c for c in copies if c["args"]["kind"] == "DtoH"]
    check(len(to_device) == 1 and len(from_device) == 2,
          f"the array copied once to and twice from the GPU, not {len(to_device)}, {len(from_device)}")
    for copy in to_device:
        check(copy["args"].get("source object") == "grid", f"HtoD source object {copy['args']}")
    for copy in from_device:
        check(copy["args"].get("destination object") == "grid", f"DtoH destination object {copy['args']}")
    print(f"openmp example: {len(kernels)} kernels, target constructs at lines {target_data} and {target}, "
          f"{len(copies)} copies of the array")


def check_babelstream(trace, iterations):
    kernels = gpu_operations(trace, "kernel")
    expected = 2 + 5 * iterations
    check(len(kernels) == expected, f"{expected} kernels (init twice, copy, mul, add, triad, dot per iteration), "
                                    f"not {len(kernels)}")
    targets = host_regions(trace, "target [device 0]")
    check(len(targets) == expected, f"{expected} target regions, not {len(targets)}")
    unjoined = [k for k in kernels if not k["args"].get("context", "").endswith("target [device 0]/kernel submission")]
    check(not unjoined, f"{len(unjoined)} kernels not joined to a kernel submission: {unjoined[:2]}")
    check(trace["metadata"].get("gpu-operations-without-launch") == 0, "every GPU operation has its launch")
    print(f"openmp babelstream: {len(kernels)} kernels, {len(targets)} target regions, "
          f"{len(gpu_operations(trace, 'memcpy'))} copies, all joined")


def main():
    mode, path = sys.argv[1], sys.argv[2]
    with open(path) as file:
        trace = json.load(file)
    if mode == "example":
        check_example(trace, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        check_babelstream(trace, int(sys.argv[3]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
