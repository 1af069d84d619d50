"""ferret-merge on bad input: truncated, empty, garbage, missing or foreign
files, and traces of different runs are each refused with one line on
stderr, never a traceback and never a merged file; traces of one run merge,
and --matrix adds up the kernels' device-initiated bytes of each rank.
Synthetic rank traces (as the chrome backend writes them with the MPI layer):
no MPI needed."""
import argparse
import json
import os
import shutil
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--merge", required=True)
parser.add_argument("--work", required=True)
options = parser.parse_args()
shutil.rmtree(options.work, ignore_errors=True)
os.makedirs(options.work)
failures = []


def rank_trace(rank, size, job, peer_sends=(), kernels=()):
    pid = 1000 + rank
    events = [{"ph": "M", "name": "process_name", "pid": pid, "args": {"name": "app"}},
              {"ph": "X", "name": "work", "pid": pid, "tid": pid, "ts": 1.0, "dur": 5.0}]
    # Kernel slices as the chrome backend writes them: on the GPU's process,
    # with the launch's device-initiated bytes per memory reached.
    for number, (device, traffic) in enumerate(kernels):
        events.append({"ph": "X", "cat": "kernel", "name": "stencil", "pid": -2147483648 + device, "tid": 7,
                       "ts": 4.0 + number, "dur": 0.5,
                       "args": dict({"correlation": 10 + number, "device": device, "stream": 7}, **traffic)})
    for to in peer_sends:
        events.append({"ph": "i", "s": "t", "cat": "mpi-message", "name": "MPI send", "pid": pid, "tid": pid,
                       "ts": 2.0, "args": {"communicator": 0, "to": to, "tag": 7, "bytes": 64}})
    if rank == 1:
        events.append({"ph": "i", "s": "t", "cat": "mpi-message", "name": "MPI receive", "pid": pid,
                       "tid": pid, "ts": 3.0, "args": {"communicator": 0, "from": 0, "tag": 7, "bytes": 64}})
    metadata = {"mpi-rank": rank, "mpi-size": size, "start-monotonic-raw-ns": 1000000, "pid": pid,
                "run": {"mpi-job": job}}
    return {"traceEvents": events, "metadata": metadata}


def write(name, content):
    path = os.path.join(options.work, name)
    mode = "wb" if isinstance(content, bytes) else "w"
    with open(path, mode) as handle:
        handle.write(content if isinstance(content, (str, bytes)) else json.dumps(content))
    return path


def merge(name, *traces):
    output = os.path.join(options.work, name + "-merged.json")
    done = subprocess.run([sys.executable, options.merge, "-o", output] + list(traces),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=120)
    return done, output


def expect(condition, message):
    if not condition:
        failures.append(message)


rank0 = write("rank0.json", rank_trace(0, 2, "job-a", peer_sends=[1]))
rank1 = write("rank1.json", rank_trace(1, 2, "job-a"))
done, output = merge("good", rank0, rank1)
expect(done.returncode == 0 and "2 ranks, 1 messages" in done.stdout,
       "one run merges: %d %r %r" % (done.returncode, done.stdout, done.stderr))

with open(rank0) as handle:
    whole = handle.read()
# Device-initiated bytes: rank 0's kernels on GPU 0 load from GPU 1 (two
# launches, summed) and store to GPU 1 and to host memory; rank 1's kernel on
# its GPU 1 loads from host memory. A user's own argument of that form on a
# host slice, or with no memory's name, is not counted.
rank0_kernels = write("rank0-kernels.json", dict(rank_trace(0, 2, "job-a", peer_sends=[1], kernels=[
    (0, {"loaded from GPU 1": 4096, "stored to GPU 1": 512}),
    (0, {"loaded from GPU 1": 1024, "stored to host": 8, "loaded from nowhere": 3})])))
rank1_kernels = rank_trace(1, 2, "job-a", kernels=[(1, {"loaded from host": 2048})])
rank1_kernels["traceEvents"].append({"ph": "X", "name": "mine", "pid": 1001, "tid": 1001, "ts": 6.0, "dur": 1.0,
                                     "args": {"loaded from GPU 0": 99}})
rank1_kernels = write("rank1-kernels.json", rank1_kernels)
done = subprocess.run([sys.executable, options.merge, "-o", os.path.join(options.work, "kernels-merged.json"),
                       "--matrix", rank0_kernels, rank1_kernels], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                      universal_newlines=True, timeout=120)
