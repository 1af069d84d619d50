"""ferret as NCCL's profiler plugin, through every backend, without a GPU:
nccl_plugin_driver (tests/nccl/nccl_plugin_driver.cpp) plays NCCL 2.28 and
drives the plugin's entry points; its run into chrome, summary, report and otf2
at once and into tau is checked by each output's reader or checker, then for
what it shows: the regions of domain nccl on the threads that made the calls,
nested with the program's regions, their counter samples, the communicators in
the metadata. Then the v4 interface (what NCCL 2.26/2.27 use), the plugin
without FERRET_BACKEND (NCCL gets an empty activation mask, nothing is
written), and ferret-run setting NCCL_PROFILER_PLUGIN."""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from ferret_outputs import ChromeTrace, Failures, checked_by, run, tau_call_paths, tau_text  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--driver", required=True, help="nccl_plugin_driver")
parser.add_argument("--plugin", required=True, help="libferret_nccl.so")
parser.add_argument("--ferret-run", required=True)
parser.add_argument("--trace-check", required=True)
parser.add_argument("--tau-check", required=True)
parser.add_argument("--otf2-check", default="")
parser.add_argument("--otf2-print", default="")
parser.add_argument("--work", required=True)
options = parser.parse_args()

shutil.rmtree(options.work, ignore_errors=True)
os.makedirs(options.work)
check = Failures("nccl")
with_otf2 = bool(options.otf2_check)
backends = "chrome,summary,report" + (",otf2" if with_otf2 else "")
output = os.path.join(options.work, "nccl")
status, stdout, stderr = run([options.driver, options.plugin], {"FERRET_BACKEND": backends, "FERRET_OUTPUT": output})
check.expect(status == 0, "the driver (v5) exit status %d: %s" % (status, stderr))
# coll API, p2p API, kernel launch, coll, p2p (not group API: see plugin.cpp)
check.expect("activation mask 0xe06" in stdout, "v5 asks NCCL for API, launch, coll and p2p events: %r" % stdout)

# --- chrome: regions, nesting, samples, metadata -----------------------------
passed, report = checked_by(options.trace_check, output + ".json")
check.expect(passed, "ferret-trace-check: " + report)
trace = ChromeTrace(output + ".json")
expected = {"ncclAllReduce ncclFloat32": 1, "ncclAllGather ncclFloat16": 1, "ncclSend ncclInt8": 1,
            "ncclRecv ncclInt8": 1, "ncclBroadcast ncclFloat64": 1, "ncclReduce ncclInt64": 1,
            "kernel launch": 4, "AllReduce RING/LL": 1, "AllGather RING/Simple": 1,
            "Send": 1, "Recv": 1, "Broadcast RING/LL128": 1, "Reduce TREE/Simple": 1}
for name, count in expected.items():
    found = trace.regions(name, "nccl")
    check.expect(len(found) == count, "%d region(s) %r of domain nccl, got %d" % (count, name, len(found)))
check.expect(len(trace.regions(category="nccl")) == sum(expected.values()),
             "no other nccl regions: %s" % sorted({e["name"] for e in trace.regions(category="nccl")}))


def one(name):
    found = trace.regions(name)
    return found[0] if len(found) == 1 else None


