"""The mock NVUE switch's wire views: a port's counters, its PHY's post-FEC view and its module's DOM,
rendered from the lab's wire model (fabcheck_lab.wire_model via the device's wire_counters / wire_faults)
in the layouts of NVIDIA's own samples (tests/data/real/nvue/INDEX.tsv, CL_MONITOR below).

- `nv show interface P counters` (CL >= 5.5): carrier-transitions, Drop Counters and Error Counters
  in the real layout. The packet, packet-size and ingress-buffer sections the real view also prints are
  left out: the mock models no per-port packet counts there, and prints no made-up ones.
- `nv show interface P link phy-detail` (CL 5.10 - 5.14) / `link phy health` (CL >= 5.15): the rows
  the wire model counts (received bits, symbol errors, effective errors) and the BER rows, `15E-255`
  (no rate) on a clean link as in NVIDIA's sample; per-lane raw errors, histogram bins and SNR are not
  modelled and not printed.
- `nv show system` (CL >= 5.2, NVUE_SYSTEM): hostname, build (`Cumulus Linux <release>`, what the gate
  reads to pick the PHY view's name), uptime and time zone, in NVIDIA's sample layout.
- `nv show platform transceiver P` (CL >= 5.11): NVIDIA's sample module (an MFA1A00-C003 100G active
  optical cable, all four channels from CL_MONITOR's views of it) with its own thresholds; DOM faults
  move its values through wire_model.dom_values.

The `-o json` forms are the mock's own shape (NVIDIA shows only the text: unverified).

CL_MONITOR: CumulusNetworks/docs:content/cumulus-linux-514/Monitoring-and-Troubleshooting/
  Troubleshooting-Network-Interfaces/Monitoring-Interfaces-and-Transceivers-with-NVUE.md@
  0472f78f421f4ff8ef10a97cb369ca01e18a1648 (CL 5.15's copy, @07d58d4b2ae2bd3864171785ca7a10c1f5dfd950,
  prints `link phy health` with the very rows of 5.14's `link phy-detail`: one rendering serves both)
NVUE_SYSTEM: CumulusNetworks/docs:content/nvue-reference/Show-Commands/System.md@
  26bd9f5a2fd77b06e3d5a3ac6a6930d51b907c6a
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable, Mapping
from typing import Any

from fabcheck_lab import wire_model
from fabcheck_lab.mockswitch.textfmt import nvue_attributes, nvue_section

Shown = tuple[str, Any]  # (table text, JSON object)
Release = tuple[int, ...]

# The releases each view exists in (NVUE command reference: counters from CL 5.5.0, link phy-detail
# from 5.10.0, platform transceiver <id> from 5.11.0; CL 5.15's "New and changed NVUE commands" renames
# link phy-detail to link phy health).
COUNTERS_SINCE: Release = (5, 5)
PHY_DETAIL_SINCE: Release = (5, 10)
PHY_HEALTH_SINCE: Release = (5, 15)
TRANSCEIVER_SINCE: Release = (5, 11)

# (section, row) -> (Receive, Transmit): the wire vocabulary counter shown there, or None for `n/a`
# (CL_MONITOR's cells), or "0" for a counter the lab's model does not keep (ACL drops, jabber ...).
Cell = str | None
ERROR_ROWS: tuple[tuple[str, Cell, Cell], ...] = (
    ("Alignment Errors", "alignment_errors", None),
    ("FCS Errors", "fcs_errors", None),
    ("Jabber Errors", "0", None),
    ("Length Errors", "0", None),
    ("Oversize Errors", "0", None),
    ("Symbol Errors", "symbol_errors", None),
    ("Total Errors", "rx_total", "tx_errors"),
    ("Undersize Errors", "0", None),
)
DROP_ROWS: tuple[tuple[str, Cell, Cell], ...] = (
    ("ACL Drops", "0", None),
    ("Buffer Drops", "rx_discards", None),
    ("Non-Queue Drops", None, "0"),
    ("Queue Drops", None, "tx_discards"),
    ("Total Drops", "rx_discards", "tx_discards"),
)
NO_BER = "15E-255"  # NVUE's "no rate" (CL_MONITOR's sample)

# NVIDIA's sample module (CL_MONITOR: nv show platform transceiver swp2 / channel / interface transceiver).
MODULE_INFO = (
    ("cable-type", "Active cable"),
    ("cable-length", "3m"),
    ("supported-cable-length", "0m om1, 0m om2, 0m om3, 3m om4, 0m om5"),
    ("diagnostics-status", "Diagnostic Data Available"),
    ("status", "plugged_enabled"),
    ("error-status", "N/A"),
    ("vendor-date-code", "210215__"),
    ("identifier", "QSFP28"),
    ("vendor-rev", "B2"),
    ("vendor-name", "Mellanox"),
    ("vendor-pn", "MFA1A00-C003"),
    ("vendor-sn", "MT2108FT02204"),
)
MODULE_WIDE = {"temperature": 42.56, "voltage": 3.2862}
CHANNELS = (  # (rx dBm, tx dBm, bias mA) per channel
    (-0.64, -0.46, 6.750),
    (-0.76, -0.38, 6.750),
    (-0.68, -0.21, 6.750),
    (-0.67, -0.13, 6.750),
)
# The milliwatts NVUE printed beside those dBm (the dBm are rounded, so they are not recomputed).
SAMPLE_MW = {
    -0.64: "0.8625",
    -0.76: "0.8385",
    -0.68: "0.8556",
    -0.67: "0.8576",
    -0.46: "0.8988",
    -0.38: "0.9154",
    -0.21: "0.9537",
    -0.13: "0.9695",
}
THRESHOLDS: Mapping[str, Mapping[str, float]] = {
    "temperature": {"high_alarm": 80.0, "low_alarm": -10.0, "high_warning": 70.0, "low_warning": 0.0},
    "voltage": {"high_alarm": 3.5, "low_alarm": 3.1, "high_warning": 3.465, "low_warning": 3.135},
    "rx_power": {"high_alarm": 5.4, "low_alarm": -13.31, "high_warning": 2.4, "low_warning": -10.3},
    "tx_power": {"high_alarm": 5.4, "low_alarm": -11.4, "high_warning": 2.4, "low_warning": -8.4},
    "tx_bias": {"high_alarm": 8.5, "low_alarm": 5.492, "high_warning": 8.0, "low_warning": 6.0},
}
THRESHOLD_ORDER = ("high_alarm", "low_alarm", "high_warning", "low_warning")
# quantity -> (group, value key, unit, digits)
GROUPS = {
    "temperature": ("temperature", "temperature", "C", 2),
    "voltage": ("voltage", "voltage", "V", 4),
    "rx_power": ("rx-power", "power", "dBm", 2),
    "tx_power": ("tx-power", "power", "dBm", 2),
    "tx_bias": ("tx-bias-current", "current", "mA", 3),
}


def show_system(hostname: str, release: str, uptime_s: float) -> Shown:
    """`nv show system`: the operational column, and the hostname applied (NVUE_SYSTEM's sample)."""
    uptime = str(datetime.timedelta(seconds=int(max(0.0, uptime_s))))  # "3 days, 18:40:31"
    rows = [
        ["hostname", hostname, hostname],
        ["build", f"Cumulus Linux {release}", ""],
        ["uptime", uptime, ""],
        ["timezone", "Etc/UTC", ""],
    ]
    return nvue_attributes(["operational", "applied"], rows), {row[0]: row[1] for row in rows}


def show_counters(counters: Mapping[str, int]) -> Shown:
    values = {
        **counters,
        "rx_total": sum(counters[n] for n in ("alignment_errors", "fcs_errors", "symbol_errors")),
    }

    def cell(name: Cell) -> str:
        return "n/a" if name is None else str(values.get(name, 0)) if name != "0" else "0"

    def rows(table: tuple[tuple[str, Cell, Cell], ...]) -> list[list[str]]:
        return [[row, cell(rx), cell(tx)] for row, rx, tx in table]

    text = "\n".join(
        [
            nvue_attributes(
                ["operational", "applied"], [["carrier-transitions", str(counters["link_changes"]), ""]]
            ),
            "",
            nvue_section("Drop Counters", ["Counter", "Receive", "Transmit"], rows(DROP_ROWS)),
            "",
            nvue_section("Error Counters", ["Counter", "Receive", "Transmit"], rows(ERROR_ROWS)),
        ]
    )
    data = {
        "carrier-transitions": counters["link_changes"],
        "counters": {
            section: {row: {"receive": cell(rx), "transmit": cell(tx)} for row, rx, tx in table}
            for section, table in (("drops", DROP_ROWS), ("errors", ERROR_ROWS))
        },
    }
    return text, data


def show_phy_detail(counters: Mapping[str, int], minutes_since_clear: int) -> Shown:
    rows = [
        ("time-since-last-clear-min", str(minutes_since_clear)),
        ("phy-received-bits", str(counters["received_bits"])),
        ("symbol-errors", str(counters["uncorrected_symbols"])),
        ("effective-errors", str(counters["fec_uncorrectable"])),
        ("raw-ber", NO_BER),
        ("symbol-ber", NO_BER),
        ("effective-ber", _ber(counters["fec_uncorrectable"], counters["received_bits"])),
    ]
    return nvue_attributes(["operational"], [list(row) for row in rows]), dict(rows)


def _ber(errors: int, bits: int) -> str:
    """NVUE's one-digit `NE-M` rate; `15E-255` when nothing was counted."""
    if errors <= 0 or bits <= 0:
        return NO_BER
    exponent = math.floor(math.log10(errors / bits))
    return f"{round(errors / bits / 10.0**exponent)}E{exponent}"


def module_values(faults: Iterable[str]) -> tuple[dict[str, float], list[dict[str, float]]]:
    """The sample module's live values with the port's DOM faults applied against its own thresholds:
    the module-wide ones and each channel's."""
    running = list(faults)
    wide = wire_model.dom_values(MODULE_WIDE, THRESHOLDS, running)
    channels = [
        wire_model.dom_values({"rx_power": rx, "tx_power": tx, "tx_bias": bias}, THRESHOLDS, running)
        for rx, tx, bias in CHANNELS
    ]
    return wide, channels


def show_transceiver(faults: Iterable[str]) -> Shown:
    wide, channels = module_values(faults)
    lines = [f"{key:<23}: {value}" for key, value in MODULE_INFO]
    data: dict[str, Any] = dict(MODULE_INFO)
    for quantity, value in wide.items():
        group, lines_of, node = _group(quantity, value, "  ")
        lines += [f"{group}:", *lines_of]
        data[group] = node
    lines.append("channel:")
    data["channel"] = {}
    for number, channel in enumerate(channels, 1):
        lines.append(f"  channel-{number}:")
        data["channel"][f"channel-{number}"] = {}
        for quantity, value in channel.items():
            group, lines_of, node = _group(quantity, value, "        ")
            lines += [f"    {group}:", *lines_of]
            data["channel"][f"channel-{number}"][group] = node
    return "\n".join(lines), data


def _group(quantity: str, value: float, pad: str) -> tuple[str, list[str], dict[str, str]]:
    group, key, unit, digits = GROUPS[quantity]
    shown = _shown(value, unit, digits)
    if unit == "dBm":  # NVUE prints live power in both units, thresholds in dBm
        shown = f"{SAMPLE_MW.get(value) or f'{10 ** (value / 10):.4f}'} mW / {shown}"
    node = {key: shown}
    for name in THRESHOLD_ORDER:
        node[f"{name.replace('_', '-')}-threshold"] = _shown(THRESHOLDS[quantity][name], unit, digits)
    node["alarm"] = (
        "Off" if THRESHOLDS[quantity]["low_alarm"] <= value <= THRESHOLDS[quantity]["high_alarm"] else "On"
    )
    return group, [f"{pad}{name:<22}: {text}" for name, text in node.items()], node


def _shown(value: float, unit: str, digits: int) -> str:
    return f"{value:.{digits}f} {unit}"
