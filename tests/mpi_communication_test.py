#!/usr/bin/env python3
"""MPI communication traced on 4 ranks (tests/support/mpi_communication_app.cpp).

--mode chrome: one Chrome trace per rank, each passing ferret-trace-check, with
  the MPI calls as regions of category "mpi" inside the program's regions;
  ferret-merge joins them into one trace (also passing ferret-trace-check) in
  which every one of the 4 x 74 messages is a flow from its send to its
  receive and no receive ends before its send began.
--mode otf2: one archive for the 4 ranks, read back by otf2-print (exit 0,
  nothing on stderr, no INVALID reference), ferret-otf2-check, python3-otf2's
  general checks (support/otf2_python_reader.py) and its MPI matching
  (support/otf2_mpi_messages.py: every message, request and collective, no
  receive before its send).
--mode otf2-skew: the same with skewed clocks (below): the archive's clock
  offsets put every receive after its send for OTF2's readers.
--mode tau: one TAU directory with every rank's profile.<rank>.0.<thread>,
  passing ferret-tau-check (all nodes 0..3, their mpi-rank and mpi-size), with the
  message sizes as TAU's MPI wrapper writes them: "Message size sent to node
  <n>" per peer (the counts and sizes the app sends), "... sent to all nodes"
  and "... received from all nodes" (74 each).
--mode summary: rank 0 prints the job summary (the other ranks nothing): the
  rank x rank matrix of point-to-point bytes (gathered in MPI_Finalize) with the
  bytes the app sends, and the "MPI calls over ranks" table lists the calls
  with their bytes.
--mode job: 16 ranks (--oversubscribe) with the summary and TAU backends at
  once: one TAU directory holds profile.<rank>.0.<thread> of every rank and
  passes ferret-tau-check; every number of the job summary (ranks, calls, min,
  mean and max time over the ranks, the rank of the max, the imbalance, per
  region and per MPI call; the message matrix) equals what the ranks' TAU
  profiles say, recomputed here.
--mode skew: the same with each rank's clock pretending to be off
  (FERRET_TEST_CLOCK_OFFSET_NS: 0, +40, -30, +70 ms): the offsets measured at
  MPI_Init and MPI_Finalize find the injected ones (within half the shortest
  round trip, the method's bound, published with them), the corrected
  merge has no receive before its send, and the uncorrected one has some.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys

RANKS = 4
MESSAGES_PER_RANK = 20 + 40 + 3 + 5 + 5 + 1  # ring, halo, persistent, shift, pair, dup (see the app)
# Blocking collectives: 9 + 6 v- and reduce-scatter ones in "collectives", 1 in the pair
# (the non-blocking ones are regions, not OTF2 collective records).
COLLECTIVES_PER_RANK = 9 + 6 + 1
INJECTED_NS = [0, 40_000_000, -30_000_000, 70_000_000]

ENVIRONMENT = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl": "self,vader", "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
    "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_hwloc_base_binding_policy": "none",
}


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def run_ranks(options, traces, skewed, backend="chrome", ranks=RANKS, summary_file=None):
    output = traces + "/" if backend in ("chrome", "tau", "summary,tau,report") else traces
    environment = dict(os.environ, **ENVIRONMENT, FERRET_BACKEND=backend,
                       FERRET_OUTPUT=output, FERRET_VERBOSE="1")
    if backend == "summary":  # on stderr, or in the .txt file named
        if summary_file is None:
            del environment["FERRET_OUTPUT"]
        else:
            environment["FERRET_OUTPUT"] = summary_file
    if options.lsan_suppressions:
        # Under AddressSanitizer: OpenMPI's own leaks only (see mpi_example.cmake).
        environment["LSAN_OPTIONS"] = (f"suppressions={options.lsan_suppressions}:"
                                       "fast_unwind_on_malloc=0:print_suppressions=0")
    # Each rank's output in a file of its own: on the shared stderr, one rank's
    # line can land in the middle of rank 0's summary (seen in CI).
    outputs = os.path.join(traces + "-output")
    shutil.rmtree(outputs, ignore_errors=True)
    if skewed:
        command = [options.mpiexec, "--output-filename", outputs]
        for rank, offset in enumerate(INJECTED_NS):
            if rank > 0:
                command.append(":")
            command += ["-np", "1", "-x", f"FERRET_TEST_CLOCK_OFFSET_NS={offset}", options.app]
    else:
        command = [options.mpiexec, "--oversubscribe", "--output-filename", outputs, "-np", str(ranks),
                   options.app]
    result = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=120)
    print(result.stdout + result.stderr[-20000:])
    if result.returncode != 0:
        fail(f"{' '.join(command)} exited with {result.returncode}")

    # OpenMPI's layout: <dir>/1/rank.<n>/stderr, n zero-padded to the width of the largest rank.
    folders = {}
    if os.path.isdir(os.path.join(outputs, "1")):
        for name in os.listdir(os.path.join(outputs, "1")):
            if name.startswith("rank.") and name[5:].isdigit():
                folders[int(name[5:])] = os.path.join(outputs, "1", name)
    if sorted(folders) != list(range(ranks)):
        fail(f"mpiexec --output-filename made {sorted(folders)} in {outputs}, expected ranks 0..{ranks - 1}")

    def rank_stderr(rank):
        path = os.path.join(folders[rank], "stderr")
        if not os.path.exists(path):
            return ""
        with open(path) as f:
            return f.read()
    stderr = "".join(rank_stderr(rank) for rank in range(ranks))
    # FERRET_VERBOSE=1: ferret says only where each output went.
    rest = re.sub(r"ferret: (chrome trace|otf2 archive|tau profile|summary|report): [^\n]*\n", "", stderr)
    if backend.startswith("summary") and summary_file is None:  # rank 0's job summary, with its own
        summaries = rest.count("ferret job summary: "), rest.count("ferret summary: ")
        rest = "" if summaries == (1, 1) else rest
    if rest or "incomplete" in stderr:
        fail(f"unexpected messages from the ranks:\n{stderr}")
    if summary_file is not None:
        with open(summary_file) as f:
            return f.read()
    if backend.startswith("summary"):
        return rank_stderr(0)
    if backend != "chrome":
        return []
    files = sorted(os.path.join(traces, name) for name in os.listdir(traces))
    if len(files) != RANKS:
        fail(f"expected {RANKS} traces, found {files}")
    return files


def trace_check(options, paths):
    result = subprocess.run([options.trace_check, *paths], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"ferret-trace-check {' '.join(paths)}:\n{result.stdout}{result.stderr}")


def merge(options, traces, output, *flags):
    result = subprocess.run([sys.executable, options.merge, "-o", output, "--matrix", *flags, traces],
                            capture_output=True, text=True)
    print(result.stdout + result.stderr)
    if result.returncode != 0:
        fail(f"ferret-merge failed: {result.stderr}")
    with open(output, encoding="utf-8") as handle:
        return json.load(handle)


APP_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "support", "mpi_communication_app.cpp")


def call_lines():
    """{call: lines} of the app's source: every line of each call's statement
    (a call may span lines), read from the source as the compiler saw it."""
    with open(APP_SOURCE, encoding="utf-8") as handle:
        source = handle.read().splitlines()
    lines = collections.defaultdict(set)
    for number, text in enumerate(source, start=1):
        for call in re.findall(r"\b(MPI_[A-Za-z_]+)\(", text):
            end = number
            while not source[end - 1].rstrip().endswith(";"):
                end += 1
            lines[call].update(range(number, end + 1))
    return lines


def check_call_locations(path, located, regions):
    """Each MPI call is located at the app's call (issue 23), never in ferret's
    wrapper (backends/collectors/mpi): the wrapper's return address, symbolized."""
    lines = call_lines()
    for call in (name for name in regions if name.startswith("MPI_")):
        where = located.get(call)
        if not where:
            fail(f"{path}: {call} has no source location")
        for location in where:
            file, line = location.get("file", ""), location.get("line", 0)
            if "backends/" in file or os.path.basename(file) != os.path.basename(APP_SOURCE):
                fail(f"{path}: {call} located in {file}, not in the program's {APP_SOURCE}: {where}")
            if line not in lines[call]:
                fail(f"{path}: {call} located at line {line}, where the app does not call it "
                     f"(it does at {sorted(lines[call])}): {where}")
    # The one call of MPI_Sendrecv, exactly at its line (not only within its statement).
    sendrecv = min(lines["MPI_Sendrecv"])
    if [location["line"] for location in located["MPI_Sendrecv"]] != [sendrecv]:
        fail(f"{path}: MPI_Sendrecv located at {located['MPI_Sendrecv']}, expected line {sendrecv}")


