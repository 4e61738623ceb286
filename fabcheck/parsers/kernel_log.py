"""Parser for the kernel log (``dmesg``): the NVIDIA driver's Xid events since boot.

The driver logs each Xid as ``NVRM: Xid (PCI:0000:9b:00): 119, pid=..., name=..., <text>``; drivers
before ~460 omit the ``PCI:`` prefix (``NVRM: Xid (0000:03:00): 14, Channel 00000001``). The address
is domain:bus:device without the function (a GPU is function 0). Whatever precedes ``NVRM:`` (dmesg's
``[  12.345678]``, ``dmesg -T``'s date, journald's host and ``kernel:``) is not read. Real samples:
tests/data/real/host/INDEX.tsv.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fabcheck.errors import ParseError
from fabcheck.parsers.bus_records import bdf_of

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<address>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\): "
    r"(?P<xid>[0-9]{1,6})(?:, (?P<text>.*))?$"
)
XID_MARK = "NVRM: Xid ("


@dataclass(frozen=True)
class XidEvent:
    """One Xid line: the GPU's bus id (dddd:bb:dd.f), the Xid number and the rest of the line."""

    bus_id: str
    xid: int
    text: str
    line: int  # 1-based line of the log

    def __str__(self) -> str:
        return f"Xid {self.xid} ({self.text})" if self.text else f"Xid {self.xid}"


def parse_xid_events(text: str, source: str = "<text>") -> tuple[XidEvent, ...]:
    """Every Xid line of the log, in order (an empty tuple: the log holds none). A line that carries
    the Xid mark but not its layout raises ParseError: an Xid must never be read as no Xid."""
    events: list[XidEvent] = []
    for number, line in enumerate(text.splitlines(), start=1):
        at = line.find(XID_MARK)
        if at < 0:
            continue
        found = _XID.match(line[at:].rstrip())
        if found is None:
            message = f"an Xid line without its address and number: {line!r}"
            raise ParseError(message, source=source, line=number)
        address = found["address"]
        bus = bdf_of(address if "." in address else f"{address}.0")
        if bus is None:  # the pattern admits only PCI addresses; kept for the type
            raise ParseError(f"Xid address {address!r} is no PCI address", source=source, line=number)
        events.append(XidEvent(bus, int(found["xid"]), (found["text"] or "").strip(), number))
    return tuple(events)
