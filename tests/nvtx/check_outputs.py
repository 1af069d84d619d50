"""NVTX ranges as ferret regions, through every backend: runs nvtx_program
(tests/nvtx/nvtx_program.cpp) into chrome, summary and otf2 at once and into
tau, checks each output with its reader or checker, then what it shows.
Then the same program built without ferret's NVTX hook, through ferret-run
(NVTX_INJECTION64_PATH), and once without FERRET_BACKEND (nothing written)."""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from ferret_outputs import ChromeTrace, Failures, checked_by, run, tau_call_paths  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--linked", required=True, help="nvtx_program linked with ferret::nvtx")
parser.add_argument("--unlinked", required=True, help="the same without ferret::nvtx")
parser.add_argument("--ferret-run", required=True)
parser.add_argument("--nvtx-library", required=True, help="libferret_nvtx.so")
parser.add_argument("--trace-check", required=True)
parser.add_argument("--tau-check", required=True)
parser.add_argument("--otf2-check", default="")
parser.add_argument("--otf2-print", default="")
parser.add_argument("--work", required=True)
options = parser.parse_args()

shutil.rmtree(options.work, ignore_errors=True)
os.makedirs(options.work)
check = Failures("nvtx")
with_otf2 = bool(options.otf2_check)
backends = "chrome,summary" + (",otf2" if with_otf2 else "")
output = os.path.join(options.work, "nvtx")
status, _, stderr = run([options.linked], {"FERRET_BACKEND": backends, "FERRET_OUTPUT": output})
check.expect(status == 0, "nvtx_program (linked) exit status %d: %s" % (status, stderr))

# --- chrome: the regions, nesting, domains, payloads, counts ---------------
passed, report = checked_by(options.trace_check, output + ".json")
check.expect(passed, "ferret-trace-check: " + report)
trace = ChromeTrace(output + ".json")
for name in ("outer", "inner", "alpha", "beta", "io", "gr\u00f6\u00dfe"):
    check.expect(len(trace.regions(name, "nvtx")) == 1, "one region %r of domain nvtx" % name)
check.expect(len(trace.regions("assemble", "nvtx:Solver/phases")) == 3,
             "three regions 'assemble' of domain nvtx:Solver/phases (registered string, category)")
outer, inner, own = (trace.regions("outer"), trace.regions("inner"), trace.regions("ferret inside"))
if check.expect(outer and inner and own, "outer, inner and ferret's region"):
    check.expect(ChromeTrace.contains(outer[0], own[0]) and ChromeTrace.contains(own[0], inner[0]),
                 "outer ⊃ ferret inside ⊃ inner on one thread")
payloads = sorted(e["args"].get("value", e["args"].get("assemble"))
                  for e in trace.of_phase("C", "assemble"))
check.expect(payloads == [2.5, 5.0, 7.5], "the payloads as counter samples, got %s" % payloads)
check.expect(len(trace.of_phase("i", "residual")) == 1 and len(trace.of_phase("C", "residual")) == 1,
             "the mark 'residual' with its payload as a counter sample")
check.expect(len(trace.of_phase("i", "checkpoint")) == 1, "the mark 'checkpoint'")
# The payload extension: a core push ended by nvtxRangePopPayload (NCCL 2.28's
# ncclCommInitRank), then a range, a mark and a start/end range with only a payload.
check.expect(len(trace.regions("commInit", "nvtx:Comms")) == 1,
             "one region 'commInit' of domain nvtx:Comms, ended by nvtxRangePopPayload")
check.expect(len(trace.regions("comm parameters", "nvtx:Comms")) == 2,
             "two payload-only ranges named by their schema 'comm parameters'")
check.expect(len(trace.of_phase("i", "comm parameters")) == 1, "the payload-only mark")
contexts = {e["name"]: e["args"].get("context") for e in trace.kernels()}
check.expect(contexts.get("kernel_in_inner") == "outer/ferret inside/inner",
             "the kernel in 'inner' attributed to outer/ferret inside/inner, got %r"
             % contexts.get("kernel_in_inner"))
