"""NIC firmware checks (docs/checks/bus.md): the running firmware of each rail NIC against the intent's
pin for its part (PSID), or one version per part across the fleet where none is pinned
(host.nic_firmware), and the pinned firmware parameters in effect (host.nic_fw_config).

Firmware changes wait for a firmware reset or a reboot. flint prints `FW Version(Running)` only while
the burned image differs from the running one (Mellanox/mstflint:flint/subcommands.cpp@b9d9e844a14ae1c8
5cb90c76ccd4a56a0eccd599), and mlxconfig shows what `set` wrote as Next Boot beside the Current value
in effect (mlxconfig/mlxcfg_ui.cpp, same commit): a value waiting for that reset is named as pending and
still fails, since the NIC does not run it yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fabcheck.checks.declare import Check
from fabcheck.checks.host.evidence import FirmwareEvidence, HostEvidence, present_nics, unreadable_error
from fabcheck.checks.host.fleet import FleetInputs, _compare, _joined, _one_version, fleet_check
from fabcheck.checks.host.judges import HostCheck, cmd
from fabcheck.checks.model import Finding, errored, failed, passed, skipped
from fabcheck.checks.roles import HOST_FIRMWARE_TAG, HOST_QOS_ROLE
from fabcheck.collect import host as probes
from fabcheck.collect.host import Unreadable
from fabcheck.desired.nic import DesiredHost
from fabcheck.intent.model import FabricIntent, NicFirmware
from fabcheck.parsers.flint import FlintQuery
from fabcheck.parsers.mlxconfig import MlxconfigParam, MlxconfigQuery, matches, spelled
from fabcheck.parsers.mlxfwmanager import FwManagerDevice

NIC_FIRMWARE = "host.nic_firmware"
NIC_FW_CONFIG = "host.nic_fw_config"
PENDING = "pending: takes effect after a firmware reset or reboot"
RESET = "mlxfwreset -d {nic} -y reset"  # or a reboot: what loads a burned image or Next Boot values


@dataclass(frozen=True)
class RunningFirmware:
    """One NIC's firmware as read: flint's where installed, else the driver's (ibv_devinfo)."""

    nic: str
    psid: str | None
    running: str
    burned: str | None  # None: flint not installed, a burned image waiting is not seen
    source: str

    @property
    def pending(self) -> bool:
        return self.burned is not None and self.burned != self.running

    def shown(self) -> str:
        waiting = f"; {self.burned} burned, runs after a firmware reset or reboot" if self.pending else ""
        return f"{self.running} running{waiting} ({self.source})"


def running_firmware(shown: FirmwareEvidence) -> RunningFirmware | Unreadable:
    image = shown.image
    if isinstance(image, Unreadable):
        return image
    if isinstance(image, FlintQuery):
        return RunningFirmware(shown.nic, image.psid, image.running, image.fw_version, "flint")
    if shown.fw_ver is None:
        return Unreadable(f"flint -d {shown.nic} q", "flint not installed and ibv_devinfo shows no fw_ver")
    return RunningFirmware(
        shown.nic, shown.board_id, shown.fw_ver, None, "ibv_devinfo fw_ver; flint not installed"
    )


def _burn_hint(nic: str, pin: NicFirmware) -> str:
    image = pin.image or f"the firmware image of {pin.version} for {pin.psid}"
    burn = cmd("flint", "-d", nic, "-i", pin.image or "IMAGE", "burn")
    return (
        f"no fabcheck role burns firmware: burn {image} (`{burn}` or mlxfwmanager), "
        f"then `{RESET.format(nic=nic)}` or reboot"
    )


def judge_pinned(firmware: RunningFirmware, pin: NicFirmware) -> Finding:
    expected = f"firmware {pin.version} running (pinned for {pin.psid})"
    if firmware.running == pin.version and not firmware.pending:
        return passed(NIC_FIRMWARE, firmware.nic, expected, firmware.shown())
    if firmware.burned == pin.version:  # the pinned image is on the flash and waits for a reset
        hint = f"{PENDING}: `{RESET.format(nic=firmware.nic)}` or reboot"
        return failed(NIC_FIRMWARE, firmware.nic, expected, f"{firmware.shown()}: {PENDING}", hint)
    return failed(NIC_FIRMWARE, firmware.nic, expected, firmware.shown(), _burn_hint(firmware.nic, pin))


def _fleet_hint(host: str, common: str | None) -> str:
    fleet = f"the fleet's {common}" if common else "one version chosen for the fleet"
    return (
        f"bring {host} to {fleet} (or pin one in fabric_intent.nic_firmware): no fabcheck role burns "
        "firmware; on this host: `mlxfwmanager --query`, burn with flint or mlxfwmanager, then mlxfwreset "
        "or reboot"
    )


