"""What the NVLink probes show, as typed records (docs/checks/nvlink.md): each GPU's fabric registration
(`nvidia-smi -q`, section "Fabric"), each GPU's NVLinks (`nvidia-smi nvlink -s`) and the IMEX domain as
one tray's daemon sees it (`nvidia-imex-ctl -N`). Parsers build them; checks judge them. Pure data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

ZERO_UUID = "00000000-0000-0000-0000-000000000000"  # no multi-node NVLink information (nccl src/mnnvl.cc)


@dataclass(frozen=True)
class GpuFabric:
    """One GPU's "Fabric" section of `nvidia-smi -q`. None: N/A or not shown. Values as printed."""

    state: str | None = None  # Completed, In Progress, Not Started, Not Supported
    status: str | None = None  # Success, or NVML's error text (valid only when state is Completed)
    clique_id: int | None = None
    cluster_uuid: str | None = None  # lower case; ZERO_UUID kept as printed
    health_summary: str | None = None  # Health > Summary: Healthy, Unhealthy
    bandwidth: str | None = None  # Health > Bandwidth: Full, or a degraded value

    @property
    def domain_key(self) -> str | None:
        """`ClusterUUID.CliqueId`, the NVLink partition this GPU registered in (the GPU Operator's
        nvidia.com/gpu.clique label); None without a non-zero UUID and a clique id."""
        if self.cluster_uuid in (None, ZERO_UUID) or self.clique_id is None:
            return None
        return f"{self.cluster_uuid}.{self.clique_id}"


@dataclass(frozen=True)
class NvlinkLinkState:
    """One NVLink of one GPU: its per-link rate in GB/s, or None when nvidia-smi prints <inactive>."""

    link: int
    gbytes: float | None

    @property
    def active(self) -> bool:
        return self.gbytes is not None


@dataclass(frozen=True)
class NvlinkGpu:
    """One GPU block of `nvidia-smi nvlink -s`: `GPU i: <name> (UUID: ...)` and its link lines."""

    index: int
    name: str | None
    uuid: str | None
    links: tuple[NvlinkLinkState, ...]
    note: str | None = None  # a line the GPU printed instead of links (e.g. NVML cannot read them)


@dataclass(frozen=True)
class NvlinkStatus:
    gpus: tuple[NvlinkGpu, ...]


@dataclass(frozen=True)
class ImexNode:
    """One row of `nvidia-imex-ctl -N`'s node table: `Node #i - <address> - <STATE>`."""

    index: int
    address: str
    state: str  # READY, or what the daemon says of it


@dataclass(frozen=True)
class ImexStatus:
    """The IMEX domain as the local daemon sees it: its nodes, the connection matrix (from, to) -> the
    legend letter (C connected, N never connected, D disconnected, R recovering, A authenticating,
    I invalid) and the `Domain State` line (UP when every node is connected)."""

    nodes: tuple[ImexNode, ...]
    connections: Mapping[tuple[int, int], str] = field(default_factory=lambda: MappingProxyType({}))
    domain_state: str | None = None
