#!/usr/bin/env python3
"""peer_access_check.py PROGRAM_OUTPUT DUMP CHROME: gpu-test-peer-accesses'
expectations (its "expected {json}" line) against ferret's device-initiated
traffic (the peer-dump backend's JSON) and the counting run's kernels in the
Chrome trace. Exact counts: the kernels touch each element once."""
import json
import re
import sys


def check_kernels(chrome_path, expected, failures):
    """Each region's kernel, timed by the patch, lies inside the region (which
    waits for it) on the host's clock, with its bytes as arguments."""
    with open(chrome_path) as chrome_file:
        events = json.load(chrome_file)["traceEvents"]
    regions = {e["name"]: e for e in events if e.get("ph") == "X" and "cat" not in e}  # the program's own
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    n, m = expected["n"], expected["m"]
    # A graph launch's kernels share one counter slot: no kernel events of their own.
    wanted = [("host_reads", "read_host", 1, {"loaded from host": 4 * n}),
              ("local_only", "local_only", 1, {})]
    if expected["peer"]:
        wanted.append(("peer", "peer_traffic", 1, {"loaded from GPU 1": 4 * n, "stored to GPU 1": 4 * m}))
    if len(kernels) != sum(count for _, _, count, _ in wanted):
        failures.append(f"chrome: {len(kernels)} kernel slices, expected {sum(c for _, _, c, _ in wanted)}")
    for region_name, kernel_name, count, traffic in wanted:
        region = regions.get(region_name)
        found = [k for k in kernels if re.match(rf"(.*::)?{kernel_name}\(", k["name"])
                 and k["args"].get("context") == region_name]
        if region is None or len(found) != count:
            failures.append(f"chrome: region {region_name}: {'found' if region else 'missing'}, "
                            f"{len(found)} {kernel_name} kernel slices in it, expected {count}")
            continue
        for kernel in found:
            args = kernel["args"]
            print(f"peer accesses: kernel {kernel['name']} {kernel['ts'] - region['ts']:.3f} µs into "
                  f"{region_name}, {kernel['dur']:.3f} µs long, ends "
                  f"{region['ts'] + region['dur'] - kernel['ts'] - kernel['dur']:.3f} µs before it; args {args}")
            if kernel["ts"] < region["ts"] or kernel["ts"] + kernel["dur"] > region["ts"] + region["dur"]:
                failures.append(f"chrome: {kernel_name} [{kernel['ts']}, +{kernel['dur']}] not inside "
                                f"{region_name} [{region['ts']}, +{region['dur']}]")
            if kernel["dur"] <= 0:
                failures.append(f"chrome: {kernel_name} lasts {kernel['dur']} µs")
            moved = {k: v for k, v in args.items() if k.startswith("loaded from") or k.startswith("stored to")}
            if moved != traffic:
                failures.append(f"chrome: {kernel_name} in {region_name}: {moved}, expected {traffic}")
            if "launch" not in args:
                failures.append(f"chrome: {kernel_name} in {region_name} not joined to its launch: {args}")


def main(output_path, dump_path, chrome_path):
    expected = None
    with open(output_path) as output:
        for line in output:
            if line.startswith("expected "):
                expected = json.loads(line[len("expected "):])
    if expected is None:
        print("peer accesses: FAILED: the program printed no expectations")
        return 1
    with open(dump_path) as dump_file:
        dump = json.load(dump_file)
    n, m = expected["n"], expected["m"]
    failures = []
    rows = dump["accesses"]
    print(f"peer accesses: {len(rows)} rows; metadata {dump['metadata']}")
    for row in rows:
        print(f"peer accesses:   {row}")

    def rows_in(context):
        return [r for r in rows if r["context"] == context]

    def expect_row(context, target, access, line, object_name, accesses, bytes_):
        found = [r for r in rows_in(context) if r["target"] == target and r["access"] == access]
        if len(found) != 1:
            failures.append(f"{context}: {len(found)} {access} rows to device {target}, expected 1")
            return
        row = found[0]
        for key, want in (("line", line), ("object", object_name), ("accesses", accesses), ("bytes", bytes_)):
            if row[key] != want:
                failures.append(f"{context}: {access} to {target}: {key} {row[key]}, expected {want}")

    expect_row("host_reads", -1, "load", expected["load_line"], "host_input", n, 4 * n)
    graphs = expected["graph_launches"]
    expect_row("graph_reads", -1, "load", expected["load_line"], "host_input", graphs * n, graphs * 4 * n)
    if len(rows_in("graph_reads")) != 1:  # the graph's local kernel adds nothing
        failures.append(f"graph_reads: {len(rows_in('graph_reads'))} rows, expected only the host load")
    if len(rows_in("host_reads")) != 1:
        failures.append(f"host_reads: {len(rows_in('host_reads'))} rows, expected only the host load")
    if rows_in("local_only"):
        failures.append(f"local_only: {len(rows_in('local_only'))} rows, expected none (local accesses)")
    if expected["peer"]:
        expect_row("peer", 1, "load", expected["peer_load_line"], "peer_input", n, 4 * n)
        expect_row("peer", 1, "store", expected["peer_store_line"], "peer_output", m, 4 * m)
    else:
        print("peer accesses: one GPU (or no peer access): the peer case is left out")
    # The totals are the launches' counts, all joined to their launch calls.
    meta = dump["metadata"]
    launches = (3 if expected["peer"] else 2) + graphs  # a graph launch is counted as one
    if meta.get("peer-access-graph-kernel-nodes") != 2 * graphs:
        failures.append(f"graph kernel nodes {meta.get('peer-access-graph-kernel-nodes')}, expected {2 * graphs}")
    if meta.get("peer-access-launches-counted") != launches:
        failures.append(f"launches counted {meta.get('peer-access-launches-counted')}, expected {launches}")
    total = 4 * n + graphs * 4 * n + (4 * n + 4 * m if expected["peer"] else 0)
    if meta.get("gpu-device-initiated-bytes") != total:
        failures.append(f"gpu-device-initiated-bytes {meta.get('gpu-device-initiated-bytes')}, expected {total}")
    if meta.get("gpu-device-initiated-bytes-without-launch", 0) != 0:
        failures.append(f"bytes without launch: {meta.get('gpu-device-initiated-bytes-without-launch')}")
    lost = {k: v for k, v in dump["metadata"].items() if "dropped" in k or "untimed" in k}
    if any(lost.values()):
        failures.append(f"losses: {lost}")
    check_kernels(chrome_path, expected, failures)
    for failure in failures:
        print(f"peer accesses: FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3]))
