"""LLDP neighbours as each switch platform shows them -> LldpNeighbor records placed at their ports.

- NVUE `nv show interface lldp`: a table `Interface  Speed  Type  Remote Host  Remote Port`, a port
  without a neighbour has the last two columns empty (columns are found by the header's offsets).
- EOS `show lldp neighbors | json`: `{"lldpNeighbors": [{"port", "neighborDevice", "neighborPort",
  "ttl"}, ...]}`.
- SONiC `show lldp table`: `Capability codes` line, a `LocalPort RemoteDevice RemotePortID Capability
  RemotePortDescr` table between dashed rules, then `Total entries displayed:  N`.

A port that shows two neighbours (a hub, a miswired breakout) keeps both out of the result and is a
ParseError: the gate cannot prove such a cable, and must not pick one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.switch_records import LldpNeighbor, Placed, field, load_json, obj

_RULE = re.compile(r"^-{3,}(\s+-{3,})*\s*$")
_NAME = re.compile(r"\S{1,255}")


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
    found: list[tuple[int | None, str, str, str]] = []
    total: int | None = None
    for number, line in enumerate(lines[header_at + 1 :], start=header_at + 2):
        words = line.split()
        if not words or _RULE.match(line.strip()):
            continue
        if line.strip().startswith("Total entries displayed:"):
            total = _total(words[-1], source, number)
            break
        if len(words) < 3:
            raise ParseError(
                f"expected `LocalPort RemoteDevice RemotePortID ...`, got {line[:80]!r}",
                source=source,
                line=number,
            )
        found.append((number, words[0], words[1], words[2]))
    if total is None:
        raise ParseError("no `Total entries displayed:` line: the table is cut short", source=source)
    if total != len(found):
        raise ParseError(f"the table has {len(found)} rows but says {total} entries", source=source)
    return _placed(found, source)


def _total(token: str, source: str, line: int) -> int:
    if not token.isascii() or not token.isdigit() or len(token) > 6:
        raise ParseError(f"entry count {token!r} is not a number", source=source, line=line)
    return int(token)


def _placed(found: Iterable[tuple[int | None, str, str, str]], source: str) -> list[Placed]:
    placed: dict[str, LldpNeighbor] = {}
    for line, local, system, remote in found:
        for value, what in ((local, "local port"), (system, "neighbour system"), (remote, "neighbour port")):
            if not _NAME.fullmatch(value):
                raise ParseError(f"{what} {value[:80]!r} is not a name", source=source, line=line)
        if local in placed:
            raise ParseError(
                f"port {local} hears two LLDP neighbours ({placed[local].system}, {system})",
                source=source,
                line=line,
            )
        placed[local] = LldpNeighbor(system, remote)
    return list(placed.items())