def check_rank_traces(files):
    for path in files:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
        events = document["traceEvents"]
        run = document["metadata"]["run"]
        regions = {event["name"]: event for event in events if event.get("ph") == "X"}
        for call in ("MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Waitany",
                     "MPI_Test", "MPI_Sendrecv", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce",
                     "MPI_Gather", "MPI_Scatter", "MPI_Allgather", "MPI_Alltoall", "MPI_Scan",
                     "MPI_Barrier", "MPI_Comm_split", "MPI_Comm_dup", "MPI_Comm_free", "MPI_Wait",
                     "MPI_Gatherv", "MPI_Scatterv", "MPI_Allgatherv", "MPI_Reduce_scatter",
                     "MPI_Reduce_scatter_block", "MPI_Exscan", "MPI_Iallreduce", "MPI_Ibcast",
                     "MPI_Ibarrier", "MPI_Send_init", "MPI_Recv_init", "MPI_Startall",
                     "MPI_Request_free"):
            if call not in regions:
                fail(f"{path}: no region {call}")
            if regions[call].get("cat") != "mpi":
                fail(f"{path}: {call} is not in domain mpi: {regions[call]}")
        check_call_locations(path, document["metadata"].get("source-locations", {}), regions)
        # The MPI calls nest inside the program's own regions.
        exchange = regions["exchange"]
        send = regions["MPI_Send"]
        if not exchange["ts"] <= send["ts"] <= exchange["ts"] + exchange["dur"]:
            fail(f"{path}: MPI_Send outside the exchange region")
        ends = [event for event in events if event.get("cat") == "mpi-message"]
        sends = sum(1 for event in ends if event["name"] == "MPI send")
        receives = sum(1 for event in ends if event["name"] == "MPI receive")
        if sends != MESSAGES_PER_RANK or receives != MESSAGES_PER_RANK:
            fail(f"{path}: {sends} sends and {receives} receives, expected {MESSAGES_PER_RANK} each")
        if run.get("mpi-communication-events-dropped") != 0 or run.get("mpi-requests-untracked") != 0:
            fail(f"{path}: losses in {run}")
        for key in ("mpi-clock-init-offset-ns", "mpi-clock-finalize-offset-ns"):
            if key not in run:
                fail(f"{path}: no {key} in the run metadata")


