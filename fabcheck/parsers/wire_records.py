"""Platform-neutral records of the wire: a port's physical-layer counters and its module's diagnostics.

Every parser of a wire view (a host NIC's `ethtool -S` / `ethtool -I --show-fec` / `ethtool -m` /
`mlxlink`, a switch port's error, FEC, flap and transceiver views on NVUE, SONiC and EOS) turns its
output into these records, so the wire checks judge a NIC port and a switch port, and the two ends of a
cable, without knowing who printed them.

Counters are cumulative (since driver load, link up or the last clear), so a reading says nothing by
itself: `LinkCounters.since` makes the delta over the counter window, and the checks judge the delta.
A counter the device does not expose is absent from `values`, never zero: absent is "not judged".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, get_args

# The counters of the wire vocabulary. Each parser maps its device's own names onto these (and keeps the
# device's name in `native`, so a finding quotes what the operator sees on the box).
CounterName = Literal[
    "fcs_errors",  # frames received with a bad FCS/CRC (mlx5 rx_crc_errors_phy, EOS fcsErrors)
    "symbol_errors",  # frames dropped for physical coding (symbol) errors (mlx5 rx_symbol_err_phy)
    "alignment_errors",  # EOS alignmentErrors, NVUE "Alignment Errors"
    "rx_errors",  # all receive errors where the platform shows only a total (SONiC RX_ERR, EOS inErrors)
    "tx_errors",  # transmit errors (SONiC TX_ERR, EOS outErrors)
    "rx_discards",  # received frames discarded at the port (mlx5 rx_discards_phy, SONiC RX_DRP)
    "tx_discards",  # frames the port could not send (mlx5 tx_discards_phy, SONiC TX_DRP)
    "rx_out_of_buffer",  # host only: packets the NIC dropped for lack of receive WQEs (mlx5)
    "fec_corrected",  # codewords/blocks the FEC corrected (ethtool corrected_blocks, SONiC FEC_CORR)
    "fec_uncorrectable",  # codewords/blocks the FEC could not correct: traffic lost (SONiC FEC_UNCORR)
    "uncorrected_symbols",  # symbols left uncorrected after FEC (mlx5 rx_pcs_symbol_err_phy)
    "corrected_bits",  # bits the FEC corrected: pre-FEC BER numerator (mlx5 rx_corrected_bits_phy)
    "received_bits",  # bits received at the PHY: the BER denominator (mlx5 rx_bits_phy)
    "link_down",  # operational down transitions (mlx5 link_down_events_phy, SONiC flap count)
    "link_changes",  # every up and down transition (EOS linkStatusChanges, NVUE carrier-transitions)
]
COUNTER_NAMES: tuple[CounterName, ...] = get_args(CounterName)
# Counters whose every increase means lost traffic, whatever the limits: uncorrectable FEC blocks.
ALWAYS_FAIL: frozenset[CounterName] = frozenset({"fec_uncorrectable", "uncorrected_symbols"})
# Pause frames by direction and priority (None: link-level 802.3x pause, no priority): what the port
# received ("rx": its peer asked it to stop) and sent ("tx": it asked its peer to stop).
Direction = Literal["rx", "tx"]
PauseKey = tuple[Direction, int | None]


@dataclass(frozen=True)
class LinkCounters:
    """One reading of one port's physical-layer counters (cumulative values)."""

    values: Mapping[CounterName, int]
    native: Mapping[CounterName, str] = field(default_factory=dict)  # the device's own counter names
    fec_mode: str | None = None  # the active FEC as the device names it ("RS", "Off", ...); None: not shown
    # The device's own pre-FEC BER (EOS preFecBer, SONiC FEC_PRE_BER, NVUE raw-ber): a rate the device
    # computed over its own interval, not a counter; None where it shows none.
    pre_fec_ber: float | None = None
    # Pause frames per (direction, priority), cumulative, where the view shows them (mlx5 `ethtool -S`
    # rx_prio3_pause); judged by no wire check, reported as metrics (fabcheck.report.metrics).
    pause: Mapping[PauseKey, int] = field(default_factory=dict)

    def merged(self, other: LinkCounters) -> LinkCounters:
        """Two views of the same port (`ethtool -S` and `ethtool -I --show-fec`): `other` fills in."""
        return LinkCounters(
            {**self.values, **other.values},
            {**self.native, **other.native},
            self.fec_mode if self.fec_mode is not None else other.fec_mode,
            self.pre_fec_ber if self.pre_fec_ber is not None else other.pre_fec_ber,
            {**self.pause, **other.pause},
        )

    def since(self, earlier: LinkCounters | None, window_s: float) -> LinkDelta:
        """What happened between `earlier` and this reading, `window_s` apart. Without an earlier
        reading (a window of 0) the delta holds the lifetime totals and says so."""
        if earlier is None or window_s <= 0:
            return LinkDelta(0.0, MappingProxyType(dict(self.values)), self, ())
        grown: dict[CounterName, int] = {}
        went_back: list[CounterName] = []
        for name, value in self.values.items():
            before = earlier.values.get(name)
            if before is None:
                continue  # appeared between the readings: no delta to judge
            if value < before:
                went_back.append(name)  # cleared or reset inside the window: not judged
                continue
            grown[name] = value - before
        return LinkDelta(window_s, MappingProxyType(grown), self, tuple(went_back))


