"""The PCIe bus between each GPU and its rail NIC (docs/checks/bus.md): how each link trained
(host.pcie_link), its AER errors (host.pcie_errors), ACS redirect on the bridges peer-to-peer crosses
(host.pcie_acs) and the IOMMU mode of the rail NICs (host.iommu).

GPU i is nvidia-smi's GPU i at the bus id `nvidia-smi -q` shows (where it was read; else the i-th NVIDIA
`3D controller`/`VGA compatible controller` of `lspci -D -vvv` in BDF order, nvidia-smi's default PCI
bus order); a rail NIC's function is the `bus-info` of `ethtool -i` on its
netdev. No fabcheck role sets any of it: a failure's hint names the BIOS setting, the command or the
part to reseat. Without root lspci shows no capability: that is an ERROR ("run as root"), never a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from fabcheck.checks.declare import NO_INPUTS, Inputs
from fabcheck.checks.host.evidence import AerWindow, HostEvidence, present_nics, unreadable_error
from fabcheck.checks.host.judges import HostCheck, host_check
from fabcheck.checks.model import Finding, errored, failed, passed, skipped
from fabcheck.collect import host as probes
from fabcheck.collect.host import Unreadable
from fabcheck.desired.nic import DesiredHost
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.bus_records import PcieFunction, PcieLink, PcieTree
from fabcheck.parsers.nvidia_smi_q import SmiQuery
from fabcheck.parsers.pcie_sysfs import TRANSLATED_DOMAIN_TYPES, KernelCmdline

PCIE_LINK = "host.pcie_link"
PCIE_ERRORS = "host.pcie_errors"
PCIE_ACS = "host.pcie_acs"
IOMMU = "host.iommu"

GPU_CLASSES = ("3D controller", "VGA compatible controller")
NVIDIA = "NVIDIA Corporation"
RUN_AS_ROOT = "run the collection as root: without it lspci prints `Capabilities: <access denied>`"
# NVIDIA GPUs lower their link speed with their power state; full width with a lower speed is idle, not
# a fault (an NVIDIA engineer: https://github.com/NVIDIA/open-gpu-kernel-modules/issues/731).
GPU_IDLE_SPEED = "NVIDIA GPUs lower link speed at idle (open-gpu-kernel-modules issue 731)"
LINK_HINT = (
    "the link trained below what both ends can do: reseat the card (and its riser or cable), check the "
    "slot's link speed and bifurcation in the BIOS, then reboot; `lspci -vv -s {bdf}` shows LnkSta again"
)
ACS_HINT = (
    "ACS redirects GPU-NIC peer-to-peer traffic up to the root complex (slow, or NCCL hangs): disable ACS "
    "in the BIOS, or at each boot `setpci -s {bdf} ECAP_ACS+0x6.w=0000` (NVIDIA NCCL troubleshooting: "
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html)"
)


@dataclass(frozen=True)
class Device:
    """A GPU or a rail NIC as the bus checks name it: 'GPU0 (0000:18:00.0)', 'mlx5_0 (0000:1a:00.0)'."""

    name: str
    bdf: str
    gpu: bool

    @property
    def label(self) -> str:
        return f"{self.name} ({self.bdf})"


def nvidia_functions(tree: PcieTree) -> list[str]:
    """The NVIDIA GPUs lspci shows, in BDF order."""
    return sorted(
        bdf
        for bdf, function in tree.functions.items()
        if NVIDIA in function.description and function.description.startswith(GPU_CLASSES)
    )


def gpus(tree: PcieTree, query: SmiQuery | Unreadable | None = None) -> list[Device]:
    """GPU i and its PCI function: nvidia-smi's index and bus id where `nvidia-smi -q` was read, else the
    i-th NVIDIA GPU of lspci in BDF order (nvidia-smi's default order is PCI bus order)."""
    if isinstance(query, SmiQuery) and query.gpus:
        return [Device(f"GPU{gpu.index}", gpu.bus_id, True) for gpu in query.gpus]
    return [Device(f"GPU{index}", bdf, True) for index, bdf in enumerate(nvidia_functions(tree))]


def unlisted_gpus(tree: PcieTree, query: SmiQuery | Unreadable) -> list[str]:
    """NVIDIA GPUs lspci shows that `nvidia-smi -q` does not list (fallen off the bus, driver failed)."""
    if not isinstance(query, SmiQuery):
        return []
    listed = {gpu.bus_id for gpu in query.gpus}
    return [bdf for bdf in nvidia_functions(tree) if bdf not in listed]


def rail_nics(
    check_id: str, evidence: HostEvidence, desired: DesiredHost
) -> tuple[list[Device], list[Finding]]:
    """Each rail NIC with its PCI function (`ethtool -i` bus-info of its netdev); what could not be read
    is an ERROR finding."""
    devices: list[Device] = []
    errors: list[Finding] = []
    for nic in present_nics(evidence, desired):
        if nic.netdev is None:
            actual = f"`rdma link` shows no netdev for {nic.name}: its PCI function is unknown"
            errors.append(errored(check_id, nic.name, "the NIC's PCI function", actual, "check `rdma link`"))
            continue
        bdf = evidence.bus_info(nic.netdev)
        if isinstance(bdf, Unreadable):
            errors.append(unreadable_error(check_id, nic.name, "the NIC's PCI function", bdf))
        else:
            devices.append(Device(nic.name, bdf, False))
    return devices, errors


def _shown(check_id: str, tree: PcieTree, device: Device, expected: str) -> PcieFunction | Finding:
    """The device's lspci record, or the ERROR saying why it cannot be judged."""
    function = tree.functions.get(device.bdf)
    if function is None:
        actual = f"{device.bdf} is not in `lspci -D -vvv`"
        return errored(check_id, device.label, expected, actual, "check that the device is present (`lspci`)")
    if function.access_denied:
        return errored(check_id, device.label, expected, "capabilities: <access denied>", RUN_AS_ROOT)
    return function


# ---- host.pcie_link ------------------------------------------------------------------------------


def _ceiling(function: PcieFunction, upstream: PcieFunction | None) -> PcieLink | None:
    """What the link can train to: the lower of the device's and its upstream port's LnkCap."""
    caps = [f.link_capability for f in (function, upstream) if f is not None and f.link_capability]
    speeds = [cap.speed_gts for cap in caps if cap.speed_gts is not None]
    widths = [cap.width for cap in caps if cap.width is not None]
    if not speeds or not widths:
        return None
    return PcieLink(min(speeds), min(widths))


def judge_link(tree: PcieTree, device: Device) -> Finding:
    shown = _shown(PCIE_LINK, tree, device, "its link at the capability of both ends")
    if isinstance(shown, Finding):
        return shown
    upstream = tree.parent(device.bdf)
    ceiling = _ceiling(shown, upstream)
    status = shown.link_status
    if ceiling is None or status is None:
        expected = "its link at the capability of both ends"
        actual = f"lspci shows no {'LnkCap' if ceiling is None else 'LnkSta'} for {device.bdf}"
        return errored(PCIE_LINK, device.label, expected, actual, RUN_AS_ROOT)
    port = f"{upstream.bdf}'s" if upstream is not None else "no upstream port's"
    expected = f"{ceiling} (the lower of its and {port} LnkCap)"
    if status.speed_gts is None or status.width is None:
        actual = f"LnkSta {status} (lspci could not decode it)"
        return errored(
            PCIE_LINK, device.label, expected, actual, "update pciutils, then read `lspci -vv` again"
        )
    assert ceiling.speed_gts is not None and ceiling.width is not None  # _ceiling returns both or None
    if status.width < ceiling.width:
        return failed(PCIE_LINK, device.label, expected, f"LnkSta {status}", LINK_HINT.format(bdf=device.bdf))
    if status.speed_gts < ceiling.speed_gts:
        if device.gpu:
            return passed(PCIE_LINK, device.label, expected, f"LnkSta {status}: full width; {GPU_IDLE_SPEED}")
        return failed(PCIE_LINK, device.label, expected, f"LnkSta {status}", LINK_HINT.format(bdf=device.bdf))
    return passed(PCIE_LINK, device.label, expected, f"LnkSta {status}")


def check_pcie_link(evidence: HostEvidence, desired: DesiredHost) -> list[Finding]:
    tree = evidence.pcie
    expected = "each GPU and rail NIC link at the capability of both ends"
    if isinstance(tree, Unreadable):
        return [unreadable_error(PCIE_LINK, "host", expected, tree)]
    nics, findings = rail_nics(PCIE_LINK, evidence, desired)
    devices = gpus(tree, evidence.gpu_query) + nics
    for bdf in unlisted_gpus(tree, evidence.gpu_query):
        actual = f"lspci shows NVIDIA GPU {bdf}; `nvidia-smi -q` does not list it"
        hint = "check `dmesg` for Xid 79 (fallen off the bus) and the driver; reseat or reset the GPU"
        findings.append(errored(PCIE_LINK, bdf, "every NVIDIA GPU known to the driver", actual, hint))
    if not devices:
        return [errored(PCIE_LINK, "host", expected, "no NVIDIA GPU and no rail NIC found", "check `lspci`")]
    return findings + [judge_link(tree, device) for device in devices]


# ---- host.pcie_errors ----------------------------------------------------------------------------


def _judged_functions(tree: PcieTree, devices: list[Device]) -> list[Device]:
    """The GPUs, the rail NICs and every bridge above them (errors of an endpoint may be counted at its
    link partner: torvalds/linux:Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats)."""
    judged = {device.bdf: device for device in devices}
    for device in devices:
        for bridge in tree.upstream(device.bdf):
            judged.setdefault(bridge.bdf, Device(bridge.port_type or "bridge", bridge.bdf, False))
    return [judged[bdf] for bdf in sorted(judged)]


def check_pcie_errors(evidence: HostEvidence, desired: DesiredHost) -> list[Finding]:
    limit = desired.pcie.max_correctable_errors
    expected_uncorrectable = "no fatal or non-fatal AER error since boot"
    tree = evidence.pcie
    if isinstance(tree, Unreadable):
        return [unreadable_error(PCIE_ERRORS, "host", expected_uncorrectable, tree)]
    aer = evidence.aer
    if isinstance(aer.since_boot, Unreadable):
        return [unreadable_error(PCIE_ERRORS, "host", expected_uncorrectable, aer.since_boot)]
    if not aer.since_boot:
        reason = "the host shows no AER counters (/sys/bus/pci/devices/*/aer_dev_*: kernel < 4.19 or AER off)"
        return [skipped(PCIE_ERRORS, "host", reason)]
    nics, findings = rail_nics(PCIE_ERRORS, evidence, desired)
    for device in _judged_functions(tree, gpus(tree, evidence.gpu_query) + nics):
        counts = aer.since_boot.get(device.bdf)
        if counts is None:
            findings.append(skipped(PCIE_ERRORS, device.label, f"{device.bdf} has no AER counters"))
            continue
        fatal, nonfatal = counts.total("fatal"), counts.total("nonfatal")
        actual = f"fatal {fatal}, non-fatal {nonfatal} since boot"
        if fatal is None or nonfatal is None:
            hint = "read /sys/bus/pci/devices/BDF/aer_dev_fatal and aer_dev_nonfatal"
            findings.append(errored(PCIE_ERRORS, device.label, expected_uncorrectable, actual, hint))
        elif fatal or nonfatal:
            named = _named(counts.counts.get("fatal", {})) + _named(counts.counts.get("nonfatal", {}))
            hint = (
                f"uncorrectable PCIe errors at {device.bdf}{named}: drain the host, reseat or replace the "
                "device (or its riser/switch), check `dmesg | grep -i aer`; the counters clear at reboot"
            )
            findings.append(failed(PCIE_ERRORS, device.label, expected_uncorrectable, actual, hint))
        else:
            findings.append(passed(PCIE_ERRORS, device.label, expected_uncorrectable, actual))
        if isinstance(aer.before, Mapping):
            findings.append(_correctable(device, aer, limit))
    if aer.before is None:
        reason = "counter window 0: one reading, correctable AER errors not judged"
        findings.append(skipped(PCIE_ERRORS, "correctable", reason))
    elif isinstance(aer.before, Unreadable):
        expected = f"<= {limit} correctable AER errors over the counter window"
        findings.append(unreadable_error(PCIE_ERRORS, "correctable", expected, aer.before))
    return findings


def _named(counts: Mapping[str, int]) -> str:
    nonzero = [f"{name} {count}" for name, count in counts.items() if count]
    return f" ({', '.join(nonzero)})" if nonzero else ""


def _correctable(device: Device, aer: AerWindow, limit: int) -> Finding:
    subject = f"{device.label} correctable"
    expected = f"<= {limit} correctable AER errors over the counter window"
    grown = aer.grown(device.bdf, "correctable")
    if grown is None:
        actual = f"{device.bdf} shows no correctable total in both readings"
        return errored(PCIE_ERRORS, subject, expected, actual, "read its aer_dev_correctable")
    actual = f"{grown} over {aer.window_s} s"
    if grown > limit:
        hint = (
            f"correctable errors keep growing at {device.bdf} (a marginal link: replays cost bandwidth): "
            "reseat the device and its riser or cable, check its LnkSta (host.pcie_link)"
        )
        return failed(PCIE_ERRORS, subject, expected, actual, hint)
    return passed(PCIE_ERRORS, subject, expected, actual)


# ---- host.pcie_acs -------------------------------------------------------------------------------


def check_pcie_acs(evidence: HostEvidence, desired: DesiredHost) -> list[Finding]:
    expected = "no ACS redirect (ReqRedir/CmpltRedir) on a bridge between the GPU and its rail NIC"
    tree = evidence.pcie
    if isinstance(tree, Unreadable):
        return [unreadable_error(PCIE_ACS, "host", expected, tree)]
    if not desired.rails:
        return [skipped(PCIE_ACS, "host", "the intent names no rails: which NIC serves which GPU is unknown")]
    nics, findings = rail_nics(PCIE_ACS, evidence, desired)
    nic_of = {nic.name: nic for nic in nics}
    by_index = {int(gpu.name.removeprefix("GPU")): gpu for gpu in gpus(tree, evidence.gpu_query)}
    for index, nic_name in sorted(desired.rails.items()):
        nic = nic_of.get(nic_name)
        if nic is None:
            continue  # its ERROR is in rail_nics' findings, or host.rdma_device judges a missing NIC
        subject = f"GPU{index} -> {nic_name}"
        if index not in by_index:
            actual = (
                f"{len(by_index)} NVIDIA GPUs shown (nvidia-smi -q, else lspci); GPU{index} is not among them"
            )
            findings.append(errored(PCIE_ACS, subject, expected, actual, "check `lspci` and `nvidia-smi`"))
            continue
        findings.append(_judge_acs(tree, by_index[index], nic, subject, expected))
    return findings


def _judge_acs(tree: PcieTree, gpu: Device, nic: Device, subject: str, expected: str) -> Finding:
    for device in (gpu, nic):
        shown = _shown(PCIE_ACS, tree, device, expected)
        if isinstance(shown, Finding):
            return replace(shown, subject=subject, actual=f"{device.label}: {shown.actual}")
    path = tree.path(gpu.bdf, nic.bdf)
    if not path:
        actual = f"{gpu.bdf} and {nic.bdf} share no PCIe bridge (their traffic crosses the root complex)"
        return passed(PCIE_ACS, subject, expected, actual)
    denied = [bridge.bdf for bridge in path if bridge.access_denied]
    if denied:
        return errored(
            PCIE_ACS, subject, expected, f"bridge {', '.join(denied)}: <access denied>", RUN_AS_ROOT
        )
    redirecting = [bridge for bridge in path if bridge.acs_redirect]
    crossed = " -> ".join(bridge.bdf for bridge in path)
    if redirecting:
        named = "; ".join(
            f"{bridge.bdf} ACSCtl {' '.join(f'{bit}+' for bit in bridge.acs_redirect)}"
            for bridge in redirecting
        )
        return failed(
            PCIE_ACS, subject, expected, f"{named} (path {crossed})", ACS_HINT.format(bdf=redirecting[0].bdf)
        )
    return passed(PCIE_ACS, subject, expected, f"no redirect on {crossed}")


# ---- host.iommu ----------------------------------------------------------------------------------

IOMMU_HINT = (
    "boot the kernel with `iommu=pt` (x86) or `iommu.passthrough=1` (arm64) so the NICs' DMA is not "
    "translated, then reboot; translated DMA without ATS slows or breaks GPUDirect RDMA "
    "(NCCL troubleshooting)"
)


def check_iommu(evidence: HostEvidence, desired: DesiredHost) -> list[Finding]:
    mode = desired.pcie.iommu
    expected = (
        "identity, or a translated domain with ATS enabled on the NIC (ATSCtl Enable+)"
        if mode == "translated_with_ats"
        else "the rail NICs' IOMMU domain identity (passthrough) or no IOMMU translation"
    )
    iommu = evidence.iommu
    words = _cmdline_words(iommu.cmdline)
    tree = evidence.pcie
    findings: list[Finding] = []
    for nic in present_nics(evidence, desired):
        shown = [iommu.group_type.get(link.name) for link in nic.links]
        unreadable = next((value for value in shown if isinstance(value, Unreadable)), None)
        if unreadable is not None:
            findings.append(unreadable_error(IOMMU, nic.name, expected, unreadable))
            continue
        if not shown:
            continue  # a NIC without ports: host.rdma_device judges it
        kinds = sorted({value or "none" for value in shown if not isinstance(value, Unreadable)})
        domain = "/".join(kinds)
        if kinds == ["none"]:
            findings.append(passed(IOMMU, nic.name, expected, f"no IOMMU group: DMA not translated; {words}"))
        elif kinds == ["identity"]:
            findings.append(passed(IOMMU, nic.name, expected, f"IOMMU domain identity; {words}"))
        elif all(kind in TRANSLATED_DOMAIN_TYPES for kind in kinds) and mode == "translated_with_ats":
            findings.append(_translated_with_ats(evidence, desired, tree, nic.name, domain, words, expected))
        else:
            actual = f"IOMMU domain {domain} (translated); {words}"
            findings.append(failed(IOMMU, nic.name, expected, actual, IOMMU_HINT))
    return findings


def _cmdline_words(cmdline: KernelCmdline | Unreadable) -> str:
    if isinstance(cmdline, Unreadable):
        return f"/proc/cmdline unreadable ({cmdline.reason})"
    words = " ".join(cmdline.iommu_words)
    return f"cmdline {words}" if words else "cmdline without iommu words"


def _translated_with_ats(
    evidence: HostEvidence,
    desired: DesiredHost,
    tree: PcieTree | Unreadable,
    nic: str,
    domain: str,
    words: str,
    expected: str,
) -> Finding:
    if isinstance(tree, Unreadable):
        return unreadable_error(IOMMU, nic, expected, tree)
    devices, errors = rail_nics(IOMMU, evidence, desired)
    device = next((d for d in devices if d.name == nic), None)
    if device is None:
        return (
            errors[0]
            if errors
            else errored(IOMMU, nic, expected, "its PCI function is unknown", "check `ethtool -i`")
        )
    shown = _shown(IOMMU, tree, device, expected)
    if isinstance(shown, Finding):
        return shown
    if shown.ats_enabled:
        return passed(
            IOMMU, nic, expected, f"IOMMU domain {domain} with ATS enabled at {device.bdf}; {words}"
        )
    ats = "no ATS capability" if shown.ats_enabled is None else "ATSCtl Enable-"
    hint = (
        "enable ATS on the NIC (`mlxconfig -d DEV set ATS_ENABLED=true`, then a firmware reset or "
        f"reboot) and let the switch ACS pass ATS, or {IOMMU_HINT}"
    )
    return failed(IOMMU, nic, expected, f"IOMMU domain {domain}, {ats} at {device.bdf}; {words}", hint)


def _judge(check: Callable[[HostEvidence, DesiredHost], list[Finding]]) -> Callable[..., list[Finding]]:
    def judge(
        evidence: HostEvidence, desired: DesiredHost, _intent: FabricIntent, _inputs: Inputs
    ) -> list[Finding]:
        return check(evidence, desired)

    return judge


def _iommu_judged(desired: DesiredHost) -> str | None:
    return "fabric_intent.pcie.iommu is any" if desired.pcie.iommu == "any" else None


LINK_READS = (probes.LSPCI, probes.DRIVER, probes.NVIDIA_SMI_Q)
PCIE_LINK_CHECK = host_check(
    PCIE_LINK,
    "gpu",
    LINK_READS,
    "each GPU and rail NIC at min(its LnkCap, its upstream port's LnkCap); narrower fails; a slower NIC "
    "fails, a slower GPU at full width passes (idle power state)",
    None,
    None,
    _judge(check_pcie_link),
    NO_INPUTS,
)
PCIE_ERRORS_CHECK = host_check(
    PCIE_ERRORS,
    "gpu",
    (*LINK_READS, probes.AER),
    "no fatal or non-fatal AER error since boot at a GPU, a rail NIC or a bridge above them; correctable "
    "growth over the counter window <= `pcie.max_correctable_errors` (window 0, no AER files: named skips)",
    None,
    None,
    _judge(check_pcie_errors),
    NO_INPUTS,
)
PCIE_ACS_CHECK = host_check(
    PCIE_ACS,
    "gpu",
    LINK_READS,
    "no bridge between GPU i and its rail NIC with ACS ReqRedir+ or CmpltRedir+",
    None,
    None,
    _judge(check_pcie_acs),
    NO_INPUTS,
)
IOMMU_CHECK = HostCheck(
    IOMMU,
    "host",
    "nic",
    (probes.IOMMU_GROUP, probes.CMDLINE, *LINK_READS),
    "each rail NIC's IOMMU domain identity or none (`pcie.iommu: passthrough`), or translated with ATS "
    "enabled (`translated_with_ats`); `any`: not judged",
    None,
    None,
    _judge(check_iommu),
    applies=_iommu_judged,
)
CHECKS: tuple[HostCheck, ...] = (PCIE_LINK_CHECK, PCIE_ERRORS_CHECK, PCIE_ACS_CHECK, IOMMU_CHECK)