def rank_trace(files, rank):
    for path in files:
        with open(path, encoding="utf-8") as handle:
            if json.load(handle)["metadata"]["mpi-rank"] == rank:
                return path
    fail(f"no trace of rank {rank}")


def check_merged(document, path):
    counts = document["metadata"]
    expected = RANKS * MESSAGES_PER_RANK
    if counts["messages-matched"] != expected:
        fail(f"{path}: {counts['messages-matched']} messages matched, expected {expected}")
    if counts["sends-unmatched"] or counts["receives-unmatched"]:
        fail(f"{path}: unmatched messages: {counts}")
    flows = [event for event in document["traceEvents"]
             if event.get("cat") == "mpi-message" and event.get("ph") in ("s", "f")]
    if len(flows) != 2 * expected:
        fail(f"{path}: {len(flows)} flow events, expected {2 * expected}")
    # Counter samples name their thread's track by its tid (id): the merge keeps it.
    samples = [event for event in document["traceEvents"] if event.get("ph") == "C" and event["name"] == "rank"]
    if len(samples) != RANKS or any(event.get("id") != str(event.get("tid")) for event in samples):
        fail(f"{path}: counter samples with ids other than their thread's: {samples}")
    matrix = counts["message-bytes-matrix"]
    # Each rank sends to its right neighbour: ring 20 x 4 B, halo 20 x 512 B,
    # persistent 3 x 16 B, shift 5 x 8 B, dup 1 x 4 B; the pair partner
    # (rank ^ 1) gets 5 x 8 B more.
    for sender in range(RANKS):
        right = (sender + 1) % RANKS
        expected_bytes = 20 * 4 + 20 * 512 + 3 * 16 + 5 * 8 + 4 + (5 * 8 if right == sender ^ 1 else 0)
        if matrix[sender][right] != expected_bytes:
            fail(f"{path}: {matrix[sender][right]} bytes from {sender} to {right}, expected {expected_bytes}")
    return counts["receives-before-their-send"]