step, reduce_call = one("training step"), one("ncclReduce ncclInt64")
if check.expect(step and reduce_call, "training step and ncclReduce regions"):
    for name in ("ncclAllReduce ncclFloat32", "AllReduce RING/LL", "ncclAllGather ncclFloat16", "ncclSend ncclInt8",
                 "ncclRecv ncclInt8", "AllGather RING/Simple", "Send", "Recv"):
        check.expect(one(name) and ChromeTrace.contains(step, one(name)), "the program's region holds %r" % name)
    calls = trace.regions("NVTX range of the call")
    for name in ("ncclAllReduce ncclFloat32", "ncclAllGather ncclFloat16", "ncclSend ncclInt8", "ncclRecv ncclInt8"):
        check.expect(any(ChromeTrace.contains(c, one(name)) for c in calls), "NCCL's range of the call holds %r" % name)
    group_end = [e for e in trace.regions("NVTX range of ncclGroupEnd") if ChromeTrace.contains(step, e)]
    check.expect(len(group_end) == 1 and all(ChromeTrace.contains(group_end[0], one(n)) for n in ("Send", "Recv")),
                 "ncclGroupEnd's range holds the group's launch and tasks")
    check.expect(not ChromeTrace.contains(step, one("ncclBroadcast ncclFloat64")), "the broadcast after the step")
    check.expect(reduce_call["tid"] != step["tid"] and one("Reduce TREE/Simple")["tid"] == reduce_call["tid"],
                 "the second thread's reduce on its own thread")
    # Started A, B, C and stopped A, B, C: ends deferred so that they nest.
    check.expect(ChromeTrace.contains(one("AllGather RING/Simple"), one("Send")) and
                 ChromeTrace.contains(one("Send"), one("Recv")), "one plan's tasks nest in start order")
stand_ins = trace.regions("cuLaunchKernel stand-in")
launches = trace.regions("kernel launch", "nccl")
check.expect(len(stand_ins) == 4 and all(any(ChromeTrace.contains(l, s) for l in launches) for s in stand_ins),
             "each launch's CUDA call inside a 'kernel launch' region")


def samples(name):
    return [e["args"]["value"] for e in trace.of_phase("C", name) if e.get("cat") == "nccl"]


# bytes: API calls (count × size), then tasks, in time order per thread.
check.expect(sorted(samples("nccl bytes")) == sorted([4096, 4096, 512, 100, 100, 512, 100, 100, 512, 512, 64, 64]),
             "bytes of every call and task, got %s" % samples("nccl bytes"))
check.expect(sorted(samples("nccl channels")) == [1, 1, 1, 1, 2, 4], "channels, got %s" % samples("nccl channels"))
check.expect(sorted(samples("nccl root")) == [0, 0, 1, 1], "roots of broadcast and reduce, got %s" % samples("nccl root"))
check.expect(samples("nccl peer") == [1, 1], "peers of send and receive, got %s" % samples("nccl peer"))
check.expect(sorted(set(samples("nccl rank"))) == [0, 1] and len(samples("nccl rank")) == sum(expected.values()),
             "a rank sample in every region, got %d" % len(samples("nccl rank")))
check.expect(sorted(set(samples("nccl communicator"))) == [0, 1], "communicator indices 0 and 1")
metadata = trace.metadata
run_metadata = metadata.get("run", {})
check.expect(run_metadata.get("nccl-communicator-0") == "rank 0 of 2 on 1 node, hash 0x000000001234abcd, name world",
             "communicator 0 described, got %r" % run_metadata.get("nccl-communicator-0"))
check.expect(run_metadata.get("nccl-communicator-1") == "rank 1 of 2 on 1 node, hash 0x0000000000005678",
             "communicator 1 described (no name), got %r" % run_metadata.get("nccl-communicator-1"))
for key, value in (("nccl-profiler-interface", "v5"), ("nccl-communicators", 2), ("nccl-regions", 16),
                   ("nccl-region-ends-deferred", 2), ("nccl-unknown-datatypes", 0),
                   ("unbalanced-region-ends", 0), ("unmatched-region-ends", 0), ("unfinished-regions", 0)):
    check.expect(metadata.get(key) == value, "%s %r, got %r" % (key, value, metadata.get(key)))

# --- summary and report -------------------------------------------------------
check.expect("kernel launch [nccl]" in stderr and "training step" in stderr,
             "the summary's host regions show nccl regions: %s" % stderr)
report_page = output + ".html"
if check.expect(os.path.exists(report_page), "the report %s" % report_page):
    with open(report_page, errors="replace") as f:
        page = f.read()
    for name in ("ncclAllReduce ncclFloat32", "AllGather RING/Simple", "kernel launch"):
        check.expect(name in page, "the report names %r" % name)

