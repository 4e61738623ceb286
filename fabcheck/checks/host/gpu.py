"""Host checks of GPUDirect RDMA: a mechanism that maps GPU memory for the NIC (dma-buf or the
nvidia_peermem module, as `nccl.gdr_mechanism` allows), and each GPU's rail NIC close to it on PCIe
(`nvidia-smi topo -m`).

dma-buf needs Linux >= 5.12 and NVIDIA's open GPU kernel module; nvidia_peermem works with either
flavour but must be loaded:
NVIDIA/cloud-native-docs:gpu-operator/gpu-operator-rdma.rst@52dcb7b8d956784344e241df476de17094a4574c.
NCCL finds peermem by /sys/module/nvidia_peermem and probes dma-buf per NIC:
NVIDIA/nccl:src/transport/net_ib/gdr.cc@5067397c2676d5aed50042fc39e5c8ee96eb0027."""

from __future__ import annotations

from fabcheck.checks.host.evidence import unreadable_error
from fabcheck.checks.host.judges import HostCheck
from fabcheck.checks.model import Finding, failed, passed
from fabcheck.checks.roles import GPU_RDMA_ROLE
from fabcheck.checks.topo import CHECK as TOPO_CHECK
from fabcheck.checks.topo import check_topo
from fabcheck.collect import host as probes
from fabcheck.collect.host import Unreadable
from fabcheck.desired.nic import DesiredHost
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.gpudirect import DMABUF_MIN_KERNEL, KernelRelease, NvidiaModule
from fabcheck.parsers.topo import TopoMatrix

GPUDIRECT = "host.gpudirect"
AFFINITY = TOPO_CHECK

PEERMEM_MODULE = "nvidia_peermem"
_KERNEL = ".".join(str(part) for part in DMABUF_MIN_KERNEL)
DMABUF_NEEDS = f"dma-buf (kernel >= {_KERNEL} and the open GPU kernel module)"
EXPECTED = {
    "any": f"{DMABUF_NEEDS} or {PEERMEM_MODULE} loaded",
    "dmabuf": DMABUF_NEEDS,
    "peermem": f"{PEERMEM_MODULE} loaded",
}
DMABUF_FIX = (
    f"install NVIDIA's open GPU kernel module (the driver's kernel-open flavour) on a kernel >= {_KERNEL}, "
    f"or allow `nccl.gdr_mechanism: peermem`/`any` and load {PEERMEM_MODULE} (role {GPU_RDMA_ROLE})"
)


def dmabuf_missing(nvidia: NvidiaModule, kernel: KernelRelease) -> list[str]:
    """What keeps this host from dma-buf GPUDirect, in words; empty when it can use it."""
    missing = []
    if not kernel.can_dmabuf:
        missing.append(f"kernel {kernel.text} (< {_KERNEL})")
    if not nvidia.is_open:
        missing.append(nvidia.flavour)
    return missing


