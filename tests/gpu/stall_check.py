#!/usr/bin/env python3
"""stall_check.py WORK: compares ferret's instruction samples (WORK/stalls.stalls.json,
written by gpu-test-stall-kernels' stall-dump backend) with Nsight Compute's
(WORK/ncu-source.csv, WORK/ncu-raw.csv). See stall_check.sh. Exit 0 pass, 1 fail."""
import csv
import io
import json
import re
import sys
from collections import defaultdict

BOTTLENECKS = ["memory_bound", "dependent_fma", "bank_conflicts", "barrier_heavy", "divergent"]
REASON = re.compile(r"^smsp__pcsamp_warps_issue_stalled_([a-z_]+?)(_not_issued)?$")
failures = []


def fail(message):
    failures.append(message)
    print(f"stall check: FAIL: {message}")


def short(name):
    """The kernel's name without namespace and parameters: '(anonymous namespace)::memory_bound(float*,
    ...)' (ferret, demangled) and '<unnamed>::memory_bound(float *, ...)' (ncu) -> 'memory_bound'."""
    name = name.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    name = name.split("(")[0]
    return name.split("::")[-1].strip()


def ferret_side(work):
    with open(f"{work}/stalls.stalls.json") as f:
        dump = json.load(f)
    print("stall check: ferret's metadata:", json.dumps(dump["metadata"], sort_keys=True))
    reasons = defaultdict(lambda: defaultdict(float))  # kernel -> reason -> samples
    lines = defaultdict(lambda: defaultdict(float))  # kernel -> line -> samples
    contexts = defaultdict(lambda: defaultdict(float))  # kernel -> context -> samples
    for entry in dump["instructions"]:
        kernel = short(entry["function"])
        reasons[kernel][entry["reason"]] += entry["samples"]
        lines[kernel][entry["line"]] += entry["samples"]
        contexts[kernel][entry["context"]] += entry["samples"]
    return dump, reasons, lines, contexts


def read_csv_rows(path):
    with open(path, newline="") as f:
        text = f.read()
    return list(csv.reader(io.StringIO(text)))


def ncu_reasons(work):
    """Per kernel, the pcsamp reasons' samples from the raw page (one row per kernel)."""
    rows = read_csv_rows(f"{work}/ncu-raw.csv")
    header = next((row for row in rows if "Kernel Name" in row), None)
    if header is None:
        fail("ncu-raw.csv has no 'Kernel Name' column; first lines: " + repr(rows[:3])[:800])
        return {}
    print("stall check: ncu raw columns about sampling or stalls:",
          [c for c in header if "pcsamp" in c or "stall" in c][:80])
    name_column = header.index("Kernel Name")
    columns = {}
    for index, column in enumerate(header):
        match = REASON.match(column)
        if match and not match.group(2):
            columns[index] = match.group(1)
    if not columns:
        fail("ncu-raw.csv has no smsp__pcsamp_warps_issue_stalled_* column; pcsamp columns: "
             + repr([c for c in header if "pcsamp" in c])[:800])
    result = {}
    for row in rows[rows.index(header) + 1:]:
        if len(row) != len(header) or not row[name_column] or row[name_column] == header[name_column]:
            continue
        values = {}
        for index, reason in columns.items():
            try:
                values[reason] = float(row[index].replace(",", ""))
            except ValueError:
                pass  # the units row
        if values:
            result.setdefault(short(row[name_column]), defaultdict(float))
            for reason, value in values.items():
                result[short(row[name_column])][reason] += value
    return result


def ncu_lines(work):
    """Per kernel, samples per CUDA source line from the source page (--print-source
    cuda,sass): per launch, a "Function Name" row, a header row ("Line No", ...,
    "Warp Stall Sampling (All Samples)", ...), then CUDA lines (a number in the
    first column) interleaved with their SASS rows (none there)."""
    rows = read_csv_rows(f"{work}/ncu-source.csv")
    result = {}
    kernel = None
    samples_column = None
    for row in rows:
        if len(row) >= 2 and row[0] == "Function Name":
            kernel = short(row[1])
            continue
        if row and row[0] == "Line No":
            if samples_column is None:
                print("stall check: ncu source page columns:", row[:8], "...")
            samples_column = next((i for i, c in enumerate(row) if c == "Warp Stall Sampling (All Samples)"), None)
            continue
        if kernel is None or samples_column is None or not row or not row[0].isdigit():
            continue
        if len(row) <= samples_column:
            continue
        try:
            samples = float(row[samples_column].replace(",", "") or 0)
        except ValueError:
            continue
        if samples > 0:
            result.setdefault(kernel, defaultdict(float))[int(row[0])] += samples
    if not result:
        fail("no per-line samples read from ncu-source.csv; its first lines: "
             + repr(rows[:6])[:1500])
    return result


