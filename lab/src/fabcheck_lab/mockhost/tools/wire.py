"""The mock NIC's wire (issue 35): its physical counters in mlx5's names, its FEC, its module's DOM.

Each netdev keeps a fabcheck_lab.wire_model state (``wire/<netdev>.json`` in the node's state dir,
written when the node is prepared; a node prepared before has none and reads a clean link that came
up when the node was prepared). Reading never writes: the counters are computed at the moment of the
call (wire_model.counters_at), so two readings a window apart see what a fault counted in between.
The host faults link-errors, link-flap and optic-rx-low start a fault in that state; heal stops it and
keeps what it counted (fabcheck_lab.mockhost.faults).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .common import Node

try:  # inside a node: the tools' zip application ships the lab's wire model beside them (prepare.py)
    from . import wire_model  # type: ignore[attr-defined, unused-ignore]  # only in the zip application
except ImportError:  # in the controller's process (tool server, tests): the lab's own module
    from fabcheck_lab import wire_model

WIRE_DIR = "wire"

# wire vocabulary -> the mlx5 `ethtool -S` counter (torvalds/linux Documentation/networking/
# device_drivers/ethernet/mellanox/mlx5/counters.rst, physical port counters), in the order printed.
MLX5_PHY_NAMES: Mapping[str, str] = {
    "fcs_errors": "rx_crc_errors_phy",
    "symbol_errors": "rx_symbol_err_phy",
    "rx_discards": "rx_discards_phy",
    "tx_discards": "tx_discards_phy",
    "link_down": "link_down_events_phy",
    "rx_out_of_buffer": "rx_out_of_buffer",
    "received_bits": "rx_bits_phy",
    "uncorrected_symbols": "rx_pcs_symbol_err_phy",
    "corrected_bits": "rx_corrected_bits_phy",
}


def state_file(netdev: str) -> str:
    return f"{WIRE_DIR}/{netdev}.json"


def wire_state(node: Node, netdev: str) -> dict[str, Any]:
    """The netdev's wire state; a node without one (prepared before the wire existed) reads a clean
    link that came up when the node was prepared."""
    stored = node.load(state_file(netdev))
    if stored is not None:
        return dict(stored)
    return wire_model.fresh_state((node.state / "node.json").stat().st_mtime)


def save_wire_state(node: Node, netdev: str, state: dict[str, Any]) -> None:
    (node.state / WIRE_DIR).mkdir(parents=True, exist_ok=True)
    node.save(state_file(netdev), state)


def running_faults(state: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(state.get("rates", {}))


def phy_counters(node: Node, netdev: str) -> dict[str, int]:
    """The wire model's counters now, under their mlx5 names."""
    values = wire_model.counters_at(wire_state(node, netdev))
    return {mlx5: int(values.get(name, 0)) for name, mlx5 in MLX5_PHY_NAMES.items()}


# --- ethtool [-I] --show-fec --------------------------------------------------------------------------
# The layout of ethtool's netlink/fec.c (>= 5.18 label); mlx5 in RS mode reports totals, no lanes
# (linux commit 0a1498ebfa55); statistics only with -I/--include-statistics.
def fec_text(node: Node, netdev: str, statistics: bool) -> str:
    lines = [
        f"FEC parameters for {netdev}:",
        "Supported/Configured FEC encodings: RS",
        "Active FEC encoding: RS",
    ]
    if statistics:
        values = wire_model.counters_at(wire_state(node, netdev))
        lines += [
            "Statistics:",
            f"  corrected_blocks: {int(values.get('fec_corrected', 0))}",
            f"  uncorrectable_blocks: {int(values.get('fec_uncorrectable', 0))}",
        ]
    return "\n".join(lines) + "\n"


# --- ethtool -m -----------------------------------------------------------------------------------
# The module every mock NIC port holds: the AVAGO QSFP+ 40G Base-SR4 (SFF-8636) of
# https://lore.kernel.org/netdev/1bee73de-d4c3-456d-8cee-f76eee7194b0@ans.pl/ (tests/data/real/host/
# ethtool-m-qsfp-plus-40g-sr4-avago-thresholds.txt): its identity, its thresholds and channel 1's live
# values. The lab lights all four lanes at channel 1's values (the capture has lanes 2-4 dark).
MODULE_IDENTITY = (
    ("Identifier", "0x0d (QSFP+)"),
    ("Extended identifier", "0x00"),
    ("Extended identifier description", "1.5W max. Power consumption"),
    ("Extended identifier description", "No CDR in TX, No CDR in RX"),
    ("Extended identifier description", "High Power Class (> 3.5 W) not enabled"),
    ("Power set", "On"),
    ("Power override", "On"),
    ("Connector", "0x0c (MPO Parallel Optic)"),
    ("Transceiver codes", "0x04 0x00 0x00 0x00 0x00 0x00 0x00 0x00"),
    ("Transceiver type", "40G Ethernet: 40G Base-SR4"),
    ("Encoding", "0x05 (64B/66B)"),
    ("BR, Nominal", "10300Mbps"),
    ("Rate identifier", "0x00"),
    ("Length (SMF,km)", "0km"),
    ("Length (OM3 50um)", "100m"),
    ("Length (OM2 50um)", "0m"),
    ("Length (OM1 62.5um)", "0m"),
    ("Length (Copper or Active cable)", "0m"),
    ("Transmitter technology", "0x00 (850 nm VCSEL)"),
    ("Laser wavelength", "850.000nm"),
    ("Laser wavelength tolerance", "10.000nm"),
    ("Vendor name", "AVAGO"),
    ("Vendor OUI", "00:17:6a"),
    ("Vendor PN", "<REDACTED>"),
    ("Vendor rev", "01"),
    ("Vendor SN", "<REDACTED>"),
    ("Date code", "<REDACTED>"),
    ("Revision Compliance", "Revision not specified"),
)
MODULE_BASELINE: Mapping[str, float] = {
    "temperature": 42 + 43 / 256,  # SFF-8636 counts 1/256 °C: 42.17 °C / 107.90 °F as the module printed
    "voltage": 3.2917,
    "tx_bias": 6.662,
    "tx_power": -1.48,  # 0.7119 mW
    "rx_power": -1.15,  # 0.7682 mW
}
# The module's own thresholds (None: 0 mW, the module advertises none for TX power).
MODULE_THRESHOLDS: Mapping[str, Mapping[str, float | None]] = {
    "tx_bias": {"high_alarm": 10.0, "low_alarm": 0.5, "high_warning": 9.5, "low_warning": 1.0},
    "tx_power": {"high_alarm": None, "low_alarm": None, "high_warning": None, "low_warning": None},
    "temperature": {"high_alarm": 75.0, "low_alarm": -5.0, "high_warning": 70.0, "low_warning": 0.0},
    "voltage": {"high_alarm": 3.63, "low_alarm": 2.97, "high_warning": 3.465, "low_warning": 3.1349},
    "rx_power": {"high_alarm": 3.40, "low_alarm": -13.51, "high_warning": 2.40, "low_warning": -9.50},
}
THRESHOLD_LABELS = (
    ("tx_bias", "Laser bias current"),
    ("tx_power", "Laser output power"),
    ("temperature", "Module temperature"),
    ("voltage", "Module voltage"),
    ("rx_power", "Laser rx power"),
)
LEVELS: tuple[tuple[str, str], ...] = (
    ("high_alarm", "high alarm"),
    ("low_alarm", "low alarm"),
    ("high_warning", "high warning"),
    ("low_warning", "low warning"),
)
LANES = (1, 2, 3, 4)