def check_gpudirect(
    modules: frozenset[str] | Unreadable,
    nvidia: NvidiaModule | Unreadable,
    kernel: KernelRelease | Unreadable,
    mechanism: str,
) -> list[Finding]:
    """One finding for the host: the mechanism the intent allows is usable, and which one it is."""
    expected = EXPECTED[mechanism]
    if mechanism != "dmabuf":
        if isinstance(modules, Unreadable):
            if mechanism == "peermem":
                return [unreadable_error(GPUDIRECT, "host", expected, modules)]
        elif PEERMEM_MODULE in modules:
            return [passed(GPUDIRECT, "host", expected, f"{PEERMEM_MODULE} loaded")]
        elif mechanism == "peermem":
            hint = GPUDIRECT_CHECK.fix(f"modprobe {PEERMEM_MODULE}")
            return [failed(GPUDIRECT, "host", expected, f"{PEERMEM_MODULE} not loaded (lsmod)", hint)]
    for record in (nvidia, kernel):
        if isinstance(record, Unreadable):
            return [unreadable_error(GPUDIRECT, "host", expected, record)]
    assert isinstance(nvidia, NvidiaModule) and isinstance(kernel, KernelRelease)
    missing = dmabuf_missing(nvidia, kernel)
    if not missing:
        return [passed(GPUDIRECT, "host", expected, f"dma-buf: kernel {kernel.text}, {nvidia.flavour}")]
    if mechanism == "dmabuf":
        return [failed(GPUDIRECT, "host", expected, "no dma-buf: " + "; ".join(missing), DMABUF_FIX)]
    if isinstance(modules, Unreadable):  # any: no dma-buf, and whether peermem is loaded is unknown
        return [unreadable_error(GPUDIRECT, "host", expected, modules)]
    actual = f"{PEERMEM_MODULE} not loaded (lsmod) and no dma-buf: " + "; ".join(missing)
    hint = GPUDIRECT_CHECK.fix(f"modprobe {PEERMEM_MODULE}")
    return [failed(GPUDIRECT, "host", expected, actual, hint)]


def check_affinity(topo: TopoMatrix | Unreadable, intent: FabricIntent) -> list[Finding]:
    """The GPU-NIC link class comes from the intent (max_gpu_nic_link), which no desired record holds."""
    if isinstance(topo, Unreadable):
        expected = f"GPU-NIC links at {intent.max_gpu_nic_link} or better"
        return [unreadable_error(AFFINITY, "topology", expected, topo)]
    if topo.gpus and not topo.nics:
        # No NIC column at all is a definite finding: NCCL on this host sees no RDMA NIC either.
        return [_no_nic_in_topology(gpu, intent) for gpu in _judged_gpus(topo, intent)]
    return check_topo(topo, intent)


def _judged_gpus(topo: TopoMatrix, intent: FabricIntent) -> list[tuple[str, str | None]]:
    if intent.rails:
        return [(f"GPU{index}", nic) for index, nic in sorted(intent.rails.items())]
    return [(gpu, None) for gpu in topo.gpus]


def _no_nic_in_topology(gpu_nic: tuple[str, str | None], intent: FabricIntent) -> Finding:
    gpu, nic = gpu_nic
    target = nic or "nearest NIC"
    return failed(
        AFFINITY,
        gpu,
        f"{gpu} -> {target} at {intent.max_gpu_nic_link} or better",
        "no NIC in topology (`nvidia-smi topo -m` shows no NIC column)",
        f"no RDMA NIC is visible: load the NIC driver (role {GPU_RDMA_ROLE}; on this host: "
        "`modprobe mlx5_ib`) and check `ibv_devinfo`",
    )


def _requires_gdr(desired: DesiredHost) -> str | None:
    return None if desired.gdr_required else "fabric_intent.nccl.gdr_required is false"


GPUDIRECT_CHECK = HostCheck(
    GPUDIRECT,
    "host",
    "host",
    (probes.LSMOD, probes.NVIDIA_LICENSE, probes.KERNEL_RELEASE),
    "GPUDirect RDMA by dma-buf (kernel >= 5.12, open GPU kernel module) or `nvidia_peermem` loaded, "
    "as `nccl.gdr_mechanism` allows, when `nccl.gdr_required`",
    GPU_RDMA_ROLE,
    None,
    lambda evidence, desired, _intent, _inputs: check_gpudirect(
        evidence.modules, evidence.nvidia_module, evidence.kernel_release, desired.gdr_mechanism
    ),
    applies=_requires_gdr,
)
AFFINITY_CHECK = HostCheck(
    AFFINITY,
    "host",
    "gpu",
    (probes.TOPO,),
    "each GPU's rail NIC at `max_gpu_nic_link` or better",
    GPU_RDMA_ROLE,
    None,
    lambda evidence, _desired, intent, _inputs: check_affinity(evidence.topo, intent),
)
