"""Arista EOS wire views -> per-port LinkCounters and ModuleOptics (pure).

`show interfaces | json` (per port `interfaceCounters`: discards and link status changes; read with the
MTU and speed of fabcheck.parsers.switch_eos.parse_interfaces, one command for both),
`show interfaces counters errors | json` (`interfaceErrorCounters`: FCS, symbol, alignment, input and
output errors), `show interfaces phy detail | json` (`interfacePhyStatuses`: FEC corrected and
uncorrected codewords and pre-FEC BER per PHY stage) and `show interfaces transceiver dom thresholds
| json` (the module's live values with its own alarm and warning thresholds).

Every shape is ANTA's unit-test data (real eAPI replies, tests/data/real/INDEX.tsv). Counters are placed
on the port name exactly as EOS keys it (`Ethernet1`, `Ethernet1/1`), as parse_interfaces places Mtu.
Only Ethernet ports carry the wire: Management, Port-Channel, Loopback and Vxlan entries are skipped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fabcheck.errors import ParseError
from fabcheck.parsers.switch_eos import parse_interfaces
from fabcheck.parsers.switch_records import Placed, entries, field, load_json, number, obj
from fabcheck.parsers.wire_records import (
    CounterName,
    DomReading,
    LinkCounters,
    ModuleOptics,
    Quantity,
    Thresholds,
    mw_to_dbm,
)

# `interfaceErrorCounters.<port>`: EOS name -> wire vocabulary (frameTooLongs/Shorts are not wire errors).
ERROR_COUNTERS: Mapping[str, CounterName] = {
    "fcsErrors": "fcs_errors",
    "symbolErrors": "symbol_errors",
    "alignmentErrors": "alignment_errors",
    "inErrors": "rx_errors",
    "outErrors": "tx_errors",
}
# `interfaces.<port>.interfaceCounters`: what the error view above does not show.
INTERFACE_COUNTERS: Mapping[str, CounterName] = {
    "inDiscards": "rx_discards",
    "outDiscards": "tx_discards",
    "linkStatusChanges": "link_changes",
}
# `parameters.<name>` of the DOM view -> quantity and the units EOS may print it in. temperature ("C")
# and rxPower ("dBm") are in the real samples; voltage, txBias and txPower (and their units) are not:
# UNVERIFIED names, read when present.
DOM_PARAMETERS: Mapping[str, tuple[Quantity, frozenset[str]]] = {
    "temperature": ("temperature", frozenset({"C"})),
    "voltage": ("voltage", frozenset({"V"})),
    "txBias": ("tx_bias", frozenset({"mA"})),
    "txPower": ("tx_power", frozenset({"dBm", "mW"})),
    "rxPower": ("rx_power", frozenset({"dBm", "mW"})),
}
# `threshold.<key>`: lowAlarm and lowWarn are in the real samples; highWarn and highAlarm are UNVERIFIED
# (the same naming assumed).
THRESHOLD_KEYS = ("highAlarm", "highWarn", "lowWarn", "lowAlarm")
MODULE_WIDE = "-"  # the channel key of a value that is not per lane (temperature, voltage)
MAX_LANES = 16
MAX_DOM_MAGNITUDE = 1000.0  # no DOM value (°C, V, mA, dBm, mW) is this large
MAX_BER = 1.0
MAX_EXACT_FLOAT_INT = 2**53  # past it an integer reading is no DOM value or BER (and float() may overflow)


def is_ethernet(name: str) -> bool:
    return name.startswith("Ethernet")


def parse_error_counters(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    what = "show interfaces counters errors | json"
    tree = obj(load_json(text, source, what), source, what)
    placed: list[Placed] = []
    for name, where, entry in entries(tree, "interfaceErrorCounters", source, what):
        if is_ethernet(name):
            placed.append((name, _counters(entry, ERROR_COUNTERS, source, where)))
    return placed


def parse_interfaces_and_counters(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """`show interfaces | json` read once for both: each port's MTU and speed (switch_eos.parse_interfaces)
    and each Ethernet port's discards and link status changes."""
    placed = parse_interfaces(text, port, source)
    return [*placed, *interface_counters(text, source)]


