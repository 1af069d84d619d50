#!/usr/bin/python3
"""The python3-otf2 reader check (support/otf2_python_reader.py) passes a good
archive and fails each broken one, written here with python3-otf2's writer."""
import os
import subprocess
import sys
import tempfile

import otf2

READER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "support", "otf2_python_reader.py")


def write(directory, events):
    """An archive with one thread; `events` writes its records."""
    with otf2.writer.open(directory, timer_resolution=1_000_000_000) as trace:
        node = trace.definitions.system_tree_node("node")
        process = trace.definitions.location_group("process", system_tree_parent=node)
        regions = {name: trace.definitions.region(name) for name in ("a", "b")}
        writer = trace.event_writer("thread", group=process)
        events(writer, regions)
    return os.path.join(directory, "traces.otf2")


def read(anchor):
    result = subprocess.run([sys.executable, READER, anchor], capture_output=True, text=True)
    return result.returncode, result.stdout


def main():
    failures = []
    cases = {
        "good": (0, lambda w, r: (w.enter(10, r["a"]), w.enter(20, r["b"]), w.leave(30, r["b"]), w.leave(40, r["a"]))),
        "leave of another region": (1, lambda w, r: (w.enter(10, r["a"]), w.leave(20, r["b"]))),
        "left open": (1, lambda w, r: (w.enter(10, r["a"]),)),
        "leave with nothing open": (1, lambda w, r: (w.leave(10, r["a"]),)),
    }
    with tempfile.TemporaryDirectory() as scratch:
        for number, (name, (expected, events)) in enumerate(cases.items()):
            status, out = read(write(os.path.join(scratch, str(number)), events))
            print(f"{name}: exit {status}: {out.strip().splitlines()[-1]}")
            if status != expected:
                failures.append(name)
    if failures:
        print("not as expected: " + ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
