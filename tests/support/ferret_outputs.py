"""Reading ferret's outputs back in the process tests written in Python
(tests/nvtx, tests/python): each output is first checked by its real reader or
ferret's strict checker, then its content is looked at here."""
import glob
import json
import os
import re
import subprocess
import sys


class Failures:
    """Collects failed expectations; report() prints them and exits non-zero.
    A part of the test that cannot run here is named with skipped(), and
    report() says so, so that a skip is never silent."""

    def __init__(self, test):
        self.test = test
        self.messages = []
        self.checked = 0
        self.skips = []

    def expect(self, condition, message):
        self.checked += 1
        if not condition:
            self.messages.append(message)
        return condition

    def skipped(self, part, reason):
        self.skips.append("%s (%s)" % (part, reason))
        print("%s: SKIPPED: %s: %s" % (self.test, part, reason))

    def report(self):
        for message in self.messages:
            print("%s: FAILED: %s" % (self.test, message))
        print("%s: %d passed, %d failed%s" % (self.test, self.checked - len(self.messages),
                                              len(self.messages),
                                              "; skipped: " + "; ".join(self.skips) if self.skips else ""))
        sys.exit(1 if self.messages else 0)


def run(command, environment, cwd=None, timeout=120):
    """Runs a program with `environment` added to a clean FERRET_* environment;
    returns (exit status, stdout, stderr). Raises subprocess.TimeoutExpired
    after `timeout` seconds."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FERRET_") and k not in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH")}
    env.update(environment)
    done = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def checked_by(checker, *arguments):
    """(passed, output) of a checker program."""
    done = subprocess.run([checker] + list(arguments), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
    return done.returncode == 0, done.stdout


class ChromeTrace:
    def __init__(self, path):
        with open(path) as f:
            self.document = json.load(f)
        self.events = self.document["traceEvents"]
        self.metadata = self.document.get("metadata", {})

    def regions(self, name=None, category=None):
        """Complete (X) events of host threads (not GPU tracks)."""
        return [e for e in self.events
                if e.get("ph") == "X" and e.get("cat") not in ("kernel", "memcpy", "memset")
                and (name is None or e.get("name") == name)
                and (category is None or e.get("cat") == category)]

    def kernels(self, name=None):
        return [e for e in self.events if e.get("ph") == "X" and e.get("cat") == "kernel"
                and (name is None or e.get("name") == name)]

    def of_phase(self, phase, name=None):
        return [e for e in self.events if e.get("ph") == phase and (name is None or e.get("name") == name)]

    def locations(self, name):
        """The source locations of a name (file, line, function; cat for a domain),
        which the metadata holds once per name rather than on every event."""
        return self.metadata.get("source-locations", {}).get(name, [])

    def location(self, name):
        """The source location of a name with one, or {} when it has none."""
        found = self.locations(name)
        return found[0] if found else {}

    @staticmethod
    def contains(outer, inner):
        """True when `inner` lies within `outer` on the same thread."""
        return (outer["tid"] == inner["tid"] and outer["ts"] <= inner["ts"]
                and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 1e-3)


def tau_functions(directory):
    """Function names (flat and call paths) of every profile.N.C.T file, in one set."""
    names = set()
    for path in glob.glob(os.path.join(directory, "profile.*")):
        with open(path, errors="replace") as f:
            lines = f.read().split("\n")
        count = int(lines[0].split()[0])
        for line in lines[2:2 + count]:
            if line.startswith('"'):
                names.add(line[1:line.index('"', 1)])
    return names


def tau_call_paths(directory):
    """Call paths as lists of names, without TAU's source locations ("name [{file} {line,0}]")."""
    paths = []
    for function in tau_functions(directory):
        if " => " in function:
            paths.append([re.sub(r" \[\{.*\}\]$", "", part) for part in function.split(" => ")])
    return paths


def tau_text(directory):
    """Every profile file of a TAU profile directory, joined."""
    text = []
    for path in sorted(glob.glob(os.path.join(directory, "profile.*"))):
        with open(path, errors="replace") as f:
            text.append(f.read())
    return "\n".join(text)
