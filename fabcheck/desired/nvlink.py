"""What each GPU host's NVLink domain must show, derived once per run from the intent's `nvlink` and the
inventory's domains (fabcheck.intent.nvlink): its GPUs and links, IMEX and fabric manager, and the peers
it must reach over NVLink rather than the network (docs/checks/nvlink.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fabcheck.errors import IntentError
from fabcheck.intent.model import NvlinkIntent
from fabcheck.intent.nvlink import NvlinkPlan

PAIR_NVLINK = "nvlink"  # both ranks in one NVLink domain: NCCL must use P2P (MNNVL across trays) or NVLS
PAIR_NETWORK = "network"  # different domains: NCCL must use NET over IB/RoCE (GDRDMA where required)
# Two GPUs of one host the intent gives no NVLink (a PCIe server, nvlink.gpus null): P2P over PCIe, SHM
# or NET are all NCCL's to choose; only TCP is wrong.
PAIR_HOST = "host"


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
        PAIR_NETWORK; PAIR_HOST for itself when the intent gives its GPUs no NVLink."""
        if peer == self.host and self.gpus is None:
            return PAIR_HOST
        return PAIR_NVLINK if peer == self.host or peer in self.members else PAIR_NETWORK

    def to_json(self) -> dict[str, Any]:
        """The record as the nvlink role reads it (filter fabcheck_nvlink_host): the IMEX node list is
        `addresses`, one a line."""
        return {
            "host": self.host,
            "domain": self.domain,
            "members": list(self.members),
            "addresses": list(self.addresses),
            "gpus": self.gpus,
            "links_per_gpu": self.links_per_gpu,
            "link_gbytes": self.link_gbytes,
            "imex": self.imex,
            "fabric_manager": self.fabric_manager,
            "busbw_min_fraction": self.busbw_min_fraction,
        }


def desired_nvlink_host(intent: NvlinkIntent, plan: NvlinkPlan, host: str) -> DesiredNvlinkHost:
    """Pure: what `host` must show, from the fleet's nvlink intent and the inventory's domains. A host in
    no domain is one of its own (an HGX server): no peer over NVLink, no IMEX node list."""
    domain = plan.domain_of(host)
    return DesiredNvlinkHost(
        host=host,
        domain=domain.name,
        members=domain.hosts,
        addresses=domain.addresses,
        gpus=intent.gpus,
        links_per_gpu=intent.links_per_gpu,
        link_gbytes=intent.link_gbytes,
        imex=intent.imex,
        fabric_manager=intent.fabric_manager,
        busbw_min_fraction=intent.busbw_min_fraction,
    )


def desired_nvlink(
    intents: Mapping[str, NvlinkIntent], plan: NvlinkPlan, hosts: Iterable[str]
) -> dict[str, DesiredNvlinkHost]:
    """Pure: each of `hosts`' desired NVLink state. `intents` holds every GPU host's nvlink intent (the
    whole inventory, so a domain is judged whole even when --limit plans part of it); one domain has
    one intent: two members that differ are an IntentError naming both."""
    problems = []
    for domain in plan.domains:
        known = [name for name in domain.hosts if name in intents]
        for name in known[1:]:
            if intents[name] != intents[known[0]]:
                problems.append(
                    f"NVLink domain {domain.name}: {known[0]} and {name} resolve different "
                    f"fabric_intent.nvlink ({intents[known[0]]!r} and {intents[name]!r}); "
                    "one domain has one intent"
                )
    if problems:
        raise IntentError(problems)
    return {host: desired_nvlink_host(intents[host], plan, host) for host in hosts if host in intents}
