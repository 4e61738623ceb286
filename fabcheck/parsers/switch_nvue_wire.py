"""Cumulus Linux NVUE wire views -> LinkCounters / ModuleOptics per switch port (pure).

Each layout is NVIDIA's own sample (tests/data/real/nvue/INDEX.tsv), from the CL 5.14 guide "Monitoring
Interfaces and Transceivers with NVUE" [CL_MONITOR] and the NVUE command reference [NVUE_IF]:

- `nv show interface P counters` (CL >= 5.5): `carrier-transitions` in the attribute table (every up
  and down: link_changes), then the `Error Counters` section (Receive / Transmit columns, `n/a` where
  the direction has no such counter) and the `Drop Counters` section.
- `nv show interface P link phy-detail` (CL 5.10 - 5.14, Spectrum-2 and later) and, from CL 5.15,
  the same view renamed `nv show interface P link phy health` (CL515_MONITOR prints the same rows in the
  same layout, so both are read alike): `phy-received-bits`, `symbol-errors`, `effective-errors`
  (errors left after FEC: "the same as uncorrected FEC errors", CL_MONITOR) and `raw-ber`, a rate
  the switch computes itself, printed as `NE-M`; `15E-255` is the switch's "no value yet" (CL_MONITOR's
  sample shows it beside per-lane rates, on a port with one minute since the last clear).
- `nv show system` (CL >= 5.2): the `build` row, `Cumulus Linux X.Y.Z`, the release that picks which
  of the two PHY views a switch is asked (fabcheck.collect.switch_probes).
- `nv show platform transceiver P` (CL >= 5.11): `key : value` lines, the module's DOM grouped per
  quantity with its own alarm and warning thresholds, rx/tx power as `0.8625 mW / -0.64 dBm`.

CL_MONITOR: CumulusNetworks/docs:content/cumulus-linux-514/Monitoring-and-Troubleshooting/
  Troubleshooting-Network-Interfaces/Monitoring-Interfaces-and-Transceivers-with-NVUE.md@
  0472f78f421f4ff8ef10a97cb369ca01e18a1648
CL515_MONITOR: the same guide for CL 5.15, CumulusNetworks/docs:content/cumulus-linux-515/
  Monitoring-and-Troubleshooting/Troubleshooting-Network-Interfaces/
  Monitoring-Interfaces-and-Transceivers-with-NVUE.md@07d58d4b2ae2bd3864171785ca7a10c1f5dfd950
NVUE_IF: CumulusNetworks/docs:content/nvue-reference/Show-Commands/Interface.md@
  a4ecc6efd628c7418b81ebaa2dcc609ef266f53d
NVUE_SYSTEM: CumulusNetworks/docs:content/nvue-reference/Show-Commands/System.md@
  26bd9f5a2fd77b06e3d5a3ac6a6930d51b907c6a
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fabcheck.errors import ParseError
from fabcheck.parsers.numbers import read_float, read_int
from fabcheck.parsers.switch_nvue import attribute_tree, section_rows
from fabcheck.parsers.switch_records import Placed
from fabcheck.parsers.wire_records import (
    CounterName,
    DomReading,
    LinkCounters,
    ModuleOptics,
    Quantity,
    Thresholds,
    mw_to_dbm,
)

NOT_APPLICABLE = "n/a"  # a counter the direction does not have (CL_MONITOR's tables)
# (section, row, column) -> the wire vocabulary. Jabber, length, oversize and undersize errors are frame
# sizes, not the wire's health; `Total Errors` Receive sums the rows read here with them, so it is left.
COUNTER_CELLS: Mapping[tuple[str, str, str], CounterName] = {
    ("Error Counters", "FCS Errors", "Receive"): "fcs_errors",
    ("Error Counters", "Symbol Errors", "Receive"): "symbol_errors",
    ("Error Counters", "Alignment Errors", "Receive"): "alignment_errors",
    ("Error Counters", "Total Errors", "Transmit"): "tx_errors",
    # Receive drops for lack of buffer (ACL drops are policy, not the wire); every transmit drop.
    ("Drop Counters", "Buffer Drops", "Receive"): "rx_discards",
    ("Drop Counters", "Total Drops", "Transmit"): "tx_discards",
}
COLUMNS = ("Receive", "Transmit")
CARRIER_TRANSITIONS = "carrier-transitions"

# phy-detail rows -> the wire vocabulary. `symbol-errors` is the PHY's symbol error count (the same
# PPCNT statistical counter mlx5 exposes as rx_pcs_symbol_err_phy: symbols the FEC left uncorrected;
# derived, NVIDIA does not define the row), so it is not the counters view's `Symbol Errors`.
PHY_ROWS: Mapping[str, CounterName] = {
    "phy-received-bits": "received_bits",
    "symbol-errors": "uncorrected_symbols",
    "effective-errors": "fec_uncorrectable",
}
RAW_BER = "raw-ber"
_BER = re.compile(r"(?P<mantissa>[0-9]{1,6})E-(?P<exponent>[0-9]{1,3})", re.ASCII)
NO_BER_EXPONENT = 255  # `15E-255`: the switch has no rate to show


def counters_what(port: str | None) -> str:
    return f"nv show interface {port} counters"


def phy_detail_what(port: str | None) -> str:
    return f"nv show interface {port} link phy-detail"


def phy_health_what(port: str | None) -> str:
    return f"nv show interface {port} link phy health"


SHOW_SYSTEM = "nv show system"
BUILD = "build"
_BUILD = re.compile(r"Cumulus Linux (?P<major>[0-9]{1,3})\.(?P<minor>[0-9]{1,3})(\.[0-9]+)*", re.ASCII)


def parse_release(text: str, source: str = "<text>") -> tuple[int, int]:
    """`nv show system`: (major, minor) of its `build` row, `Cumulus Linux 5.5.0` (NVUE_SYSTEM)."""
    tree = attribute_tree(text, source, SHOW_SYSTEM)
    build = tree.get(BUILD)
    found = _BUILD.fullmatch(build.strip()) if isinstance(build, str) else None
    if found is None:
        raise ParseError(
            f"{SHOW_SYSTEM}: the {BUILD} row {build!r} names no Cumulus Linux release", source=source
        )
    return int(found["major"]), int(found["minor"])


def transceiver_what(port: str | None) -> str:
    return f"nv show platform transceiver {port}"


def parse_counters(text: str, port: str | None, source: str = "<text>") -> list[Placed]:
    """`nv show interface P counters`: link changes, receive FCS / symbol / alignment errors, transmit
    errors and the port's discards. A cell `n/a` is a counter the port does not have (absent)."""
    what = counters_what(port)
    tree = attribute_tree(text, source, what)
    if CARRIER_TRANSITIONS not in tree or not isinstance(tree[CARRIER_TRANSITIONS], str):
        raise ParseError(f"{what}: no {CARRIER_TRANSITIONS} row", source=source)
    values: dict[CounterName, int] = {
        "link_changes": read_int(
            tree[CARRIER_TRANSITIONS], source=source, what=f"{what} {CARRIER_TRANSITIONS}"
        )
    }
    native: dict[CounterName, str] = {"link_changes": CARRIER_TRANSITIONS}
    for section in sorted({cell[0] for cell in COUNTER_CELLS}):
        table = _counter_table(text, section, source, what)
        for (wanted, row, column), name in COUNTER_CELLS.items():
            if wanted != section:
                continue
            if row not in table:
                raise ParseError(f"{what}: section {section!r} has no {row!r} row", source=source)
            cell = table[row][column]
            if cell == NOT_APPLICABLE:
                continue
            values[name] = read_int(cell, source=source, what=f"{what} {row} {column}")
            native[name] = f"{row} ({column})"
    return [(port, LinkCounters(values, native))]


