"""`flint -d <dev> q` (NVIDIA MFT; `mstflint` in mstflint) -> the NIC's firmware image and PSID.

`Label:<padding>value` lines, values from column 23 (Mellanox/mstflint:flint/subcommands.cpp@
b9d9e844a14ae1c85cb90c76ccd4a56a0eccd599, QuerySubCommand::printInfo): `FW Version` is the image on
the flash; `FW Version(Running):` follows it only while the running firmware differs from that image,
i.e. until a firmware reset or reboot loads it. `PSID` is the board's part id (MT_0000000838).
Continuation lines (Rom Info's further images, indented) are skipped; errors are `-E- ` lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines


@dataclass(frozen=True)
class FlintQuery:
    fw_version: str  # the burned image
    psid: str
    running_version: str | None = None  # `FW Version(Running)`: shown only when it differs
    product_version: str | None = None
    image_type: str | None = None

    @property
    def running(self) -> str:
        """The firmware the NIC runs now."""
        return self.running_version or self.fw_version

    @property
    def reset_pending(self) -> bool:
        """A burned image differs from the running one: it runs after a firmware reset or reboot."""
        return self.running_version is not None and self.running_version != self.fw_version


def parse_flint(text: str, source: str = "<text>") -> FlintQuery:
    """ParseError: an `-E-` line, no `FW Version` or no `PSID`, a label twice."""
    fields: dict[str, str] = {}
    for number, raw in enumerate(split_checked_lines(text, source, "flint"), start=1):
        line = raw.strip()
        if line.startswith("-E-"):
            raise ParseError(f"flint failed: {line[3:].strip()}", source=source, line=number)
        if not line or raw[:1].isspace() or ":" not in line:
            continue
        label, _, value = line.partition(":")
        if label in fields:
            raise ParseError(f"{label} shown twice", source=source, line=number)
        fields[label] = value.strip()
    missing = [label for label in ("FW Version", "PSID") if not fields.get(label)]
    if missing:
        raise ParseError(f"no {' and no '.join(missing)} (not flint query output)", source=source)
    return FlintQuery(
        fw_version=fields["FW Version"],
        psid=fields["PSID"],
        running_version=fields.get("FW Version(Running)") or None,
        product_version=fields.get("Product Version") or None,
        image_type=fields.get("Image type") or None,
    )
