"""Community SONiC wire views -> per-port LinkCounters and ModuleOptics (pure).

Every view is sonic-utilities' own table (tabulate through portstat or `show interfaces flap`) or
sfpshow's indented EEPROM dump; the layouts are those of the samples under tests/data/real/sonic/
(INDEX.tsv names each source):

- `show interfaces counters errors` (portstat -e): IFACE STATE RX_ERR RX_DRP RX_OVR TX_ERR TX_DRP TX_OVR.
- `show interfaces counters fec-stats` (portstat -f): IFACE STATE FEC_CORR FEC_UNCORR FEC_SYMBOL_ERR,
  and from 202411 on FEC_PRE_BER FEC_POST_BER (later FEC_PRE_BER_MAX and the FLR columns).
- `show interfaces flap` (from 202411): Interface, Flap Count (orchagent counts every operational
  status change, down and up alike), Admin, Oper and two timestamps.
- `show interfaces transceiver eeprom --dom`: per port `EthernetN: SFP EEPROM detected` (or `Not
  detected`), the EEPROM fields, then the DOM sections with the module's own thresholds.

Counts are grouped by thousands (utilities_common/netstat.py ns_diff: '{:,}'); `N/A` is a counter the
switch does not have (absent, never 0).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.switch_records import Placed
from fabcheck.parsers.wire_records import (
    CounterName,
    DomReading,
    LinkCounters,
    ModuleOptics,
    Quantity,
    Thresholds,
)

ERRORS_COMMAND = "show interfaces counters errors"
FEC_COMMAND = "show interfaces counters fec-stats"
FLAP_COMMAND = "show interfaces flap"
DOM_COMMAND = "show interfaces transceiver eeprom --dom"

# portstat's columns -> the wire vocabulary. RX_OVR/TX_OVR (oversize frames) have no wire meaning here.
ERROR_COLUMNS: Mapping[str, CounterName] = {
    "RX_ERR": "rx_errors",
    "TX_ERR": "tx_errors",
    "RX_DRP": "rx_discards",
    "TX_DRP": "tx_discards",
}
# FEC_SYMBOL_ERR is deliberately not read: it counts the symbols the FEC corrected (SAI
# IF_IN_FEC_SYMBOL_ERRORS), which on real switches runs level with FEC_CORR on healthy links
# (sonic-net/sonic-mgmt#14599's FEC test compares the two; #25455 shows 67 beside 69), so it is no loss.
FEC_COLUMNS: Mapping[str, CounterName] = {"FEC_CORR": "fec_corrected", "FEC_UNCORR": "fec_uncorrectable"}
PRE_BER_COLUMN = "FEC_PRE_BER"
FLAP_COLUMN = "Flap Count"
# Flap Count is `Never` until the port's first operational change was recorded (APPL_DB has no
# flap_count yet): no change at all, so 0 and a later change is a delta.
NEVER = "Never"
NOT_AVAILABLE = "N/A"

# Lines portstat prints above its table: the cached snapshot's time after `sonic-clear counters`, the
# period of `-p`, and the multi-ASIC reminder below it.
_PREAMBLE = re.compile(r"(Last cached time was |The rates are calculated within |Reminder: )", re.ASCII)
# Columns whose cells hold spaces ("7.81e-10 (89%)", "Sat Feb 21 11:00:41 2026"): every column read
# here comes before them, so a row's leading cells split on whitespace.
SPACED_CELLS = frozenset(("FLR(P) (Accuracy)", "Link Down TimeStamp(UTC)", "Link Up TimeStamp(UTC)"))
_COLUMN_GAP = re.compile(r"\s{2,}")
_PORT = re.compile(r"[A-Za-z][A-Za-z0-9/._-]{0,63}", re.ASCII)
# At most a 64-bit counter's 20 digits: int() of thousands of digits raises ValueError, not ParseError.
_COUNT = re.compile(r"[0-9]{1,3}(?:,[0-9]{3}){0,6}|[0-9]{1,20}", re.ASCII)
_RATE = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?", re.ASCII)
# What releases before 202411 answer to `show interfaces flap`: click's refusal of an unknown command
# (click 7 quotes the name with double quotes, click 8 with single ones).
_NO_FLAP_COMMAND = re.compile(r"Error: No such command [\"']flap[\"']\.\s*\Z")


def _table(text: str, source: str, what: str, first: str) -> list[tuple[int, dict[str, str]]]:
    """Rows of a tabulate table (header, dashes, rows) as column -> cell, up to the first column whose
    cells hold spaces."""
    lines = split_checked_lines(text, source, what)
    header: list[str] | None = None
    ruled = False
    rows: list[tuple[int, dict[str, str]]] = []
    for number, line in enumerate(lines, start=1):
        body = line.strip()
        if not body:
            continue
        if header is None:
            if _PREAMBLE.match(body):
                continue
            header = _COLUMN_GAP.split(body)
            if header[0] != first:  # rows are read by this column's name
                raise ParseError(
                    f"{what}: expected the {first} header, got {body[:60]!r}", source=source, line=number
                )
            continue
        if not ruled:
            if set(body) - {"-", " "}:
                raise ParseError(
                    f"{what}: expected the dashed rule under the header", source=source, line=number
                )
            ruled = True
            continue
        if _PREAMBLE.match(body):
            continue
        cells = body.split()
        leading = header[: next((i for i, name in enumerate(header) if name in SPACED_CELLS), len(header))]
        if len(cells) < len(leading) or not _PORT.fullmatch(cells[0]):
            raise ParseError(f"{what}: unexpected row {body[:60]!r}", source=source, line=number)
        rows.append((number, dict(zip(leading, cells, strict=False))))
    if header is None:
        raise ParseError(f"{what}: no {first} table", source=source)
    return rows


def _count(cell: str, source: str, what: str, line: int) -> int | None:
    if cell == NOT_AVAILABLE:
        return None
    if not _COUNT.fullmatch(cell):
        raise ParseError(f"{what}: {cell[:30]!r} is not a count", source=source, line=line)
    return int(cell.replace(",", ""))


def _counters(
    text: str, source: str, what: str, first: str, columns: Mapping[str, CounterName]
) -> dict[str, tuple[int, dict[CounterName, int], dict[CounterName, str], dict[str, str]]]:
    ports: dict[str, tuple[int, dict[CounterName, int], dict[CounterName, str], dict[str, str]]] = {}
    for line, row in _table(text, source, what, first):
        values: dict[CounterName, int] = {}
        native: dict[CounterName, str] = {}
        for column, name in columns.items():
            if column not in row:
                continue
            value = _count(row[column], source, f"{what} {row[first]} {column}", line)
            if value is not None:
                values[name] = value
                native[name] = column
        ports[row[first]] = (line, values, native, row)
    return ports


def parse_errors(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """`show interfaces counters errors`: per port the receive/transmit errors and discards."""
    table = _counters(text, source, ERRORS_COMMAND, "IFACE", ERROR_COLUMNS)
    if table and not any("RX_ERR" in row for _, _, _, row in table.values()):
        raise ParseError(f"{ERRORS_COMMAND}: no RX_ERR column", source=source)
    return [(name, LinkCounters(values, native)) for name, (_, values, native, _) in table.items()]


def parse_fec_stats(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """`show interfaces counters fec-stats`: FEC corrected and uncorrectable blocks per port, and the
    switch's own pre-FEC BER where the release shows it (a rate over its polling interval)."""
    placed: list[Placed] = []
    for name, (line, values, native, row) in _counters(
        text, source, FEC_COMMAND, "IFACE", FEC_COLUMNS
    ).items():
        if "FEC_UNCORR" not in row:
            raise ParseError(f"{FEC_COMMAND}: no FEC_UNCORR column", source=source)
        ber: float | None = None
        cell = row.get(PRE_BER_COLUMN, NOT_AVAILABLE)
        if cell != NOT_AVAILABLE:
            if not _RATE.fullmatch(cell):
                raise ParseError(
                    f"{FEC_COMMAND} {name}: FEC_PRE_BER {cell[:30]!r} is not a rate", source=source, line=line
                )
            ber = float(cell)
            if not 0.0 <= ber <= 1.0:  # "1e999" matches the rate's shape and is inf
                raise ParseError(
                    f"{FEC_COMMAND} {name}: FEC_PRE_BER {cell[:30]!r} is not a bit error rate",
                    source=source,
                    line=line,
                )
        placed.append((name, LinkCounters(values, native, pre_fec_ber=ber)))
    return placed


