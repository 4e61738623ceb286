"""Parser for ``saquery`` with no query (infiniband-diags): every NodeRecord the SA holds.

rdma-core infiniband-diags/saquery.c ``dump_node_record`` prints each record as ``NodeRecord dump:`` and
fifteen ``\\t\\t<name><dots><value>`` lines, name and dots together 24 characters wide: lid, reserved,
base_version, class_version, node_type (libibmad ``ib_get_node_type_str``: Channel Adapter, Switch,
Router, UNKNOWN), num_ports, sys_guid, node_guid, port_guid, partition_cap, device_id, revision, port_num,
vendor_id, NodeDescription. The SA holds one record per CA port and one per switch (port 0 of it), so a
two-port HCA repeats its node GUID by right. Older saquery printed lid and num_ports as ``0x%X``: read
both.
"""

from __future__ import annotations

from collections.abc import Callable

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.ib_records import IbNodeRecord, guid_text
from fabcheck.parsers.numbers import read_hex, read_int

HEADER = "NodeRecord dump:"
NAME_WIDTH = 24  # "lid" + 21 dots, "NodeDescription" + 9 dots
NODE_TYPES = ("Channel Adapter", "Switch", "Router", "UNKNOWN")
REQUIRED = (
    "lid",
    "node_type",
    "num_ports",
    "sys_guid",
    "node_guid",
    "port_guid",
    "device_id",
    "port_num",
    "vendor_id",
    "NodeDescription",
)
ZERO_GUID = "0x" + "0" * 16


def parse_saquery_nodes(text: str, source: str = "<text>") -> tuple[IbNodeRecord, ...]:
    """Every NodeRecord in order; ParseError naming the line for a line that is neither a header nor a
    `name....value` line, a record missing a field, and output with no record (the SA always holds at
    least the querying node)."""
    blocks: list[tuple[int, dict[str, tuple[int, str]]]] = []
    for number, raw in enumerate(split_checked_lines(text, source, "saquery"), start=1):
        line = raw.lstrip(" \t")
        if not line.strip():
            continue
        if line.rstrip() == HEADER:
            blocks.append((number, {}))
            continue
        name = line[:NAME_WIDTH].rstrip(".")
        if not blocks or not name.isidentifier() or line[:NAME_WIDTH] != name.ljust(NAME_WIDTH, "."):
            raise ParseError(
                f"not a NodeRecord `name....value` line: {line[:120]!r}", source=source, line=number
            )
        fields = blocks[-1][1]
        if name in fields:
            raise ParseError(f"{name} shown twice in one NodeRecord", source=source, line=number)
        fields[name] = (number, line[NAME_WIDTH:])
    if not blocks:
        raise ParseError(f"no `{HEADER}`: the SA holds at least the querying node", source=source)
    return tuple(_record(start, fields, source) for start, fields in blocks)


def _record(start: int, fields: dict[str, tuple[int, str]], source: str) -> IbNodeRecord:
    missing = [name for name in REQUIRED if name not in fields]
    if missing:
        raise ParseError(f"NodeRecord without {', '.join(missing)}", source=source, line=start)

    def value(name: str, read: Callable[[str, int], int]) -> int:
        number, text = fields[name]
        return read(text.strip(), number)

    def decimal_or_hex(token: str, number: int) -> int:
        if token.startswith("0x"):
            return read_hex(token, source=source, line=number, what="a NodeRecord field")
        return read_int(token, source=source, line=number, what="a NodeRecord field")

    def hexadecimal(token: str, number: int) -> int:
        if not token.startswith("0x"):
            raise ParseError(f"{token[:40]!r} is not 0x-prefixed hex", source=source, line=number)
        return read_hex(token, source=source, line=number, what="a NodeRecord field")

    def guid(name: str) -> str:
        number, text = fields[name]
        found = guid_text(text) if text.strip().startswith("0x") else None
        if found is None:
            raise ParseError(f"{name} {text.strip()[:40]!r} is not a GUID", source=source, line=number)
        return found

    number, node_type = fields["node_type"]
    kinds = ", ".join(NODE_TYPES)
    if node_type.strip() not in NODE_TYPES:
        raise ParseError(
            f"node_type {node_type.strip()[:40]!r} is not one of {kinds}",
            source=source,
            line=number,
        )
    lid = value("lid", decimal_or_hex)
    if lid > 0xFFFF:
        raise ParseError(f"lid {lid} is over 65535", source=source, line=fields["lid"][0])
    system = guid("sys_guid")
    return IbNodeRecord(
        lid=lid,
        node_type=node_type.strip(),
        num_ports=value("num_ports", decimal_or_hex),
        node_guid=guid("node_guid"),
        port_guid=guid("port_guid"),
        port_num=value("port_num", decimal_or_hex),
        vendor_id=value("vendor_id", hexadecimal),
        device_id=value("device_id", hexadecimal),
        system_image_guid=None if system == ZERO_GUID else system,
        description=fields["NodeDescription"][1].strip(),
    )
