"""`mlxfwmanager --query` (NVIDIA MFT; `mstfwmanager` in mstflint; `mlxup` prints the same) -> one
record per NIC: part, PSID, PCI device, the running (Current) and Available firmware, the status.

Blocks start `Device #N:` and hold `  Label:<padding>value` lines; the version table is a `Versions:
Current Available` line and one line per image kind (`FW`, then expansion ROMs: `PXE`, `UEFI`),
then `Status:` (Mellanox/mstflint:mlxfwupdate/mlxfwmanager.cpp@b9d9e844a14ae1c85cb90c76ccd4a56a0eccd599,
printDeviceInfoQuery). For `fabcheck analyze` of a saved query; the gate reads flint per device.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines

_DEVICE = re.compile(r"^Device #(?P<index>[0-9]+):$")
_VERSION = re.compile(r"^(?P<kind>[A-Za-z0-9_]+)\s+(?P<current>\S+)\s+(?P<available>\S+)$")


@dataclass(frozen=True)
class FwManagerDevice:
    index: int
    device_type: str | None
    part_number: str | None
    psid: str | None
    pci_device: str | None
    fw_current: str | None
    fw_available: str | None  # "N/A": no image to compare against
    status: str | None


def parse_mlxfwmanager(text: str, source: str = "<text>") -> tuple[FwManagerDevice, ...]:
    """ParseError: an `-E-` line, no `Device #N:` block, a block without its `FW` version line."""
    blocks: list[tuple[int, dict[str, str], int]] = []
    in_versions = False
    for number, raw in enumerate(split_checked_lines(text, source, "mlxfwmanager"), start=1):
        line = raw.strip()
        if line.startswith("-E-"):
            raise ParseError(f"mlxfwmanager failed: {line[3:].strip()}", source=source, line=number)
        device = _DEVICE.match(line)
        if device:
            blocks.append((int(device["index"]), {}, number))
            in_versions = False
            continue
        if not blocks or not line or set(line) == {"-"}:
            continue
        fields = blocks[-1][1]
        if line.startswith("Versions:"):
            in_versions = True
            continue
        version = _VERSION.match(line) if in_versions else None
        if version:
            fields[f"version {version['kind']}"] = f"{version['current']} {version['available']}"
            continue
        label, colon, value = line.partition(":")
        if colon:
            in_versions = False
            fields.setdefault(label.strip(), value.strip())
    if not blocks:
        raise ParseError("no `Device #N:` block (not mlxfwmanager --query output)", source=source)
    records = []
    for index, fields, first_line in blocks:
        if "version FW" not in fields:
            raise ParseError(f"Device #{index}: no FW version line", source=source, line=first_line)
        current, available = fields["version FW"].split(" ")
        records.append(
            FwManagerDevice(
                index,
                fields.get("Device Type"),
                fields.get("Part Number"),
                fields.get("PSID"),
                fields.get("PCI Device Name"),
                current,
                available,
                fields.get("Status"),
            )
        )
    return tuple(records)