def check_nic_firmware(
    evidence: Mapping[str, HostEvidence],
    desired: Mapping[str, DesiredHost],
    _intents: Mapping[str, FabricIntent],
    inputs: FleetInputs,
) -> dict[str, list[Finding]]:
    """Pinned parts: the pinned version runs on each NIC, no other image waits. Other parts: one version
    per PSID across the hosts (the odd host is named) and no image waiting for a reset."""
    result: dict[str, list[Finding]] = {host: [] for host in evidence}
    unpinned: dict[str, dict[str, str | Unreadable]] = {}
    for host, shown in evidence.items():
        per_part: dict[str, str | Unreadable] = {}
        for nic in present_nics(shown, desired[host]):
            firmware = running_firmware(shown.firmware(nic.name))
            if isinstance(firmware, Unreadable):
                result[host].append(
                    unreadable_error(NIC_FIRMWARE, nic.name, "the NIC's running firmware", firmware)
                )
                continue
            pin = desired[host].firmware_pin(firmware.psid)
            if pin is not None and pin.version is not None:
                result[host].append(judge_pinned(firmware, pin))
                continue
            key = f"firmware of PSID {firmware.psid or 'not shown'}"
            per_part[key] = _joined(per_part.get(key), firmware.running)
            if firmware.pending:
                expected = "no firmware image waiting for a reset"
                hint = f"{PENDING}: `{RESET.format(nic=nic.name)}` or reboot (or burn the running image back)"
                result[host].append(failed(NIC_FIRMWARE, nic.name, expected, firmware.shown(), hint))
        for key, value in per_part.items():
            unpinned.setdefault(key, {})[host] = value
    for subject, readings in sorted(unpinned.items()):
        compared = _compare(
            NIC_FIRMWARE, subject, readings, "firmware version", _fleet_hint, inputs, _one_version
        )
        for host, finding in compared.items():
            result[host].append(finding)
    for findings in result.values():
        if not findings:  # host.rdma_device says why
            findings.append(skipped(NIC_FIRMWARE, "host", "no rail NIC read on this host: nothing to judge"))
    return result


def check_fwmanager_query(
    devices: tuple[FwManagerDevice, ...], pins: tuple[NicFirmware, ...]
) -> list[Finding]:
    """`fabcheck analyze mlxfwmanager`: one saved `mlxfwmanager --query` of one host. A pinned part's
    devices run the pin; the others of one PSID agree with each other (the query shows no burned image
    waiting: flint's `FW Version(Running)` is what tells that, on the gate)."""
    findings: list[Finding] = []
    unpinned: dict[str, dict[str, str]] = {}
    for device in devices:
        subject = device.pci_device or f"Device #{device.index}"
        if device.psid is None or device.fw_current in (None, "N/A"):
            expected = "the device's PSID and current firmware"
            actual = "not judged: the query shows no " + ("PSID" if device.psid is None else "FW version")
            findings.append(errored(NIC_FIRMWARE, subject, expected, actual, "save the whole query output"))
            continue
        pin = next((p for p in pins if p.psid == device.psid and p.version is not None), None)
        firmware = RunningFirmware(subject, device.psid, device.fw_current, None, "mlxfwmanager")
        if pin is not None:
            findings.append(judge_pinned(firmware, pin))
        else:
            unpinned.setdefault(device.psid, {})[subject] = device.fw_current
    for psid, versions in sorted(unpinned.items()):
        counts = sorted(
            {v: list(versions.values()).count(v) for v in versions.values()}.items(), key=lambda kv: -kv[1]
        )
        common = counts[0][0] if len(counts) == 1 or counts[0][1] > counts[1][1] else None
        expected = f"one firmware version on every {psid} device of the host"
        spread = "; ".join(f"{version} on {count} device(s)" for version, count in counts)
        for subject, version in sorted(versions.items()):
            actual = f"{version} ({spread})"
            if version == common:
                findings.append(passed(NIC_FIRMWARE, subject, expected, actual))
            else:
                findings.append(
                    failed(NIC_FIRMWARE, subject, expected, actual, _fleet_hint("this host", common))
                )
    return findings


# ---- host.nic_fw_config ---------------------------------------------------------------------------


def _value(param: MlxconfigParam | None, column: str) -> str:
    if param is None:
        return "not shown"
    cell = param.current if column == "current" else param.next_boot
    return "not shown" if cell is None else cell.text


