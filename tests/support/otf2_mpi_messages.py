#!/usr/bin/python3
"""Matches the MPI messages of an OTF2 archive with Debian's python3-otf2.

    otf2_mpi_messages.py ANCHOR --messages N --collectives C

Every MpiSend/MpiIsend must meet one MpiRecv/MpiIrecv of the same communicator,
sender, receiver and tag (in order, as MPI delivers them), with the same
length; every MpiIsend completes once (MpiIsendComplete of its request on its
location) and every MpiIrecv was requested (MpiIrecvRequest); every
MpiCollectiveEnd follows a MpiCollectiveBegin on its location; no receive
ends before its send began (timestamps as the reader gives them: corrected by
the archive's clock offsets). N messages and C collective calls in all. Prints one line and exits 0, or the errors and 1.
"""
import argparse
import collections
import sys

import otf2
from otf2.events import (MpiCollectiveBegin, MpiCollectiveEnd, MpiIrecv, MpiIrecvRequest, MpiIsend,
                         MpiIsendComplete, MpiRecv, MpiSend)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("anchor")
    parser.add_argument("--messages", type=int, required=True)
    parser.add_argument("--collectives", type=int, required=True)
    options = parser.parse_args()
    errors = []
    sends = collections.defaultdict(collections.deque)
    receives = collections.defaultdict(collections.deque)
    open_requests = {}  # (location, request id) -> "isend" / "irecv"
    in_collective = collections.Counter()
    collectives = 0
    with otf2.reader.open(options.anchor) as trace:
        for location, event in trace.events:
            if isinstance(event, (MpiSend, MpiIsend)):
                members = list(event.communicator.group.members)
                key = (event.communicator.name, location.name, location.group.name,
                       members[event.receiver].group.name, event.msg_tag)
                sends[key].append((event.time, event.msg_length))
                if isinstance(event, MpiIsend):
                    open_requests[(location.group.name, event.request_id)] = "isend"
            elif isinstance(event, (MpiRecv, MpiIrecv)):
                members = list(event.communicator.group.members)
                key = (event.communicator.name, members[event.sender].name,
                       members[event.sender].group.name, location.group.name, event.msg_tag)
                receives[key].append((event.time, event.msg_length))
                if isinstance(event, MpiIrecv) and open_requests.pop((location.group.name, event.request_id), None) != "irecv":
                    errors.append(f"{location.group.name}: MpiIrecv of request {event.request_id} never requested")
            elif isinstance(event, MpiIrecvRequest):
                open_requests[(location.group.name, event.request_id)] = "irecv"
            elif isinstance(event, MpiIsendComplete):
                if open_requests.pop((location.group.name, event.request_id), None) != "isend":
                    errors.append(f"{location.group.name}: MpiIsendComplete of unknown request {event.request_id}")
            elif isinstance(event, MpiCollectiveBegin):
                in_collective[location] += 1
            elif isinstance(event, MpiCollectiveEnd):
                if in_collective[location] == 0:
                    errors.append(f"{location.group.name}: MpiCollectiveEnd without a begin")
                else:
                    in_collective[location] -= 1
                collectives += 1
    matched = 0
    for key in set(sends) | set(receives):
        out, into = list(sends.get(key, [])), list(receives.get(key, []))
        if len(out) != len(into):
            errors.append(f"{key}: {len(out)} sends, {len(into)} receives")
        for (sent_at, sent), (received_at, received) in zip(out, into):
            matched += 1
            if sent != received:
                errors.append(f"{key}: {sent} bytes sent, {received} received")
            if received_at < sent_at:
                errors.append(f"{key}: received at {received_at}, before its send at {sent_at}")
    if open_requests:
        errors.append(f"requests never completed: {sorted(open_requests)[:5]}")
    if matched != options.messages:
        errors.append(f"{matched} messages matched, expected {options.messages}")
    if collectives != options.collectives:
        errors.append(f"{collectives} collective calls, expected {options.collectives}")
    for error in errors:
        print(error)
    print(f"python3-otf2 MPI: {matched} messages matched, {collectives} collectives"
          + (f", {len(errors)} errors" if errors else ", ok"))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