def _counter_table(text: str, section: str, source: str, what: str) -> dict[str, dict[str, str]]:
    rows = section_rows(text, section, source, what)
    if not rows:
        raise ParseError(f"{what}: no {section!r} section", source=source)
    table: dict[str, dict[str, str]] = {}
    for row in rows:
        if len(row) != 1 + len(COLUMNS) or not all(row):
            raise ParseError(
                f"{what}: {section!r} row {row!r} is not Counter, Receive, Transmit", source=source
            )
        table[row[0]] = dict(zip(COLUMNS, row[1:], strict=True))
    return table


def parse_phy_detail(text: str, port: str | None, source: str = "<text>") -> list[Placed]:
    """`nv show interface P link phy-detail` (CL 5.10 - 5.14): bits received, uncorrected symbols,
    errors after FEC (effective errors: uncorrectable) and the switch's own raw (pre-FEC) BER, None at
    `15E-255`."""
    return _parse_phy(text, port, source, phy_detail_what(port))


def parse_phy_health(text: str, port: str | None, source: str = "<text>") -> list[Placed]:
    """`nv show interface P link phy health` (CL >= 5.15): phy-detail renamed, the same rows
    (CL515_MONITOR), read onto the same wire vocabulary."""
    return _parse_phy(text, port, source, phy_health_what(port))