def judge_config(shown: FirmwareEvidence, pin: NicFirmware) -> Finding:
    """Each pinned parameter's Current value (in effect) equals the pin; Next Boot alone is pending."""
    nic = shown.nic
    expected = ", ".join(f"{name}={spelled(value)}" for name, value in sorted(pin.config.items()))
    expected = f"{expected} in effect (mlxconfig Current; pinned for {pin.psid})"
    query = shown.config
    if query is None:
        actual = "mlxconfig is not installed"
        hint = "install NVIDIA MFT (mlxconfig) or mstflint, then run validate again"
        return errored(NIC_FW_CONFIG, nic, expected, actual, hint)
    if isinstance(query, Unreadable):
        return unreadable_error(NIC_FW_CONFIG, nic, expected, query)
    if not isinstance(query, MlxconfigQuery) or not query.shows_current:
        actual = "mlxconfig showed no Current column: what is in effect is unknown"
        return errored(
            NIC_FW_CONFIG, nic, expected, actual, "use an mlxconfig whose -e shows Default and Current"
        )
    wrong, pending, to_set = [], [], []
    for name, value in sorted(pin.config.items()):
        param = query.params.get(name)
        if param is not None and matches(value, param.current):
            continue
        shown_value = f"{name} {_value(param, 'current')} (Next Boot {_value(param, 'next')})"
        if param is not None and matches(value, param.next_boot):
            pending.append(shown_value)
            continue
        to_set.append(f"{name}={spelled(value)}")
        if param is None:
            wrong.append(f"{name} not shown (unsupported, or hidden while ADVANCED_PCI_SETTINGS is off)")
        else:
            wrong.append(shown_value)
    if not wrong and not pending:
        return passed(NIC_FW_CONFIG, nic, expected, f"all {len(pin.config)} in effect")
    actual = "; ".join(wrong + [f"{text}: {PENDING}" for text in pending])
    reset = f"`{RESET.format(nic=nic)}` or reboot"
    if not wrong:
        return failed(NIC_FW_CONFIG, nic, expected, actual, f"{PENDING}: {reset}")
    command = cmd("mlxconfig", "-d", nic, "-y", "set", *to_set)
    hint = NIC_FW_CONFIG_CHECK.fix(command) + f", then {reset} (a set takes effect after it)"
    return failed(NIC_FW_CONFIG, nic, expected, actual, hint)


def check_nic_fw_config(
    evidence: HostEvidence, desired: DesiredHost, _intent: FabricIntent, _inputs: object
) -> list[Finding]:
    findings = []
    for nic in present_nics(evidence, desired):
        shown = evidence.firmware(nic.name)
        if shown.psid is None:  # which pin applies is unknown: never a skip
            if isinstance(shown.image, Unreadable):
                findings.append(
                    unreadable_error(NIC_FW_CONFIG, nic.name, "the NIC's part (PSID)", shown.image)
                )
            else:
                actual = "no PSID shown (flint not installed, no board_id in ibv_devinfo)"
                findings.append(
                    errored(NIC_FW_CONFIG, nic.name, "the NIC's part (PSID)", actual, "install mstflint")
                )
            continue
        pin = desired.firmware_pin(shown.psid)
        if pin is None or not pin.config:
            reason = f"fabric_intent.nic_firmware pins no parameters for PSID {shown.psid}"
            findings.append(skipped(NIC_FW_CONFIG, nic.name, reason))
            continue
        findings.append(judge_config(shown, pin))
    return findings


def _pins_parameters(desired: DesiredHost) -> str | None:
    if any(pin.config for pin in desired.nic_firmware):
        return None
    return "fabric_intent.nic_firmware pins no firmware parameters"


NIC_FIRMWARE_CHECK = fleet_check(
    NIC_FIRMWARE,
    "nic",
    (probes.FLINT, probes.IBV_DEVINFO),
    "each rail NIC runs the firmware `nic_firmware` pins for its PSID, no other image waiting for a reset; "
    "unpinned: one version per PSID across the hosts, the odd host named",
    None,
    None,
    check_nic_firmware,
    FleetInputs(),
)
NIC_FW_CONFIG_CHECK: HostCheck = Check(
    NIC_FW_CONFIG,
    "host",
    "nic",
    (probes.MLXCONFIG, probes.FLINT),
    "each firmware parameter `nic_firmware[].config` pins is in effect (mlxconfig Current); one only in "
    "Next Boot fails as pending a firmware reset or reboot",
    HOST_QOS_ROLE,
    HOST_FIRMWARE_TAG,  # the role's nic_fw_config task
    check_nic_fw_config,
    applies=_pins_parameters,
)
