"""Parser for ``perfquery -x`` (infiniband-diags): the extended port counters of one or more ports.

rdma-core infiniband-diags/perfquery.c prints, per port (``-l`` loops over the ports given), a header
``# Port extended counters: Lid 2052 port 1 (CapMask: 0x5300 CapMask2: 0x0000002)`` (without ``-x``:
``# Port counters: ... (CapMask: 0x5A00)``) and then libibmad ``_mad_dump_field`` lines: the field name,
``:``, dots up to column 33, the value. Counters are read by name (their order and presence vary with
the version and CapMask2); hex fields (CounterSelect, CounterSelect2) and PortSelect are not counters.
A header's port 255 is perfquery's ``-a`` aggregate of all ports, not a port, and is left out.
The header names a LID, not a GUID: the caller passes the GUID it queried (``-G``) and the description.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.ib_records import IbPortCounters

_HEADER = re.compile(
    r"# Port (?:extended )?counters: (?:Lid [0-9]{1,5}|[^()]{1,200}) port ([0-9]{1,3})"
    r"(?: \(CapMask: 0x[0-9A-Fa-f]{1,8}(?: CapMask2: 0x[0-9A-Fa-f]{1,8})?\))?",
    re.ASCII,
)
_FIELD = re.compile(r"([A-Za-z][A-Za-z0-9]{0,47}):\.{0,40}([0-9]{1,20}|0x[0-9a-fA-F]{1,16})", re.ASCII)
NOT_COUNTERS = ("PortSelect",)
ALL_PORTS = 255  # perfquery -a: the sum over the node's ports


def parse_perfquery_counters(
    text: str, source: str = "<text>", guid: str = "", description: str = ""
) -> tuple[IbPortCounters, ...]:
    """One IbPortCounters per port block, in order; ParseError naming the line for a field before any
    header, a line that is neither, a counter shown twice in one block, and output with no block."""
    blocks: list[tuple[int, int, dict[str, int]]] = []
    for number, raw in enumerate(split_checked_lines(text, source, "perfquery"), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            header = _HEADER.fullmatch(line)
            if header is None:
                raise ParseError(
                    f"not a perfquery port counters header: {line[:120]!r}", source=source, line=number
                )
            blocks.append((number, int(header.group(1)), {}))
            continue
        field = _FIELD.fullmatch(line)
        if field is None or not blocks:
            raise ParseError(
                f"not a perfquery `Name:....value` line: {line[:120]!r}", source=source, line=number
            )
        name, value = field.groups()
        counts = blocks[-1][2]
        if name in counts:
            raise ParseError(f"{name} shown twice for one port", source=source, line=number)
        if not value.startswith("0x") and name not in NOT_COUNTERS:
            counts[name] = int(value)
    if not blocks:
        raise ParseError("no `# Port ... counters:` header", source=source)
    for start, port, _counts in blocks:
        if port > ALL_PORTS:
            raise ParseError(f"port {port} is over {ALL_PORTS}", source=source, line=start)
    return tuple(
        IbPortCounters(guid, port, description, MappingProxyType(counts))
        for _start, port, counts in blocks
        if port != ALL_PORTS
    )
