"""`mlxconfig -d <dev> [-e] q` (NVIDIA MFT; `mstconfig` in mstflint) -> the NIC's firmware parameters.

The table follows a `Configurations:` header naming its value columns: `Next Boot` alone (plain `q`),
`Default  Current  Next Boot` (`-e`), or `Next Boot  New` (the table `set` prints). Each row is an
optional `*` (Next Boot differs from the Default or Current shown), an optional `RO` (read only), the
parameter's name (`NAME` or `NAME[i]`) and one value per column (Mellanox/mstflint:mlxconfig/
mlxcfg_ui.cpp@b9d9e844a14ae1c85cb90c76ccd4a56a0eccd599, printSingleParam and printValue). A value is
`NAME(n)` for an enum or boolean (`ETH(2)`, `True(1)`), a plain number (`255`), `Array[0..7]` (an
array not expanded), or a bare symbol; `N/A` where the firmware could not say. Column widths differ
between tool releases (real samples: 36/16, 44/20, 48/33): values are split on white space, which no
value contains. Errors are `-E- <message>` lines on stdout.

Current is what is in effect; Next Boot what a firmware reset or reboot will bring (docs/checks/bus.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines

HEADER = "Configurations:"
COLUMNS = ("Default", "Current", "Next Boot", "New")
_ROW = re.compile(
    r"^(?P<mark>\*)?\s*(?P<ro>RO\s)?\s*(?P<name>[A-Z][A-Za-z0-9_]*(?:\[[0-9]+\])?)\s+(?P<values>\S.*)$"
)
# "The '*' shows ..." / "The 'RO' shows ..." after the table; set's prompt, progress and -I-/-W- lines.
_NOT_ROWS = ("The ", "Apply new Configuration", "Applying", "-I-", "-W-")
_NAMED = re.compile(r"^(?P<name>.*?)\((?P<number>[0-9]+)\)$")


@dataclass(frozen=True)
class MlxconfigValue:
    """One cell: the text as printed, the enum's name and number where it has them."""

    text: str
    name: str | None
    number: int | None

    @classmethod
    def read(cls, text: str) -> MlxconfigValue:
        named = _NAMED.match(text)
        if named:
            return cls(text, named["name"], int(named["number"]))
        if text.isdigit():
            return cls(text, None, int(text))
        if text == "N/A" or text.startswith("Array["):
            return cls(text, None, None)
        return cls(text, text, None)


@dataclass(frozen=True)
class MlxconfigParam:
    name: str
    next_boot: MlxconfigValue
    default: MlxconfigValue | None = None  # shown with -e
    current: MlxconfigValue | None = None  # shown with -e: what is in effect
    new: MlxconfigValue | None = None  # the `set` table's value being written
    marked: bool = False  # the `*`: Next Boot differs from the Default or Current shown
    read_only: bool = False


@dataclass(frozen=True)
class MlxconfigQuery:
    columns: tuple[str, ...]
    params: Mapping[str, MlxconfigParam]
    device_type: str | None = None

    @property
    def shows_current(self) -> bool:
        return "Current" in self.columns


def parse_mlxconfig(text: str, source: str = "<text>") -> MlxconfigQuery:
    """The parameter table. ParseError: an `-E-` line (the tool's error), no `Configurations:` header,
    an unknown column, a row with another number of values than columns, a parameter twice."""
    lines = split_checked_lines(text, source, "mlxconfig")
    columns: tuple[str, ...] | None = None
    device_type: str | None = None
    params: dict[str, MlxconfigParam] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if line.startswith("-E-"):
            raise ParseError(f"mlxconfig failed: {line[3:].strip()}", source=source, line=number)
        if line.startswith("Device type:"):
            device_type = line.removeprefix("Device type:").strip() or None
        if line.startswith(HEADER):
            if columns is not None:
                raise ParseError(
                    "a second Configurations: table (one device per query)", source=source, line=number
                )
            columns = _columns(line[len(HEADER) :], source, number)
            continue
        if columns is None or not line or line.startswith(_NOT_ROWS):
            continue  # before the table; its closing notes; the set flow's prompt and result lines
        row = _ROW.match(raw.rstrip())
        if row is None:
            raise ParseError(f"not a parameter row: {line[:80]!r}", source=source, line=number)
        values = row["values"].split()
        if len(values) != len(columns):
            raise ParseError(
                f"{row['name']}: {len(values)} value(s) under {len(columns)} column(s)",
                source=source,
                line=number,
            )
        if row["name"] in params:
            raise ParseError(f"{row['name']} shown twice", source=source, line=number)
        cells = {column: MlxconfigValue.read(value) for column, value in zip(columns, values, strict=True)}
        params[row["name"]] = MlxconfigParam(
            row["name"],
            next_boot=cells.get("Next Boot") or cells["Default"],
            default=cells.get("Default"),
            current=cells.get("Current"),
            new=cells.get("New"),
            marked=bool(row["mark"]),
            read_only=bool(row["ro"]),
        )
    if columns is None:
        raise ParseError("no Configurations: table (not mlxconfig query output)", source=source)
    return MlxconfigQuery(columns, MappingProxyType(params), device_type)


def _columns(text: str, source: str, number: int) -> tuple[str, ...]:
    names = tuple(re.split(r"\s{2,}", text.strip()))
    unknown = [name for name in names if name not in COLUMNS]
    if unknown or not names or names == ("",):
        raise ParseError(f"unknown value column(s) {unknown or names}", source=source, line=number)
    return names


def matches(intent_value: str | int | bool, shown: MlxconfigValue | None) -> bool:
    """Whether a value shown equals the intent's: a boolean as True(1)/False(0) (or 1/0), a number as
    the value's number (`ETH(2)` is 2, `255` is 255), a name as the enum's name in any case (mlxconfig
    takes names case-insensitively; mstflint mlxcfg_param.cpp EnumParamValue::parseValue)."""
    if shown is None:
        return False
    if isinstance(intent_value, bool):
        return shown.number == int(intent_value)
    if isinstance(intent_value, int):
        return shown.number == intent_value
    if intent_value.isdigit():
        return shown.number == int(intent_value)
    return shown.name is not None and shown.name.lower() == intent_value.lower()


def spelled(intent_value: str | int | bool) -> str:
    """The intent's value as mlxconfig `set` takes it (a boolean as 1/0)."""
    if isinstance(intent_value, bool):
        return str(int(intent_value))
    return str(intent_value)
