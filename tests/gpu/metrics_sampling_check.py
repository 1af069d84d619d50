#!/usr/bin/env python3
"""metrics_sampling_check.py OUT JSON INTERVAL_NS: checks the sampled counters
gpu-test-peer-accesses produced under FERRET_CUDA_METRICS_SAMPLING (see
metrics_sampling_check.sh). OUT holds the program's "expected {json}" line;
JSON is its metrics_dump backend's file. Prints what it found; exit 1 on a
failed check."""
import json
import statistics
import sys

out_path, dump_path, interval_ns = sys.argv[1], sys.argv[2], int(sys.argv[3])
expected = None
with open(out_path) as out:
    for line in out:
        if line.startswith("expected "):
            expected = json.loads(line[len("expected "):])
dump = json.load(open(dump_path))
failures = []


def check(condition, message):
    print(("metrics sampling: ok: " if condition else "metrics sampling: FAILED: ") + message)
    if not condition:
        failures.append(message)


regions = {r["name"]: r for r in dump["regions"]}
sets = {s["device"]: s for s in dump["sets"]}
print("metrics sampling: metadata", json.dumps(dump["metadata"]))
for device, s in sorted(sets.items()):
    print(f"metrics sampling: device {device} samples {', '.join(s['metrics'])}")
devices = [0, 1] if expected and expected["peer"] else [0]
by_device = {d: [i for i in dump["intervals"] if i["device"] == d] for d in devices}
for device in devices:
    intervals = by_device[device]
    check(device in sets and len(intervals) > 0, f"device {device}: a set and {len(intervals)} intervals")
    if not intervals:
        continue
    in_order = all(b["begin"] >= a["end"] and b["end"] > b["begin"] for a, b in zip(intervals, intervals[1:]))
    check(in_order, f"device {device}: intervals in order, none overlapping")
    median = statistics.median(i["end"] - i["begin"] for i in intervals)
    check(0.5 * interval_ns <= median <= 2 * interval_ns,
          f"device {device}: median interval {median} ns for {interval_ns} asked")


def total(device, metric, region, inside=False):
    """The metric summed over the device's intervals that overlap the region
    (inside: that lie within it); None when the device does not sample it."""
    if device not in sets or metric not in sets[device]["metrics"]:
        return None
    index = sets[device]["metrics"].index(metric)
    r = regions[region]

    def wanted(i):
        if inside:
            return r["begin"] <= i["begin"] and i["end"] <= r["end"]
        return i["begin"] < r["end"] and i["end"] > r["begin"]

    chosen = [i for i in by_device.get(device, []) if wanted(i)]
    return sum(i["values"][index] or 0 for i in chosen), len(chosen)


n_bytes = 4 * expected["n"]
m_bytes = 4 * expected["m"]
read = total(0, "pcie__read_bytes.sum", "host_reads")
written = total(0, "pcie__write_bytes.sum", "host_reads")
if read is None and written is None:
    check(False, "device 0 samples no PCIe counter")
else:
    pcie = (read[0] if read else 0) + (written[0] if written else 0)
    check(pcie > 0, f"PCIe bytes during host_reads: {pcie:.0f} (read {read}, written {written}); "
                    f"the kernel loads {n_bytes} from host memory ({pcie / n_bytes:.2f}x)")
if expected["peer"]:
    received = total(0, "nvlrx__bytes.sum", "peer")
    sent = total(0, "nvltx__bytes.sum", "peer")
    if received is None or sent is None:
        check(False, "two GPUs with peer access, but device 0 samples no NVLink counter")
    else:
        check(received[0] >= n_bytes, f"NVLink bytes GPU 0 received during peer: {received[0]:.0f} >= {n_bytes} "
                                      f"loaded from GPU 1 ({received[0] / n_bytes:.3f}x, {received[1]} intervals)")
        check(sent[0] >= m_bytes, f"NVLink bytes GPU 0 sent during peer: {sent[0]:.0f} >= {m_bytes} "
                                  f"stored to GPU 1 ({sent[0] / m_bytes:.3f}x)")
        for metric in ("nvlrx__bytes_data_user.sum", "nvltx__bytes_data_user.sum"):
            user = total(0, metric, "peer")
            if user is not None:
                print(f"metrics sampling: {metric} during peer: {user[0]:.0f}")
        idle = [total(d, m, "idle", inside=True) for d in devices for m in ("nvlrx__bytes.sum", "nvltx__bytes.sum")]
        idle_bytes = sum(t[0] for t in idle if t is not None)
        idle_intervals = max((t[1] for t in idle if t is not None), default=0)
        check(idle_intervals > 0 and idle_bytes < n_bytes / 100,
              f"NVLink bytes while idle: {idle_bytes:.0f} over {idle_intervals} intervals (< 1% of {n_bytes})")
else:
    print("metrics sampling: one GPU: no NVLink check")
sys.exit(1 if failures else 0)
