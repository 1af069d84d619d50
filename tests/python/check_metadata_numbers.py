"""Numbers as run metadata from Python (ferret.set_metadata) and through the C
API: integers exact over the whole 64-bit range (signed and unsigned), one
beyond it refused with one line, never an exception into the program; the
chrome trace that holds them is strict JSON with every value exact."""
import argparse
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from ferret_outputs import Failures, checked_by, run  # noqa: E402

PROGRAM = r'''
import ctypes, ferret
values = {"two-to-63": 2**63, "ten-to-30": 10**30, "two-to-53-plus-1": 2**53 + 1,
          "ten-to-400": 10**400, "minus-two-to-63": -2**63, "two-to-64-minus-1": 2**64 - 1,
          "minus-two-to-63-minus-1": -2**63 - 1, "two-to-64": 2**64, "ratio": 0.5}
for key, value in values.items():
    ferret.set_metadata(key, value)
class Unprintable:
    def __str__(self):
        raise RuntimeError("no text")
ferret.set_metadata("unprintable", Unprintable())
# The C API: a double said to be an integer.
runtime = ferret._lib
runtime.ferret_set_metadata_number(b"c-two-to-63", 2.0**63, 1)
runtime.ferret_set_metadata_number(b"c-minus-two-to-63", -2.0**63, 1)
runtime.ferret_set_metadata_number(b"c-two-to-64", 2.0**64, 1)
runtime.ferret_set_metadata_number(b"c-half", 2.5, 1)
runtime.ferret_set_metadata_number(b"c-nan", float("nan"), 1)
print("program: done")
'''

parser = argparse.ArgumentParser()
parser.add_argument("--python", required=True)
parser.add_argument("--module-path", required=True)
parser.add_argument("--trace-check", required=True)
parser.add_argument("--work", required=True)
parser.add_argument("--environment", action="append", default=[])
options = parser.parse_args()
shutil.rmtree(options.work, ignore_errors=True)
os.makedirs(options.work)
check = Failures("python_metadata_numbers")
extra = dict(assignment.partition("=")[::2] for assignment in options.environment)

output = os.path.join(options.work, "numbers.json")
status, out, err = run([options.python, "-c", PROGRAM],
                       dict(extra, PYTHONPATH=options.module_path, FERRET_BACKEND="chrome",
                            FERRET_OUTPUT=output, FERRET_VERBOSE="0"))
check.expect(status == 0 and "program: done" in out, "the program ran to its end: %d %s%s" % (status, out, err))
lines = err.splitlines()
refused = ["ten-to-30", "ten-to-400", "minus-two-to-63-minus-1", "two-to-64"]
for key in refused:
    said = [line for line in lines if "set_metadata('%s')" % key in line]
    check.expect(len(said) == 1 and said[0].startswith("ferret: ") and said[0].endswith("not recorded"),
                 "%s: refused in one line, got %s" % (key, said))
check.expect(sum("set_metadata: not recorded (RuntimeError: no text)" in line for line in lines) == 1,
             "a value whose str() raises: one line, got %r" % err)
check.expect(len(lines) == len(refused) + 1, "nothing else on stderr, got %r" % err)
check.expect("Traceback" not in err, "no exception reached the program")

passed, report = checked_by(options.trace_check, output)
check.expect(passed, "ferret-trace-check: " + report)
with open(output) as handle:
    run_metadata = json.load(handle)["metadata"]["run"]
expected = {"two-to-63": 2**63, "two-to-53-plus-1": 2**53 + 1, "minus-two-to-63": -2**63,
            "two-to-64-minus-1": 2**64 - 1, "ratio": 0.5,
            "c-two-to-63": 2**63, "c-minus-two-to-63": -2**63, "c-two-to-64": 2.0**64, "c-half": 2.5}
for key, value in expected.items():
    got = run_metadata.get(key)
    check.expect(got == value and type(got) is type(value), "%s: %r, got %r" % (key, value, got))
for key in refused + ["unprintable"]:
    check.expect(key not in run_metadata, "%s: not recorded, got %r" % (key, run_metadata.get(key)))
check.report()
