"""Parser for ``ibqueryerrors`` (infiniband-diags): one fabric-wide counter sweep, and the deltas of two.

rdma-core infiniband-diags/ibqueryerrors.c ``print_results`` prints a node only when one of its counters
is over its threshold (every threshold 0 with an empty ``--threshold-file``: every non-zero counter)::

    Errors for 0x<switch port-0 GUID> "<desc>"          (a switch)
    Errors for "<desc>"                                 (a CA or router)
       GUID 0x<guid> port ALL: [Name == 12] ...         (a switch's aggregate: not a port)
       GUID 0x<guid> port 33: [Name == 12] [Name == 5 (5.000)] ...

(``(%5.3f<unit>)`` follows a value read from the 64-bit extended counters), then ``print_summary``::

    ## Summary: N nodes checked, N bad nodes found
    ##          N ports checked, N ports have errors beyond threshold
    ## Thresholds: ...
    ##          N PMA query failures                    (only when there were some)
    ## Suppressed: ...

A port it did not print counted nothing over its threshold only when the summary was read and no PMA
query failed: `IbErrorSweep.complete`. GUIDs print without zero padding; they are kept in guid_text form.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from types import MappingProxyType

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.ib_records import (
    COUNTER_BITS,
    IbCounterDelta,
    IbErrorSweep,
    IbPortCounters,
    guid_text,
)

_SWITCH_HEADER = re.compile(r'Errors for 0x([0-9a-fA-F]{1,16}) "(.*)"', re.ASCII)
_CA_HEADER = re.compile(r'Errors for "(.*)"', re.ASCII)
_PORT = re.compile(r"GUID 0x([0-9a-fA-F]{1,16}) port (ALL|[0-9]{1,3}):", re.ASCII)
# ` [Name == 12]`, or ` [Name == 12 (12.000)]` from a 64-bit counter (`%5.3f` and a K/M/G... unit).
_COUNTER = re.compile(
    r" \[([A-Za-z0-9]{1,40}) == ([0-9]{1,20})( \( {0,4}[0-9]{1,20}\.[0-9]{3}[A-Z]{0,2}\))?\]", re.ASCII
)
_SUMMARY_NODES = re.compile(r"## Summary: ([0-9]{1,9}) nodes checked, ([0-9]{1,9}) bad nodes found", re.ASCII)
_SUMMARY_PORTS = re.compile(
    r"## +([0-9]{1,9}) ports checked, ([0-9]{1,9}) ports have errors beyond threshold", re.ASCII
)
_PMA_FAILURES = re.compile(r"## +([0-9]{1,9}) PMA query failures", re.ASCII)
# The threshold line is "## Thresholds: ..." or, when no threshold file could be read, "## (null)".
_OTHER_SUMMARY_LINES = ("## Thresholds:", "## Suppressed:", "## (null)")
MAX_PORT = 255


def parse_ibqueryerrors(text: str, source: str = "<text>") -> IbErrorSweep:
    """The ports printed (switch `port ALL` aggregates left out) and the summary; ParseError naming the
    line for any other line. Output cut before the summary is a sweep that is not `complete`."""
    ports: dict[tuple[str, int], IbPortCounters] = {}
    description: str | None = None
    nodes_checked = ports_checked = None
    pma_failures = 0
    for number, raw in enumerate(split_checked_lines(text, source, "ibqueryerrors"), start=1):
        line = raw.strip()
        if not line:
            continue

        def refuse(message: str, line: str = line, number: int = number) -> ParseError:
            return ParseError(f"{message}: {line[:120]!r}", source=source, line=number)

        if line.startswith("Errors for "):
            header = _SWITCH_HEADER.fullmatch(line) or _CA_HEADER.fullmatch(line)
            if header is None:
                raise refuse('not an `Errors for [0x<guid>] "<description>"` header')
            description = header.group(header.lastindex or 1).strip()
        elif line.startswith("GUID "):
            counted = _port_line(line, refuse)
            if description is None:
                raise refuse("a port line before any `Errors for` header")
            if counted is not None:
                guid, port, counts, wide = counted
                # Two ports showing one GUID (a duplicate GUID) keep the first: ib.guids names the duplicate.
                ports.setdefault(
                    (guid, port), IbPortCounters(guid, port, description, MappingProxyType(counts), wide)
                )
        elif line.startswith("## Summary:"):
            summary = _SUMMARY_NODES.fullmatch(line)
            if summary is None:
                raise refuse("not `## Summary: N nodes checked, N bad nodes found`")
            nodes_checked = int(summary.group(1))
        elif (found := _SUMMARY_PORTS.fullmatch(line)) is not None:
            ports_checked = int(found.group(1))
        elif (found := _PMA_FAILURES.fullmatch(line)) is not None:
            pma_failures = int(found.group(1))
        elif not line.startswith(_OTHER_SUMMARY_LINES):
            raise refuse("not an ibqueryerrors line")
    complete = nodes_checked is not None and ports_checked is not None and pma_failures == 0
    return IbErrorSweep(MappingProxyType(ports), nodes_checked, ports_checked, pma_failures, complete, source)


def _port_line(
    line: str, refuse: Callable[[str], ParseError]
) -> tuple[str, int, dict[str, int], frozenset[str]] | None:
    """(guid, port, counters, the 64-bit ones) of a `GUID ... port N:` line; None for a switch's `port
    ALL` aggregate. A 64-bit extended counter prints its value with a `(1.500K)` suffix (rdma-core
    ibqueryerrors.c check_threshold): it never stops at a narrow counter's all ones."""
    found = _PORT.match(line)
    if found is None:
        raise refuse("not `GUID 0x<guid> port <n|ALL>: [Name == value] ...`")
    counts: dict[str, int] = {}
    wide: set[str] = set()
    at = found.end()
    while at < len(line):
        counter = _COUNTER.match(line, at)
        if counter is None:
            raise refuse(f"not a ` [Name == value]` counter at character {at + 1}")
        name, value = counter.group(1), int(counter.group(2))
        if name in counts:
            raise refuse(f"{name} shown twice on one port")
        counts[name] = value
        if counter.group(3):
            wide.add(name)
        at = counter.end()
    if not counts:
        raise refuse("a port line names no counter")
    if found.group(2) == "ALL":
        return None
    port = int(found.group(2))
    if port > MAX_PORT:
        raise refuse(f"port {port} is over {MAX_PORT}")
    guid = guid_text(found.group(1))
    assert guid is not None  # the pattern took 1..16 hex digits
    return guid, port, counts, frozenset(wide)


def sweep_deltas(before: IbErrorSweep, after: IbErrorSweep) -> tuple[IbCounterDelta, ...]:
    """Each port's counters over the window (after - before), in (guid, port) order, for every port either
    sweep printed. A counter a sweep did not print is 0 there only if that sweep is `complete`, else
    unknown and left out of the deltas; a counter that went down was cleared inside the window (`reset`,
    delta unknown); a narrow counter at all ones at the end is `saturated` (the delta is "at least")."""
    deltas: list[IbCounterDelta] = []
    for key in sorted(before.ports.keys() | after.ports.keys()):
        earlier, later = before.ports.get(key), after.ports.get(key)
        described = later if later is not None else earlier
        assert described is not None
        names = sorted(_names(earlier, later))
        changes: dict[str, int] = {}
        reset: list[str] = []
        saturated: list[str] = []
        for name in names:
            start = _value(earlier, name, before.complete)
            end = _value(later, name, after.complete)
            narrow = later is None or name not in later.wide
            if narrow and end is not None and end == (1 << COUNTER_BITS.get(name, 64)) - 1:
                saturated.append(name)
            if start is None or end is None:
                continue
            if end < start:
                reset.append(name)
            else:
                changes[name] = end - start
        deltas.append(
            IbCounterDelta(
                described.guid,
                described.port,
                described.description,
                MappingProxyType(changes),
                tuple(reset),
                tuple(saturated),
            )
        )
    return tuple(deltas)


def _names(*ports: IbPortCounters | None) -> Iterable[str]:
    return {name for port in ports if port is not None for name in port.counts}


def _value(port: IbPortCounters | None, name: str, complete: bool) -> int | None:
    if port is not None and name in port.counts:
        return port.counts[name]
    return 0 if complete else None
