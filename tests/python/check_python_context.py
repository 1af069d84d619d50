"""Python call paths as the calling context of GPU work, without a GPU:
python_context.py launches through a stand-in GPU library (fake_gpu.cpp, via
ctypes, with the GIL released and held) from user functions, an installed
package, a method, a deep recursion, a Python thread and a native thread.
One run into chrome, summary and otf2 and one into tau are checked by their
readers and for the paths they show; then FERRET_PYTHON=0 and =api; then the
same program under every other CPython release found (layouts of 3.9-3.13)."""
import argparse
import glob
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from ferret_outputs import ChromeTrace, Failures, checked_by, run, tau_call_paths  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser()
parser.add_argument("--python", required=True, help="the CPython to test (Debian's)")
parser.add_argument("--fake-gpu", required=True)
parser.add_argument("--module-path", required=True, help="the build's lib/python (import ferret)")
parser.add_argument("--trace-check", required=True)
parser.add_argument("--tau-check", required=True)
parser.add_argument("--otf2-check", default="")
parser.add_argument("--otf2-print", default="")
parser.add_argument("--work", required=True)
parser.add_argument("--environment", action="append", default=[],
                    help="NAME=VALUE for the program (sanitizer runtimes)")
options = parser.parse_args()
shutil.rmtree(options.work, ignore_errors=True)
os.makedirs(options.work)
check = Failures("python_context")

script = os.path.join(here, "python_context.py")
with open(script) as f:
    source = f.read().split("\n")


def line(marker):
    for number, text in enumerate(source, 1):
        if text.rstrip().endswith("# launch: " + marker):
            return number
    raise KeyError(marker)


def frame(marker, function):
    return "python_context.py:%d %s" % (line(marker), function)


def environment(**extra):
    env = {"PYTHONPATH": os.pathsep.join([os.path.join(here, "site-packages"), options.module_path]),
           "FERRET_FLUSH_INTERVAL": "0"}
    for assignment in options.environment:
        name, _, value = assignment.partition("=")
        env[name] = value
    env.update(extra)
    return env


def traced(python, name, backends, **extra):
    output = os.path.join(options.work, name)
    status, out, err = run([python, script, options.fake_gpu],
                           environment(FERRET_BACKEND=backends, FERRET_OUTPUT=output, **extra))
    check.expect(status == 0, "%s: exit status %d: %s%s" % (name, status, out, err))
    return output, err


def kernel_contexts(trace):
    contexts = {}
    for event in trace.kernels():
        contexts.setdefault(event["name"], []).append(event["args"].get("context", ""))
    return contexts


def expected_paths(minor):
    """What each kernel's context must say, for CPython 3.<minor>."""
    qualified = minor >= 11  # co_qualname
    module = frame("module calls main", "<module>")
    main = frame("main calls step", "main")
    return {
        "kernel_released_gil": sorted([
            "/".join([module, main, frame("kernel_released_gil", "step")]),
            "/".join(["annotated", module, frame("annotated step", "main"),
                      frame("kernel_released_gil", "step")])]),
        "kernel_holding_gil": ["/".join([module, frame("main calls step_holding_gil", "main"),
                                         frame("kernel_holding_gil", "step_holding_gil")])],
        "kernel_in_library": ["/".join([module, frame("main calls fakelib", "main"), "[fakelib] run"])],
        "kernel_in_method": ["/".join([module, frame("main calls forward", "main"),
                                       frame("kernel_in_method", "Model.forward" if qualified else "forward")])],
        "kernel_in_thread": ["/".join(["[python] " + ("Thread._bootstrap" if qualified else "_bootstrap"),
                                       frame("kernel_in_thread", "worker")])],
        "kernel_in_native_thread": ["(thread native_gpu_0)"],
    }


def check_paths(trace, minor, label):
    contexts = kernel_contexts(trace)
    for kernel, paths in expected_paths(minor).items():
        got = sorted(contexts.get(kernel, []))
        check.expect(got == paths, "%s: %s in %s, got %s" % (label, kernel, paths, got))
    deep = contexts.get("kernel_deep", [""])[0].split("/")
    check.expect(len(deep) == 17 and deep[0] == "[\u2026]" and
                 deep[-1] == frame("kernel_deep", "deep") and
                 all(node == frame("recursion", "deep") for node in deep[1:-1]),
                 "%s: the deep recursion keeps its 16 innermost frames under [\u2026], got %s"
                 % (label, "/".join(deep)))


