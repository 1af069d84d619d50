"""The `ferret` module (backends/collectors/python/module): module_program.py uses every
part of it once into a chrome trace, which is checked by ferret-trace-check
and then for each region, mark, counter, data object, thread name and
metadata entry. Then the module without a runtime library: one line, no effect."""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from ferret_outputs import ChromeTrace, Failures, checked_by, run  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser()
parser.add_argument("--python", required=True)
parser.add_argument("--module-path", required=True)
parser.add_argument("--trace-check", required=True)
parser.add_argument("--work", required=True)
parser.add_argument("--environment", action="append", default=[])
options = parser.parse_args()
shutil.rmtree(options.work, ignore_errors=True)
os.makedirs(options.work)
check = Failures("python_module")
program = os.path.join(here, "module_program.py")
extra = dict(assignment.partition("=")[::2] for assignment in options.environment)

output = os.path.join(options.work, "module.json")
status, out, err = run([options.python, program],
                       dict(extra, PYTHONPATH=options.module_path, FERRET_BACKEND="chrome",
                            FERRET_OUTPUT=output))
check.expect(status == 0 and "module_program: done" in out, "module_program: %d %s%s" % (status, out, err))
passed, report = checked_by(options.trace_check, output)
check.expect(passed, "ferret-trace-check: " + report)
trace = ChromeTrace(output)
for name in ("outer", "named by decorator", "async region", "explicit", "in worker"):
    check.expect(len(trace.regions(name)) == 1, "one region %r" % name)
check.expect(len(trace.regions("inner", "mylib")) == 1, "the region 'inner' of domain mylib")
decorated = trace.regions("decorated")
if check.expect(len(decorated) == 1, "@ferret.function names the region after the function"):
    args = trace.location("decorated")
    with open(program) as f:
        decorator_line = f.read().split("\n").index("@ferret.function") + 1
    check.expect(str(args.get("file", "")).endswith("module_program.py") and args.get("line") == decorator_line,
                 "with its file and first line, got %s" % args)
outer, inner = trace.regions("outer"), trace.regions("inner")
if outer and inner and decorated:
    check.expect(ChromeTrace.contains(outer[0], inner[0]) and ChromeTrace.contains(inner[0], decorated[0]),
                 "regions nest: outer > inner > decorated")
check.expect(not trace.regions("while paused"), "nothing while paused")
check.expect(len(trace.of_phase("i", "inside decorated")) == 1, "the mark")
check.expect(sorted(e["args"]["value"] for e in trace.of_phase("C", "loss")) == [0.25, 0.5],
             "the counter's two samples")
objects = {e["name"]: e for e in trace.of_phase("b")}
check.expect(objects.get("buffer", {}).get("args", {}).get("bytes") == 1024, "the bytearray as a data object")
weights = objects.get("weights", {}).get("args", {})
check.expect(weights.get("bytes") == 4096 and weights.get("memory") == "device" and weights.get("device") == 1,
             "a CUDA tensor as a device data object on its device, got %s" % weights)
check.expect(objects.get("range", {}).get("args", {}).get("memory") == "pinned", "an explicit range")
thread_names = [e["args"]["name"] for e in trace.of_phase("M", "thread_name")]
check.expect("python worker" in thread_names, "the thread's name, got %s" % thread_names)
run_metadata = trace.metadata.get("run", {})
check.expect(run_metadata.get("dataset") == "mnist" and run_metadata.get("batch") == 64,
             "the run metadata, got %s" % run_metadata)

# A collector named in FERRET_BACKEND (the CUDA collector's library was loaded
# by name while the runtime held its lock, and its initialiser waited for that
# lock for ever): one line, the program runs on, the backend named with it writes.
for backends in ("cupti", "chrome,cupti"):
    output = os.path.join(options.work, "collector.json")
    try:
        status, out, err = run([options.python, "-c", "import ferret\nwith ferret.region('r'): pass\nprint('done')"],
                               dict(extra, PYTHONPATH=options.module_path, FERRET_BACKEND=backends,
                                    FERRET_OUTPUT=output, FERRET_VERBOSE="0"), timeout=20)
    except subprocess.TimeoutExpired:
        check.expect(False, "FERRET_BACKEND=%s: import ferret hung" % backends)
        continue
    check.expect(status == 0 and out.strip() == "done", "FERRET_BACKEND=%s: %d %s%s" % (backends, status, out, err))
    check.expect(err.count("\n") == 1 and err.startswith("ferret: 'cupti' in FERRET_BACKEND is a collector, not a backend"),
                 "FERRET_BACKEND=%s: one line says cupti is a collector, got %r" % (backends, err))
    check.expect(os.path.exists(output) == backends.startswith("chrome"),
                 "FERRET_BACKEND=%s: the chrome trace exactly when chrome is named" % backends)
    if os.path.exists(output):
        os.remove(output)

# Without a runtime library (a copy of the module with none beside it): the
# program runs on, and one line says why.
isolated = os.path.join(options.work, "isolated")
shutil.copytree(os.path.join(options.module_path, "ferret"), os.path.join(isolated, "ferret"))
status, out, err = run([options.python, "-c", "import ferret; ferret.mark('x'); "
                        "ferret.region('r').__enter__(); print(ferret.available(), ferret.recording())"],
                       dict(extra, PYTHONPATH=isolated, FERRET_BACKEND="chrome",
                            FERRET_OUTPUT=os.path.join(options.work, "none.json")))
check.expect(status == 0 and out.strip() == "False False", "without a runtime: runs, does nothing (%r)" % out)
check.expect(err.count("\n") == 1 and err.startswith("ferret: cannot load libferret_runtime.so"),
             "without a runtime: one line says why, got %r" % err)
check.report()
