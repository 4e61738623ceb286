"""SONiC's wire views on the mock: portstat's error and FEC tables, `show interfaces flap` and sfpshow's
EEPROM dump with DOM, rendered from the lab's wire model (device.wire_counters / wire_faults) in the
layouts of the samples tests/data/real/INDEX.tsv cites (sonic-utilities tests and Command-Reference).

Which columns and commands exist follows the mock's release, as sonic-utilities' branches have them
(utilities_common/portstat.py header_fec_only and show/interfaces/__init__.py at each branch): FEC BER
columns from 202411, `show interfaces flap` from 202411, `--json` on the counters views from 202505.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fabcheck_lab import wire_model
from fabcheck_lab.mockswitch.sonic_shell import Result
from fabcheck_lab.mockswitch.textfmt import simple_table

if TYPE_CHECKING:
    from fabcheck_lab.mockswitch.sonic import SonicDevice

_table = functools.partial(simple_table, header_pad=2)  # tabulate, as portstat and show print

FLAP_BRANCH = "202411"  # sonic-utilities fbd0c3b (show interfaces flap) is on 202411, not on 202405
JSON_BRANCH = "202505"  # -j/--json on `show interfaces counters errors|fec-stats` from 202505 on
ERROR_HEADER = ("IFACE", "STATE", "RX_ERR", "RX_DRP", "RX_OVR", "TX_ERR", "TX_DRP", "TX_OVR")
# portstat's header_fec_only per branch (the newest branch at or below the release applies).
FEC_HEADERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("202205", ("IFACE", "STATE", "FEC_CORR", "FEC_UNCORR", "FEC_SYMBOL_ERR")),
    ("202411", ("IFACE", "STATE", "FEC_CORR", "FEC_UNCORR", "FEC_SYMBOL_ERR", "FEC_PRE_BER", "FEC_POST_BER")),
    (
        "202505",
        (
            *("IFACE", "STATE", "FEC_CORR", "FEC_UNCORR", "FEC_SYMBOL_ERR", "FEC_PRE_BER", "FEC_POST_BER"),
            *("FEC_PRE_BER_MAX", "FLR(O)", "FLR(P) (Accuracy)"),
        ),
    ),
    (
        "202511",
        (
            *("IFACE", "STATE", "FEC_CORR", "FEC_UNCORR", "FEC_SYMBOL_ERR", "FEC_PRE_BER", "FEC_POST_BER"),
            *("FEC_PRE_BER_MAX", "FLR(O)", "FLR(P) (Accuracy)", "FEC_MAX_T"),
        ),
    ),
)
FLAP_HEADER = (
    "Interface",
    "Flap Count",
    "Admin",
    "Oper",
    "Link Down TimeStamp(UTC)",
    "Link Up TimeStamp(UTC)",
)
KP4_CODEWORD_BITS = 5440  # RS(544,514): what one uncorrectable codeword loses, for the post-FEC BER

# The module every mock port holds: the Mellanox MFA1A00-C003 QSFP28 active optical cable of
# sonic-utilities tests/sfp_test.py (its Ethernet0, over tests/mock_tables/state_db.json), with its own
# thresholds. dom_values applies the DOM faults against these thresholds.
MODULE_INFO = (
    ("Application Advertisement", "N/A"),
    ("Connector", "No separable connector"),
    ("Encoding", "64B66B"),
    ("Extended Identifier", "Power Class 3(2.5W max), CDR present in Rx Tx"),
    ("Extended RateSelect Compliance", "QSFP+ Rate Select Version 1"),
    ("Identifier", "QSFP28 or later"),
    ("Length Cable Assembly(m)", "3"),
    ("Nominal Bit Rate(100Mbs)", "255"),
)
MODULE_COMPLIANCE = ("10/40G Ethernet Compliance Code", "40G Active Cable (XLPPI)")
MODULE_VENDOR = (
    ("Vendor Date Code(YYYY-MM-DD Lot)", "2017-01-13"),
    ("Vendor Name", "Mellanox"),
    ("Vendor OUI", "00-02-c9"),
    ("Vendor PN", "MFA1A00-C003"),
    ("Vendor Rev", "AC"),
    ("Vendor SN", "MT1706FT02064"),
)
MODULE_LANES = 4
MODULE_RX_DBM = (0.3802, -0.4871, -0.0860, 0.3830)
MODULE_BASELINE = {"rx_power": MODULE_RX_DBM[0], "tx_bias": 6.75, "temperature": 30.9258, "voltage": 3.2824}
MODULE_THRESHOLDS = {
    "rx_power": {"high_alarm": 3.4001, "high_warning": 2.4, "low_alarm": -13.5067, "low_warning": -9.5001},
    "tx_bias": {"high_alarm": 10.0, "high_warning": 9.5, "low_alarm": 0.5, "low_warning": 1.0},
    "temperature": {"high_alarm": 75.0, "high_warning": 70.0, "low_alarm": -5.0, "low_warning": 0.0},
    "voltage": {"high_alarm": 3.63, "high_warning": 3.465, "low_alarm": 2.97, "low_warning": 3.1349},
}
_THRESHOLD_NAMES = (("HighAlarm", "high_alarm"), ("HighWarning", "high_warning"))
_THRESHOLD_NAMES += (("LowAlarm", "low_alarm"), ("LowWarning", "low_warning"))


def branch(release: str) -> str:
    """The release's branch as six digits ('202405' of '202405.0-mock', '202412' of '20241211.35');
    a release without one is taken as the newest layout."""
    return release[:6] if release[:6].isdigit() else "999999"


def _group(group: str, usage: str, message: str) -> Result:
    return Result(
        err=f'Usage: {group} [OPTIONS] {usage}\nTry "{group} -h" for help.\n\nError: {message}', status=2
    )


def show_interfaces(device: SonicDevice, args: Sequence[str], ports: Sequence[str]) -> Result | None:
    """`show interfaces counters errors|fec-stats`, `show interfaces flap`, `show interfaces transceiver
    eeprom [--dom]`; None for the interfaces views this module does not render."""
    at = branch(device.release)
    if args[:2] == ["interfaces", "flap"]:
        if at < FLAP_BRANCH:
            return _group("show interfaces", "COMMAND [ARGS]...", 'No such command "flap".')
        return _options(args[2:], "show interfaces flap", "[INTERFACENAME]", ()) or Result(
            flaps(device, ports) + "\n"
        )
    if args[:3] in (["interfaces", "counters", "errors"], ["interfaces", "counters", "fec-stats"]):
        command = "show " + " ".join(args[:3])
        options = ("-j", "--json") if at >= JSON_BRANCH else ()
        refused = _options([a for a in args[3:] if not a.startswith("Ethernet")], command, "", options)
        if refused is not None:
            return refused
        header, rows = errors(device) if args[2] == "errors" else fec_stats(device, at)
        if set(args[3:]) & {"-j", "--json"}:
            return Result(table_as_json(header, rows) + "\n")
        # Right-aligned throughout, as the Command Reference's capture of a switch prints them.
        return Result(_table(header, rows, "r" * len(header)) + "\n")
    if args[:2] == ["interfaces", "counters"] and len(args) > 2 and not args[2].startswith("-"):
        if args[2] not in ("detailed", "errors", "fec-histogram", "fec-stats", "rates", "rif", "trim"):
            return _group("show interfaces counters", "COMMAND [ARGS]...", f'No such command "{args[2]}".')
        return None
    if args[:2] == ["interfaces", "transceiver"]:
        if args[2:3] != ["eeprom"]:
            name = args[2] if len(args) > 2 else ""
            if name in ("error-status", "info", "lpmode", "pm", "presence", "status"):
                return None
            return _group("show interfaces transceiver", "COMMAND [ARGS]...", f'No such command "{name}".')
        refused = _options(
            [a for a in args[3:] if not a.startswith("Ethernet")],
            "show interfaces transceiver eeprom",
            "[INTERFACENAME]",
            ("-d", "--dom"),
        )
        return refused or Result(eeprom(device, ports, bool(set(args[3:]) & {"-d", "--dom"})))
    return None


def _options(given: Sequence[str], command: str, usage: str, known: Sequence[str]) -> Result | None:
    for option in given:
        if option not in known:
            if not option.startswith("-"):
                return _group(command, usage, f"Got unexpected extra argument ({option})")
            return _group(command, usage, f"no such option: {option}")
    return None


def table_as_json(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """utilities_common/netstat.py table_as_json: per port the other columns by header name."""
    output = {row[0]: {header[i]: row[i] for i in range(1, len(header))} for row in rows}
    return json.dumps(output, indent=4, sort_keys=True)


def _count(value: int) -> str:
    return f"{value:,}"  # netstat.ns_diff: '{:,}'


def _state(device: SonicDevice, port: str) -> str:
    """portstat's STATE: U where the lab cabled the port (LLDP hears a neighbour), D elsewhere."""
    return "U" if port in {p for p, _system, _remote in device.spec.neighbors} else "D"