def top(values, count, minimum_share=0.01):
    total = sum(values.values()) or 1
    ranked = sorted(values.items(), key=lambda item: -item[1])
    return [key for key, value in ranked if value / total >= minimum_share][:count]


def dominant(reasons):
    stalls = {reason: value for reason, value in reasons.items() if reason != "selected"}
    return max(stalls, key=stalls.get) if stalls else None


def shares(values):
    total = sum(values.values()) or 1
    ranked = sorted(values.items(), key=lambda item: -item[1])[:5]
    return ", ".join(f"{key} {100 * value / total:.1f}%" for key, value in ranked)


def main(work):
    dump, reasons, lines, contexts = ferret_side(work)
    reference_reasons = ncu_reasons(work)
    reference_lines = ncu_lines(work)
    for kernel in BOTTLENECKS:
        ours, theirs = reasons.get(kernel, {}), reference_reasons.get(kernel, {})
        print(f"stall check: {kernel}: ferret {sum(ours.values()):.0f} samples: {shares(ours)}")
        print(f"stall check: {kernel}: ncu    {sum(theirs.values()):.0f} samples: {shares(theirs)}")
        if not ours:
            fail(f"{kernel}: ferret has no samples")
            continue
        if theirs and dominant(ours) != dominant(theirs):
            fail(f"{kernel}: dominant stall {dominant(ours)} (ferret) != {dominant(theirs)} (ncu)")
        our_lines, their_lines = top(lines.get(kernel, {}), 5), top(reference_lines.get(kernel, {}), 7)
        print(f"stall check: {kernel}: top lines ferret {our_lines}, ncu {their_lines[:5]}")
        if kernel in reference_lines:
            for rank, line in enumerate(our_lines[: len(their_lines[:5])]):
                if line not in their_lines[max(0, rank - 1): rank + 2]:
                    fail(f"{kernel}: line {line} is ferret's #{rank + 1} but ncu's "
                         f"#{their_lines.index(line) + 1 if line in their_lines else 'none'}")
        context = max(contexts[kernel], key=contexts[kernel].get)
        if context != kernel:
            fail(f"{kernel}: samples in context {context!r}, expected {kernel!r}")
    # The two spinning kernels: concurrent with sampling on, samples to their own regions.
    spins = {short(k["kernel"]): k for k in dump["kernels"] if short(k["kernel"]).startswith("spin_")}
    if set(spins) != {"spin_one", "spin_two"}:
        fail(f"spinning kernels found: {sorted(spins)}")
    else:
        one, two = spins["spin_one"], spins["spin_two"]
        overlap = min(one["end_ns"], two["end_ns"]) - max(one["start_ns"], two["start_ns"])
        print(f"stall check: spin_one {one['start_ns']}..{one['end_ns']} (stream {one['stream']}), "
              f"spin_two {two['start_ns']}..{two['end_ns']} (stream {two['stream']}): overlap {overlap} ns")
        if not (one["start_ns"] < two["end_ns"] and two["start_ns"] < one["end_ns"]):
            fail("spin_one and spin_two did not overlap with sampling on (serialized?)")
        for name, region in (("spin_one", "overlap/stream_one"), ("spin_two", "overlap/stream_two")):
            total = sum(contexts[name].values())
            own = contexts[name].get(region, 0)
            print(f"stall check: {name}: {total:.0f} samples, {own:.0f} in {region}; "
                  f"per launch {spins[name].get('samples')}, utilization "
                  f"{spins[name].get('samples', 0) / max(spins[name].get('expected', 0), 1):.2f}")
            if total == 0 or own / total < 0.99:
                fail(f"{name}: {own:.0f} of {total:.0f} samples in {region}: {dict(contexts[name])}")
            if not spins[name].get("samples"):
                fail(f"{name}: the launch carries no sample totals")
    print("stall check:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
