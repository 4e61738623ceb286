"""GPU-NIC affinity from `nvidia-smi topo -m`: every GPU must reach its rail NIC within the allowed class."""

from __future__ import annotations

from fabcheck.checks.evidence import not_judged
from fabcheck.checks.model import Finding, errored, failed, passed
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.topo import TopoMatrix, link_rank

CHECK = "topo.gpu_nic_affinity"
_PLACEMENT_HINT = (
    "GPU-NIC placement is physical: NCCL traffic for this GPU crosses {link} to reach the NIC. Put the NIC "
    "under the GPU's PCIe switch, or correct fabric_intent.rails / fabric_rails if the map is wrong; a "
    "server whose PCIe layout has nothing closer states its class in host var fabric_max_gpu_nic_link"
)


def check_topo(matrix: TopoMatrix, intent: FabricIntent) -> list[Finding]:
    if not matrix.gpus:
        return [errored(CHECK, "topology", "at least one GPU", "no GPU rows", "is this a GPU host?")]
    if intent.rails:
        return [_check_rail(matrix, intent, index, nic) for index, nic in sorted(intent.rails.items())]
    return [_check_nearest(matrix, intent, gpu) for gpu in matrix.gpus]


def _check_rail(matrix: TopoMatrix, intent: FabricIntent, index: int, nic: str) -> Finding:
    gpu = f"GPU{index}"
    expected = f"{gpu} -> {nic} at {intent.max_gpu_nic_link} or better"
    if gpu not in matrix.gpus:
        return failed(
            CHECK,
            gpu,
            expected,
            f"{gpu} not in topology ({len(matrix.gpus)} GPUs)",
            "a GPU is missing (nvidia-smi -L); or fabric_intent.rails names more GPUs than the host has",
        )
    if nic not in matrix.nics:
        if matrix.nics and all(n.startswith("NIC") for n in matrix.nics):
            return not_judged(
                CHECK,
                gpu,
                expected,
                "topology prints NICn labels without a NIC Legend",
                "capture `nvidia-smi topo -m` with a driver that prints the NIC Legend",
            )
        return failed(
            CHECK,
            gpu,
            expected,
            f"{nic} not in topology (NICs: {', '.join(matrix.nics) or 'none'})",
            "the rail NIC is missing: check `ibv_devinfo` and the driver, or fix fabric_intent.rails",
        )
    link = matrix.link(gpu, nic)
    actual = f"{gpu} -> {nic} {link}"
    if link_rank(link) > link_rank(intent.max_gpu_nic_link):
        return failed(CHECK, gpu, expected, actual, _PLACEMENT_HINT.format(link=link))
    return passed(CHECK, gpu, expected, actual)


def _check_nearest(matrix: TopoMatrix, intent: FabricIntent, gpu: str) -> Finding:
    expected = f"nearest NIC at {intent.max_gpu_nic_link} or better"
    nics, link = matrix.nearest_nics(gpu)
    if not nics or link is None:
        return failed(
            CHECK,
            gpu,
            expected,
            "no NIC in topology",
            "no RDMA NIC is visible to this GPU: check the NIC driver (ibv_devinfo) and PCIe",
        )
    actual = f"{gpu} -> {', '.join(nics)} {link}"
    if link_rank(link) > link_rank(intent.max_gpu_nic_link):
        return failed(CHECK, gpu, expected, actual, _PLACEMENT_HINT.format(link=link))
    return passed(CHECK, gpu, expected, actual)
