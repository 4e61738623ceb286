"""What the NCCL proof expects, derived from the intent once: per host (rails, networks, GDR, GID index,
traffic class) and per job (the environment the ranks get, the sizes run, the bus-bandwidth floor)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fabcheck.desired.nvlink import DesiredNvlinkHost
from fabcheck.errors import FabcheckError
from fabcheck.intent.model import GPU_NIC_LINK_CLASSES, FabricIntent

# NCCL_DEBUG=INFO with the INIT and NET subsystems prints what the proof reads: the network chosen, the
# HCA list, each channel's transport and GDR, and the variables set by environment.
DEBUG_ENV = (("NCCL_DEBUG", "INFO"), ("NCCL_DEBUG_SUBSYS", "INIT,NET"))
# NCCL uses GPUDirect RDMA only up to NCCL_NET_GDR_LEVEL (default PXB). A host whose intent allows a
# farther GPU-NIC class (a PCIe server: NODE) gets the level that covers it, else NCCL stages through
# host memory and the GDR check fails a host the intent calls healthy. nvidia-smi's NODE (across host
# bridges within one NUMA node) is NCCL's PHB ("same NUMA node, through the CPU"); SYS stays SYS.
_GDR_LEVEL_FOR_CLASS = {"PHB": "PHB", "NODE": "PHB", "SYS": "SYS"}
PROGRAM = "all_reduce_perf"  # the intent's busbw floor is defined on all_reduce
START_BYTES = 8 << 20


def physical_limit_gbytes(nics_per_node: int, speed_gbps: float) -> float:
    """What the NICs of one node carry together at line rate, in GB/s (nccl-tests units): NICs x Gb/s / 8.
    Every BusBW floor and efficiency is measured against this."""
    return nics_per_node * speed_gbps / 8


def node_nics(intent: FabricIntent) -> int:
    """The fabric NICs one node drives: performance.nics_per_node when set, else the distinct rail NICs of
    the host's fabric_rails (8 GPUs on 2 NICs is 2), else 8."""
    return intent.performance.nics_per_node or len(set(intent.rails.values())) or 8


def busbw_floor(intent: FabricIntent) -> tuple[float, str]:
    """The intent's all_reduce BusBW floor in GB/s, and how it was computed (for a finding's expected)."""
    perf = intent.performance
    nics, speed = node_nics(intent), intent.link.speed_gbps
    basis = f"{perf.nccl_busbw_min_fraction:.0%} of {nics} NICs x {speed:g} Gb/s"
    return perf.nccl_busbw_min_fraction * physical_limit_gbytes(nics, speed), basis


@dataclass(frozen=True)
class NodeLimit:
    """What one node of a job carries into the fabric at line rate."""

    host: str
    nics: int
    speed_gbps: float

    @property
    def gbytes(self) -> float:
        return physical_limit_gbytes(self.nics, self.speed_gbps)


def job_busbw_floor(intents: Sequence[tuple[str, FabricIntent]]) -> tuple[float, str, str]:
    """(floor GB/s, basis, bounding host) of one job: a ring or tree all_reduce runs at the pace of its
    slowest node, so the floor is the fraction of the smallest per-node aggregate among the job's hosts
    (ties: the first host in job order)."""
    limits = [NodeLimit(host, node_nics(intent), intent.link.speed_gbps) for host, intent in intents]
    slowest = min(limits, key=lambda limit: limit.gbytes)
    fraction = intents[0][1].performance.nccl_busbw_min_fraction
    basis = f"{fraction:.0%} of {slowest.nics} NICs x {slowest.speed_gbps:g} Gb/s"
    if len({limit.gbytes for limit in limits}) > 1:
        basis += f" on {slowest.host}, the job's slowest node"
    return fraction * slowest.gbytes, basis, slowest.host


PROOF_FABRIC = "fabric"  # the job crossed the network: its busbw proves the NICs and switches
PROOF_NVLINK = "nvlink"  # every host in one NVLink domain: its busbw proves NVLink only


@dataclass(frozen=True)
class JobFloor:
    """A job's all_reduce floor across its NVLink domains (fabcheck.desired.collectives' ring rule)."""

    gbytes: float | None  # None: one NVLink domain whose intent gives no per-link rate
    basis: str
    bounding: str  # the host, or the domain, whose links set the floor
    proof: str  # PROOF_FABRIC or PROOF_NVLINK