def run_reader(command):
    result = subprocess.run(command, capture_output=True, text=True)
    print(result.stdout[-2000:] + result.stderr)
    if result.returncode != 0:
        fail(f"{' '.join(command)} exited with {result.returncode}")
    return result


def check_archive(options, skewed):
    archive = os.path.join(options.work, "run")
    run_ranks(options, archive, skewed, backend="otf2")
    anchor = os.path.join(archive, "traces.otf2")
    printed = subprocess.run([options.otf2_print, anchor], capture_output=True, text=True)
    if printed.returncode != 0 or printed.stderr or "INVALID" in printed.stdout:
        fail(f"otf2-print: exit {printed.returncode}, stderr {printed.stderr!r}, "
             f"INVALID references: {printed.stdout.count('INVALID')}")
    for record, expected in (("MPI_SEND", 4 * 30), ("MPI_RECV", 4 * 30), ("MPI_ISEND", 4 * 44),
                             ("MPI_IRECV", 4 * 44), ("MPI_COLLECTIVE_END", 4 * COLLECTIVES_PER_RANK)):
        found = sum(1 for line in printed.stdout.splitlines() if line.split(" ", 1)[0] == record)
        if found != expected:
            fail(f"otf2-print shows {found} {record} records, expected {expected}")
    # Each rank's events in time order as recorded: a clamped timestamp would be
    # an MPI event that reached the writer after later records of its thread.
    attributes = subprocess.run([options.otf2_print, "-A", anchor], capture_output=True, text=True).stdout
    clamped = re.findall(r"Property name\s+FERRET::CLAMPED_TIMESTAMPS\n\s*Property value\s+(\d+)", attributes)
    if not clamped or set(clamped) != {"0"}:
        fail(f"FERRET::CLAMPED_TIMESTAMPS is {clamped or 'missing'}, expected 0")
    checked = run_reader([options.otf2_check, anchor])
    messages = RANKS * MESSAGES_PER_RANK
    expected_line = f"MPI: {messages} messages sent, {messages} received, {RANKS * COLLECTIVES_PER_RANK} collective calls"
    if expected_line not in checked.stdout:
        fail(f"ferret-otf2-check does not say '{expected_line}'")
    support = os.path.join(os.path.dirname(os.path.abspath(__file__)), "support")
    run_reader([options.otf2_python, os.path.join(support, "otf2_python_reader.py"), anchor])
    run_reader([options.otf2_python, os.path.join(support, "otf2_mpi_messages.py"), anchor,
                "--messages", str(RANKS * MESSAGES_PER_RANK), "--collectives", str(RANKS * COLLECTIVES_PER_RANK)])


def expected_bytes(sender, receiver):
    """What the app sends from one rank to another (see check_merged)."""
    right, left = (sender + 1) % RANKS, (sender + RANKS - 1) % RANKS
    total = 0
    if receiver == right:
        total += 20 * 4 + 20 * 512 + 3 * 16 + 5 * 8 + 4
    if receiver == left:
        total += 20 * 512
    if receiver == sender ^ 1:
        total += 5 * 8
    return total