check.expect(contexts.get("kernel_in_beta") == "beta",
             "the reused buffer's second name: got %r" % contexts.get("kernel_in_beta"))
check.expect(contexts.get("kernel_in_assemble") == "assemble", "the registered string's range")
check.expect(contexts.get("kernel_in_comm_init") == "commInit" and
             contexts.get("kernel_in_payload_range") == "comm parameters",
             "kernels in the payload extension's ranges: got %r, %r"
             % (contexts.get("kernel_in_comm_init"), contexts.get("kernel_in_payload_range")))
metadata = trace.metadata
check.expect(metadata.get("nvtx-unbalanced-pops") == 1, "nvtx-unbalanced-pops 1")
check.expect(metadata.get("nvtx-ranges-ended-on-another-thread") == 1,
             "nvtx-ranges-ended-on-another-thread 1")
check.expect(metadata.get("unmatched-region-ends") == 1, "the foreign end, unmatched on its thread")
check.expect(metadata.get("unfinished-regions") == 2,
             "'async request' and 'left open' closed at the end and counted, got %r"
             % metadata.get("unfinished-regions"))
check.expect(len(trace.regions("async request", "nvtx")) == 1 and
             len(trace.regions("left open", "nvtx")) == 1, "the ranges left open are kept")

# --- summary: GPU time by context ----------------------------------------
for path in ("outer/ferret inside/inner", "beta", "assemble"):
    check.expect(path in stderr, "the summary's GPU time by context has %r" % path)

# --- otf2: the reader API checker, otf2-print, the regions and contexts ------
if with_otf2:
    archive = os.path.join(output, "traces.otf2")
    passed, report = checked_by(options.otf2_check, archive)
    check.expect(passed, "ferret-otf2-check: " + report)
    passed, printed = checked_by(options.otf2_print, archive)
    check.expect(passed and "INVALID" not in printed, "otf2-print reads the archive")
    passed, definitions = checked_by(options.otf2_print, "-G", archive)
    for text in ('"outer"', '"inner"', '"assemble"', '"outer/ferret inside/inner"'):
        check.expect(text in definitions, "the archive defines %s" % text)
else:
    check.skipped("the OTF2 checks", "ferret built without OTF2")

# --- tau: the checker, then call paths through the NVTX ranges -------------
tau = os.path.join(options.work, "tau")
status, _, stderr = run([options.linked], {"FERRET_BACKEND": "tau", "FERRET_OUTPUT": tau})
check.expect(status == 0, "nvtx_program into tau: %s" % stderr)
passed, report = checked_by(options.tau_check, tau)
check.expect(passed, "ferret-tau-check: " + report)
paths = tau_call_paths(tau)
for path in (["outer", "ferret inside", "inner"], ["outer"], ["assemble"], ["beta"]):
    check.expect(any(found[-len(path):] == path for found in paths), "TAU has the call path %s" % path)

# --- unmodified: ferret-run sets NVTX_INJECTION64_PATH --------------------
unlinked = os.path.join(options.work, "unlinked.json")
status, _, stderr = run([options.ferret_run, "--backend", "chrome", "--output", unlinked, "--",
                         options.unlinked], {})
check.expect(status == 0, "the unlinked program through ferret-run: %s" % stderr)
if check.expect(os.path.exists(unlinked), "ferret-run wrote %s" % unlinked):
    again = ChromeTrace(unlinked)
    check.expect(len(again.regions("inner", "nvtx")) == 1 and
                 len(again.regions("assemble", "nvtx:Solver/phases")) == 3 and
                 len(again.regions("commInit", "nvtx:Comms")) == 1 and
                 again.metadata.get("unfinished-regions") == 2,
                 "through NVTX_INJECTION64_PATH, the same ranges, the payload extension's too")
status, _, stderr = run([options.unlinked], {"FERRET_OUTPUT": os.path.join(options.work, "off.json"),
                                             "NVTX_INJECTION64_PATH": options.nvtx_library})
check.expect(status == 0 and stderr == "" and not os.path.exists(os.path.join(options.work, "off.json")),
             "injected without FERRET_BACKEND: runs quietly, writes nothing (%r)" % stderr)
check.report()