def _parse_phy(text: str, port: str | None, source: str, what: str) -> list[Placed]:
    tree = attribute_tree(text, source, what)
    values: dict[CounterName, int] = {}
    native: dict[CounterName, str] = {}
    for row, name in PHY_ROWS.items():
        if not isinstance(tree.get(row), str):
            raise ParseError(f"{what}: no {row} row", source=source)
        values[name] = read_int(tree[row], source=source, what=f"{what} {row}")
        native[name] = row
    if not isinstance(tree.get(RAW_BER), str):
        raise ParseError(f"{what}: no {RAW_BER} row", source=source)
    return [(port, LinkCounters(values, native, pre_fec_ber=ber(tree[RAW_BER], source, f"{what} {RAW_BER}")))]


def ber(value: str, source: str, what: str) -> float | None:
    """NVUE's `3E-6` as 3e-06; `15E-255` (no rate yet) as None."""
    match = _BER.fullmatch(value)
    if match is None:
        raise ParseError(f"{what}: {value[:40]!r} is not a rate such as 3E-6", source=source)
    if int(match["exponent"]) == NO_BER_EXPONENT:
        return None
    rate = int(match["mantissa"]) * 10.0 ** -int(match["exponent"])
    if rate > 1.0:  # `5E-0` has the shape, but no rate of errors per bit is over 1
        raise ParseError(f"{what}: {value[:40]!r} is not a bit error rate (over 1)", source=source)
    return rate


# -- nv show platform transceiver P ---------------------------------------------------------------

DIAGNOSTICS_AVAILABLE = "Diagnostic Data Available"  # CL_MONITOR; any other wording: no DOM (unverified)
PLUGGED = "plugged"  # CL_MONITOR shows `plugged_enabled`
UNPLUGGED = "unplugged"  # the empty cage (the word is unverified: no public sample of an empty cage)
THRESHOLD_KEYS = {
    "high_alarm": "high-alarm-threshold",
    "high_warning": "high-warning-threshold",
    "low_warning": "low-warning-threshold",
    "low_alarm": "low-alarm-threshold",
}
# quantity -> (its group key, the value's key in the group, the unit NVUE prints)
MODULE_WIDE: Mapping[Quantity, tuple[str, str, str]] = {
    "temperature": ("temperature", "temperature", "C"),
    "voltage": ("voltage", "voltage", "V"),
}
PER_CHANNEL: Mapping[Quantity, tuple[str, str, str]] = {
    "rx_power": ("rx-power", "power", "dBm"),
    "tx_power": ("tx-power", "power", "dBm"),
    "tx_bias": ("tx-bias-current", "current", "mA"),
}
_CHANNEL = re.compile(r"channel-(?P<lane>[0-9]{1,2})", re.ASCII)
_POWER = re.compile(r"(?P<mw>\S+) mW / (?P<dbm>\S+) dBm", re.ASCII)
NOT_AVAILABLE = "N/A"


