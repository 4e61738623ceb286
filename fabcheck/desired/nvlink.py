"""What each GPU host's NVLink domain must show, derived once per run from the intent's `nvlink` and the
inventory's domains (fabcheck.intent.nvlink): its GPUs and links, IMEX and fabric manager, and the peers
it must reach over NVLink rather than the network (docs/checks/nvlink.md)."""

from __future__ import annotations

from dataclasses import dataclass

PAIR_NVLINK = "nvlink"  # both ranks in one NVLink domain: NCCL must use P2P (MNNVL across trays) or NVLS
PAIR_NETWORK = "network"  # different domains: NCCL must use NET over IB/RoCE (GDRDMA where required)


@dataclass(frozen=True)
class DesiredNvlinkHost:
    host: str
    domain: str  # the inventory group under nvlink_domains, or the host's own name (a lone server)
    members: tuple[str, ...]  # every host of the domain, this one included, inventory order
    addresses: tuple[str, ...]  # the IMEX node list of the domain (nodes_config.cfg), member order
    gpus: int | None  # NVLink GPUs per host; None: NVLink not judged on this host
    links_per_gpu: int
    link_gbytes: float | None  # None: any rate, as long as every link of the host shows the same one
    imex: bool
    fabric_manager: bool
    busbw_min_fraction: float

    @property
    def multi_node(self) -> bool:
        """A domain of several hosts (MNNVL trays): the GPUs' ClusterUUID/CliqueId rule applies."""
        return len(self.members) > 1

    @property
    def gpu_gbytes(self) -> float | None:
        """One GPU's NVLink bandwidth, links x per-link rate (the NVLink floor's base)."""
        return None if self.link_gbytes is None else self.links_per_gpu * self.link_gbytes

    def pair_class(self, peer: str) -> str:
        """How this host must reach `peer`: PAIR_NVLINK inside the domain (itself included), else
        PAIR_NETWORK."""
        return PAIR_NVLINK if peer == self.host or peer in self.members else PAIR_NETWORK