@dataclass(frozen=True)
class LinkDelta:
    """A port's counters over the counter window: what grew, and the later reading they grew to.

    window_s 0: no window; `grown` then holds the lifetime totals (`lifetime` is True)."""

    window_s: float
    grown: Mapping[CounterName, int]
    reading: LinkCounters  # the later (or only) reading
    went_back: tuple[CounterName, ...] = ()  # counters lower at the end than at the start: cleared

    @property
    def lifetime(self) -> bool:
        return self.window_s <= 0

    def native_name(self, name: CounterName) -> str:
        return self.reading.native.get(name, name)

    @property
    def pre_fec_ber(self) -> float | None:
        """Pre-FEC BER over the window from corrected and received bits where the device counts both,
        else the device's own figure; None where neither is shown."""
        bits = self.grown.get("received_bits")
        corrected = self.grown.get("corrected_bits")
        if bits and corrected is not None:
            return corrected / bits
        return self.reading.pre_fec_ber


Quantity = Literal["temperature", "voltage", "tx_bias", "tx_power", "rx_power"]
QUANTITIES: tuple[Quantity, ...] = get_args(Quantity)
UNITS: Mapping[Quantity, str] = MappingProxyType(
    {"temperature": "°C", "voltage": "V", "tx_bias": "mA", "tx_power": "dBm", "rx_power": "dBm"}
)
# Optical power at or below this is no light at all (a dark or unplugged fibre), not a weak signal: ANTA
# treats -30 dBm as "no light" (aristanetworks/anta:anta/tests/interfaces.py@68667e0e), a real SFP read
# -40 dBm unplugged (https://github.com/netdata/netdata/issues/19375).
NO_LIGHT_DBM = -30.0


def mw_to_dbm(milliwatts: float) -> float:
    """Optical power in dBm; 0 mW (no light) is -inf."""
    return 10 * math.log10(milliwatts) if milliwatts > 0 else -math.inf


@dataclass(frozen=True)
class Thresholds:
    """A module's own alarm and warning thresholds for one quantity (None: it advertises none)."""

    high_alarm: float | None = None
    high_warning: float | None = None
    low_warning: float | None = None
    low_alarm: float | None = None


@dataclass(frozen=True)
class DomReading:
    """One live digital-diagnostics value: power in dBm, bias in mA, temperature in °C, voltage in V."""

    quantity: Quantity
    lane: int | None  # 1-based channel; None: module-wide (temperature, voltage)
    value: float | None  # None: the module shows the quantity without a value (N/A)
    thresholds: Thresholds | None  # the module's own; None where it advertises none


@dataclass(frozen=True)
class ModuleOptics:
    """What a port's module (transceiver or cable) shows about itself."""

    present: bool  # False: the cage is empty
    diagnostics: bool  # False: no digital diagnostics (a DAC / passive copper cable, or DOM unsupported)
    media: str = ""  # what the device calls the module ("QSFP28 100GBASE-SR4", "DAC", ...)
    readings: tuple[DomReading, ...] = ()

    def of(self, quantity: Quantity) -> tuple[DomReading, ...]:
        return tuple(reading for reading in self.readings if reading.quantity == quantity)
