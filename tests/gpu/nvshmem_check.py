#!/usr/bin/env python3
"""nvshmem_check.py FOLDER: the counted run of tests/gpu/nvshmem_check.sh
(FOLDER/pe<r>.out: the PE's stdout with its "expected {json}" line; pe<r>.json:
its chrome trace, whose metadata's "gpu-device-initiated" table has one row
per kernel, line, object, access and device pair; pe<r>.log: the summary).

PE 0 (GPU 0): ferret_put_get stored exactly 4N bytes (N accesses) to GPU 1 and
loaded exactly 4M (M accesses) from GPU 1, each at the put's or the get's line
in nvshmem_put_get.cu, or inside NVSHMEM's headers (nvshmem_float_p and _g are
inlined: the line table names the header's line; the kernel is still
ferret_put_get). PE 1 (GPU 1): nothing in the program's own kernels (they touch
their own GPU's symmetric heap only). Both: no row from a device to itself, no
loss. Other kernels' rows are NVSHMEM's own (its barriers signal the peer):
listed, and they must go between the PE's GPU and the other one."""
import json
import os
import re
import sys

failures = []


def fail(message):
    failures.append(message)


def read_pe(folder, pe):
    expected = None
    with open(os.path.join(folder, f"pe{pe}.out"), errors="replace") as output:
        text = output.read()
    for line in text.splitlines():
        if line.startswith("expected "):
            expected = json.loads(line[len("expected "):])
    if "results right" not in text:
        fail(f"PE {pe}: the program's results are not right (its stdout: {text.strip()!r})")
    with open(os.path.join(folder, f"pe{pe}.json")) as trace_file:
        trace = json.load(trace_file)
    return expected, trace.get("metadata", {})


def device_pair(row):
    return f"{row['source device']} → {row['destination device']}"


def location(row):
    return f"{row['file']}:{row['line']}" if "file" in row else f"pc offset {row.get('pc offset')}"


def kernel_is(row, name):
    return re.search(r"\b" + re.escape(name) + r"\(", row["kernel"]) is not None or row["kernel"] == name


def check_common(pe, metadata, rows):
    """No local rows, no losses, the table complete; NVSHMEM's kernels only between the two GPUs."""
    for row in rows:
        if row["source device"] == row["destination device"]:
            fail(f"PE {pe}: a local access counted: {row}")
    if "gpu-device-initiated-rows-left-out" in metadata:
        fail(f"PE {pe}: the trace's table left rows out ({metadata['gpu-device-initiated-rows-left-out']})")
    losses = {k: v for k, v in metadata.items() if "dropped" in k and isinstance(v, (int, float)) and v}
    if losses:
        fail(f"PE {pe}: losses {losses}")
    if metadata.get("gpu-device-initiated-bytes-without-launch", 0):
        fail(f"PE {pe}: bytes without launch: {metadata['gpu-device-initiated-bytes-without-launch']}")


def check_nvshmem_rows(pe, rows):
    """Rows of kernels that are not the program's: NVSHMEM's (barriers). Listed;
    a load comes from the other GPU to this PE's, a store goes the other way."""
    peer = 1 - pe
    for row in rows:
        load = row["access"] == "load"
        want = (peer, pe) if load else (pe, peer)
        got = (row["source device"], row["destination device"])
        note = "" if got == want else "  <-- expected " + f"{want[0]} → {want[1]}"
        print(f"nvshmem: PE {pe} NVSHMEM's own: {row['kernel'][:60]} {row['access']} {device_pair(row)} "
              f"{row['bytes']} B, {row['accesses']} accesses, {location(row)}, object {row.get('object', '-')}{note}")
        if got != want and got[1] != "host" and got[0] != "host":
            fail(f"PE {pe}: NVSHMEM's kernel {row['kernel'][:60]} {row['access']} {device_pair(row)}, "
                 f"expected {want[0]} → {want[1]}")