# --- otf2 -----------------------------------------------------------------------
if with_otf2:
    archive = os.path.join(output, "traces.otf2")
    passed, report = checked_by(options.otf2_check, archive)
    check.expect(passed, "ferret-otf2-check: " + report)
    passed, printed = checked_by(options.otf2_print, archive)
    check.expect(passed and "INVALID" not in printed, "otf2-print reads the archive")
    passed, definitions = checked_by(options.otf2_print, "-G", archive)
    for text in ('"ncclAllReduce ncclFloat32"', '"Send"', '"kernel launch"', '"nccl bytes"', '"nccl"'):
        check.expect(text in definitions, "the archive defines %s" % text)
else:
    check.skipped("the OTF2 checks", "ferret built without OTF2")

# --- tau --------------------------------------------------------------------------
tau = os.path.join(options.work, "tau")
status, _, stderr = run([options.driver, options.plugin], {"FERRET_BACKEND": "tau", "FERRET_OUTPUT": tau})
check.expect(status == 0, "the driver into tau: %s" % stderr)
passed, report = checked_by(options.tau_check, tau)
check.expect(passed, "ferret-tau-check: " + report)
paths = tau_call_paths(tau)
for path in (["training step", "NVTX range of the call", "ncclAllReduce ncclFloat32"],
             ["NVTX range of ncclGroupEnd", "AllGather RING/Simple", "Send", "Recv"],
             ["kernel launch", "cuLaunchKernel stand-in"]):
    check.expect(any(found[-len(path):] == path for found in paths), "TAU has the call path %s" % path)
check.expect("nccl bytes" in tau_text(tau), "TAU's user events hold nccl bytes")

# --- the v4 interface: only the enqueued operations -------------------------------
v4 = os.path.join(options.work, "v4.json")
status, stdout, stderr = run([options.driver, "--interface", "4", options.plugin],
                             {"FERRET_BACKEND": "chrome", "FERRET_OUTPUT": v4})
check.expect(status == 0 and "activation mask 0x6" in stdout, "v4: coll and p2p asked for: %r %s" % (stdout, stderr))
passed, report = checked_by(options.trace_check, v4)
check.expect(passed, "ferret-trace-check (v4): " + report)
if os.path.exists(v4):
    old = ChromeTrace(v4)
    names = sorted(e["name"] for e in old.regions(category="nccl"))
    check.expect(names == sorted(["AllReduce RING/LL", "AllGather RING/Simple", "Send", "Recv",
                                  "Broadcast RING/LL128", "Reduce TREE/Simple"]),
                 "v4: the six enqueued operations, got %s" % names)
    check.expect(old.metadata.get("nccl-profiler-interface") == "v4", "v4 in the metadata")

# --- no session: an empty activation mask, quiet, nothing written ------------------
off = os.path.join(options.work, "off.json")
status, stdout, stderr = run([options.driver, options.plugin], {"FERRET_OUTPUT": off})
check.expect(status == 0 and "activation mask 0x0" in stdout and stderr == "" and not os.path.exists(off),
             "without FERRET_BACKEND: mask 0, quiet, no output (%r %r)" % (stdout, stderr))

# --- ferret-run sets NCCL_PROFILER_PLUGIN ---------------------------------------------
through = os.path.join(options.work, "ferret-run.json")
status, stdout, stderr = run([options.ferret_run, "--backend", "chrome", "--output", through, "--", options.driver],
                             {"NCCL_PROFILER_PLUGIN": "/nonexistent/libnccl-profiler.so"})
check.expect(status == 0, "the driver through ferret-run: %s" % stderr)
check.expect("replacing NCCL_PROFILER_PLUGIN=/nonexistent/libnccl-profiler.so" in stderr,
             "ferret-run says it replaces another plugin: %r" % stderr)
if check.expect(os.path.exists(through), "ferret-run wrote %s" % through):
    check.expect(len(ChromeTrace(through).regions(category="nccl")) == sum(expected.values()),
                 "through NCCL_PROFILER_PLUGIN, the same regions")
check.report()
