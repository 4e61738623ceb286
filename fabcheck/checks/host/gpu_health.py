"""host.gpu_health: each GPU on the GPUDirect path healthy, by index and bus id (docs/checks/bus.md).

Read from `nvidia-smi -q` (persistence mode, volatile uncorrectable ECC, row remapping, page
retirement) and the kernel log since boot (Xid events, matched to a GPU by bus id). What the intent
allows is in DesiredHost.gpu_health (persistence_mode, ignored_xids). A GPU fails on any of:
persistence mode off where required, an uncorrectable ECC error since the driver loaded, a row remap
pending or failed, a page retirement pending, an Xid not ignored. An Xid on a bus id nvidia-smi does not
list (a GPU that fell off the bus) fails on its own. The hints follow NVIDIA's Xid catalog and GPU
memory error management guide: a pending repair needs a GPU reset or reboot, a failed one an RMA.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from types import MappingProxyType

from fabcheck.checks.host.evidence import HostEvidence, unreadable_error
from fabcheck.checks.host.judges import HostCheck
from fabcheck.checks.model import Finding, errored, failed, passed
from fabcheck.collect import host as probes
from fabcheck.collect.host import Unreadable
from fabcheck.desired.nic import DesiredHost
from fabcheck.intent.model import FabricIntent, GpuHealth
from fabcheck.parsers.kernel_log import XidEvent
from fabcheck.parsers.nvidia_smi_q import GpuQuery, SmiQuery

GPU_HEALTH = "host.gpu_health"
XID_CATALOG = "https://docs.nvidia.com/deploy/xid-errors/index.html"
MEMORY_ERRORS = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"

# What NVIDIA's Xid catalog names the Xids a fabric gate meets most (the rest: look it up there).
XID_NAMES: Mapping[int, str] = MappingProxyType(
    {
        48: "double bit ECC error",
        64: "row remapping or page retirement recording failure",
        74: "NVLink error",
        79: "GPU has fallen off the bus",
        92: "high single bit ECC error rate",
        95: "uncontained ECC error",
        119: "GSP RPC timeout",
        120: "GSP error",
    }
)
# Xids after which the catalog's resolution is the hardware itself (RMA), not a reset.
HARDWARE_XIDS = frozenset({64})


def reset(index: int) -> str:
    return f"drain the node, then reset the GPU (`nvidia-smi -r -i {index}`) or reboot"


def check_gpu_health(
    query: SmiQuery | Unreadable, events: tuple[XidEvent, ...] | Unreadable, wanted: GpuHealth
) -> list[Finding]:
    expected = _expected(wanted)
    if isinstance(query, Unreadable):
        return [unreadable_error(GPU_HEALTH, "GPUs", expected, query)]
    findings: list[Finding] = []
    xids: tuple[XidEvent, ...] = ()
    if isinstance(events, Unreadable):
        findings.append(unreadable_error(GPU_HEALTH, "kernel log", "its Xid events since boot", events))
    else:
        xids = events
    ignored = frozenset(wanted.ignored_xids)
    for gpu in query.gpus:
        mine = [event for event in xids if event.bus_id == gpu.bus_id]
        findings.append(_judge_gpu(gpu, mine, wanted, ignored, expected))
    listed = {gpu.bus_id for gpu in query.gpus}
    strays = sorted({e.bus_id for e in xids if e.bus_id not in listed and e.xid not in ignored})
    for bus in strays:
        counted = _counted([e for e in xids if e.bus_id == bus and e.xid not in ignored])
        actual = f"{counted} on a GPU `nvidia-smi -q` does not list"
        hint = "the GPU may have fallen off the bus: drain the node, check its seating, power and PCIe link, "
        hint += f"reboot; RMA if it stays gone ({XID_CATALOG})"
        findings.append(failed(GPU_HEALTH, f"PCI {bus}", "a GPU nvidia-smi lists, without Xid", actual, hint))
    return findings


def _judge_gpu(
    gpu: GpuQuery, events: list[XidEvent], wanted: GpuHealth, ignored: frozenset[int], expected: str
) -> Finding:
    subject = f"GPU{gpu.index} {gpu.bus_id}"
    problems: list[str] = []
    hints: list[str] = []
    unknown: list[str] = []
    if wanted.persistence_mode:
        if gpu.persistence_mode is None:
            unknown.append("Persistence Mode")
        elif not gpu.persistence_mode:
            problems.append("persistence mode Disabled")
            hints.append(f"enable it: `nvidia-smi -i {gpu.index} -pm 1` (or run nvidia-persistenced)")
    if gpu.ecc_enabled and not gpu.volatile_uncorrectable:
        unknown.append("volatile uncorrectable ECC counter (ECC is on)")
    if gpu.uncorrectable_total:
        errors = ", ".join(f"{name} {count}" for name, count in gpu.volatile_uncorrectable.items() if count)
        problems.append(f"volatile uncorrectable ECC: {errors}")
        hints.append(f"{reset(gpu.index)}; if it recurs, RMA ({MEMORY_ERRORS})")
    if gpu.remap_failure:
        problems.append("row remapping failure occurred")
        hints.append(f"the GPU's memory cannot be repaired: drain the node and RMA the GPU ({MEMORY_ERRORS})")
    if gpu.remap_pending:
        problems.append("row remap pending")
        hints.append(f"{reset(gpu.index)} to activate the remap ({MEMORY_ERRORS})")
    if gpu.retirement_pending:
        problems.append("page retirement pending")
        hints.append(f"{reset(gpu.index)} to retire the page")
    counted = [event for event in events if event.xid not in ignored]
    if counted:
        problems.append(f"{_counted(counted)} since boot")
        if any(event.xid in HARDWARE_XIDS for event in counted):
            hints.append(f"drain the node and RMA the GPU ({XID_CATALOG})")
        else:
            hints.append(f"{reset(gpu.index)}; the Xid catalog names each one's cause ({XID_CATALOG})")
    if problems:
        return failed(GPU_HEALTH, subject, expected, "; ".join(problems), "; ".join(dict.fromkeys(hints)))
    if unknown:
        actual = f"`nvidia-smi -q` shows no {', '.join(unknown)} for this GPU"
        hint = "run `nvidia-smi -q` as root on a current driver"
        return errored(GPU_HEALTH, subject, expected, actual, hint)
    return passed(GPU_HEALTH, subject, expected, _healthy(gpu, events, ignored))


def _healthy(gpu: GpuQuery, events: list[XidEvent], ignored: frozenset[int]) -> str:
    parts = ["persistence mode Enabled" if gpu.persistence_mode else "persistence mode not required"]
    if gpu.volatile_uncorrectable:
        parts.append("volatile uncorrectable ECC 0")
    else:
        parts.append("no volatile ECC counters (ECC N/A)")
    parts.append("no row remap pending" if gpu.remap_pending is False else "row remapping N/A")
    if gpu.retirement_pending is False:
        parts.append("no page retirement pending")
    skipped = [event for event in events if event.xid in ignored]
    parts.append(f"no Xid since boot ({_counted(skipped)} ignored)" if skipped else "no Xid since boot")
    return "; ".join(parts)


def _counted(events: list[XidEvent]) -> str:
    counts = Counter(event.xid for event in events)
    words = []
    for xid, count in sorted(counts.items()):
        name = XID_NAMES.get(xid)
        words.append(f"Xid {xid}" + (f" ({name})" if name else "") + (f" x{count}" if count > 1 else ""))
    return ", ".join(words)


def _expected(wanted: GpuHealth) -> str:
    persistence = "persistence mode on, " if wanted.persistence_mode else ""
    return (
        f"{persistence}no volatile uncorrectable ECC, no pending or failed row remap, no pending page "
        f"retirement, no Xid since boot but {sorted(wanted.ignored_xids)}"
    )


def _judge(
    evidence: HostEvidence, desired: DesiredHost, _intent: FabricIntent, _inputs: object
) -> list[Finding]:
    return check_gpu_health(evidence.gpu_query, evidence.xid_events, desired.gpu_health)


GPU_HEALTH_CHECK = HostCheck(
    GPU_HEALTH,
    "host",
    "gpu",
    (probes.NVIDIA_SMI_Q, probes.KERNEL_LOG),
    "every GPU: persistence mode on, no volatile uncorrectable ECC, no pending/failed row remap or page "
    "retirement, no Xid since boot outside `gpu_health.ignored_xids`",
    None,
    None,
    _judge,
)
