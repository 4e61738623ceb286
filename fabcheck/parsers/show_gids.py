"""Parser for ``show_gids`` (mlnx-tools script): the GID table of every RDMA port.

The table starts at its ``DEV PORT INDEX GID IPv4 VER DEV`` header (tabs, or spaces when pasted),
may have the ``---`` rule, and ends with ``n_gids_found=N``. Every line in between must be a GID row
and N must equal the row count: a damaged table raises ParseError naming the line, since a wrong GID
index would point NCCL at the wrong RoCE version.

The script derives the IPv4 column from any GID that starts with ``0000``, so an IPv4 cell must agree
with the GID's last 32 bits. Rows keep the script's order (``ls`` order: 0, 1, 10, 11, 2, ...).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.numbers import is_int_token

_HEADER_CELLS = ["DEV", "PORT", "INDEX", "GID", "IPv4", "VER", "DEV"]
_RULE_LINE = re.compile(r"---\s+----\s+-----\s+---\s+-+\s+---\s+---")
_FOOTER = re.compile(r"n_gids_found=([0-9]{1,20})", re.ASCII)
_GID = re.compile(r"[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7}")
_VERSION = re.compile(r"[vV][0-9]", re.ASCII)


@dataclass(frozen=True)
class GidEntry:
    """One row: RDMA device, port, GID index, GID (as printed), IPv4 or None, ``v1``/``v2``, netdev.

    ``version`` is None when the script could not read the GID type; ``netdev`` is None for InfiniBand
    ports (no Ethernet device behind the GID).
    """

    dev: str
    port: int
    index: int
    gid: str
    ipv4: str | None
    version: str | None
    netdev: str | None


def parse_show_gids(text: str, source: str = "<text>") -> tuple[GidEntry, ...]:
    """Every GID row of every ``show_gids`` table in ``text``. Raises ParseError when there is no table."""
    lines = split_checked_lines(text, source, "show_gids")
    entries: list[GidEntry] = []
    found_table = False
    index = 0
    while index < len(lines):
        if lines[index].split() != _HEADER_CELLS:
            index += 1
            continue
        found_table = True
        rows, index = _read_table(lines, index + 1, source)
        entries += rows
    if not found_table:
        raise ParseError("no show_gids table (no 'DEV PORT INDEX GID IPv4 VER DEV' header)", source=source)
    keys = [(e.dev, e.port, e.index) for e in entries]
    if len(set(keys)) != len(keys):
        raise ParseError("the same device/port/GID index is listed twice", source=source)
    return tuple(entries)


def _read_table(lines: list[str], index: int, source: str) -> tuple[list[GidEntry], int]:
    """Rows from ``index`` up to the footer; returns them and the index after the footer."""
    if index < len(lines) and _RULE_LINE.fullmatch(lines[index].strip()):
        index += 1
    rows: list[GidEntry] = []
    while index < len(lines):
        stripped = lines[index].strip()
        footer = _FOOTER.fullmatch(stripped)
        if footer is not None:
            if int(footer.group(1)) != len(rows):
                message = f"n_gids_found={footer.group(1)} but the table lists {len(rows)} GIDs"
                raise ParseError(message, source=source, line=index + 1)
            return rows, index + 1
        rows.append(_read_row(stripped, source, index))
        index += 1
    raise ParseError("show_gids table ends without its n_gids_found= line", source=source, line=len(lines))


def _read_row(stripped: str, source: str, index: int) -> GidEntry:
    def bad(why: str) -> ParseError:
        return ParseError(f"bad show_gids row ({why}): {stripped!r}", source=source, line=index + 1)

    cells = stripped.split()
    if len(cells) < 4 or not is_int_token(cells[1]) or not is_int_token(cells[2]):
        raise bad("expected DEV PORT INDEX GID")
    dev, port, gid_index, gid = cells[0], int(cells[1]), int(cells[2]), cells[3]
    if _GID.fullmatch(gid) is None:
        raise bad("GID is not 8 groups of 4 hex digits")
    rest = cells[4:]
    ipv4 = rest.pop(0) if rest and rest[0].count(".") == 3 else None
    version = rest.pop(0) if rest and _VERSION.fullmatch(rest[0]) else None
    netdev = rest.pop(0) if rest else None
    if rest:
        raise bad("too many cells")
    if gid.startswith("0000"):
        if ipv4 != _ipv4_of(gid):
            raise bad(f"IPv4 cell should read {_ipv4_of(gid)} for this GID")
    elif ipv4 is not None:
        raise bad("IPv4 cell on a GID that does not start with 0000")
    return GidEntry(dev, port, gid_index, gid, ipv4, version, netdev)


def _ipv4_of(gid: str) -> str:
    """The address the script prints for a GID starting with 0000 (its last 32 bits)."""
    return str(ipaddress.IPv4Address(int(gid.replace(":", "")[-8:], 16)))