def check_summary(options):
    text = run_ranks(options, os.path.join(options.work, "unused"), False, backend="summary")
    check_job_summary(text)
    # FERRET_OUTPUT naming a .txt file: the job summary there, and no file of the other ranks.
    folder = os.path.join(options.work, "summary-file")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    text = run_ranks(options, folder + "-run", False, backend="summary",
                     summary_file=os.path.join(folder, "job.txt"))
    if sorted(os.listdir(folder)) != ["job.txt"]:
        fail(f"FERRET_OUTPUT=job.txt: {sorted(os.listdir(folder))} in {folder}, expected only job.txt")
    check_job_summary(text)


def check_job_summary(text):
    lines = text.splitlines()
    heading = [i for i, line in enumerate(lines) if line == "MPI point-to-point bytes (rank x rank)"]
    if len(heading) != 1:
        fail(f"expected one rank x rank matrix (rank 0's), found {len(heading)}:\n{text}")
    rows = lines[heading[0] + 2:heading[0] + 2 + RANKS]
    for sender, row in enumerate(rows):
        cells = re.findall(r"(-|[0-9.]+ (?:B|KiB))", row.split(f"rank {sender}", 1)[1])
        for receiver, cell in enumerate(cells):
            expected = expected_bytes(sender, receiver)
            shown = "-" if expected == 0 else (f"{expected} B" if expected < 1024 else f"{expected / 1024:.1f} KiB")
            if cell != shown:
                fail(f"matrix row {sender}, column {receiver}: {cell}, expected {shown}\n{row}")
    job = job_tables(text)
    for call in ("MPI_Send", "MPI_Isend", "MPI_Waitall", "MPI_Sendrecv", "MPI_Alltoall", "MPI_Allgatherv",
                 "MPI_Iallreduce"):
        if call not in job["MPI calls over ranks (time per rank)"]:
            fail(f"no row for {call} in the job's MPI calls table")
        if job["MPI calls over ranks (time per rank)"][call]["ranks"] != RANKS:
            fail(f"{call} is not on all {RANKS} ranks: {job['MPI calls over ranks (time per rank)'][call]}")


JOB_COLUMNS = ("ranks", "calls", "min", "mean", "max", "max rank", "imbalance")


def job_tables(text):
    """The job summary's two spread tables: {heading: {name: {column: value}}}."""
    lines = text.splitlines()
    tables = {}
    for heading in ("Host regions over ranks (inclusive time per rank)", "MPI calls over ranks (time per rank)"):
        if heading not in lines:
            fail(f"no '{heading}' in the job summary:\n{text}")
        rows = {}
        for line in lines[lines.index(heading) + 2:]:
            if not line.startswith("  ") or line.startswith("  …"):
                break
            cells = line.split()
            values = dict(zip(JOB_COLUMNS, (int(cells[0]), int(cells[1]), float(cells[2]), float(cells[3]),
                                            float(cells[4]), int(cells[5]), float(cells[6].rstrip("%")))))
            name = cells[-1] if heading.startswith("MPI") else " ".join(cells[7:])
            rows[name] = values
        tables[heading] = rows
    return tables


def flat_entries(profile_path):
    """Flat function entries of a TAU profile: name -> (calls, inclusive microseconds, group),
    summed over the name's source locations (an MPI call made at two places is two timers)."""
    entries = {}
    with open(profile_path, encoding="utf-8") as handle:
        for line in handle:
            match = re.match(r'"(.*)" (\d+) (\d+) (\S+) (\S+) 0 GROUP="(.*)" $', line)
            if match and " => " not in match.group(1) and match.group(1) != ".TAU application":
                name = re.sub(r" \[\{.*\} \{\d+,\d+\}\]$", "", match.group(1))  # the source location
                calls, inclusive_us, _ = entries.get(name, (0, 0.0, None))
                entries[name] = (calls + int(match.group(2)), inclusive_us + float(match.group(5)), match.group(6))
    return entries