def parse_transceiver(text: str, port: str | None, source: str = "<text>") -> list[Placed]:
    """`nv show platform transceiver P`: whether a module is plugged, whether it has digital
    diagnostics, and its temperature, voltage and per-channel rx / tx power and bias with the module's
    own thresholds (power in dBm)."""
    what = transceiver_what(port)
    tree = colon_tree(text, source, what)
    status = tree.get("status")
    if not isinstance(status, str):
        raise ParseError(f"{what}: no status line", source=source)
    if status.startswith(UNPLUGGED):
        return [(port, ModuleOptics(present=False, diagnostics=False, media=status))]
    if not status.startswith(PLUGGED):
        raise ParseError(f"{what}: status {status[:40]!r} is neither plugged nor unplugged", source=source)
    media = " ".join(str(tree[key]) for key in ("identifier", "cable-type", "vendor-pn") if tree.get(key))
    readings: list[DomReading] = []
    for quantity, (group, key, unit) in MODULE_WIDE.items():
        node = tree.get(group)
        if isinstance(node, Mapping):
            readings.append(_reading(quantity, None, node, key, unit, source, f"{what} {group}"))
    channels = tree.get("channel")
    if isinstance(channels, Mapping):
        for name, channel in channels.items():
            lane = _CHANNEL.fullmatch(name)
            if lane is None or not isinstance(channel, Mapping):
                raise ParseError(f"{what}: {name[:40]!r} under channel is not channel-N", source=source)
            for quantity, (group, key, unit) in PER_CHANNEL.items():
                node = channel.get(group)
                if isinstance(node, Mapping):
                    where = f"{what} {name} {group}"
                    readings.append(_reading(quantity, int(lane["lane"]), node, key, unit, source, where))
    diagnostics = tree.get("diagnostics-status") == DIAGNOSTICS_AVAILABLE and bool(readings)
    return [(port, ModuleOptics(True, diagnostics, media, tuple(readings) if diagnostics else ()))]


def _reading(
    quantity: Quantity, lane: int | None, node: Mapping[str, Any], key: str, unit: str, source: str, what: str
) -> DomReading:
    if not isinstance(node.get(key), str):
        raise ParseError(f"{what}: no {key} line", source=source)
    thresholds = {
        field: _measure(node[shown], unit, source, f"{what} {shown}")
        for field, shown in THRESHOLD_KEYS.items()
        if isinstance(node.get(shown), str)
    }
    return DomReading(
        quantity,
        lane,
        _measure(node[key], unit, source, f"{what} {key}"),
        Thresholds(**thresholds) if thresholds else None,
    )


def _measure(value: str, unit: str, source: str, what: str) -> float | None:
    """`42.56 C`, `3.2862 V`, `6.750 mA`, `5.40 dBm`, or power `0.8625 mW / -0.64 dBm` (the dBm
    figure; from the milliwatts where NVUE prints only those); `N/A` is no value."""
    if value == NOT_AVAILABLE:
        return None
    if unit == "dBm":
        power = _POWER.fullmatch(value)
        if power is not None:
            return read_float(power["dbm"], source=source, what=what)
        if value.endswith(" mW"):
            milliwatts = read_float(value[: -len(" mW")], source=source, what=what)
            if milliwatts < 0:  # mw_to_dbm would call it no light (-inf dBm)
                raise ParseError(f"{what}: {value[:40]!r} is a negative power", source=source)
            return mw_to_dbm(milliwatts)
    number, _, shown = value.partition(" ")
    if shown != unit:
        raise ParseError(f"{what}: {value[:40]!r} is not in {unit}", source=source)
    return read_float(number, source=source, what=what)


_COLON_LINE = re.compile(r"(?P<indent> *)(?P<key>[A-Za-z0-9][A-Za-z0-9_-]*) *:(?: (?P<value>.*))?", re.ASCII)


def colon_tree(text: str, source: str, what: str) -> dict[str, Any]:
    """NVUE's `key : value` layout as nested dicts: a `key:` line with nothing after the colon opens a
    group of the lines indented under it. NVUE pads values with trailing spaces: they are dropped."""
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for number, raw in enumerate(text.replace("\r", "").splitlines(), 1):
        line = raw.rstrip()
        if not line.strip():
            continue
        match = _COLON_LINE.fullmatch(line)
        if match is None:
            raise ParseError(f"{what}: line {number} is not `key : value`: {line[:60]!r}", source=source)
        depth = len(match["indent"])
        while stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1]
        value = (match["value"] or "").strip()
        if value:
            parent[match["key"]] = value
        else:
            group: dict[str, Any] = {}
            parent[match["key"]] = group
            stack.append((depth, group))
    if not root:
        raise ParseError(f"{what}: empty output", source=source)
    return root