def parse_flaps(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """`show interfaces flap`: every operational status change per port (link_changes). A release
    before 202411 has no such command and no flap count: nothing to read, so the ports carry no flap
    counter (not judged), never a count of 0."""
    if _NO_FLAP_COMMAND.search(text):
        return []
    placed: list[Placed] = []
    for line, row in _table(text, source, FLAP_COMMAND, "Interface"):
        if FLAP_COLUMN not in row:
            raise ParseError(f"{FLAP_COMMAND}: no {FLAP_COLUMN} column", source=source, line=line)
        cell = row[FLAP_COLUMN]
        count = 0 if cell == NEVER else _count(cell, source, f"{FLAP_COMMAND} {row['Interface']}", line)
        if count is None:
            continue
        placed.append(
            (row["Interface"], LinkCounters({"link_changes": count}, {"link_changes": FLAP_COLUMN}))
        )
    return placed


# -- transceiver DOM --------------------------------------------------------------------------------

_BLOCK = re.compile(
    r"(?P<port>[A-Za-z][A-Za-z0-9/._-]{0,63}): (?P<state>SFP(?: EEPROM)? (?:detected|Not detected)|"
    r"SFP EEPROM is not applicable for RJ45 port)",
    re.ASCII,
)
_FIELD = re.compile(r"(?P<key>[A-Za-z0-9 ()/.-]+?)\s*:\s*(?P<value>.*)")
_VALUE = re.compile(
    r"(?P<number>[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|-inf|inf)(?P<unit>dBm|mA|C|Volts)"
)
MONITOR_SECTIONS = frozenset(("ChannelMonitorValues", "ModuleMonitorValues", "MonitorData"))
THRESHOLD_SECTIONS = frozenset(("ChannelThresholdValues", "ModuleThresholdValues", "ThresholdData"))
# sfpshow's DOM names (scripts/sfpshow *_DOM_*_MAP): per lane RX<n>Power, TX<n>Bias, TX<n>Power; an SFP
# prints one channel without a number.
_LANE_VALUE = re.compile(r"(?P<what>RX|TX)(?P<lane>[1-8]?)(?P<kind>Power|Bias)", re.ASCII)
_LANE_QUANTITY: Mapping[str, Quantity] = {"RXPower": "rx_power", "TXPower": "tx_power", "TXBias": "tx_bias"}
_MODULE_VALUES: Mapping[str, Quantity] = {"Temperature": "temperature", "Vcc": "voltage"}
_THRESHOLD = re.compile(
    r"(?P<what>RxPower|TxPower|TxBias|Temp|Vcc)(?P<level>HighAlarm|HighWarning|LowWarning|LowAlarm)"
)
_THRESHOLD_QUANTITY: Mapping[str, Quantity] = {
    "RxPower": "rx_power",
    "TxPower": "tx_power",
    "TxBias": "tx_bias",
    "Temp": "temperature",
    "Vcc": "voltage",
}
UNIT_OF: Mapping[Quantity, str] = {
    "rx_power": "dBm",
    "tx_power": "dBm",
    "tx_bias": "mA",
    "temperature": "C",
    "voltage": "Volts",
}


def _dom_value(value: str, quantity: Quantity, source: str, what: str, line: int) -> float | None:
    if value in (NOT_AVAILABLE, "Unknown"):
        return None
    match = _VALUE.fullmatch(value.strip())
    if match is None or match["unit"] != UNIT_OF[quantity]:
        raise ParseError(
            f"{what}: {value[:30]!r} is not a value in {UNIT_OF[quantity]}", source=source, line=line
        )
    number = float(match["number"])
    if not math.isfinite(number) and not (number == -math.inf and UNIT_OF[quantity] == "dBm"):
        raise ParseError(
            f"{what}: {value[:30]!r} is not a value in {UNIT_OF[quantity]}", source=source, line=line
        )
    return number  # -inf dBm: no light at all (xcvrd stores -inf for 0 mW)


class _Module:
    def __init__(self, present: bool, rj45: bool) -> None:
        self.present = present
        self.rj45 = rj45
        self.fields: dict[str, str] = {}
        self.values: list[tuple[Quantity, int | None, float | None]] = []
        self.limits: dict[Quantity, dict[str, float | None]] = {}

    def optics(self) -> ModuleOptics:
        if not self.present:
            return ModuleOptics(present=False, diagnostics=False)
        media = "RJ45" if self.rj45 else self.fields.get("Identifier", "")
        vendor = " ".join(
            v for v in (self.fields.get("Vendor Name", ""), self.fields.get("Vendor PN", "")) if v
        )
        if vendor:
            media = f"{media} ({vendor})" if media else vendor
        readings = tuple(
            DomReading(quantity, lane, value, self._thresholds(quantity))
            for quantity, lane, value in self.values
        )
        return ModuleOptics(True, any(r.value is not None for r in readings), media, readings)

    def _thresholds(self, quantity: Quantity) -> Thresholds | None:
        limits = self.limits.get(quantity)
        if not limits:
            return None
        return Thresholds(
            limits.get("HighAlarm"),
            limits.get("HighWarning"),
            limits.get("LowWarning"),
            limits.get("LowAlarm"),
        )


def parse_transceiver_dom(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """`show interfaces transceiver eeprom --dom`: per port whether a module is there, and its live
    DOM values with the module's own thresholds (power in dBm, bias mA, temperature °C, Vcc V). A
    module whose DOM sections are empty (a passive copper cable: xcvrd stores N/A, sfpshow prints no
    N/A line) has no diagnostics."""
    what = DOM_COMMAND
    modules: dict[str, _Module] = {}
    current: _Module | None = None
    section: str | None = None
    for number, line in enumerate(split_checked_lines(text, source, what), start=1):
        if not line.strip():
            continue
        if not line[0].isspace():
            match = _BLOCK.fullmatch(line.rstrip())
            if match is None:
                raise ParseError(f"{what}: unexpected line {line[:60]!r}", source=source, line=number)
            state = match["state"]
            current = _Module(present="Not detected" not in state, rj45="RJ45" in state)
            modules[match["port"]] = current
            section = None
            continue
        if current is None:
            raise ParseError(f"{what}: a field before any port line", source=source, line=number)
        field = _FIELD.fullmatch(line.strip())
        indent = len(line) - len(line.lstrip())
        if indent <= 8:
            name = field["key"] if field else ""
            section = (
                name
                if field and not field["value"] and name in MONITOR_SECTIONS | THRESHOLD_SECTIONS
                else None
            )
            if section is None and field and field["value"]:
                current.fields[field["key"]] = field["value"].strip()
            continue
        if section is None or field is None:
            continue  # a nested EEPROM field (compliance codes) or a wrapped application line
        _dom_field(
            current, section, field["key"], field["value"].strip(), source, f"{what} {field['key']}", number
        )
    return [(name, module.optics()) for name, module in modules.items()]


def _dom_field(
    module: _Module, section: str, key: str, value: str, source: str, what: str, line: int
) -> None:
    if section in MONITOR_SECTIONS:
        lane_match = _LANE_VALUE.fullmatch(key)
        if lane_match is not None:
            lane_quantity = _LANE_QUANTITY.get(lane_match["what"] + lane_match["kind"])
            if lane_quantity is None:
                return  # RX bias: no such DOM value
            quantity: Quantity = lane_quantity
            module.values.append(
                (quantity, int(lane_match["lane"] or 1), _dom_value(value, quantity, source, what, line))
            )
        elif key in _MODULE_VALUES:
            quantity = _MODULE_VALUES[key]
            module.values.append((quantity, None, _dom_value(value, quantity, source, what, line)))
        return  # other module values (laser frequency, requested TX power) are not judged
    threshold = _THRESHOLD.fullmatch(key)
    if threshold is None:
        return
    quantity = _THRESHOLD_QUANTITY[threshold["what"]]
    module.limits.setdefault(quantity, {})[threshold["level"]] = _dom_value(
        value, quantity, source, what, line
    )