def check_job(options):
    """16 ranks: one TAU directory, and the job summary recomputed from it."""
    ranks = 16
    profiles = os.path.join(options.work, "profiles")
    text = run_ranks(options, profiles, False, backend="summary,tau,report", ranks=ranks)
    reports = [os.path.join(profiles, name) for name in os.listdir(profiles) if name.endswith(".html")]
    directories = [os.path.join(profiles, name) for name in os.listdir(profiles) if not name.endswith(".html")]
    if len(directories) != 1:
        fail(f"expected one TAU directory for the job, found {directories}")
    checked = run_reader([options.tau_check, directories[0]])
    files = os.listdir(directories[0])
    per_rank = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0.0]))  # region -> rank -> totals
    for name in files:
        node = int(name.split(".")[1])
        for region, (calls, inclusive_us, group) in flat_entries(os.path.join(directories[0], name)).items():
            key = (region, group == "TAU_USER|mpi")
            per_rank[key][node][0] += calls
            per_rank[key][node][1] += inclusive_us
    if sorted({int(name.split(".")[1]) for name in files}) != list(range(ranks)):
        fail(f"the TAU directory does not hold nodes 0..{ranks - 1}: {sorted(files)}")
    if f"{len(files)} profiles" not in checked.stdout:
        fail(f"ferret-tau-check did not read {len(files)} profiles: {checked.stdout}")
    job = job_tables(text)
    compared = 0
    for heading, rows in job.items():
        mpi = heading.startswith("MPI")
        for name, shown in rows.items():
            totals = per_rank.get((name, mpi))
            if totals is None:
                fail(f"{heading}: {name} is in no rank's TAU profile")
            times_ms = [totals[rank][1] / 1000.0 if rank in totals else 0.0 for rank in range(ranks)]
            mean = sum(times_ms) / ranks
            expected = {"ranks": sum(1 for rank in totals if totals[rank][0] > 0),
                        "calls": sum(calls for calls, _ in totals.values()),
                        "min": min(times_ms), "mean": mean, "max": max(times_ms)}
            for column, value in expected.items():
                # Times are printed in ms with three decimals (TAU's are exact microseconds).
                if abs(shown[column] - value) > (0.0015 if column in ("min", "mean", "max") else 0):
                    fail(f"{heading}, {name}: {column} {shown[column]}, the TAU profiles say {value}")
            if abs(times_ms[shown["max rank"]] - max(times_ms)) > 0.0015:
                fail(f"{heading}, {name}: rank {shown['max rank']} does not hold the max {max(times_ms)}")
            imbalance = 100.0 * (max(times_ms) - mean) / max(times_ms) if max(times_ms) > 0 else 0.0
            if abs(shown["imbalance"] - imbalance) > 0.051 + 100.0 * 0.002 / max(max(times_ms), 0.001):
                fail(f"{heading}, {name}: imbalance {shown['imbalance']}%, the TAU profiles say {imbalance:.2f}%")
            compared += 1
    for region in ("exchange", "ring", "halo", "collectives"):
        if region not in job["Host regions over ranks (inclusive time per rank)"]:
            fail(f"no row for region {region} in the job summary")
    # The matrix: each cell is the bytes of TAU's "Message size sent to node <n>" of its row's rank.
    lines = text.splitlines()
    heading = lines.index("MPI point-to-point bytes (rank x rank)")
    for sender in range(ranks):
        row = lines[heading + 2 + sender]
        cells = re.findall(r"(-|[0-9.]+ (?:B|KiB))", row.split(f"rank {sender}", 1)[1])
        events = user_events(os.path.join(directories[0], f"profile.{sender}.0.0"))
        for receiver, cell in enumerate(cells):
            count, _, _, mean = events.get(f"Message size sent to node {receiver}", (0, 0, 0, 0))
            sent = round(count * mean)
            shown = "-" if sent == 0 else (f"{sent} B" if sent < 1024 else f"{sent / 1024:.1f} KiB")
            if cell != shown:
                fail(f"matrix row {sender}, column {receiver}: {cell}, the TAU profile says {shown}")
    print(f"job summary: {compared} rows and the {ranks} x {ranks} matrix agree with the TAU profiles")
    check_rank_view(options, reports, job, ranks)


