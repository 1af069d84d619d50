#!/usr/bin/env python3
"""nccl_peer_accesses_check.py TRACE: NCCL's device-initiated traffic, counted
(FERRET_CUDA_PEER_ACCESSES=1), against the ring algorithm's volume, from the
Chrome trace's metadata of `gpu-test-nccl-collectives devices` (one process,
two GPUs, one AllReduce and one AllGather of SIZE bytes each).

Per GPU, the bytes its kernels store to the other GPU: 2(n-1)/n x SIZE for the
AllReduce plus (n-1)/n x n x SIZE for the AllGather = 2 x SIZE with n = 2, and
the Simple protocol's head/tail flags on top (2 568 B per GPU on NCCL 2.28.3,
2026-11-28): at least 2 x SIZE, at most 2 x SIZE + 64 KiB. No loads from the
peer (NCCL's ring pushes). Nothing in no range (host memory the counter
follows through cuMemHostRegister and cuMem host mappings), nothing outside
functions, no launch lost."""
import json
import sys

SIZE = 4 << 20  # gpu-test-nccl-collectives: 2^20 floats
FLAGS_AT_MOST = 64 << 10


def main(trace_path):
    with open(trace_path) as trace:
        metadata = json.load(trace)["metadata"]
    rows = metadata.get("gpu-device-initiated", [])
    failures = []
    if metadata.get("gpu-device-initiated-rows-left-out", 0):
        failures.append("rows left out of the metadata: the sums below would be short")
    stored = {0: 0, 1: 0}
    loaded = {0: 0, 1: 0}
    for row in rows:
        source, destination = row["source device"], row["destination device"]
        if row["access"] in ("store", "atomic") and {source, destination} == {0, 1}:
            stored[source] += row["bytes"]
        elif row["access"] == "load" and {source, destination} == {0, 1}:
            loaded[destination] += row["bytes"]
    for device in (0, 1):
        print(f"nccl peer accesses: GPU {device} stored {stored[device]} B to GPU {1 - device}, "
              f"loaded {loaded[device]} B from it")
        if not 2 * SIZE <= stored[device] <= 2 * SIZE + FLAGS_AT_MOST:
            failures.append(f"GPU {device} stored {stored[device]} B to the peer, expected 2 x {SIZE} B "
                            f"plus at most {FLAGS_AT_MOST} B of flags")
        if loaded[device] != 0:
            failures.append(f"GPU {device} loaded {loaded[device]} B from the peer, expected none")
    for key in ("peer-accesses-dropped-in-no-range", "peer-accesses-dropped-outside-functions",
                "peer-access-launches-dropped-no-slot", "peer-access-launches-dropped-no-call",
                "peer-access-launches-dropped-read-failed"):
        value = metadata.get(key)
        print(f"nccl peer accesses: {key} = {value}")
        if value != 0:
            failures.append(f"{key} is {value}, expected 0"
                            + (f" (addresses {metadata.get('peer-accesses-in-no-range-addresses')})"
                               if key.endswith("in-no-range") else ""))
    for failure in failures:
        print(f"nccl peer accesses: FAILED: {failure}")
    if not failures:
        print("nccl peer accesses: passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
