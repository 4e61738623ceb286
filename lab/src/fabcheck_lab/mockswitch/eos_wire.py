"""The EOS mock's wire views: each port's counters and module, from the lab's wire model.

The JSON shapes are those of real eAPI replies in ANTA's unit tests (tests/data/real/INDEX.tsv):
`show interfaces` interfaceCounters, `show interfaces counters errors`, `show interfaces phy detail` and
`show interfaces transceiver dom thresholds`. Counters come from the device's wire state in fabcheck's
vocabulary (device.wire_counters), renamed to EOS's; the module's DOM from a cited real module, with
the port's running wire faults applied by fabcheck_lab.wire_model.dom_values. The text layouts (without
`| json`) are the mock's own: UNVERIFIED, fabcheck reads only the JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fabcheck_lab import wire_model
from fabcheck_lab.mockswitch.eos_model import short_name
from fabcheck_lab.mockswitch.textfmt import simple_table

if TYPE_CHECKING:
    from fabcheck_lab.mockswitch.device import SwitchDevice

Shown = tuple[str, Any]

# The module every mock port holds: ANTA's real 100GBASE-SR4 (aristanetworks/anta
# tests/units/anta_tests/test_interfaces.py@68667e0e, VerifyInterfacesOpticsReceivePower "success",
# Ethernet2/1): its receive power thresholds and its lit lanes' receive power (its lanes 1 and 3 read
# dark there; the mock lights every lane at the lit lanes' power); the module temperature of ANTA's
# VerifyInterfacesOpticsTemperature "success" data. EOS's replies there carry no temperature thresholds:
# those of a real QSFP28's EEPROM (https://github.com/sonic-net/sonic-buildimage/issues/14181: high
# alarm 75, high warning 70, low warning 0, low alarm -5 °C), under EOS's threshold key names lowAlarm /
# lowWarn (real) and highWarn / highAlarm (UNVERIFIED, the same naming assumed).
MODULE_MEDIA = "100GBASE-SR4"
MODULE_SERIAL = "TEST05DA"
RX_POWER_DBM = (-0.09972101229705288, -1.4630178822382547, -0.09972101229705288, -1.4630178822382547)
TEMPERATURE_C = 33.85546875
THRESHOLDS: Mapping[str, Mapping[str, float]] = {
    "rx_power": {"low_alarm": -13.29754146925876, "low_warning": -10.301183562535002},
    "temperature": {"high_alarm": 75.0, "high_warning": 70.0, "low_warning": 0.0, "low_alarm": -5.0},
}
EOS_THRESHOLD_KEYS = {
    "high_alarm": "highAlarm",
    "high_warning": "highWarn",
    "low_warning": "lowWarn",
    "low_alarm": "lowAlarm",
}
# The PHY stage the mock shows per port: the switch ASIC's line side, as the first stage of ANTA's real
# `show interfaces phy detail` (VerifyInterfacesBER data) names it.
PHY_STAGE = {"phyChipName": "BCM88690-TSCBH", "location": "line"}


def interface_counters(device: SwitchDevice, port: str) -> dict[str, Any]:
    """`interfaces.<port>` keys of `show interfaces | json` that carry the wire (ANTA's
    VerifyInterfacesCounterDetails data), beside the link state and MTU eos_show.interfaces renders."""
    wire = device.wire_counters(port)
    return {
        "description": "",
        "lastStatusChangeTimestamp": float(device.wire[port].get("since", 0.0)),
        "interfaceCounters": {
            "inDiscards": wire["rx_discards"],
            "outDiscards": wire["tx_discards"],
            "linkStatusChanges": wire["link_changes"],
            "totalInErrors": wire["rx_errors"],
            "inputErrorsDetail": {
                "runtFrames": 0,
                "giantFrames": 0,
                "fcsErrors": wire["fcs_errors"],
                "alignmentErrors": wire["alignment_errors"],
                "symbolErrors": wire["symbol_errors"],
                "rxPause": 0,
            },
            "totalOutErrors": wire["tx_errors"],
            "outputErrorsDetail": {
                "collisions": 0,
                "lateCollisions": 0,
                "deferredTransmissions": 0,
                "txPause": 0,
            },
        },
    }


def error_counters(device: SwitchDevice, ports: Sequence[str]) -> Shown:
    """`show interfaces counters errors`: `interfaceErrorCounters.<port>` (ANTA's VerifyInterfaceErrors)."""
    model, rows = {}, []
    for port in ports:
        wire = device.wire_counters(port)
        model[port] = {
            "inErrors": wire["rx_errors"],
            "frameTooLongs": 0,
            "outErrors": wire["tx_errors"],
            "frameTooShorts": 0,
            "fcsErrors": wire["fcs_errors"],
            "alignmentErrors": wire["alignment_errors"],
            "symbolErrors": wire["symbol_errors"],
        }
        entry = model[port]
        rows.append(
            [short_name(port)]
            + [str(entry[key]) for key in ("fcsErrors", "alignmentErrors", "symbolErrors", "inErrors")]
            + ["0", "0", str(entry["outErrors"])]
        )
    table = simple_table(["Port", "FCS", "Align", "Symbol", "Rx", "Runts", "Giants", "Tx"], rows, "lrrrrrrr")
    return table, {"interfaceErrorCounters": model}


def phy_detail(device: SwitchDevice, ports: Sequence[str]) -> Shown:
    """`show interfaces phy detail`: one PHY stage per port with its FEC codewords and pre-FEC BER (the
    corrected bits over the bits received since the link came up)."""
    model, lines = {}, []
    for port in ports:
        wire = device.wire_counters(port)
        since = float(device.wire[port].get("since", 0.0))
        ber = wire["corrected_bits"] / wire["received_bits"] if wire["received_bits"] else 0.0
        model[port] = {
            "phyStatuses": [
                {
                    "description": dict(PHY_STAGE),
                    "fec": {
                        "correctedCodewords": _stat(wire["fec_corrected"], since),
                        "uncorrectedCodewords": _stat(wire["fec_uncorrectable"], since),
                    },
                    "preFecBer": {"value": float(ber)},
                    "phyState": {"value": "linkUp", "changes": wire["link_changes"], "lastChange": since},
                }
            ],
            "interfaceState": {},
            "transceiver": {},
            "macFaults": {},
        }
        lines += [
            port,
            "  PHY state                 linkUp",
            f"  FEC corrected codewords   {wire['fec_corrected']}",
            f"  FEC uncorrected codewords {wire['fec_uncorrectable']}",
            f"  Pre-FEC BER               {ber:.2e}",
        ]
    return "\n".join(lines), {"interfacePhyStatuses": model}


def _stat(value: int, since: float) -> dict[str, Any]:
    """EOS's `{value, changes, lastChange}`: the mock counts one change per value step it cannot see,
    so a non-zero counter shows one change at the link's start."""
    return {"value": value, "changes": 1 if value else 0, "lastChange": since if value else 0.0}


def transceiver_dom(device: SwitchDevice, ports: Sequence[str]) -> Shown:
    """`show interfaces transceiver dom thresholds`: the cited module's temperature and per-lane receive
    power with its thresholds, the port's DOM faults applied (switch-optic-hot: 3 °C over the high
    warning)."""
    model, rows = {}, []
    for port in ports:
        baseline = {"temperature": TEMPERATURE_C, "rx_power": min(RX_POWER_DBM)}
        live = wire_model.dom_values(baseline, THRESHOLDS, device.wire_faults(port))
        # A fault that moves the receive power moves every lane to it; otherwise each lane keeps its own.
        lanes = (
            RX_POWER_DBM
            if live["rx_power"] == baseline["rx_power"]
            else (live["rx_power"],) * len(RX_POWER_DBM)
        )
        model[port] = {
            "displayName": port,
            "vendorSn": MODULE_SERIAL,
            "mediaType": MODULE_MEDIA,
            "parameters": {
                "temperature": {
                    "unit": "C",
                    "channels": {"-": live["temperature"]},
                    "threshold": _threshold("temperature"),
                },
                "rxPower": {
                    "unit": "dBm",
                    "channels": {str(lane): power for lane, power in enumerate(lanes, start=1)},
                    "threshold": _threshold("rx_power"),
                },
            },
        }
        rows.append([short_name(port), f"{live['temperature']:.2f}", " ".join(f"{p:.2f}" for p in lanes)])
    return simple_table(["Port", "Temperature (C)", "Rx power (dBm)"], rows, "lrl"), {"interfaces": model}


def _threshold(quantity: str) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for key, value in THRESHOLDS[quantity].items():
        eos_key = EOS_THRESHOLD_KEYS[key]
        shown[eos_key] = value
        shown[f"{eos_key}Overridden"] = False
    return shown
