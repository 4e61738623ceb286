"""Host checks of GPUDirect RDMA: the nvidia_peermem module loaded, and each GPU's rail NIC close to it
on PCIe (`nvidia-smi topo -m`)."""

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
from fabcheck.parsers.topo import TopoMatrix

PEERMEM = "host.nvidia_peermem"
AFFINITY = TOPO_CHECK

PEERMEM_MODULE = "nvidia_peermem"


def check_peermem(modules: frozenset[str] | Unreadable) -> list[Finding]:
    expected = f"{PEERMEM_MODULE} loaded (GPUDirect RDMA)"
    if isinstance(modules, Unreadable):
        return [unreadable_error(PEERMEM, "host", expected, modules)]
    if PEERMEM_MODULE in modules:
        return [passed(PEERMEM, "host", expected, "loaded")]
    return [
        failed(
            PEERMEM, "host", expected, "not loaded (lsmod)", PEERMEM_CHECK.fix(f"modprobe {PEERMEM_MODULE}")
        )
    ]


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
    return None if desired.nvidia_peermem else "fabric_intent.nccl.gdr_required is false"


PEERMEM_CHECK = HostCheck(
    PEERMEM,
    "host",
    "host",
    (probes.LSMOD,),
    "`nvidia_peermem` loaded when `nccl.gdr_required`",
    GPU_RDMA_ROLE,
    None,
    lambda evidence, _desired, _intent, _inputs: check_peermem(evidence.modules),
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
