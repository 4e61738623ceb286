"""The busbw floor of every nccl-tests op for a rank layout: which link bounds it (the network or NVLink)
and how fast that link must carry the op's bytes (README "busbw floors per collective").

nccl-tests reports busbw = algbw x a factor of the rank count n, chosen so that busbw is the speed of the
hardware bottleneck whatever n (NVIDIA/nccl-tests:doc/PERFORMANCE.md and src/<op>.cu *GetBw at
a0b82b2260cf5152b9f8c061bbf7eaf0ba096432): all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall
(n-1)/n; sendrecv, broadcast, reduce 1; hypercube 1 over algbw = count x (n-1) / time. What crosses the
network depends on the op and on where the ranks are: n ranks, G per host, M per NVLink domain (block
placement, the order the '# Rank' lines print):

- ring all_reduce / all_gather / reduce_scatter: every ring enters and leaves each domain once, so a domain
  sends one rank's busbw-counted bytes through all its NICs: busbw <= the domain's NIC sum.
- alltoall: each rank sends S/n to each peer, n - M of them outside its domain: S(n-M)/n of the S(n-1)/n
  busbw counts, so busbw <= the rank's NIC share x (n-1)/(n-M).
- a GPU sends through its own NIC: a host counts min(NICs, ranks on it) NICs, and a rank's NIC share is
  that over its ranks.
- hypercube (src/hypercube.cu: step `mask` swaps count x mask bytes with rank ^ mask): with a power-of-two
  M, the steps with mask < M stay in the domain: c(n-M) of c(n-1) crosses, the alltoall bound again.
- sendrecv (ring shift r -> r+1), broadcast and reduce (bounded by the root's path): one GPU's NIC share.
- every rank in one domain: nothing crosses the network; the bottleneck is NVLink, links x per-link GB/s.
- a job over several domains moves bytes over both: the slower of the two links (the lower bound) is its
  bottleneck, and the floor is that link's fraction of it.

The floor is a fraction of that bound: performance.nccl_busbw_min_fraction of the network one,
nvlink.busbw_min_fraction of the NVLink one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

OPS = (
    "all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv", "broadcast", "reduce",
    "hypercube",
)  # fmt: skip
RING_OPS = frozenset({"all_reduce", "all_gather", "reduce_scatter"})
PEER_OPS = frozenset({"alltoall", "hypercube"})  # every rank sends to every other (or log2 n of them)
ONE_GPU_OPS = frozenset({"sendrecv", "broadcast", "reduce"})

BOUND_NETWORK = "network"
BOUND_NVLINK = "nvlink"

# busbw / algbw per op, as each src/<op>.cu GetBw computes it (nccl-tests a0b82b2).
BUSBW_FACTORS: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "sendrecv": lambda n: 1.0,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "hypercube": lambda n: 1.0,
}


@dataclass(frozen=True)
class RankLayout:
    """Where a run's ranks are: n ranks, the busiest host's rank count, hosts per NVLink domain."""

    ranks: int
    ranks_per_host: int  # G: the most ranks any host holds (the host whose NICs are shared most)
    hosts_per_domain: int  # H: the fewest hosts any spanned domain holds (its NIC sum is the smallest)
    ranks_per_domain: int  # M: the fewest ranks any domain holds (its ranks send the most off-domain)
    domains: int

    @property
    def one_domain(self) -> bool:
        return self.domains == 1


def rank_layout(rank_hosts: Sequence[str], domain_of: Callable[[str], str]) -> RankLayout:
    """The layout of ranks listed in rank order (rank r ran on rank_hosts[r])."""
    if not rank_hosts:
        raise ValueError("a layout needs at least one rank")
    per_host: dict[str, int] = {}
    for host in rank_hosts:
        per_host[host] = per_host.get(host, 0) + 1
    hosts_of: dict[str, set[str]] = {}
    for host in per_host:
        hosts_of.setdefault(domain_of(host), set()).add(host)
    return RankLayout(
        ranks=len(rank_hosts),
        ranks_per_host=max(per_host.values()),
        hosts_per_domain=min(len(hosts) for hosts in hosts_of.values()),
        ranks_per_domain=min(sum(per_host[h] for h in hosts) for hosts in hosts_of.values()),
        domains=len(hosts_of),
    )


@dataclass(frozen=True)
class OpFloor:
    """What one op must reach on one layout: GB/s of busbw, how it was derived, which link bounds it."""

    op: str
    gbytes: float
    basis: str
    bound: str  # BOUND_NETWORK or BOUND_NVLINK


@dataclass(frozen=True)
class NetworkLimit:
    """One host's NICs at line rate (GB/s) and the fraction of the bound a healthy fabric reaches."""

    host_gbytes: float
    fraction: float
    nics: int
    speed_gbps: float


@dataclass(frozen=True)
class NvlinkLimit:
    """One GPU's NVLink bandwidth (links x per-link GB/s) and the fraction of it the floor asks."""

    gpu_gbytes: float
    fraction: float
    links: int
    link_gbytes: float


def network_bound(op: str, layout: RankLayout, limit: NetworkLimit) -> tuple[float, str]:
    """The most busbw the network lets `op` reach on `layout` (GB/s) and how, per the module's rules.
    A host drives at most one NIC per rank (a GPU sends through its own rail NIC), so a host with fewer
    ranks than NICs counts only as many NICs as ranks."""
    ranks = layout.ranks_per_host
    nics = min(limit.nics, ranks)
    host = f"{nics} NICs x {limit.speed_gbps:g} Gb/s"
    if nics < limit.nics:
        host += f" ({ranks} ranks on a host of {limit.nics} NICs)"
    host_gbytes = limit.host_gbytes * nics / limit.nics
    per_rank = host_gbytes / ranks
    if op in RING_OPS:
        hosts = layout.hosts_per_domain
        where = f"{hosts} hosts x {host}" if hosts > 1 else host
        return host_gbytes * hosts, f"ring: the domain's NIC sum, {where}"
    share = host if ranks == 1 else f"1/{ranks} of {host}"
    if op in PEER_OPS:
        n, m = layout.ranks, layout.ranks_per_domain
        return (
            per_rank * (n - 1) / (n - m),
            f"a rank's NIC share ({share}) x (n-1)/(n-M) = {n - 1}/{n - m} ({n} ranks, {m} per domain)",
        )
    if op in ONE_GPU_OPS:
        return per_rank, f"one GPU's NIC share, {share}"
    raise ValueError(f"no busbw floor for op {op!r}; expected one of {', '.join(OPS)}")


def op_floor(
    op: str, layout: RankLayout, network: NetworkLimit, nvlink: NvlinkLimit | None
) -> OpFloor | None:
    """`op`'s busbw floor on `layout`. Inside one NVLink domain the NVLink floor (None when the intent
    does not give the links' speed); across domains the network floor, or the NVLink one when lower."""
    nvlink_floor = None
    if nvlink is not None:
        nvlink_floor = OpFloor(
            op,
            nvlink.fraction * nvlink.gpu_gbytes,
            f"NVLink: {nvlink.fraction:.0%} of {nvlink.links} links x {nvlink.link_gbytes:g} GB/s per GPU",
            BOUND_NVLINK,
        )
    if layout.one_domain:
        return nvlink_floor
    bound, how = network_bound(op, layout, network)
    if nvlink is not None and nvlink_floor is not None and nvlink.gpu_gbytes < bound:
        return nvlink_floor  # the slower link is the bottleneck: compare bounds, not fractions of them
    return OpFloor(op, network.fraction * bound, f"{network.fraction:.0%} of {how}", BOUND_NETWORK)
