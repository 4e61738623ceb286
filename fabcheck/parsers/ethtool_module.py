"""`ethtool -m <netdev>` (the module EEPROM, decoded) -> the module's diagnostics (ModuleOptics).

ethtool prints one `\\t<label padded to 41> : <value>` line per field (a field may repeat, e.g.
`Transceiver type`), decoding the memory map the module's identifier names: SFF-8472 (SFP), SFF-8636
(QSFP/QSFP+/QSFP28) or CMIS (QSFP-DD, OSFP, ...). Units and labels are ethtool's (sff-common.h
PRINT_xX_PWR `%.4f mW / %.2f dBm`, PRINT_BIAS `%.3f mA`, PRINT_TEMP `%.2f degrees C / %.2f degrees F`,
PRINT_VCC `%.4f V`; sfpdiag.c, qsfp.c, cmis.c):

    live, SFF-8472      Laser bias current | Laser output power | Receiver signal average optical
                        power (or Receiver signal OMA) | Module temperature | Module voltage
    live, SFF-8636/CMIS Laser tx bias current (Channel N) | Transmit avg optical power (Channel N) |
                        Rcvr signal avg optical power(Channel N)  <- no space before '(' in SFF-8636,
                        one in CMIS | Module temperature | Module voltage
    thresholds          {Laser bias current, Laser output power, Module temperature, Module voltage,
                        Laser rx power} {high,low} {alarm,warning} threshold

Power is read in dBm (0 mW prints `-inf dBm`: a dark lane reads -inf). A threshold set the module
leaves empty is not a threshold: a power threshold of 0 mW (-inf dBm), or the four thresholds of a
quantity all equal (a module that fills them with zeros), reads as None.

No diagnostics: an SFP says `Optical diagnostics support : No`; a QSFP without DOM (a passive DAC)
shows `Module temperature : 0.00 degrees C` and `Module voltage : 0.0000 V` and nothing per lane
(qsfp.c stops after them when the temperature reads 0); a module that prints no live value at all.
Each is `diagnostics=False` with the module's identifier and transceiver type as its media.

An empty cage or a driver that cannot read the module is not this parser's business: ethtool then
prints only to stderr and exits non-zero (ioctl path: `Cannot get module EEPROM information: <errno
text>`, or `Cannot get Module EEPROM data: ...` with `SFP module not in cage?`; netlink path:
`netlink error: <errno text>`), which the collect layer reports as unreadable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.wire_records import DomReading, ModuleOptics, Quantity, Thresholds

_CHANNEL = re.compile(r"^(?P<label>.*?)\s*\(Channel (?P<lane>[0-9]{1,2})\)$")
_THRESHOLD = re.compile(r"^(?P<label>.+) (?P<side>high|low) (?P<level>alarm|warning) threshold$")
_DBM = re.compile(r"^(?P<mw>[0-9.]+) mW / (?P<dbm>-?(?:[0-9.]+|inf)) dBm$")
_MA = re.compile(r"^(?P<value>-?[0-9.]+) mA$")
_CELSIUS = re.compile(r"^(?P<value>-?[0-9.]+) degrees C / -?[0-9.]+ degrees F$")
_VOLT = re.compile(r"^(?P<value>-?[0-9.]+) V$")
_IDENTIFIER = re.compile(r"^0x[0-9a-fA-F]{2}(?: \((?P<name>.*)\))?$")

# Live values: ethtool's label (without its channel) -> quantity. SFF-8472's are one lane: lane 1.
LIVE: Mapping[str, Quantity] = MappingProxyType(
    {
        "Module temperature": "temperature",
        "Module voltage": "voltage",
        "Laser bias current": "tx_bias",
        "Laser output power": "tx_power",
        "Receiver signal average optical power": "rx_power",
        "Receiver signal OMA": "rx_power",
        "Laser tx bias current": "tx_bias",
        "Transmit avg optical power": "tx_power",
        "Rcvr signal avg optical power": "rx_power",
    }
)
# Threshold labels (sff-common.c sff_show_thresholds) -> quantity.
THRESHOLD_OF: Mapping[str, Quantity] = MappingProxyType(
    {
        "Laser bias current": "tx_bias",
        "Laser output power": "tx_power",
        "Module temperature": "temperature",
        "Module voltage": "voltage",
        "Laser rx power": "rx_power",
    }
)
MODULE_WIDE: frozenset[Quantity] = frozenset({"temperature", "voltage"})


def parse_module(text: str, source: str = "<text>") -> ModuleOptics:
    """The module's live diagnostics with its own thresholds. ParseError: a line that is not
    `label : value`, no `Identifier` line (not a decoded `ethtool -m`; a hex dump is refused), or a
    live value or threshold in a unit ethtool does not print."""
    lines = split_checked_lines(text, source, "ethtool -m")
    identifier: str | None = None
    transceiver: list[str] = []
    no_diagnostics = False
    live: list[tuple[Quantity, int | None, float, int]] = []
    limits: dict[Quantity, dict[str, float | None]] = {}
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        label, colon, value = raw.partition(":")  # no label has a colon; values may (Vendor OUI)
        label, value = label.strip(), value.strip()
        if not colon or not label:
            raise ParseError(
                f"expected 'label : value', got {raw.strip()[:80]!r}", source=source, line=number
            )
        if label == "Identifier":
            identity = _IDENTIFIER.match(value)
            if identity is None:
                raise ParseError(f"identifier {value!r} is not 0xNN (name)", source=source, line=number)
            identifier = identity.group("name") or value
        elif label == "Transceiver type":
            transceiver.append(value)
        elif label == "Optical diagnostics support":
            no_diagnostics = value == "No"
        elif threshold := _THRESHOLD.match(label):
            quantity = THRESHOLD_OF.get(threshold.group("label"))
            if quantity is not None:
                key = f"{threshold.group('side')}_{threshold.group('level')}"
                limits.setdefault(quantity, {})[key] = _number(quantity, value, source, number)
        else:
            channel = _CHANNEL.match(label)
            base = channel.group("label") if channel else label
            quantity = LIVE.get(base)
            if quantity is None:
                continue  # identity, flags and the other fields the checks do not read
            lane = int(channel.group("lane")) if channel else (None if quantity in MODULE_WIDE else 1)
            live.append((quantity, lane, _number(quantity, value, source, number), number))
    if identifier is None:
        raise ParseError("no 'Identifier' line: not decoded `ethtool -m` output", source=source)
    media = " ".join([identifier, *transceiver[:1]]).strip()
    if no_diagnostics or not _has_diagnostics(live):
        return ModuleOptics(present=True, diagnostics=False, media=media)
    thresholds = {quantity: _thresholds(values) for quantity, values in limits.items()}
    readings = tuple(
        DomReading(quantity, lane, value, thresholds.get(quantity)) for quantity, lane, value, _ in live
    )
    return ModuleOptics(present=True, diagnostics=True, media=media, readings=readings)


def _number(quantity: Quantity, value: str, source: str, line: int) -> float:
    """A value in the quantity's unit: dBm for power (-inf for 0 mW), mA, °C, V."""
    pattern = {"tx_power": _DBM, "rx_power": _DBM, "tx_bias": _MA, "temperature": _CELSIUS}.get(
        quantity, _VOLT
    )
    found = pattern.match(value)
    if found is None:
        unit = {"tx_power": "mW / dBm", "rx_power": "mW / dBm", "tx_bias": "mA"}.get(quantity, "")
        unit = unit or ("degrees C / degrees F" if quantity == "temperature" else "V")
        raise ParseError(f"{quantity} {value!r} is not in {unit}", source=source, line=line)
    text = found.group("dbm") if pattern is _DBM else found.group("value")
    try:
        number = float(text)
    except ValueError:
        raise ParseError(f"{quantity} {value!r} is not a number", source=source, line=line) from None
    # Hundreds of digits are inf to float(); only ethtool's own `-inf` dBm (0 mW) is not finite.
    if not math.isfinite(number) and not (pattern is _DBM and text == "-inf"):
        raise ParseError(f"{quantity} {value[:40]!r} is not a finite number", source=source, line=line)
    return number


def _has_diagnostics(live: list[tuple[Quantity, int | None, float, int]]) -> bool:
    """Some live value beyond the all-zero temperature and voltage a DOM-less QSFP shows."""
    if any(quantity not in MODULE_WIDE for quantity, _, _, _ in live):
        return True
    return any(value != 0 for _, _, value, _ in live)


def _thresholds(values: Mapping[str, float | None]) -> Thresholds | None:
    """The module's thresholds for one quantity; None where it advertises none (all -inf or all equal)."""
    usable = {key: value for key, value in values.items() if value is not None and math.isfinite(value)}
    if not usable or (len(values) == 4 and len(set(values.values())) == 1):
        return None
    return Thresholds(
        high_alarm=usable.get("high_alarm"),
        high_warning=usable.get("high_warning"),
        low_warning=usable.get("low_warning"),
        low_alarm=usable.get("low_alarm"),
    )
