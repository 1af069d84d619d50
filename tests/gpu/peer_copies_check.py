#!/usr/bin/env python3
"""Checks ferret's outputs of gpu-test-peer-copies against its "expected" line.

peer_copies_check.py PROGRAM_STDOUT CHROME_JSON SUMMARY_TEXT [OTF2_CHECK ANCHOR]

Prints every device copy of the chrome trace and the summary's tables first,
so that one run's log is enough to see what went wrong, then one line per
check ("peer copies: ok ..." / "peer copies: FAILED ..."). All checks run,
whatever fails first. Exit status 0 when all pass, 1 otherwise.
"""
import json
import re
import subprocess
import sys


def bytes_text(count):
    """The summary's rendering of a byte count (number_format.cpp)."""
    if count < 1024:
        return f"{count} B"
    units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
    unit, divisor = 0, 1024
    while unit + 1 < len(units) and count // divisor >= 1024:
        divisor *= 1024
        unit += 1
    quotient, remainder = divmod(count * 10, divisor)
    if 2 * remainder > divisor or (2 * remainder == divisor and quotient % 2 == 1):
        quotient += 1  # to the nearest, ties to even
    return f"{quotient // 10}.{quotient % 10} {units[unit]}"


def end_label(end):
    return "host" if end == "host" else f"GPU {end}"


def summary_sections(text):
    """{heading: [cells per row]} of the summary's tables (header row first)."""
    sections, current = {}, None
    for line in text.splitlines():
        if line and not line.startswith(" ") and not line.startswith("ferret"):
            current = sections.setdefault(line.strip(), [])
        elif line.startswith("  ") and current is not None and not line.lstrip().startswith("…"):
            current.append(re.split(r" {2,}", line.strip()))
        elif not line:
            current = None
    return sections


class checks:
    def __init__(self):
        self.failed = 0

    def __call__(self, passed, what):
        print(f"peer copies: {'ok' if passed else 'FAILED'}: {what}")
        self.failed += 0 if passed else 1