def domain_job_floor(
    intents: Sequence[tuple[str, FabricIntent]], nvlink: Mapping[str, DesiredNvlinkHost]
) -> JobFloor:
    """A ring all_reduce over NVLink domains sends, from each domain, one rank's busbw-counted bytes
    through all the domain's NICs: busbw <= the slowest domain's NIC sum (README "busbw floors per
    collective"). Every host its own domain: the slowest node's NICs (job_busbw_floor). All hosts in one
    domain: nothing crosses the network, the floor is NVLink's (nvlink.busbw_min_fraction x links x
    GB/s), and the run is an NVLink proof. Across domains, NVLink slower than the network bounds it."""
    domain_of = {host: nvlink[host].domain if host in nvlink else host for host, _ in intents}
    members: dict[str, list[tuple[str, FabricIntent]]] = {}
    for host, intent in intents:
        members.setdefault(domain_of[host], []).append((host, intent))
    nvlink_floor = _nvlink_floor([nvlink[host] for host, _ in intents if host in nvlink])
    if len(members) == 1:
        domain = next(iter(members))
        if nvlink_floor is None:
            return JobFloor(None, f"NVLink domain {domain}: no nvlink.link_gbytes", domain, PROOF_NVLINK)
        return JobFloor(nvlink_floor[0], nvlink_floor[1], domain, PROOF_NVLINK)
    if all(len(hosts) == 1 for hosts in members.values()):
        floor, basis, bounding = job_busbw_floor(intents)
    else:
        fraction = intents[0][1].performance.nccl_busbw_min_fraction
        sums = {
            domain: sum(physical_limit_gbytes(node_nics(i), i.link.speed_gbps) for _, i in hosts)
            for domain, hosts in members.items()
        }
        bounding = min(sums, key=lambda domain: sums[domain])
        hosts = members[bounding]
        floor = fraction * sums[bounding]
        basis = (
            f"{fraction:.0%} of NVLink domain {bounding}'s NIC sum ({len(hosts)} hosts: "
            + ", ".join(f"{host} {node_nics(i)} NICs x {i.link.speed_gbps:g} Gb/s" for host, i in hosts)
            + ")"
        )
    nvlink_bound = _nvlink_bound([nvlink[host] for host, _ in intents if host in nvlink])
    fraction = intents[0][1].performance.nccl_busbw_min_fraction
    if nvlink_floor is not None and nvlink_bound is not None and nvlink_bound < floor / fraction:
        # The slower link is the bottleneck: bounds compared, not their fractions.
        return JobFloor(nvlink_floor[0], nvlink_floor[1], bounding, PROOF_FABRIC)
    return JobFloor(floor, basis, bounding, PROOF_FABRIC)


def _nvlink_bound(hosts: Sequence[DesiredNvlinkHost]) -> float | None:
    """The slowest GPU's NVLink bandwidth among hosts whose intent gives it (None: none does)."""
    rates = [h.gpu_gbytes for h in hosts if h.gpus is not None and h.gpu_gbytes is not None]
    return min(rates) if rates else None


def _nvlink_floor(hosts: Sequence[DesiredNvlinkHost]) -> tuple[float, str] | None:
    """The lowest NVLink floor among hosts whose intent gives the links' rate (None: none does)."""
    floors = [
        (h.busbw_min_fraction * h.gpu_gbytes, h)
        for h in hosts
        if h.gpus is not None and h.gpu_gbytes is not None
    ]
    if not floors:
        return None
    gbytes, host = min(floors, key=lambda pair: pair[0])
    return gbytes, (
        f"NVLink: {host.busbw_min_fraction:.0%} of {host.links_per_gpu} links x {host.link_gbytes:g} GB/s "
        "per GPU"
    )


@dataclass(frozen=True)
class DesiredNcclHost:
    host: str
    kind: str  # roce or ib
    rail_pairs: tuple[tuple[int, str], ...]  # GPU index -> its rail NIC (empty: take topo's nearest)
    allowed_networks: tuple[str, ...]  # network names (or prefixes) that count as the RDMA path
    gdr_required: bool
    gid_index: int | None  # RoCE only: InfiniBand ports are addressed by LID, NCCL needs no GID index
    traffic_class: int | None

    @property
    def rails(self) -> dict[int, str]:
        return dict(self.rail_pairs)


