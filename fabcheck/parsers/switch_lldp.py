"""LLDP neighbours as each switch platform shows them -> LldpNeighbor records placed at their ports.

- NVUE `nv show interface lldp`: a table `Interface  Speed  Type  Remote Host  Remote Port`, a port
  without a neighbour has the last two columns empty (columns are found by the header's offsets).
- EOS `show lldp neighbors | json`: `{"lldpNeighbors": [{"port", "neighborDevice", "neighborPort",
  "ttl"}, ...]}`.
- SONiC `show lldp table`: `Capability codes` line, a `LocalPort RemoteDevice RemotePortID Capability
  RemotePortDescr` table (sonic-utilities scripts/lldpshow prints it through tabulate: columns two
  spaces apart, a dashed rule per column under the header), a 50-dash rule, then `Total entries
  displayed:  N`. A neighbour that sends no system name has an empty RemoteDevice cell, so cells are
  read by the columns the rule under the header marks, never by splitting on whitespace.

A port that hears several neighbours (a hub, a miswired breakout, a management port on a shared
segment) is ambiguous, and only that port: its record lists them all (LldpNeighbor.others) and the link
check refuses to prove its cable; every other port of the table is read as usual.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.switch_records import LldpNeighbor, Placed, field, load_json, obj

_RULE = re.compile(r"^-{3,}(\s+-{3,})*\s*$")
# A name as LLDP carries it: printable, may hold inner spaces (a locally assigned port id such as
# `Port 1`), at most 255 characters (IEEE 802.1AB's TLV limit).
_NAME = re.compile(r"[^\s\x00-\x1f\x7f](?:[^\t\n\r\x00-\x1f\x7f]{0,253}[^\s\x00-\x1f\x7f])?")
_DASHES = re.compile(r"-+")
SONIC_LLDP_COLUMNS = ("LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr")


def parse_nvue_lldp(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    lines = split_checked_lines(text, source, "nv show interface lldp")
    header_at = next((i for i, line in enumerate(lines) if line.lstrip().startswith("Interface")), None)
    if header_at is None:
        raise ParseError("no `Interface ... Remote Host  Remote Port` header", source=source)
    header = lines[header_at]
    host_col, port_col = header.find("Remote Host"), header.find("Remote Port")
    if host_col < 0 or port_col < host_col:
        raise ParseError("header lacks `Remote Host` and `Remote Port`", source=source, line=header_at + 1)
    found: list[tuple[int | None, str, str, str]] = []
    for number, line in enumerate(lines[header_at + 1 :], start=header_at + 2):
        if not line.strip() or _RULE.match(line.strip()):
            continue
        local = line[:host_col].split()
        system, remote = line[host_col:port_col].strip(), line[port_col:].strip()
        if not local:
            raise ParseError(f"row without an interface: {line[:80]!r}", source=source, line=number)
        if not system and not remote:
            continue  # a port with LLDP on and nobody heard
        found.append((number, local[0], system, remote))
    return _placed(found, source)


def parse_eos_lldp(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    tree = obj(load_json(text, source, "show lldp neighbors"), source, "show lldp neighbors")
    rows = field(tree, "lldpNeighbors", source, "show lldp neighbors")
    if not isinstance(rows, list):
        raise ParseError("show lldp neighbors: lldpNeighbors is not a list", source=source)
    found: list[tuple[int | None, str, str, str]] = []
    for index, row in enumerate(rows):
        where = f"show lldp neighbors lldpNeighbors[{index}]"
        entry = obj(row, source, where)
        local = field(entry, "port", source, where)
        system = field(entry, "neighborDevice", source, where)
        remote = field(entry, "neighborPort", source, where)
        if not all(isinstance(v, str) for v in (local, system, remote)):
            raise ParseError(f"{where}: port, neighborDevice and neighborPort must be strings", source=source)
        found.append((None, local, system, remote))
    return _placed(found, source)


def parse_sonic_lldp(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    lines = split_checked_lines(text, source, "show lldp table")
    header_at = next(
        (i for i, line in enumerate(lines) if line.split()[:2] == ["LocalPort", "RemoteDevice"]), None
    )
    if header_at is None:
        raise ParseError("no `LocalPort  RemoteDevice  RemotePortID` header", source=source)
    columns = _sonic_columns(lines, header_at, source)
    found: list[tuple[int | None, str, str, str]] = []
    total: int | None = None
    for number, line in enumerate(lines[header_at + 2 :], start=header_at + 3):
        if not line.strip() or _RULE.match(line.strip()):
            continue
        if line.strip().startswith("Total entries displayed:"):
            total = _total(line.split()[-1], source, number)
            break
        local, system, remote = _sonic_cells(line, columns, source, number)[:3]
        found.append((number, local, system, remote))
    if total is None:
        raise ParseError("no `Total entries displayed:` line: the table is cut short", source=source)
    if total != len(found):
        raise ParseError(f"the table has {len(found)} rows but says {total} entries", source=source)
    return _placed(found, source, unnamed_systems=True)


def _sonic_columns(lines: list[str], header_at: int, source: str) -> list[int]:
    """Where each column starts: tabulate's rule under the header has one dash run per column, as wide
    as the column (a right-aligned column's header and cells end where its run ends)."""
    rule_at = header_at + 1
    rule = lines[rule_at] if rule_at < len(lines) else ""
    runs = [(m.start(), m.end()) for m in _DASHES.finditer(rule)]
    header = lines[header_at]
    names = tuple(header[start:end].strip() for start, end in runs)
    if names != SONIC_LLDP_COLUMNS or header[runs[-1][1] :].strip():
        raise ParseError(
            f"expected a dashed rule under the {' '.join(SONIC_LLDP_COLUMNS)} header, one run per column",
            source=source,
            line=rule_at + 1,
        )
    return [start for start, _end in runs]


def _sonic_cells(line: str, columns: list[int], source: str, number: int) -> list[str]:
    """The row's cells, each from its column's start to the next column's start. A row whose text
    crosses a column's start (no blank before it) does not line up with the header: refused."""
    for start in columns[1:]:
        if start <= len(line) and line[start - 1] != " ":
            raise ParseError(
                f"row does not line up with the header's columns: {line[:80]!r}", source=source, line=number
            )
    bounds = [*columns, len(line)]
    cells = [line[bounds[i] : bounds[i + 1]].strip() for i in range(len(columns))]
    if line[: columns[0]].strip():
        raise ParseError(f"row starts left of LocalPort: {line[:80]!r}", source=source, line=number)
    if not cells[0] or not cells[2]:
        raise ParseError(
            f"row without a LocalPort or RemotePortID: {line[:80]!r}", source=source, line=number
        )
    return cells


def _total(token: str, source: str, line: int) -> int:
    if not token.isascii() or not token.isdigit() or len(token) > 6:
        raise ParseError(f"entry count {token!r} is not a number", source=source, line=line)
    return int(token)


def _placed(
    found: Iterable[tuple[int | None, str, str, str]], source: str, *, unnamed_systems: bool = False
) -> list[Placed]:
    """One record per local port; a port with several distinct neighbours keeps them all (ambiguous).
    `unnamed_systems`: the table shows a neighbour that sends no system name as an empty cell."""
    heard: dict[str, list[tuple[str, str]]] = {}
    for line, local, system, remote in found:
        for value, what in ((local, "local port"), (system, "neighbour system"), (remote, "neighbour port")):
            if what == "neighbour system" and unnamed_systems and value == "":
                continue
            if not _NAME.fullmatch(value):
                raise ParseError(f"{what} {value[:80]!r} is not a name", source=source, line=line)
        neighbours = heard.setdefault(local, [])
        if (system, remote) not in neighbours:
            neighbours.append((system, remote))
    return [(local, LldpNeighbor(first[0], first[1], tuple(rest))) for local, (first, *rest) in heard.items()]