def _field(label: str, value: str) -> str:
    return f"\t{label:<41} : {value}\n"


def _mw(dbm: float) -> float:
    return 10 ** (dbm / 10) if math.isfinite(dbm) else 0.0


# The real module's own milliwatts for its live powers: ethtool prints dBm from mW, so rounded dBm would
# give other mW (0.7112 for -1.48 dBm where the module read 0.7119).
MODULE_MW: Mapping[float, float] = {-1.48: 0.7119, -1.15: 0.7682}


def _power(dbm: float | None) -> str:
    """ethtool's `%.4f mW / %.2f dBm` (PRINT_xX_PWR); no threshold is 0 mW, -inf dBm."""
    if dbm is None:
        return "0.0000 mW / -inf dBm"
    return f"{MODULE_MW.get(dbm, _mw(dbm)):.4f} mW / {dbm:.2f} dBm"


def _value(quantity: str, value: float | None) -> str:
    if quantity in ("tx_power", "rx_power"):
        return _power(value)
    assert value is not None
    if quantity == "tx_bias":
        return f"{value:.3f} mA"
    if quantity == "temperature":
        return f"{value:.2f} degrees C / {value * 1.8 + 32:.2f} degrees F"
    return f"{value:.4f} V"


def _flag(quantity: str, level: str, value: float) -> str:
    """A module's alarm/warning flag: On when the live value is past its own threshold."""
    threshold = MODULE_THRESHOLDS[quantity][level]
    if threshold is None:
        return "Off"
    past = value > threshold if level.startswith("high") else value < threshold
    return "On" if past else "Off"


def module_live(node: Node, netdev: str) -> dict[str, float]:
    """The module's live values with the running DOM faults (optic-rx-low) applied."""
    limits = {
        q: {k: v for k, v in levels.items() if v is not None} for q, levels in MODULE_THRESHOLDS.items()
    }
    return wire_model.dom_values(MODULE_BASELINE, limits, running_faults(wire_state(node, netdev)))


def module_text(node: Node, netdev: str) -> str:
    """`ethtool -m` of the module above, as qsfp.c prints an SFF-8636 module with alarms implemented."""
    live = module_live(node, netdev)
    text = "".join(_field(label, value) for label, value in MODULE_IDENTITY)
    text += _field("Module temperature", _value("temperature", live["temperature"]))
    text += _field("Module voltage", _value("voltage", live["voltage"]))
    text += _field("Alarm/warning flags implemented", "Yes")
    text += "".join(
        _field(f"Laser tx bias current (Channel {n})", _value("tx_bias", live["tx_bias"])) for n in LANES
    )
    text += "".join(
        _field(f"Transmit avg optical power (Channel {n})", _power(live["tx_power"])) for n in LANES
    )
    text += "".join(
        _field(f"Rcvr signal avg optical power(Channel {n})", _power(live["rx_power"])) for n in LANES
    )
    pads = {"high_alarm": "  ", "low_alarm": "   ", "high_warning": "", "low_warning": " "}
    for n in LANES:
        for level, words in LEVELS:
            flag = _flag("tx_bias", level, live["tx_bias"])
            text += _field(f"Laser bias current {words}{pads[level]} (Chan {n})", flag)
    for quantity, label in (("temperature", "Module temperature"), ("voltage", "Module voltage")):
        for level, words in LEVELS:
            text += _field(f"{label} {words}", _flag(quantity, level, live[quantity]))
    for quantity, word in (("tx_power", "tx"), ("rx_power", "rx")):
        for n in LANES:
            for level, words in LEVELS:
                flag = _flag(quantity, level, live[quantity])
                text += _field(f"Laser {word} power {words}{pads[level]} (Channel {n})", flag)
    for quantity, label in THRESHOLD_LABELS:
        for level, words in LEVELS:
            threshold = MODULE_THRESHOLDS[quantity][level]
            text += _field(f"{label} {words} threshold", _value(quantity, threshold))
    return text
