"""Checks the traces of tests/gpu/nccl_one_gpu.sh and nccl_two_gpus.sh
(gpu-test-nccl-collectives through ferret-run, FERRET_BACKEND=chrome):
  nccl_check.py one     TRACE LOG   one rank on one GPU
  nccl_check.py devices TRACE LOG   one process, two GPUs (two communicators)
  nccl_check.py rank    TRACE LOG   one of the two processes of a two-rank run
  nccl_check.py ddp     TRACE LOG   one process of the PyTorch DDP step (nccl_torch_ddp.py)
LOG is the program's stdout and stderr (NCCL_DEBUG=INFO). Prints what it finds
(the nccl regions with their counts, the samples, the NCCL kernels' contexts),
then each failed expectation; exit status 1 when one failed.

What NCCL calls the plugin for, by interface: v5 (NCCL 2.28 and later) API
calls (ncclAllReduce ...), kernel launches, and the enqueued operations (AllReduce RING/LL ...); v4 (2.26, 2.27) only the enqueued
operations. On a one-rank communicator NCCL 2.28 runs collectives without
enqueuing them (enqueue.cc: ncclLaunchOneRank, before any profiler event), so
only the send/receive to itself is expected there; the collectives' regions are
reported if they appear."""
import json
import re
import sys
from collections import Counter

mode, trace_path, log_path = sys.argv[1:4]
failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)
    return condition


with open(log_path, errors="replace") as f:
    log = f.read()
expect("results right" in log, "the program's results are right")
version = re.search(r"NCCL (\d+)\.(\d+)\.(\d+)", log)
print("NCCL:", version.group(0) if version else "unknown")
loaded = re.search(r"PROFILER/Plugin: Loaded (\S+) \((v\d)\)", log)
print("NCCL says:", loaded.group(0) if loaded else "(no 'PROFILER/Plugin: Loaded' line)")
expect(loaded and loaded.group(1) == "ferret", "NCCL loaded ferret's profiler plugin")

with open(trace_path) as f:
    trace = json.load(f)
events = trace["traceEvents"]
metadata = trace.get("metadata", {})
interface = metadata.get("nccl-profiler-interface")
print("plugin interface:", interface, "| communicators:", metadata.get("nccl-communicators"),
      "| regions:", metadata.get("nccl-regions"), "| ends deferred:", metadata.get("nccl-region-ends-deferred"),
      "| stopped on another thread:", metadata.get("nccl-events-stopped-on-another-thread"))
for key, value in sorted(metadata.get("run", {}).items()):
    if key.startswith("nccl-communicator-"):
        print("  %s: %s" % (key, value))
regions = [e for e in events if e.get("ph") == "X" and e.get("cat") == "nccl"]
names = Counter(e["name"] for e in regions)
print("nccl regions:", dict(sorted(names.items())) or "none")
threads = Counter(e["tid"] for e in regions)
print("threads with nccl regions:", dict(threads))


def samples(name):
    return [e["args"]["value"] for e in events if e.get("ph") == "C" and e.get("name") == name]


for counter in ("nccl bytes", "nccl rank", "nccl channels", "nccl peer", "nccl root"):
    print("%s: %s" % (counter, sorted(Counter(samples(counter)).items())))
kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
contexts = Counter((e["name"][:60], e.get("args", {}).get("context", "")) for e in kernels if "nccl" in e["name"].lower())
print("NCCL kernels (name, context):", dict(contexts) or "none")

expected_bytes = 4 << 20  # 1 Mi floats
crossed = [e["name"] for e in regions if e.get("args", {}).get("ferret")]
expect(not crossed, "nccl regions nest with the thread's other regions (NCCL's NVTX ranges), not: %s" % crossed)
# NCCL 2.28 ends the NVTX ranges of calls with parameters (ncclCommInitRank...)
# through NVTX's payload extension: every one of them must end.
unfinished_nvtx = sorted({e["name"] for e in events if e.get("ph") == "X" and
                          str(e.get("cat", "")).startswith("nvtx") and
                          e.get("args", {}).get("ferret") == "closed at exit"})
expect(not unfinished_nvtx, "NCCL's NVTX ranges all end, not: %s" % unfinished_nvtx)
v5 = interface == "v5"
expect(interface in ("v5", "v4"), "the plugin's interface in the metadata (v5 or v4), got %r" % interface)
if mode == "one":
    expect(metadata.get("nccl-communicators") == 1, "one communicator")
    expect(names.get("Send") == 1 and names.get("Recv") == 1, "the send and receive to itself as regions Send, Recv")
    if v5:
        expect(names.get("ncclSend ncclFloat32") == 1 and names.get("ncclRecv ncclFloat32") == 1,
               "v5: the API calls ncclSend, ncclRecv")
        expect(names.get("kernel launch", 0) >= 1, "v5: NCCL's kernel launch")
    expect(expected_bytes in samples("nccl bytes"), "4 MiB in the bytes samples")
    expect(samples("nccl peer") == [0, 0], "the peer of the send and receive: 0 (itself)")
    print("one-rank collectives as regions:", {n: c for n, c in names.items() if "AllReduce" in n or "AllGather" in n}
          or "none (NCCL runs them without enqueuing)")
elif mode in ("devices", "rank"):
    ranks = 2 if mode == "devices" else 1
    expect(metadata.get("nccl-communicators") == ranks, "%d communicator(s)" % ranks)
    reduce_tasks = sum(c for n, c in names.items() if n.startswith("AllReduce "))
    gather_tasks = sum(c for n, c in names.items() if n.startswith("AllGather "))
    expect(reduce_tasks == ranks and gather_tasks == ranks,
           "%d enqueued all-reduce and all-gather each, got %d, %d" % (ranks, reduce_tasks, gather_tasks))
    if v5:
        expect(names.get("ncclAllReduce ncclFloat32") == ranks and names.get("ncclAllGather ncclFloat32") == ranks,
               "v5: %d API calls ncclAllReduce, ncclAllGather each" % ranks)
    expect(len(threads) == 1, "all on the thread that called NCCL")
    expect(samples("nccl bytes").count(expected_bytes) >= 2 * ranks, "4 MiB per all-reduce and per all-gather")
    expect(sorted(set(samples("nccl rank"))) == list(range(ranks)) if mode == "devices" else len(set(samples("nccl rank"))) == 1,
           "the rank samples")
elif mode == "ddp":
    # DDP's gradient bucket (weight and bias) and the explicit all-reduce, each
    # an API call (v5) and an enqueued operation; the bucket's from DDP's own thread.
    expect(metadata.get("nccl-communicators", 0) >= 1, "a communicator")
    reduce_tasks = sum(c for n, c in names.items() if n.startswith("AllReduce "))
    expect(reduce_tasks >= 2, "at least 2 enqueued all-reduces, got %d" % reduce_tasks)
    if v5:
        expect(names.get("ncclAllReduce ncclFloat32", 0) >= 2, "v5: at least 2 ncclAllReduce calls")
    expect((1024 * 1024 + 1024) * 4 in samples("nccl bytes"), "the gradient bucket's bytes (weight and bias)")
    expect(expected_bytes in samples("nccl bytes"), "the explicit all-reduce's 4 MiB")
else:
    sys.exit("unknown mode " + mode)
for message in failures:
    print("FAILED:", message)
print("nccl %s: %s" % (mode, "passed" if not failures else "%d failed" % len(failures)))
sys.exit(1 if failures else 0)