expect(done.returncode == 0, "kernels' traffic merges: %d %r" % (done.returncode, done.stderr))
printed = done.stdout.splitlines()
heading = "device-initiated bytes (kernels' loads and stores) from (row) to (column), per rank"
expect(heading in printed, "--matrix prints the device-initiated bytes: %r" % done.stdout)
if heading in printed:
    table = [line.split() for line in printed[printed.index(heading) + 1:]]
    expect(table == [["rank", "from\\to", "host", "GPU", "0", "GPU", "1"],
                     ["0", "GPU", "0", "8", "0", "512"],
                     ["0", "GPU", "1", "0", "5120", "0"],
                     ["1", "host", "0", "0", "2048"]],
           "each rank's device-initiated bytes, loads from the memory's end: %r" % table)
if done.returncode == 0:
    with open(os.path.join(options.work, "kernels-merged.json")) as handle:
        merged = json.load(handle)["metadata"]
    expect(merged.get("device-initiated-bytes") == [
        {"rank": 0, "from": "GPU 0", "to": "host", "bytes": 8},
        {"rank": 0, "from": "GPU 0", "to": "GPU 1", "bytes": 512},
        {"rank": 0, "from": "GPU 1", "to": "GPU 0", "bytes": 5120},
        {"rank": 1, "from": "host", "to": "GPU 1", "bytes": 2048}],
        "the merged metadata's device-initiated bytes: %r" % merged.get("device-initiated-bytes"))
done, output = merge("no-kernels", rank0, rank1)
expect(done.returncode == 0 and "device-initiated" not in done.stdout, "no device-initiated lines without")

other_size = write("rank1-of-4.json", rank_trace(1, 4, "job-b"))
other_job = write("rank1-other-job.json", rank_trace(1, 2, "job-b"))
os.makedirs(os.path.join(options.work, "empty-directory"))
refusals = {
    "truncated": ([write("truncated.json", whole[:len(whole) // 2]), rank1], "not a complete JSON document"),
    "empty": ([write("empty.json", ""), rank1], "not a complete JSON document"),
    "garbage": ([write("garbage.json", b"\x89PNG\r\n\x1a\n\xff\xfe garbage"), rank1], "not UTF-8 text"),
    "not JSON": ([write("text.json", "hello, world\n"), rank1], "not a complete JSON document"),
    "missing": ([os.path.join(options.work, "missing.json"), rank1], "No such file or directory"),
    "a list": ([write("list.json", "[1, 2]"), rank1], "not a Chrome trace"),
    "no rank": ([write("no-rank.json", {"traceEvents": [], "metadata": {}}), rank1], "has no mpi-rank"),
    "no traces": ([os.path.join(options.work, "empty-directory")], "no .json traces"),
    "another size": ([rank0, other_size], "are not of one run"),
    "another job": ([rank0, other_job], "are not of one run"),
    "a bad event": ([write("bad-event.json", dict(rank_trace(1, 2, "job-a"), traceEvents=[{"ph": "X", "ts": "x"}])),
                     rank0], "malformed"),
    "bad device-initiated bytes": ([write("bad-bytes.json", rank_trace(1, 2, "job-a", kernels=[
        (1, {"stored to GPU 0": "many"})])), rank0], "malformed"),
}
for case, (traces, reason) in refusals.items():
    done, output = merge(case.replace(" ", "-"), *traces)
    lines = done.stderr.splitlines()
    expect(done.returncode != 0, "%s: refused, got exit status %d" % (case, done.returncode))
    expect(len(lines) == 1 and lines[0].startswith("ferret-merge: ") and reason in lines[0],
           "%s: one line saying %r, got %r" % (case, reason, done.stderr))
    expect("Traceback" not in done.stderr, "%s: no traceback" % case)
    expect(not os.path.exists(output), "%s: no merged file" % case)

done = subprocess.run([sys.executable, options.merge, "-o", os.path.join(options.work, "no", "such", "dir.json"),
                       rank0, rank1], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
expect(done.returncode != 0 and done.stderr.count("\n") == 1 and "cannot write" in done.stderr,
       "an output that cannot be written: one line, got %r" % done.stderr)

for failure in failures:
    print("ferret_merge_test: FAILED: " + failure)
print("ferret_merge_test: %d failed" % len(failures))
sys.exit(1 if failures else 0)