def check_rank_view(options, reports, job, ranks):
    """Rank 0's report (only its) has the rank view's data, with the job summary's numbers;
    drawn by Chromium (--chromium), its tables show them."""
    with_job = []
    for path in reports:
        with open(path, encoding="utf-8") as handle:
            page = handle.read()
        data = json.loads(re.search(r'<script type="application/json" id="ferret-job">(.*?)</script>', page, re.S).group(1))
        if data is not None:
            with_job.append((path, data))
    if len(reports) != ranks or len(with_job) != 1:
        fail(f"{len(reports)} reports, {len(with_job)} with the rank view: expected {ranks} and 1")
    path, data = with_job[0]
    if data["size"] != ranks or len(data["ranks"]) != ranks or not all(r["reported"] for r in data["ranks"]):
        fail(f"{path}: the rank view does not hold {ranks} reported ranks")
    for key, heading in (("regions", "Host regions over ranks (inclusive time per rank)"),
                         ("mpi_calls", "MPI calls over ranks (time per rank)")):
        for row in data[key]:
            shown = job[heading].get(row["name"])
            if shown is None:
                continue  # the summary shows the first 10 regions
            if (row["ranks"], row["calls"], row["max_rank"]) != (shown["ranks"], shown["calls"], shown["max rank"]) or \
                    abs(row["max"] / 1e6 - shown["max"]) > 0.0015 or len(row["time_ns"]) != ranks:
                fail(f"{path}: the rank view's {row['name']} {row} differs from the summary's {shown}")
    tree = data["busiest_tree"]
    if not tree or any(node["parent"] >= index for index, node in enumerate(tree) if index > 0):
        fail(f"{path}: the busiest rank's tree is empty or out of order")
    if not options.chromium or not shutil.which(options.chromium):
        print("rank view: data checked; SKIPPED: drawing it (no Chromium found)")
        return
    profile = os.path.join(options.work, "chromium-profile")
    dom = subprocess.run([options.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={profile}", "--dump-dom", "file://" + os.path.abspath(path) + "#ranks"],
                         capture_output=True, text=True, timeout=60).stdout
    if 'data-ready="yes"' not in dom or "data-error" in dom:
        fail(f"{path}: the page did not draw: {dom[:2000]}")
    for table in ("ranks-regions", "ranks-mpi", "ranks-busiest-tree", "ranks-messages"):
        if f'id="{table}"' not in dom:
            fail(f"{path}: the rank view has no #{table}")
    rects = len(re.findall(r"<rect ", dom))
    if rects != (len(data["regions"]) + len(data["mpi_calls"])) * ranks:
        fail(f"{path}: {rects} heat map cells, expected {(len(data['regions']) + len(data['mpi_calls'])) * ranks}")
    for name, shown in job["MPI calls over ranks (time per rank)"].items():
        cells = f'<td class="r">{shown["max"]:.3f}</td><td class="r">{shown["max rank"]}</td>'
        if cells not in dom:
            fail(f"{path}: the rank view's row of {name} does not show max {shown['max']:.3f} ms on rank {shown['max rank']}")
    print(f"rank view: drawn by Chromium, {rects} heat map cells, the MPI calls' max and max rank as in the summary")


def user_events(profile):
    events = {}
    with open(profile, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith(" userevents"))
    for line in lines[start + 2:]:
        match = re.match(r'"(.*)" (\d+) (\S+) (\S+) (\S+) (\S+)$', line)
        if not match:
            break
        events[match.group(1)] = (int(match.group(2)), float(match.group(3)), float(match.group(4)),
                                  float(match.group(5)))
    return events


def check_tau(options):
    profiles = os.path.join(options.work, "profiles")
    run_ranks(options, profiles, False, backend="tau")
    directories = sorted(os.path.join(profiles, name) for name in os.listdir(profiles))
    if len(directories) != 1:
        fail(f"expected one TAU directory for the {RANKS} ranks, found {directories}")
    run_reader([options.tau_check, *directories])
    for rank in range(RANKS):
        found = [os.path.join(d, f"profile.{rank}.0.0") for d in directories
                 if os.path.exists(os.path.join(d, f"profile.{rank}.0.0"))]
        if len(found) != 1:
            fail(f"rank {rank}: profiles {found}")
        events = user_events(found[0])
        right, left, partner = (rank + 1) % RANKS, (rank + RANKS - 1) % RANKS, rank ^ 1
        # To the right: ring, halo, persistent, shift, dup; to the left: halo; to the partner: pair.
        expected = {right: [20 + 20 + 3 + 5 + 1, 512, 4], left: [20, 512, 512]}
        expected[partner][0] += 5
        expected[partner][2] = min(expected[partner][2], 8)
        for peer, (count, largest, smallest) in expected.items():
            name = f"Message size sent to node {peer}"
            if events.get(name, ())[:3] != (count, largest, smallest):
                fail(f"rank {rank}: {name} is {events.get(name)}, expected {(count, largest, smallest)}")
        for name in ("Message size sent to all nodes", "Message size received from all nodes"):
            if events.get(name, (0,))[0] != MESSAGES_PER_RANK:
                fail(f"rank {rank}: {name} is {events.get(name)}, expected {MESSAGES_PER_RANK} messages")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["chrome", "skew", "otf2", "otf2-skew", "tau", "summary", "job"],
                        required=True)
    parser.add_argument("--lsan-suppressions")
    parser.add_argument("--tau-check")
    parser.add_argument("--chromium")
    parser.add_argument("--otf2-print")
    parser.add_argument("--otf2-check")
    parser.add_argument("--otf2-python")
    parser.add_argument("--app", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--merge", required=True)
    parser.add_argument("--trace-check", required=True)
    parser.add_argument("--work", required=True)
    options = parser.parse_args()
    shutil.rmtree(options.work, ignore_errors=True)
    traces = os.path.join(options.work, "traces")
    os.makedirs(traces)
    if options.mode == "summary":
        check_summary(options)
        print("ok")
        return
    if options.mode == "job":
        check_job(options)
        print("ok")
        return
    if options.mode == "tau":
        check_tau(options)
        print("ok")
        return
    if options.mode.startswith("otf2"):
        check_archive(options, options.mode == "otf2-skew")
        print("ok")
        return
    files = run_ranks(options, traces, options.mode == "skew")
    trace_check(options, files)
    check_rank_traces(files)
    merged_path = os.path.join(options.work, "merged.json")
    merged = merge(options, traces, merged_path)
    trace_check(options, [merged_path])
    if (before := check_merged(merged, merged_path)) != 0:
        fail(f"{merged_path}: {before} receives before their send")
    if options.mode == "skew":
        for rank, offset in enumerate(INJECTED_NS):
            with open(rank_trace(files, rank), encoding="utf-8") as handle:
                run = json.load(handle)["metadata"]["run"]
            for when in ("init", "finalize"):
                measured, used = run[f"mpi-clock-{when}-measured-offset-ns"], run[f"mpi-clock-{when}-offset-ns"]
                round_trip = run[f"mpi-clock-{when}-round-trip-ns"]
                # The round trips' estimate is off by at most half the best round trip
                # (1 us more: the injected shift is rounded to the microsecond).
                if abs(measured - offset) > round_trip // 2 + 1_000 or used != offset:
                    fail(f"rank {rank} at {when}: offset {used} ns (measured {measured} ns within "
                         f"{round_trip // 2} ns), injected {offset} ns")
        uncorrected_path = os.path.join(options.work, "uncorrected.json")
        uncorrected = merge(options, traces, uncorrected_path, "--no-clock-correction")
        if check_merged(uncorrected, uncorrected_path) == 0:
            fail("without the clock correction no receive came before its send: the skew did nothing")
    print("ok")


if __name__ == "__main__":
    main()
