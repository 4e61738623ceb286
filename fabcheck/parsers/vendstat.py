"""Parser for ``vendstat -N <lid>`` (infiniband-diags): a Mellanox/NVIDIA switch's general information.

rdma-core infiniband-diags/vendstat.c (lines 467-480) prints nine ``name: value`` lines::

    hw_dev_rev:  0x%04x        hw_dev_id:   0x%04x        hw_uptime:   0x%08x
    fw_version:  %02d.%02d.%02d                           fw_build_id: 0x%04x
    fw_date:     %02x/%02x/%04x                           fw_psid:     '%s'
    fw_ini_ver:  %d            sw_version:  %02d.%02d.%02d

The firmware version is kept as ``major.minor.subminor`` without the zero padding (``31.2012.1024``;
an old ``07.02.00`` reads ``7.2.0``), so a pinned version compares as written. An empty PSID is None.
"""

from __future__ import annotations

import re

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.ib_records import IbSwitchFirmware
from fabcheck.parsers.numbers import read_hex

_FIELD = re.compile(r"([a-z_]{1,20}):(?: +(.*))?", re.ASCII)
_VERSION = re.compile(r"([0-9]{1,10})\.([0-9]{1,10})\.([0-9]{1,10})", re.ASCII)
_PSID = re.compile(r"'([\x21-\x7e]{0,16})'", re.ASCII)
NAMES = (
    "hw_dev_rev",
    "hw_dev_id",
    "hw_uptime",
    "fw_version",
    "fw_build_id",
    "fw_date",
    "fw_psid",
    "fw_ini_ver",
    "sw_version",
)
REQUIRED = ("hw_dev_rev", "hw_dev_id", "fw_version", "fw_psid")


def parse_vendstat_general(text: str, source: str = "<text>", lid: int = 0) -> IbSwitchFirmware:
    """The general information of the switch at `lid`; ParseError naming the line for a line that is not
    one of the nine fields, and for output without hw_dev_rev, hw_dev_id, fw_version or fw_psid."""
    fields: dict[str, tuple[int, str]] = {}
    for number, raw in enumerate(split_checked_lines(text, source, "vendstat"), start=1):
        line = raw.strip()
        if not line:
            continue
        found = _FIELD.fullmatch(line)
        if found is None or found.group(1) not in NAMES:
            raise ParseError(
                f"not a vendstat -N `name: value` line: {line[:120]!r}", source=source, line=number
            )
        if found.group(1) in fields:
            raise ParseError(f"{found.group(1)} shown twice", source=source, line=number)
        fields[found.group(1)] = (number, (found.group(2) or "").strip())
    missing = [name for name in REQUIRED if name not in fields]
    if missing:
        raise ParseError(f"no {', '.join(missing)}: not vendstat -N general information", source=source)

    def hexadecimal(name: str) -> int:
        number, token = fields[name]
        if not token.startswith("0x"):
            raise ParseError(f"{name} {token[:40]!r} is not 0x-prefixed hex", source=source, line=number)
        return read_hex(token, source=source, line=number, what=name, max_digits=8)

    number, version = fields["fw_version"]
    parts = _VERSION.fullmatch(version)
    if parts is None:
        raise ParseError(
            f"fw_version {version[:40]!r} is not major.minor.subminor", source=source, line=number
        )
    number, psid = fields["fw_psid"]
    quoted = _PSID.fullmatch(psid)
    if quoted is None:
        raise ParseError(f"fw_psid {psid[:40]!r} is not a quoted PSID", source=source, line=number)
    return IbSwitchFirmware(
        lid=lid,
        fw_version=".".join(str(int(part)) for part in parts.groups()),
        device_id=hexadecimal("hw_dev_id"),
        hw_revision=hexadecimal("hw_dev_rev"),
        psid=quoted.group(1) or None,
    )