def minor_of(python):
    status, out, _ = run([python, "-c", "import sys; print(sys.version_info[1])"], {})
    return int(out) if status == 0 else None


# --- Debian's CPython: every backend ----------------------------------------
minor = minor_of(options.python)
backends = "chrome,summary" + (",otf2" if options.otf2_check else "")
output, stderr = traced(options.python, "run", backends)
passed, report = checked_by(options.trace_check, output + ".json")
check.expect(passed, "ferret-trace-check: " + report)
trace = ChromeTrace(output + ".json")
check_paths(trace, minor, "python%d" % minor)
check.expect(not trace.regions(category="python"), "Python frames are never host regions")
check.expect(len(trace.regions("annotated")) == 1, "the ferret.region in Python is a host region")
check.expect(trace.metadata.get("python-call-stacks-written", 0) >= 9,
             "python-call-stacks-written counts the stacks written, got %r"
             % trace.metadata.get("python-call-stacks-written"))
step_path = expected_paths(minor)["kernel_released_gil"][0]
check.expect(step_path in stderr, "the summary's GPU time by context shows %r" % step_path)
check.expect("(thread native_gpu_0)" in stderr, "the native thread's kernel under (thread native_gpu_0)")
if options.otf2_check:
    archive = os.path.join(output, "traces.otf2")
    passed, report = checked_by(options.otf2_check, archive)
    check.expect(passed, "ferret-otf2-check: " + report)
    passed, definitions = checked_by(options.otf2_print, "-G", archive)
    check.expect(passed and step_path in definitions, "the archive names the context %r" % step_path)
else:
    check.skipped("the OTF2 checks", "ferret built without OTF2")

tau_output, _ = traced(options.python, "tau", "tau")
passed, report = checked_by(options.tau_check, tau_output)
check.expect(passed, "ferret-tau-check: " + report)
# TAU writes only called functions: its paths keep the host's regions, not the
# Python frames (docs/calling-context.md).
copy_path = ["annotated", "cudaMemcpyAsync"]
check.expect(any(found[-len(copy_path):] == copy_path for found in tau_call_paths(tau_output)),
             "TAU's call paths of the copy's bytes: %s" % copy_path)

# --- switched off, and the C API reader (frames only with the GIL held) -----
output, _ = traced(options.python, "off", "chrome", FERRET_PYTHON="0")
contexts = kernel_contexts(ChromeTrace(output + ".json"))
check.expect(sorted(contexts.get("kernel_released_gil", [])) == ["", "annotated"],
             "FERRET_PYTHON=0: only the annotated region, got %s" % contexts.get("kernel_released_gil"))
output, _ = traced(options.python, "api", "chrome", FERRET_PYTHON="api")
contexts = kernel_contexts(ChromeTrace(output + ".json"))
check.expect(contexts.get("kernel_holding_gil") == expected_paths(minor)["kernel_holding_gil"],
             "FERRET_PYTHON=api: frames of a launch holding the GIL, got %s"
             % contexts.get("kernel_holding_gil"))
check.expect(sorted(contexts.get("kernel_released_gil", [])) == ["", "annotated"],
             "FERRET_PYTHON=api: none without the GIL, got %s" % contexts.get("kernel_released_gil"))
output, stderr = traced(options.python, "bad", "chrome", FERRET_PYTHON="sometimes")
check.expect("FERRET_PYTHON='sometimes' is not valid (expected 0, 1 or api;" in stderr,
             "a bad FERRET_PYTHON says so in one line: %r" % stderr)

# --- the other CPython releases of this machine ------------------------------
others = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")) +
                glob.glob("/usr/bin/python3.[0-9]*"))
tested = {minor}
for python in others:
    other_minor = minor_of(python)
    if other_minor is None or other_minor < 9 or other_minor in tested:
        continue
    tested.add(other_minor)
    # No '.' in the name: the backend would take ".<minor>" for an extension.
    output, _ = traced(python, "python3_%d" % other_minor, "chrome")
    if check.expect(os.path.exists(output + ".json"), "python3.%d wrote %s.json" % (other_minor, output)):
        check_paths(ChromeTrace(output + ".json"), other_minor, "python3.%d" % other_minor)
print("python_context: CPython releases tested: %s" % ", ".join("3.%d" % m for m in sorted(tested)))
check.report()