def errors(device: SonicDevice) -> tuple[tuple[str, ...], list[list[str]]]:
    rows = []
    for port in device.ports:
        c = device.wire_counters(port)
        rx_errors = c.get("rx_errors", 0) + c.get("fcs_errors", 0)  # IF_IN_ERRORS counts FCS errors too
        received = [_count(rx_errors), _count(c.get("rx_discards", 0)), "0"]
        sent = [_count(c.get("tx_errors", 0)), _count(c.get("tx_discards", 0)), "0"]
        rows.append([port, _state(device, port), *received, *sent])
    return ERROR_HEADER, rows


def _ber(value: float) -> str:
    return f"{value:.2e}"  # netstat.format_fec_ber


def fec_stats(device: SonicDevice, at: str) -> tuple[tuple[str, ...], list[list[str]]]:
    header = next(h for since, h in reversed(FEC_HEADERS) if at >= since)
    rows = []
    for port in device.ports:
        c = device.wire_counters(port)
        bits = max(1, c.get("received_bits", 0))
        pre = c.get("corrected_bits", 0) / bits
        post = c.get("fec_uncorrectable", 0) * KP4_CODEWORD_BITS / bits
        # FEC_SYMBOL_ERR: the symbols the FEC corrected, level with the corrected codewords on a real
        # switch (67 beside 69 in sonic-net/sonic-mgmt#25455), so the mock shows the same count.
        cells = [port, _state(device, port), _count(c.get("fec_corrected", 0))]
        cells += [_count(c.get("fec_uncorrectable", 0)), _count(c.get("fec_corrected", 0))]
        cells += [_ber(pre), _ber(post), _ber(pre), "0", "0", "0.0"]
        rows.append(cells[: len(header)])
    return header, rows