def check_pe0(expected, metadata):
    rows = metadata.get("gpu-device-initiated", [])
    n, m = expected["n"], expected["m"]
    ours = [r for r in rows if kernel_is(r, expected["kernel"])]
    if not expected["peer_mapped"]:
        fail("PE 0: NVSHMEM did not map PE 1's heap (nvshmem_ptr returned null): p and g went through "
             "its proxy, not loads and stores to GPU 1 (are the GPUs peers? NVSHMEM_DEBUG=INFO says more)")
    print(f"nvshmem: PE 0: {len(rows)} rows; ferret_put_get's:")
    for row in ours:
        print(f"nvshmem: PE 0   {row['access']} {device_pair(row)} {row['bytes']} B, {row['accesses']} accesses, "
              f"{location(row)}, object {row.get('object', '(none named)')}")
    own_file = os.path.basename(expected["file"])
    for access, want_line, want_pair, count in (("store", expected["put_line"], (0, 1), n),
                                                ("load", expected["get_line"], (1, 0), m)):
        found = [r for r in ours if (r["access"] in ("store", "atomic")) == (access == "store")]
        bytes_, accesses = sum(r["bytes"] for r in found), sum(r["accesses"] for r in found)
        if (bytes_, accesses) != (4 * count, count):
            fail(f"PE 0: ferret_put_get's {access}s: {bytes_} B in {accesses} accesses, "
                 f"expected {4 * count} B in {count}")
        for row in found:
            pair = (row["source device"], row["destination device"])
            if pair != want_pair:
                fail(f"PE 0: ferret_put_get's {access} {device_pair(row)}, expected {want_pair[0]} → {want_pair[1]}")
            if "file" not in row:
                print(f"nvshmem: PE 0: the {access} has no line ({location(row)}): code without line "
                      "information (NVSHMEM's device library?); the kernel is ferret_put_get")
            elif os.path.basename(row["file"]) == own_file:
                if row["line"] != want_line:
                    fail(f"PE 0: ferret_put_get's {access} at line {row['line']}, expected {want_line}")
                else:
                    print(f"nvshmem: PE 0: the {access} at its line in {own_file} ({want_line})")
            elif "nvshmem" in row["file"].lower():
                print(f"nvshmem: PE 0: the {access} at {row['file']}:{row['line']}: NVSHMEM's header, inlined "
                      f"into ferret_put_get (the call is {own_file}:{want_line})")
            else:
                fail(f"PE 0: ferret_put_get's {access} at {location(row)}, neither {own_file} nor NVSHMEM's headers")
    check_common(0, metadata, rows)
    check_nvshmem_rows(0, [r for r in rows if not kernel_is(r, expected["kernel"])
                           and not kernel_is(r, expected["fill_kernel"])])
    filled = [r for r in rows if kernel_is(r, expected["fill_kernel"])]
    if filled:
        fail(f"PE 0: ferret_fill (its own symmetric buffer) counted: {filled}")


def check_pe1(expected, metadata):
    rows = metadata.get("gpu-device-initiated", [])
    print(f"nvshmem: PE 1: {len(rows)} rows")
    own = [r for r in rows if kernel_is(r, expected["fill_kernel"]) or kernel_is(r, expected["kernel"])]
    if own:
        fail(f"PE 1: the program's own kernels counted (they touch GPU 1's memory only): {own}")
    check_common(1, metadata, rows)
    check_nvshmem_rows(1, [r for r in rows if r not in own])


def main(folder):
    expected = []
    for pe in (0, 1):
        try:
            expected.append(read_pe(folder, pe))
        except (OSError, ValueError) as error:
            print(f"nvshmem: FAILED: PE {pe}'s output or trace: {error}")
            return 1
    (expected0, metadata0), (expected1, metadata1) = expected
    if expected0 is None or expected1 is None:
        print("nvshmem: FAILED: a PE printed no expectations")
        return 1
    print(f"nvshmem: PE 0 expects {expected0}")
    for key in ("peer-access-launches-counted", "gpu-device-initiated-bytes"):
        print(f"nvshmem: {key}: PE 0 {metadata0.get(key)}, PE 1 {metadata1.get(key)}")
    check_pe0(expected0, metadata0)
    check_pe1(expected1, metadata1)
    for failure in failures:
        print(f"nvshmem: FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