def interface_counters(text: str, source: str = "<text>") -> list[Placed]:
    what = "show interfaces | json"
    tree = obj(load_json(text, source, what), source, what)
    placed: list[Placed] = []
    for name, where, entry in entries(tree, "interfaces", source, what):
        if not is_ethernet(name) or "interfaceCounters" not in entry:
            continue  # an interface without counters (a virtual one) has no wire
        counters = obj(entry["interfaceCounters"], source, f"{where} interfaceCounters")
        placed.append((name, _counters(counters, INTERFACE_COUNTERS, source, f"{where} interfaceCounters")))
    return placed


def _counters(
    entry: Mapping[str, Any], names: Mapping[str, CounterName], source: str, where: str
) -> LinkCounters:
    """The counters of `names` the entry shows; one it does not show stays absent (never 0)."""
    values: dict[CounterName, int] = {}
    native: dict[CounterName, str] = {}
    for eos_name, counter in names.items():
        if eos_name in entry:
            values[counter] = number(entry[eos_name], source, f"{where} {eos_name}")
            native[counter] = eos_name
    return LinkCounters(values, native)


def parse_phy_detail(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """Per port, FEC codewords summed over every PHY stage that counts them (ASIC, gearbox system and
    line sides each correct their own hop: an uncorrected codeword at any stage is lost traffic), and the
    worst stage's pre-FEC BER. A port whose stages show neither yields nothing (not judged)."""
    what = "show interfaces phy detail | json"
    tree = obj(load_json(text, source, what), source, what)
    placed: list[Placed] = []
    for name, where, entry in entries(tree, "interfacePhyStatuses", source, what):
        if not is_ethernet(name):
            continue
        stages = field(entry, "phyStatuses", source, where)
        if not isinstance(stages, list):
            raise ParseError(f"{where}: phyStatuses is not a list", source=source)
        corrected = uncorrected = 0
        with_fec = 0
        worst_ber: float | None = None
        for index, raw in enumerate(stages):
            stage = obj(raw, source, f"{where} phyStatuses[{index}]")
            at = f"{where} phyStatuses[{index}]"
            if "fec" in stage:
                fec = obj(stage["fec"], source, f"{at} fec")
                if "correctedCodewords" in fec or "uncorrectedCodewords" in fec:
                    corrected += _stat(fec, "correctedCodewords", source, f"{at} fec")
                    uncorrected += _stat(fec, "uncorrectedCodewords", source, f"{at} fec")
                    with_fec += 1
            if "preFecBer" in stage:
                ber = _ber(stage["preFecBer"], source, f"{at} preFecBer")
                worst_ber = ber if worst_ber is None else max(worst_ber, ber)
        if with_fec == 0 and worst_ber is None:
            continue
        values: dict[CounterName, int] = {}
        native: dict[CounterName, str] = {}
        if with_fec:
            values = {"fec_corrected": corrected, "fec_uncorrectable": uncorrected}
            native = {
                "fec_corrected": "fec.correctedCodewords",
                "fec_uncorrectable": "fec.uncorrectedCodewords",
            }
        placed.append((name, LinkCounters(values, native, None, worst_ber)))
    return placed


def _stat(fec: Mapping[str, Any], key: str, source: str, where: str) -> int:
    """`{"value": n, "changes": n, "lastChange": t}`: the value."""
    stat = obj(field(fec, key, source, where), source, f"{where} {key}")
    return number(field(stat, "value", source, f"{where} {key}"), source, f"{where} {key} value")


def _ber(raw: Any, source: str, where: str) -> float:
    value = _float(field(obj(raw, source, where), "value", source, where), source, f"{where} value")
    if not 0.0 <= value <= MAX_BER:
        raise ParseError(f"{where}: {value} is not a bit error rate", source=source)
    return value


def _float(value: Any, source: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseError(f"{where}: expected a number, got {type(value).__name__}", source=source)
    if isinstance(value, int) and abs(value) > MAX_EXACT_FLOAT_INT:
        # float() of a JSON integer past the float range raises OverflowError; no reading is that big
        raise ParseError(f"{where}: a {value.bit_length()}-bit integer is not a reading", source=source)
    result = float(value)
    if not math.isfinite(result):
        raise ParseError(f"{where}: {result} is not a finite number", source=source)
    return result


def parse_transceiver_dom(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """Per port, what its module shows. As ANTA reads the same replies: an empty entry has no module
    ("Optic not found"), one with no `parameters` (only `displayName`, or empty parameters) has a module
    without digital diagnostics ("DOM not supported": a DAC), else every parameter per channel with the
    module's own thresholds (`-` is the module-wide channel), power in dBm."""
    what = "show interfaces transceiver dom thresholds | json"
    tree = obj(load_json(text, source, what), source, what)
    placed: list[Placed] = []
    for name, where, entry in entries(tree, "interfaces", source, what):
        if is_ethernet(name):
            placed.append((name, _module(entry, source, where)))
    return placed


def _module(entry: Mapping[str, Any], source: str, where: str) -> ModuleOptics:
    if not entry:
        return ModuleOptics(present=False, diagnostics=False)
    media = entry.get("mediaType", "")
    if not isinstance(media, str) or len(media) > 80:
        raise ParseError(f"{where}: mediaType is not a module type name", source=source)
    parameters = obj(entry.get("parameters", {}), source, f"{where} parameters")
    readings: list[DomReading] = []
    for eos_name, raw in parameters.items():
        if eos_name not in DOM_PARAMETERS:
            continue  # a parameter outside the wire vocabulary (EOS shows more on some modules)
        quantity, units = DOM_PARAMETERS[eos_name]
        readings += _readings(
            quantity, units, obj(raw, source, f"{where} {eos_name}"), source, f"{where} {eos_name}"
        )
    if not readings:
        return ModuleOptics(present=True, diagnostics=False, media=media)
    return ModuleOptics(present=True, diagnostics=True, media=media, readings=tuple(readings))


def _readings(
    quantity: Quantity, units: frozenset[str], parameter: Mapping[str, Any], source: str, where: str
) -> list[DomReading]:
    unit = field(parameter, "unit", source, where)
    if unit not in units:
        raise ParseError(f"{where}: unit {str(unit)[:20]!r} is not one of {sorted(units)}", source=source)
    convert = _to_dbm if unit == "mW" else (lambda value, _source, _where: value)
    thresholds = None
    if "threshold" in parameter:
        limits = obj(parameter["threshold"], source, f"{where} threshold")
        shown = {
            key: convert(_dom_value(limits[key], source, f"{where} threshold {key}"), source, where)
            for key in THRESHOLD_KEYS
            if key in limits
        }
        thresholds = Thresholds(
            shown.get("highAlarm"), shown.get("highWarn"), shown.get("lowWarn"), shown.get("lowAlarm")
        )
    readings = []
    for channel, raw in obj(field(parameter, "channels", source, where), source, f"{where} channels").items():
        lane = _lane(channel, source, f"{where} channels")
        value = convert(_dom_value(raw, source, f"{where} channel {channel[:8]}"), source, where)
        readings.append(DomReading(quantity, lane, value, thresholds))
    return readings


def _lane(channel: str, source: str, where: str) -> int | None:
    if channel == MODULE_WIDE:
        return None
    if (
        len(channel) > 2  # int() of thousands of digits raises ValueError before any range test
        or not channel.isascii()
        or not channel.isdigit()
        or not 1 <= int(channel) <= MAX_LANES
    ):
        raise ParseError(
            f"{where}: channel {channel[:8]!r} is not '-' or a lane 1..{MAX_LANES}", source=source
        )
    return int(channel)


def _dom_value(raw: Any, source: str, where: str) -> float:
    value = _float(raw, source, where)
    if abs(value) > MAX_DOM_MAGNITUDE:
        raise ParseError(f"{where}: {value} is out of any module's range", source=source)
    return value


def _to_dbm(milliwatts: float, source: str, where: str) -> float:
    if milliwatts < 0:
        raise ParseError(f"{where}: a negative power in mW ({milliwatts})", source=source)
    return mw_to_dbm(milliwatts)
