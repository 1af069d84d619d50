#!/usr/bin/python3
"""Reads an OTF2 archive with Debian's python3-otf2, a reader independent of
ferret's own (ferret-otf2-check uses the C reader API directly), and checks what
every OTF2 reader relies on:

  definitions  every event's location, region, metric and string is defined
               (the reader resolves each reference to its definition)
  balance      Enter/Leave properly nested per location, nothing left open
  time order   timestamps never go backwards on a location, and lie within the
               clock properties' trace
  counts       each location holds as many events as its definition says;
               each RMA operation completes once

    otf2_python_reader.py ANCHOR [--totals FILE]

Prints one line, "python3-otf2: ok, ..." or "python3-otf2: N errors" after the
errors, and exits 0 or 1. --totals writes per-region enter counts and the event
totals as JSON, to compare with another reader or format.
"""
import json
import sys

import otf2
from otf2.events import Enter, Leave, Metric, RmaGet, RmaOpCompleteBlocking, RmaPut


def check(anchor):
    errors = []
    totals = {"events": 0, "enters": 0, "leaves": 0, "metrics": 0, "rma": 0, "regions": {}}
    with otf2.reader.open(anchor) as trace:
        definitions = trace.definitions
        clock = definitions.clock_properties
        start = clock.global_offset
        end = clock.global_offset + clock.trace_length
        locations = list(definitions.locations)
        stacks = {location: [] for location in locations}
        last = {}
        read = {location: 0 for location in locations}
        open_rma = {}
        # With no location there is no event to read (and the reader refuses to try).
        for location, event in trace.events if locations else ():
            totals["events"] += 1
            if location not in read:
                errors.append(f"an event on undefined location {location}")
                continue
            read[location] += 1
            if event.time < last.get(location, 0):
                errors.append(f"{location.name}: time goes back to {event.time}")
            if not start <= event.time <= end:
                errors.append(f"{location.name}: time {event.time} outside the trace {start}..{end}")
            last[location] = event.time
            if isinstance(event, Enter):
                totals["enters"] += 1
                name = str(event.region.name)
                totals["regions"][name] = totals["regions"].get(name, 0) + 1
                stacks[location].append(event.region)
            elif isinstance(event, Leave):
                totals["leaves"] += 1
                if not stacks[location]:
                    errors.append(f"{location.name}: Leave of {event.region.name} with nothing open")
                elif stacks[location][-1] != event.region:
                    errors.append(f"{location.name}: Leave of {event.region.name} closes "
                                  f"{stacks[location][-1].name}")
                    stacks[location].pop()
                else:
                    stacks[location].pop()
            elif isinstance(event, Metric):
                totals["metrics"] += 1
                if event.metric is None or len(event.values) != len(event.metric.members):
                    errors.append(f"{location.name}: a metric sample that does not fit its class")
            elif isinstance(event, (RmaGet, RmaPut)):
                totals["rma"] += 1
                if event.matching_id in open_rma:
                    errors.append(f"{location.name}: RMA operation {event.matching_id} started twice")
                open_rma[event.matching_id] = location
            elif isinstance(event, RmaOpCompleteBlocking):
                if open_rma.pop(event.matching_id, None) is None:
                    errors.append(f"{location.name}: RMA operation {event.matching_id} completed "
                                  f"without a start")
        for location in locations:
            if location.group is None or location.group.name is None:
                errors.append(f"location {location.name}: no location group")
            if stacks[location]:
                errors.append(f"{location.name}: {len(stacks[location])} regions left open")
            if read[location] != location.number_of_events:
                errors.append(f"{location.name}: {read[location]} events read, "
                              f"{location.number_of_events} defined")
        for matching, location in open_rma.items():
            errors.append(f"{location.name}: RMA operation {matching} never completed")
        for region in definitions.regions:
            if region.name is None:
                errors.append(f"a region without a name")
        totals["locations"] = len(locations)
    return errors, totals


def main():
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "--totals"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        errors, totals = check(sys.argv[1])
    except Exception as failure:  # the reader refused the archive
        errors, totals = [f"the reader failed: {failure!r}"], None
    for line in errors[:50]:
        print(f"error: {line}")
    if errors:
        print(f"python3-otf2: {len(errors)} errors")
        return 1
    if len(sys.argv) == 4:
        with open(sys.argv[3], "w", encoding="utf-8") as out:
            json.dump(totals, out, ensure_ascii=False, sort_keys=True)
    print(f"python3-otf2: ok, {totals['locations']} locations, {totals['events']} events "
          f"({totals['enters']} enter, {totals['leaves']} leave, {totals['metrics']} metric, "
          f"{totals['rma']} RMA), {len(totals['regions'])} regions entered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