def _utc(moment: float) -> str:
    return time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime(moment))


def flaps(device: SonicDevice, ports: Sequence[str]) -> str:
    """orchagent counts every operational status change (sonic-swss portsorch updateDbPortFlapCount):
    the wire's up and down transitions and, per port the config updater took admin-down, a down and
    an up."""
    rows = []
    for port in ports:
        changes = device.wire_counters(port).get("link_changes", 0) + 2 * device.port_flaps.get(port, 0)
        since = float(device.wire[port].get("since", time.time()))
        oper = "Up" if _state(device, port) == "U" else "Down"
        rows.append([port, str(changes) if changes else "Never", "Up", oper, _utc(since - 1), _utc(since)])
    numeric = all(row[1] != "Never" for row in rows)
    return _table(list(FLAP_HEADER), rows, ("lr" if numeric else "ll") + "llll")


def _dom_line(name: str, value: str, align: int = 0) -> str:
    return f"{' ' * 16}{name}{': '.rjust(len(': ') + align - len(name))}{value}"


def eeprom(device: SonicDevice, ports: Sequence[str], dom: bool) -> str:
    blocks = []
    for port in ports:
        lines = [f"{port}: SFP EEPROM detected"]
        lines += [f"{' ' * 8}{key}: {value}" for key, value in MODULE_INFO]
        lines += [f"{' ' * 8}Specification compliance:", _dom_line(*MODULE_COMPLIANCE)]
        lines += [f"{' ' * 8}{key}: {value}" for key, value in MODULE_VENDOR]
        if dom:
            lines += _dom_sections(device, port)
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def _dom_sections(device: SonicDevice, port: str) -> list[str]:
    live = wire_model.dom_values(MODULE_BASELINE, MODULE_THRESHOLDS, device.wire_faults(port))
    # A DOM fault moves the first lane (dom_values gives one figure); the other lanes keep the module's.
    rx = [live["rx_power"], *MODULE_RX_DBM[1:]]
    lines = [f"{' ' * 8}ChannelMonitorValues:"]
    lines += [_dom_line(f"RX{lane + 1}Power", f"{rx[lane]:.4f}dBm") for lane in range(MODULE_LANES)]
    lines += [_dom_line(f"TX{lane + 1}Bias", f"{live['tx_bias']:.4f}mA") for lane in range(MODULE_LANES)]
    lines.append(f"{' ' * 8}ChannelThresholdValues:")
    for prefix, quantity, unit in (("RxPower", "rx_power", "dBm"), ("TxBias", "tx_bias", "mA")):
        lines += [
            _dom_line(f"{prefix}{level}", f"{MODULE_THRESHOLDS[quantity][key]:.4f}{unit}", 18)
            for level, key in _THRESHOLD_NAMES
        ]
    lines.append(f"{' ' * 8}ModuleMonitorValues:")
    lines += [
        _dom_line("Temperature", f"{live['temperature']:.4f}C"),
        _dom_line("Vcc", f"{live['voltage']:.4f}Volts"),
    ]
    lines.append(f"{' ' * 8}ModuleThresholdValues:")
    for prefix, quantity, unit in (("Temp", "temperature", "C"), ("Vcc", "voltage", "Volts")):
        lines += [
            _dom_line(f"{prefix}{level}", f"{MODULE_THRESHOLDS[quantity][key]:.4f}{unit}", 15)
            for level, key in _THRESHOLD_NAMES
        ]
    return lines
