#!/usr/bin/env python3
"""ferret-merge streams: merging two synthetic rank traces of 5 MB each (40 000
events apiece, no MPI needed) keeps its peak RSS under 40 MiB (20 MiB measured),
where reading each trace whole (json.load, as ferret-merge did before issue 30)
took about ten bytes of memory per byte of JSON (110 MiB here). The merged
trace holds every event. The bound is on memory, not time."""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys

EVENTS_PER_RANK = 40_000
BOUND_KIB = 40 * 1024

parser = argparse.ArgumentParser()
parser.add_argument("--merge", required=True)
parser.add_argument("--work", required=True)
options = parser.parse_args()
shutil.rmtree(options.work, ignore_errors=True)
traces = os.path.join(options.work, "traces")
os.makedirs(traces)

input_bytes = 0
for rank in range(2):
    pid = 1000 + rank
    path = os.path.join(traces, f"rank{rank}.json")
    with open(path, "w", encoding="utf-8") as out:
        # As the chrome backend writes a trace: one event per line, the metadata last.
        out.write('{"traceEvents":[\n')
        out.write(json.dumps({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": "app"}}))
        for i in range(EVENTS_PER_RANK):
            out.write(",\n" + json.dumps({"ph": "X", "cat": "app", "name": f"region {i % 97}", "pid": pid,
                                          "tid": pid, "ts": i * 2.0, "dur": 1.5, "args": {"step": i}}))
        out.write('\n],"metadata":' + json.dumps({"mpi-rank": rank, "mpi-size": 2, "pid": pid,
                                                  "start-monotonic-raw-ns": 1_000_000}) + "}\n")
    input_bytes += os.path.getsize(path)

merged = os.path.join(options.work, "merged.json")
done = subprocess.run([sys.executable, options.merge, "-o", merged, traces], capture_output=True, text=True,
                      timeout=300)
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(done.stdout + done.stderr)
print(f"ferret-merge of {input_bytes} bytes: peak RSS {peak_kib} KiB (bound {BOUND_KIB} KiB)")
failures = []
if done.returncode != 0:
    failures.append(f"exit status {done.returncode}")
else:
    with open(merged, encoding="utf-8") as handle:
        events = json.load(handle)["traceEvents"]
    regions = sum(1 for event in events if event.get("ph") == "X")
    if regions != 2 * EVENTS_PER_RANK:
        failures.append(f"{regions} regions merged, expected {2 * EVENTS_PER_RANK}")
if peak_kib >= BOUND_KIB:
    failures.append(f"peak RSS {peak_kib} KiB: not streamed (bound {BOUND_KIB} KiB)")
for failure in failures:
    print("FAIL: " + failure)
sys.exit(1 if failures else 0)
