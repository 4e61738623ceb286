"""Parser for ``ibnetdiscover -p`` (infiniband-diags): one line per discovered port, with its peer.

rdma-core infiniband-diags/ibnetdiscover.c ``dump_ports_report`` prints, for every port of every node::

    %2s %5d %2d 0x%016x <width> <speed> - %2s %5d %2d 0x%016x ( '<local desc>' - '<peer desc>' )
    %2s %5d %2d 0x%016x <width> <speed>%36s'<local desc>'            (no peer discovered)

type ``SW|CA|RT``, LID (a switch's port shows the switch's LID), port number, port GUID (every port of a
switch shows the switch's port-0 GUID), width (``1x 2x 4x 8x 12x``, ``??`` unknown) and speed (``SDR``
... ``XDR``, ``???`` unknown). Fields are read by white space, not by column (a real fixture prints one
space fewer than ``%2d`` would). Every cable shows twice, once from each end: `IbTopology.links` pairs
them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.ib_records import NODE_TYPES, SPEEDS, WIDTHS, IbPortEnd, IbPortSeen, IbTopology

UNKNOWN_WIDTH = "??"  # dump_linkwidth_compat for a code it does not know
UNKNOWN_SPEED = "???"  # dump_linkspeed_compat / dump_linkspeedext_compat likewise
MAX_LID = 0xFFFF
MAX_PORT = 255

# type, LID, port, GUID: bounded tokens with one separator class each, so matching is linear.
_END = re.compile(r"([A-Z?]{2}) +([0-9]{1,6}) +([0-9]{1,4}) +0x([0-9a-fA-F]{16})", re.ASCII)
_RATE = re.compile(r" +([0-9x?]{1,4}) +([A-Z0-9?]{1,6})", re.ASCII)
_PEER = " - "
_DESCRIPTIONS_OPEN, _DESCRIPTIONS_CLOSE, _DESCRIPTIONS_SEPARATOR = "( '", "' )", "' - '"
_Ends = dict[tuple[str, str, str, str, str], IbPortEnd]


def parse_ibnetdiscover_ports(text: str, source: str = "<text>") -> IbTopology:
    """Every port line of ``ibnetdiscover -p``; ParseError naming the line for anything else but a
    blank line, and for output with no port line at all (ibnetdiscover always shows the local port)."""
    ports: list[IbPortSeen] = []
    ends: _Ends = {}  # each end shows twice (local on its line, peer on the other end's): build it once
    for number, raw in enumerate(split_checked_lines(text, source, "ibnetdiscover"), start=1):
        line = raw.strip()
        if line:
            ports.append(_port_line(line, source, number, ends))
    if not ports:
        raise ParseError("no port line: ibnetdiscover -p prints at least the local port", source=source)
    return IbTopology(tuple(ports), source)


def _port_line(line: str, source: str, number: int, ends: _Ends) -> IbPortSeen:
    def refuse(message: str) -> ParseError:
        return ParseError(f"{message}: {line[:120]!r}", source=source, line=number)

    local = _END.match(line)
    rate = None if local is None else _RATE.match(line, local.end())
    if local is None or rate is None:
        raise refuse("not an ibnetdiscover -p port line (type, LID, port, GUID, width, speed)")
    width, speed = _width(rate.group(1), refuse), _speed(rate.group(2), refuse)
    rest = line[rate.end() :]
    if rest.startswith(_PEER):
        peer = _END.match(rest, len(_PEER))
        if peer is None:
            raise refuse("the peer after ' - ' is not type, LID, port, GUID")
        names = rest[peer.end() :].strip()
        if not (names.startswith(_DESCRIPTIONS_OPEN) and names.endswith(_DESCRIPTIONS_CLOSE)):
            raise refuse("the descriptions are not ( 'local' - 'peer' )")
        inner = names[len(_DESCRIPTIONS_OPEN) : len(names) - len(_DESCRIPTIONS_CLOSE)]
        pair = inner.split(_DESCRIPTIONS_SEPARATOR)
        if len(pair) != 2:
            raise refuse("cannot tell the two descriptions apart (one of them holds \"' - '\")")
        return IbPortSeen(_end(local, pair[0], refuse, ends), width, speed, _end(peer, pair[1], refuse, ends))
    if rest and not rest.startswith(" "):
        raise refuse("the speed runs into what follows")
    quoted = rest.strip()
    if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
        raise refuse("a port with no peer must end with its quoted description")
    return IbPortSeen(_end(local, quoted[1:-1], refuse, ends), width, speed, None)


def _width(token: str, refuse: Callable[[str], ParseError]) -> str | None:
    if token == UNKNOWN_WIDTH:
        return None
    if token not in WIDTHS:
        raise refuse(f"width {token!r} is not one of {' '.join(WIDTHS)} or {UNKNOWN_WIDTH}")
    return token


def _speed(token: str, refuse: Callable[[str], ParseError]) -> str | None:
    if token == UNKNOWN_SPEED:
        return None
    if token not in SPEEDS:
        raise refuse(f"speed {token!r} is not one of {' '.join(SPEEDS)} or {UNKNOWN_SPEED}")
    return token


def _end(
    found: re.Match[str], description: str, refuse: Callable[[str], ParseError], ends: _Ends
) -> IbPortEnd:
    kind, lid, port, guid = found.groups()
    key = (kind, lid, port, guid, description)
    known = ends.get(key)
    if known is not None:
        return known
    if kind not in NODE_TYPES:
        raise refuse(f"node type {kind!r} is not one of {' '.join(NODE_TYPES)}")
    if int(lid) > MAX_LID:
        raise refuse(f"LID {lid} is over {MAX_LID}")
    if int(port) > MAX_PORT:
        raise refuse(f"port {port} is over {MAX_PORT}")
    end = ends[key] = IbPortEnd(kind, int(lid), int(port), "0x" + guid.lower(), description.strip())
    return end
