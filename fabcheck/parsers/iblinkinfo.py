"""Parser for ``iblinkinfo --line`` (infiniband-diags): one self-contained line per port.

rdma-core infiniband-diags/iblinkinfo.c ``print_port`` in line mode prints::

    0x<port GUID> "<desc, right-aligned to 30>" <LID> <port>[<ext>] ==(<W> <speed> <state>/<phys>)==>  <peer>

with ``<peer>`` one of ``0x<GUID> <LID> <port>[<ext>] "<desc>" (<Could be ...> <Could be ...>)``,
``[  ] "" ( )`` (the port is down: width and speed are not shown, IBA C14-24.2.1) or
``"Port not available"`` (up, nothing behind it). Width is libibmad's ``4X`` (normalised to ``4x``), the
speed the per-lane rate (``106.25 Gbps`` is NDR, ``10.0 Gbps (FDR10)`` FDR10); ``undefined (N)`` is None.
A switch port shows the switch's LID and port-0 GUID. The line does not print the node type: a GUID
shown with two or more port numbers, as a local or a peer end, is a switch (every port of a switch shows
its port-0 GUID, a CA port its own GUID), any other a CA (a router, or a switch seen on one port only,
reads as a CA).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.ib_records import LANE_GBPS_TO_SPEED, WIDTHS, IbPortEnd, IbPortSeen, IbTopology

_LOCAL = re.compile(r'0x([0-9a-fA-F]{16}) "(.*)" +([0-9]{1,5}) +([0-9]{1,3})\[[ 0-9]{0,4}\]', re.ASCII)
_PEER = re.compile(r'0x([0-9a-fA-F]{16}) +([0-9]{1,5}) +([0-9]{1,3})\[[ 0-9]{0,4}\] "', re.ASCII)
_LINK_OPEN, _LINK_CLOSE = " ==(", ")==>"
DOWN_PEER = '[  ] "" ( )'
NO_PEER = '"Port not available"'
FDR10 = "10.0 Gbps (FDR10)"
MAX_LID, MAX_PORT = 0xFFFF, 255

Refuse = Callable[[str], ParseError]
_Line = tuple[str, int, int, str, str | None, str | None, tuple[str, int, int, str] | None]


def parse_iblinkinfo_lines(text: str, source: str = "<text>") -> IbTopology:
    """Every port line of ``iblinkinfo --line``; ParseError naming the line for anything else but a blank
    line, and for output with no port line."""
    lines: list[_Line] = []
    for number, raw in enumerate(split_checked_lines(text, source, "iblinkinfo"), start=1):
        line = raw.strip()
        if line:
            lines.append(_port_line(line, _refuser(line, source, number)))
    if not lines:
        raise ParseError("no port line: iblinkinfo --line prints at least the local port", source=source)
    ports_of: dict[str, set[int]] = {}
    for guid, _lid, port, _description, _width, _speed, peer in lines:
        ports_of.setdefault(guid, set()).add(port)
        if peer is not None:
            ports_of.setdefault(peer[0], set()).add(peer[2])

    def end(guid: str, lid: int, port: int, description: str) -> IbPortEnd:
        return IbPortEnd("SW" if len(ports_of[guid]) > 1 else "CA", lid, port, guid, description)

    return IbTopology(
        tuple(
            IbPortSeen(end(guid, lid, port, description), width, speed, None if peer is None else end(*peer))
            for guid, lid, port, description, width, speed, peer in lines
        ),
        source,
    )


def _refuser(line: str, source: str, number: int) -> Refuse:
    def refuse(message: str) -> ParseError:
        return ParseError(f"{message}: {line[:120]!r}", source=source, line=number)

    return refuse


def _port_line(line: str, refuse: Refuse) -> _Line:
    opened = line.find(_LINK_OPEN)
    closed = line.find(_LINK_CLOSE, opened + 1)
    if opened < 0 or closed < 0:
        raise refuse("not an iblinkinfo --line port line (no ==( ... )==>)")
    local = _LOCAL.fullmatch(line, 0, opened)
    if local is None:
        raise refuse('not `0x<guid> "<description>" <lid> <port>[ ]` before the link')
    width, speed = _link(line[opened + len(_LINK_OPEN) : closed], refuse)
    guid, description, lid, port = local.groups()
    rest = line[closed + len(_LINK_CLOSE) :].strip()
    peer: tuple[str, int, int, str] | None = None
    if rest in (DOWN_PEER, NO_PEER):
        if rest == DOWN_PEER:
            width = speed = None
    else:
        found = _PEER.match(rest)
        cut = rest.rfind('" (')
        if found is None or cut < found.end() or not rest.endswith(")"):
            raise refuse('the peer is not `0x<guid> <lid> <port>[ ] "<description>" (...)`')
        peer = (
            "0x" + found.group(1).lower(),
            _number(found.group(2), MAX_LID, "LID", refuse),
            _number(found.group(3), MAX_PORT, "port", refuse),
            rest[found.end() : cut].strip(),
        )
    return (
        "0x" + guid.lower(),
        _number(lid, MAX_LID, "LID", refuse),
        _number(port, MAX_PORT, "port", refuse),
        description.strip(),
        width,
        speed,
        peer,
    )


def _link(inner: str, refuse: Refuse) -> tuple[str | None, str | None]:
    """(width, speed) of `4X       106.25 Gbps Active/  LinkUp`; (None, None) for `Down/ Polling`."""
    if "/" not in inner:
        raise refuse("the link state is not <state>/<physical state>")
    before = inner.rsplit("/", 1)[0].rstrip()
    state = before.rsplit(None, 1)[-1] if before else ""
    head = before[: len(before) - len(state)].strip()
    if not state:
        raise refuse("no port state before '/'")
    if not head:
        return None, None
    if head.startswith("undefined ("):
        close = head.find(")")
        width_token, speed_text = head[: close + 1], head[close + 1 :].strip()
    else:
        width_token, _, speed_text = head.partition(" ")
        speed_text = speed_text.strip()
    return _width(width_token, refuse), _speed(speed_text, refuse)


def _width(token: str, refuse: Refuse) -> str | None:
    if token.startswith("undefined ("):
        return None
    width = token.lower()
    if width not in WIDTHS:
        raise refuse(f"width {token[:20]!r} is not one of {' '.join(w.upper() for w in WIDTHS)}")
    return width


def _speed(text: str, refuse: Refuse) -> str | None:
    if text == FDR10:
        return "FDR10"
    if text.endswith(" Gbps") and text[: -len(" Gbps")] in LANE_GBPS_TO_SPEED:
        return LANE_GBPS_TO_SPEED[text[: -len(" Gbps")]]
    if text.startswith("undefined (") or " or " in text or text.endswith("(IBA extension)"):
        return None  # no single generation: not known
    raise refuse(f"speed {text[:40]!r} is not a per-lane rate iblinkinfo prints")


def _number(token: str, largest: int, what: str, refuse: Refuse) -> int:
    value = int(token)
    if value > largest:
        raise refuse(f"{what} {value} is over {largest}")
    return value
