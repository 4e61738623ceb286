"""`mlxlink -d <dev> -c` (NVIDIA MFT, `mstlink` in mstflint) -> the port's counters (LinkCounters).

An optional source: read where mlxlink is installed, never required. The output is sections, each a
title line, a dashed rule and `Key<padding>: value` records (mstflint mlxlink_record.cpp); `-c` adds
the section `Physical Counters and BER Info` (mlxlink_commander.cpp):

    Time Since Last Clear [Min]     : 348349.5
    Symbol Errors                   : 0          (InfiniBand ports only)
    Effective Physical Errors       : 0
    Effective Physical BER          : 15E-255
    Raw Physical Errors Per Lane    : 3183333,242074
    Raw Physical BER                : 1E-8
    Link Down Counter               : 0          (absent on some devices, e.g. BlueField-3)
    Link Error Recovery Counter     : 0

BER is text, `<coef>E-<magnitude>`; `...E-255` is mlxlink's "no value" (NVIDIA's own example prints
`15E-255` beside non-zero raw lane errors), read as no BER. `Effective Physical Errors` are the
errors left after FEC (Cumulus: effective-errors = uncorrected FEC errors): `uncorrected_symbols`.
`Symbol Errors` (InfiniBand) land on `symbol_errors`. `FEC` under `Operational Info` is the active
FEC. Values may be `N/A` (absent) and ANSI-coloured on a terminal (colours are dropped).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.numbers import read_int
from fabcheck.parsers.wire_records import CounterName, LinkCounters

SECTION = "Physical Counters and BER Info"
COUNTERS: Mapping[str, CounterName] = MappingProxyType(
    {
        "Effective Physical Errors": "uncorrected_symbols",
        "Symbol Errors": "symbol_errors",
        "Link Down Counter": "link_down",
    }
)
RAW_BER = "Raw Physical BER"
NO_VALUE = "N/A"
NO_BER_MAGNITUDE = 255
_BER = re.compile(r"^(?P<coef>[0-9]{1,20}(?:\.[0-9]{1,20})?)E-(?P<magnitude>[0-9]{1,3})$")


def parse_mlxlink(text: str, source: str = "<text>") -> LinkCounters:
    """The counters and raw BER of `mlxlink -c`. ParseError: no `Physical Counters and BER Info`
    section (not `-c` output, or mlxlink's `-E-` error), a counter twice or not an integer, or a BER
    that is not `<coef>E-<magnitude>`."""
    lines = split_checked_lines(text, source, "mlxlink")
    values: dict[CounterName, int] = {}
    native: dict[CounterName, str] = {}
    fec_mode: str | None = None
    pre_fec_ber: float | None = None
    seen_section = False
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if line == SECTION:
            seen_section = True
            continue
        key, colon, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not colon or not key:
            continue  # titles, dashed rules, blank lines and mlxlink's notes
        if value == NO_VALUE or not value:
            continue
        if key == "FEC" and fec_mode is None:
            fec_mode = value
        elif key == RAW_BER:
            pre_fec_ber = _ber(value, source, number)
        elif key in COUNTERS:
            name = COUNTERS[key]
            if name in values:
                raise ParseError(f"{key} appears twice", source=source, line=number)
            values[name] = read_int(value, source=source, line=number, what=key)
            native[name] = key
    if not seen_section:
        raise ParseError(f"no '{SECTION}' section: not `mlxlink -c` output", source=source)
    return LinkCounters(values, native, fec_mode=fec_mode, pre_fec_ber=pre_fec_ber)


def _ber(value: str, source: str, line: int) -> float | None:
    found = _BER.match(value)
    if found is None:
        raise ParseError(f"BER {value!r} is not <coef>E-<magnitude>", source=source, line=line)
    magnitude = int(found.group("magnitude"))
    if magnitude >= NO_BER_MAGNITUDE:
        return None
    rate = float(found.group("coef")) * 10.0**-magnitude
    if rate > 1.0:  # `15E-0` has the shape, but no rate of errors per bit is over 1
        raise ParseError(f"BER {value!r} is not a bit error rate (over 1)", source=source, line=line)
    return rate