def main():
    stdout_path, chrome_path, summary_path = sys.argv[1:4]
    otf2_check, anchor = (sys.argv[4], sys.argv[5]) if len(sys.argv) > 5 else (None, None)
    expected = None
    with open(stdout_path) as out:
        for line in out:
            if line.startswith("link: "):
                print(f"peer copies: the runtime on the link: {line[len('link: '):].strip()}")
            if line.startswith("expected "):
                expected = json.loads(line[len("expected "):])
    check = checks()
    if expected is None:
        check(False, f"no 'expected' line in {stdout_path}")
        return 1
    with open(chrome_path) as trace_file:
        trace = json.load(trace_file)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    with open(summary_path) as summary_file:
        summary = summary_file.read()

    print("peer copies: the summary as printed:")
    print(summary)
    copies = [e for e in events if e.get("ph") == "X" and e.get("cat") == "memcpy"]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    print(f"peer copies: the chrome trace's {len(copies)} copies "
          "(correlation, kind, source -> destination device, bytes, launch, context, objects, GB/s):")
    for copy in sorted(copies, key=lambda e: e.get("ts", 0)):
        a = copy.get("args", {})
        print(f"  {a.get('correlation')}  {a.get('kind')}  {a.get('source device')} -> "
              f"{a.get('destination device')}  {a.get('bytes')} B  launch={a.get('launch')}  "
              f"context={a.get('context')}  objects={a.get('source object')} -> "
              f"{a.get('destination object')}  device={a.get('device')} stream={a.get('stream')}  "
              f"GB/s={a.get('GB/s')}")
    for kernel in kernels:
        a = kernel.get("args", {})
        print(f"  kernel {kernel.get('name')} on device {a.get('device')}, context={a.get('context')}")
    metadata = trace.get("metadata", {}) if isinstance(trace, dict) else {}
    for key in sorted(metadata):
        if "gpu-operations" in key or key.startswith("cupti") or "lost" in key or "drop" in key:
            print(f"  metadata {key} = {metadata[key]}")

    # With peer access off the driver may stage a copy between devices through
    # host memory: CUPTI then reports a DtoH and an HtoD record of the call's
    # bytes (two H200s over NVLink did, 2026-11-26). Those are the copies the
    # hardware made, and each half touches only the object on its device side;
    # the matrix and the objects are checked against them. With peer access on,
    # a staged copy is a failure.
    expected_copies = []
    for wanted in expected["copies"]:
        found = [c for c in copies if c.get("args", {}).get("context") == wanted["region"]
                 and c["args"].get("launch") == wanted["call"]]
        halves = sorted(c["args"].get("kind") for c in found)
        if ("peer access off" in wanted["region"] and wanted["kind"] == "PtoP"
                and halves == ["DtoH", "HtoD"]):
            print(f"peer copies: '{wanted['region']}' was staged through host memory "
                  f"(a DtoH and an HtoD record, correlation {found[0]['args'].get('correlation')})")
            expected_copies.append(dict(wanted, to="host", kind="DtoH",
                                        **{"destination object": None}))
            expected_copies.append(dict(wanted, **{"from": "host", "kind": "HtoD",
                                                   "source object": None}))
        else:
            expected_copies.append(wanted)
    expected_pairs = {}
    expected_objects = {name: {} for name in expected["objects"]}
    for wanted in expected_copies:
        pair = (wanted["from"], wanted["to"])
        expected_pairs[pair] = expected_pairs.get(pair, 0) + wanted["bytes"]
        for name in (wanted["source object"], wanted["destination object"]):
            if name is not None:
                kinds = expected_objects.setdefault(name, {})
                kinds[wanted["kind"]] = kinds.get(wanted["kind"], 0) + wanted["bytes"]

    # Each copy the program made, found in chrome by its region (calling context)
    # and launching call; "verify" holds two, told apart by their source device.
    for wanted in expected_copies:
        found = [c for c in copies if c.get("args", {}).get("context") == wanted["region"]
                 and c["args"].get("launch") == wanted["call"]]
        if sum(1 for w in expected_copies if w["region"] == wanted["region"]) > 1:
            found = [c for c in found if c["args"].get("source device") == wanted["from"]]
        label = (f"{wanted['call']} in '{wanted['region']}' ({end_label(wanted['from'])} -> "
                 f"{end_label(wanted['to'])}, {wanted['bytes']} B)")
        if len(found) != 1:
            # A copy staged or split into several records still owes its bytes.
            total = sum(c["args"].get("bytes", 0) for c in found)
            check(False, f"{label}: {len(found)} chrome copy events ({total} B), expected one")
            continue
        a = found[0]["args"]
        check(a.get("bytes") == wanted["bytes"], f"{label}: bytes {a.get('bytes')}")
        check(a.get("kind") == wanted["kind"],
              f"{label}: kind {a.get('kind')}, expected {wanted['kind']}")
        check(a.get("source device") == wanted["from"] and a.get("destination device") == wanted["to"],
              f"{label}: chrome says {a.get('source device')} -> {a.get('destination device')}")
        check(a.get("source object") == wanted["source object"]
              and a.get("destination object") == wanted["destination object"],
              f"{label}: objects {a.get('source object')} -> {a.get('destination object')}, "
              f"expected {wanted['source object']} -> {wanted['destination object']}")
    # No more copies than the program made, per region and outside them.
    regions = {w["region"] for w in expected_copies}
    for region in sorted(regions):
        want = sum(1 for w in expected_copies if w["region"] == region)
        have = sum(1 for c in copies if c.get("args", {}).get("context") == region)
        check(have == want, f"'{region}': {have} copies in chrome, expected {want}")
    stray = [c for c in copies if c.get("args", {}).get("context") not in regions]
    check(not stray, f"{len(stray)} chrome copies outside the copy regions")

    # The device x device matrix, from chrome and from the summary.
    chrome_pairs = {}
    for c in copies:
        key = (c["args"].get("source device"), c["args"].get("destination device"))
        chrome_pairs[key] = chrome_pairs.get(key, 0) + c["args"].get("bytes", 0)
    check(chrome_pairs == expected_pairs,
          f"chrome's bytes per (source, destination): {sorted(chrome_pairs.items(), key=str)}, "
          f"expected {sorted(expected_pairs.items(), key=str)}")
    sections = summary_sections(summary)
    matrix = sections.get("Device-to-device bytes")
    if not matrix:
        check(False, "the summary has no 'Device-to-device bytes' table")
    else:
        columns = matrix[0][1:]
        rows = {row[0]: dict(zip(columns, row[1:])) for row in matrix[1:]}
        ends = sorted({end for pair in expected_pairs for end in pair}, key=str)
        for source in ends:
            for destination in ends:
                want = expected_pairs.get((source, destination), 0)
                want_text = bytes_text(want) if want else "-"
                have = rows.get(end_label(source), {}).get(end_label(destination), "(absent)")
                check(have == want_text, f"summary matrix {end_label(source)} -> "
                                         f"{end_label(destination)}: {have}, expected {want_text}")

    # Bytes per data object: chrome (exact) and the summary's Data objects table.
    chrome_objects = {}
    for c in copies:
        a = c["args"]
        for name in {a.get("source object"), a.get("destination object")} - {None}:
            kinds = chrome_objects.setdefault(name, {})
            kinds[a.get("kind")] = kinds.get(a.get("kind"), 0) + a.get("bytes", 0)
    objects_table = sections.get("Data objects", [])
    header = objects_table[0] if objects_table else []
    summary_objects = {row[-1]: dict(zip(header, row)) for row in objects_table[1:]}
    for name, want in expected_objects.items():
        have = chrome_objects.get(name, {})
        check(have == want, f"object '{name}' in chrome: {have}, expected {want}")
        row = summary_objects.get(name)
        if row is None:
            check(False, f"object '{name}' missing from the summary's Data objects table")
            continue
        for kind in ("PtoP", "DtoH", "HtoD"):
            if kind not in header:
                check(kind not in want, f"the summary's Data objects table has no {kind} column")
                continue
            count = want.get(kind, 0)
            want_text = bytes_text(count) if count else "-"
            check(row.get(kind) == want_text,
                  f"object '{name}' in the summary: {kind} {row.get(kind)}, expected {want_text}")

    # A kernel on each GPU, in its region.
    for wanted in expected["kernels"]:
        found = [k for k in kernels if k.get("args", {}).get("context") == wanted["region"]
                 and wanted["kernel"] in k.get("name", "")]
        check(len(found) == 1 and found[0]["args"].get("device") == wanted["device"],
              f"kernel {wanted['kernel']} in '{wanted['region']}' on GPU {wanted['device']}: "
              f"{[(k.get('name'), k['args'].get('device')) for k in found]}")

    # CUPTI's MEMCPY2 records name no link; ferret has nothing to tell NVLink from PCIe.
    link_args = sorted({key for c in copies for key in c.get("args", {})
                        if "link" in key.lower() or "nvlink" in key.lower()})
    print(f"peer copies: link named by ferret's copy events: {link_args or 'none'} "
          "(see nvidia-smi topo -m above for the link itself)")

    if otf2_check:
        total = sum(w["bytes"] for w in expected_copies)
        command = [otf2_check, anchor, "--copies", str(len(expected_copies)),
                   "--copy-bytes", str(total)]
        for region in sorted(regions | {w["region"] for w in expected["kernels"]}):
            command += ["--region", region]
        result = subprocess.run(command, capture_output=True, text=True)
        print(f"peer copies: {' '.join(command)}")
        print(result.stdout + result.stderr, end="")
        check(result.returncode == 0, f"ferret-otf2-check (status {result.returncode})")

    print(f"peer copies: {'passed' if check.failed == 0 else f'FAILED ({check.failed} checks)'}")
    return 0 if check.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