def desired_nccl_host(intent: FabricIntent, host: str) -> DesiredNcclHost:
    nccl = intent.nccl
    return DesiredNcclHost(
        host=host,
        kind=intent.kind,
        rail_pairs=tuple(sorted(intent.rails.items())),
        allowed_networks=tuple(nccl.allowed_networks),
        gdr_required=nccl.gdr_required,
        gid_index=nccl.gid_index if intent.kind == "roce" else None,
        traffic_class=nccl.traffic_class,
    )


@dataclass(frozen=True)
class DesiredNcclJob:
    env_pairs: tuple[tuple[str, str], ...]  # what every rank gets (the user's NCCL_* may override)
    args: tuple[str, ...]  # all_reduce_perf arguments: one GPU per rank, up to min_bytes
    min_bytes: int
    busbw_floor_gbytes: float
    floor_basis: str  # how the floor was computed, for the finding's "expected"
    bounding_host: str = ""  # the node (or NVLink domain) whose links set the floor (the slowest one)
    proof: str = PROOF_FABRIC  # PROOF_NVLINK: every host in one NVLink domain, nothing crossed the network
    floor_known: bool = True  # False: one NVLink domain without a per-link rate, so busbw is not judged

    @property
    def env(self) -> dict[str, str]:
        return dict(self.env_pairs)


def desired_nccl_job(
    intents: Sequence[tuple[str, FabricIntent]], nvlink: Mapping[str, DesiredNvlinkHost] | None = None
) -> DesiredNcclJob:
    """One job over these hosts. Values the launcher passes to every rank alike (GID index, traffic
    class) and the floor must agree between the hosts: a disagreement names both hosts. `nvlink` (the
    plan's GateDesired.nvlink) places the hosts in NVLink domains; without it each is its own."""
    if not intents:
        raise FabcheckError("an NCCL job needs at least one host")
    first_host, first = intents[0]
    for host, intent in intents[1:]:
        for key, mine, theirs in _job_keys(first, intent):
            if mine != theirs:
                raise FabcheckError(
                    f"fabric_intent {key} is {mine} on {first_host} but {theirs} on {host}: one NCCL job "
                    "passes one value to every rank"
                )
    perf = first.performance
    floor = domain_job_floor(intents, nvlink or {})
    env = list(DEBUG_ENV)
    desired = desired_nccl_host(first, first_host)
    if desired.gid_index is not None:
        env.append(("NCCL_IB_GID_INDEX", str(desired.gid_index)))
    if desired.traffic_class is not None:
        env.append(("NCCL_IB_TC", str(desired.traffic_class)))
    farthest = max((intent.max_gpu_nic_link for _, intent in intents), key=GPU_NIC_LINK_CLASSES.index)
    if desired.gdr_required and farthest in _GDR_LEVEL_FOR_CLASS:
        env.append(("NCCL_NET_GDR_LEVEL", _GDR_LEVEL_FOR_CLASS[farthest]))
    return DesiredNcclJob(
        env_pairs=tuple(env),
        args=(
            "-b",
            str(min(START_BYTES, perf.nccl_min_bytes)),
            "-e",
            str(perf.nccl_min_bytes),
            "-f",
            "2",
            "-g",
            "1",
        ),
        min_bytes=perf.nccl_min_bytes,
        busbw_floor_gbytes=floor.gbytes or 0.0,
        floor_basis=floor.basis,
        bounding_host=floor.bounding,
        proof=floor.proof,
        floor_known=floor.gbytes is not None,
    )


def _job_keys(a: FabricIntent, b: FabricIntent) -> list[tuple[str, object, object]]:
    return [
        ("kind", a.kind, b.kind),
        ("nccl.gid_index", a.nccl.gid_index, b.nccl.gid_index),
        ("nccl.traffic_class", a.nccl.traffic_class, b.nccl.traffic_class),
        ("performance.nccl_min_bytes", a.performance.nccl_min_bytes, b.performance.nccl_min_bytes),
        (
            "performance.nccl_busbw_min_fraction",
            a.performance.nccl_busbw_min_fraction,
            b.performance.nccl_busbw_min_fraction,
        ),
    ]  # NIC count and link speed may differ per host: the floor follows the slowest (job_busbw_floor)
