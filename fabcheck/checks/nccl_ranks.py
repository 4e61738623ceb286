"""Per-rank proof from NCCL_DEBUG=INFO that NCCL took the RDMA path with GPUDirect on each GPU's rail NIC.

Judges the ranks of one host against what the intent wants there (DesiredNcclHost) and that host's
`nvidia-smi topo -m`. A failure names the rank, its GPU and the log line it rests on; a host whose ranks
all pass gets one passing finding per check. Pure: no I/O, so the tests are recorded logs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from fabcheck.checks.declare import ROCE, Check
from fabcheck.checks.evidence import not_judged
from fabcheck.checks.model import Finding, Measure, errored, failed, passed, skipped
from fabcheck.checks.roles import GPU_RDMA_ROLE, HOST_QOS_ROLE
from fabcheck.desired.nccl import PROOF_NVLINK, DesiredNcclHost, DesiredNcclJob
from fabcheck.desired.nvlink import PAIR_HOST, PAIR_NETWORK, PAIR_NVLINK
from fabcheck.parsers.nccl_log.channels import NET, SHM, ChannelLine
from fabcheck.parsers.nccl_ranks import NetChannel, Quote, RankFacts
from fabcheck.parsers.nccl_tests import NcclTestsRun
from fabcheck.parsers.topo import TopoMatrix

TRANSPORT = "nccl.rank_transport"
GDR = "nccl.rank_gdr"
RAIL_HCA = "nccl.rank_rail_hca"
HCA_LIST = "nccl.hca_list"
GID_INDEX = "nccl.gid_index"
TRAFFIC_CLASS = "nccl.traffic_class"
RANKS = "nccl.ranks"
BUSBW = "nccl.busbw"
PAIR_TRANSPORT = "nccl.pair_transport"
RANK_CHECKS = (RANKS, TRANSPORT, GDR, RAIL_HCA, HCA_LIST, GID_INDEX, TRAFFIC_CLASS)
# What each pair class must show on its channel lines (docs/checks/nvlink.md).
PAIR_EXPECTED = {
    PAIR_NVLINK: "P2P (CUMEM/IPC inside a host, MNNVL between the trays of a domain), NVLS or SHM, never NET",
    PAIR_NETWORK: "NET over RDMA (IB/RoCE or an RDMA plugin), never Socket/TCP or P2P",
    PAIR_HOST: "P2P, SHM or NET, never Socket/TCP",
}

# TCP transports: NCCL's own Socket and the TCP plugins (GCP FastSocket, gIB's TCP fallbacks).
_TCP_NETWORK = re.compile(r"socket|tcp", re.IGNORECASE)
_MAX_LISTED = 8  # ranks named in one finding's actual


def quoted(text: str, quote: Quote | None) -> str:
    """The finding's text followed by the log line it rests on."""
    return f'{text} (line {quote.line}: "{quote.text}")' if quote else text


def rank_label(rank: RankFacts) -> str:
    number = "?" if rank.rank is None else str(rank.rank)
    return f"rank {number} (GPU{rank.gpu}, {rank.host} pid {rank.pid})"


def network_of(rank: RankFacts) -> tuple[str | None, Quote | None]:
    """The network the rank uses: its process's ``Using network`` line, else its first NET channel."""
    if rank.network is not None:
        return rank.network, rank.network_quote
    if rank.net_channels:
        return rank.net_channels[0].network, rank.net_channels[0].quote
    return None, None


def rdma_channels(rank: RankFacts) -> tuple[NetChannel, ...]:
    """The rank's NET channels over RDMA; Socket channels are nccl.rank_transport's failure, not GDR's."""
    return tuple(c for c in rank.net_channels if not _TCP_NETWORK.search(c.network))


def is_allowed_network(name: str, allowed: Sequence[str]) -> bool:
    return not _TCP_NETWORK.search(name) and any(name.startswith(prefix) for prefix in allowed)


def nvlink_only(rank: RankFacts) -> bool:
    """The rank's channels are all P2P/SHM: its data path never touches a NIC (a job inside one NVLink
    domain), so a `Using network` or socket line it printed at start-up is no data path to judge."""
    return bool(rank.channels) and all(c.line.transport != NET for c in rank.channels)


def check_host_ranks(
    host: str,
    ranks: Sequence[RankFacts],
    expected_ranks: Sequence[int],
    desired: DesiredNcclHost,
    topo: TopoMatrix | None,
) -> list[Finding]:
    """Every per-rank check for the ranks the launcher placed on `host`, in RANK_CHECKS order."""
    findings = [_ranks_present(host, ranks, expected_ranks)]
    if not ranks:
        return findings
    findings.append(_transport(host, ranks, desired))
    findings.append(_gdr(host, ranks, desired))
    findings.append(_rail_hca(host, ranks, desired, topo))
    findings.append(_hca_list(host, ranks, desired, topo))
    findings.append(_env_value(host, ranks, GID_INDEX, "NCCL_IB_GID_INDEX", desired.gid_index, desired))
    findings.append(_env_value(host, ranks, TRAFFIC_CLASS, "NCCL_IB_TC", desired.traffic_class, desired))
    return findings


def _verdict(
    check: str,
    host: str,
    ranks: Sequence[RankFacts],
    expected: str,
    problem: Callable[[RankFacts], str | None],
    hint: str,
    summary: str,
) -> Finding:
    """Fail naming each rank `problem` describes (the first few quoted in full), else one pass."""
    bad = [(rank, text) for rank in ranks if (text := problem(rank)) is not None]
    if not bad:
        return passed(check, f"{host}: {len(ranks)} ranks", expected, summary)
    shown = "; ".join(f"{rank_label(rank)}: {text}" for rank, text in bad[:_MAX_LISTED])
    more = f"; and {len(bad) - _MAX_LISTED} more rank(s)" if len(bad) > _MAX_LISTED else ""
    subject = rank_label(bad[0][0]) if len(bad) == 1 else f"{host}: {len(bad)} of {len(ranks)} ranks"
    return failed(check, subject, expected, shown + more, hint)


def _ranks_present(host: str, ranks: Sequence[RankFacts], expected_ranks: Sequence[int]) -> Finding:
    expected = f"ranks {_span(expected_ranks)} print Init COMPLETE and no NCCL WARN"
    complete = {r.rank for r in ranks if r.init_complete and r.rank is not None}
    missing = [n for n in expected_ranks if n not in complete]
    warned = [r for r in ranks if r.warnings]
    if missing:
        return failed(
            RANKS,
            f"{host}: rank(s) {_span(missing)}",
            expected,
            f"no Init COMPLETE line from rank(s) {_span(missing)}",
            "the rank did not start or NCCL init failed there: read the launcher's stderr and the rank's "
            "NCCL WARN lines; NCCL_DEBUG below INFO hides the init lines",
        )
    if warned:
        first = warned[0]
        return failed(
            RANKS,
            rank_label(first),
            expected,
            quoted(f"{len(first.warnings)} NCCL WARN line(s)", first.warnings[0]),
            "NCCL warned during the run: the quoted line says what failed",
        )
    return passed(
        RANKS, f"{host}: {len(ranks)} ranks", expected, f"ranks {_span(sorted(complete))} initialised"
    )


def _transport(host: str, ranks: Sequence[RankFacts], desired: DesiredNcclHost) -> Finding:
    allowed = ", ".join(desired.allowed_networks)
    expected = f"network {allowed} (RDMA), never Socket or a TCP plugin"

    def problem(rank: RankFacts) -> str | None:
        name, quote = network_of(rank)
        if name is None:
            return "no `Using network` or NET channel line (NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,NET?)"
        return (
            None if is_allowed_network(name, desired.allowed_networks) else quoted(f"network {name}", quote)
        )

    if all(nvlink_only(r) for r in ranks):
        return skipped(
            TRANSPORT,
            host,
            "every channel of this host's ranks is P2P/SHM: no rank used a NIC (nccl.pair_transport judges "
            "whether each pair should have)",
        )
    # A rank whose channels are all P2P/SHM printed no network of its own; the network its process chose
    # still judges the rest.
    ranks = [r for r in ranks if not (nvlink_only(r) and network_of(r)[0] is None)]
    bad = [r for r in ranks if problem(r) is not None]
    if bad and all(network_of(r)[0] is None for r in bad):
        return errored(
            TRANSPORT,
            f"{host}: {len(bad)} ranks",
            expected,
            problem(bad[0]) or "",
            "the log lacks the transport lines: NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,NET",
        )
    names = sorted({network_of(r)[0] or "?" for r in ranks})
    return _verdict(
        TRANSPORT,
        host,
        ranks,
        expected,
        problem,
        "these ranks found no usable RDMA device (ibv_devinfo, rdma link, NCCL_IB_HCA, the net plugin); "
        f"roles {GPU_RDMA_ROLE}, {HOST_QOS_ROLE}",
        f"network {', '.join(names)} on every rank",
    )


def _gdr(host: str, ranks: Sequence[RankFacts], desired: DesiredNcclHost) -> Finding:
    if not desired.gdr_required:
        return skipped(GDR, host, "fabric_intent.nccl.gdr_required is false")
    expected = "/GDRDMA on every inter-node (NET) channel"
    with_net = [r for r in ranks if rdma_channels(r)]
    if not with_net:
        if all(nvlink_only(r) for r in ranks):
            return skipped(GDR, host, "no NET channel: every channel of this host's ranks is P2P/SHM")
        if any(r.net_channels for r in ranks):
            return skipped(GDR, host, "every NET channel of this host is Socket (see nccl.rank_transport)")
        return errored(
            GDR,
            host,
            expected,
            "no NET channel line from any rank of this host",
            "NCCL_DEBUG_SUBSYS must include NET (or INIT) and the job must span at least two hosts",
        )

    def problem(rank: RankFacts) -> str | None:
        channels = rdma_channels(rank)
        plain = [c for c in channels if not c.gdr]
        if not plain:
            return None
        return quoted(f"{len(plain)} of {len(channels)} NET channels without GDRDMA", plain[0].quote)

    channels = sum(len(rdma_channels(r)) for r in with_net)
    return _verdict(
        GDR,
        host,
        with_net,
        expected,
        problem,
        f"GPUDirect RDMA off: load nvidia_peermem (role {GPU_RDMA_ROLE}), keep the GPU within "
        "NCCL_NET_GDR_LEVEL of its NIC (topo -m), and check ACS/IOMMU",
        f"{channels} NET channels of {len(with_net)} ranks, all GDRDMA",
    )


def affine_nics(gpu: int, desired: DesiredNcclHost, topo: TopoMatrix) -> tuple[str, ...]:
    """The NICs a GPU's rank should use: topo's nearest, narrowed to the rail NIC when the intent names
    one among them (a rail NIC that is not nearest is the host stage's topo.rail finding)."""
    nearest, _link = topo.nearest_nics(f"GPU{gpu}")
    rail = desired.rails.get(gpu)
    return (rail,) if rail in nearest else nearest


def _rail_hca(
    host: str, ranks: Sequence[RankFacts], desired: DesiredNcclHost, topo: TopoMatrix | None
) -> Finding:
    expected = "each GPU's NET channels on its affine rail NIC (nvidia-smi topo -m, fabric_intent.rails)"
    if topo is None:
        return errored(
            RAIL_HCA, host, expected, "no topology of this host", "the host stage must read topo -m"
        )
    unknown = [r for r in ranks if f"GPU{r.gpu}" not in topo.gpus]
    if unknown:
        return errored(
            RAIL_HCA,
            rank_label(unknown[0]),
            expected,
            f"GPU{unknown[0].gpu} is not in this host's topo -m ({', '.join(topo.gpus)})",
            "CUDA_VISIBLE_DEVICES remaps GPUs, or the topology is of another host",
        )

    def problem(rank: RankFacts) -> str | None:
        want = affine_nics(rank.gpu, desired, topo)
        if not want:
            return f"topo -m shows no NIC for GPU{rank.gpu}"
        for channel in rdma_channels(rank):
            device = rank.device(channel.device)
            if device is None:
                return quoted(f"NET device {channel.device} is not in the process's HCA list", channel.quote)
            if device.name not in want:
                return quoted(f"uses {device.name}, affine NIC {' or '.join(want)}", channel.quote)
        return None

    judged = [r for r in ranks if rdma_channels(r)]
    if not judged:
        why = (
            "only Socket channels (see nccl.rank_transport)"
            if any(r.net_channels for r in ranks)
            else ("no rank of this host has an inter-node channel")
        )
        return skipped(RAIL_HCA, host, why)
    return _verdict(
        RAIL_HCA,
        host,
        judged,
        expected,
        problem,
        "NCCL picked a far NIC: check NCCL_IB_HCA, the rail map (fabric_intent.rails) and that the rail "
        "NIC is up (ibv_devinfo)",
        f"{len(judged)} ranks on their rail NIC",
    )


def rail_nics(desired: DesiredNcclHost, topo: TopoMatrix | None) -> set[str]:
    if desired.rails:
        return set(desired.rails.values())
    if topo is None:
        return set()
    return {nic for gpu in topo.gpus for nic in topo.nearest_nics(gpu)[0]}


def _hca_list(
    host: str, ranks: Sequence[RankFacts], desired: DesiredNcclHost, topo: TopoMatrix | None
) -> Finding:
    rails = rail_nics(desired, topo)
    expected = (
        f"HCA list only rail NICs ({', '.join(sorted(rails)) or 'unknown'}): no bond, no management NIC"
    )
    rdma = [r for r in ranks if any(d.link_layer for d in r.devices)]
    if not rdma:
        if any(network_of(r)[0] and _TCP_NETWORK.search(network_of(r)[0] or "") for r in ranks):
            return skipped(HCA_LIST, host, "network Socket: NCCL listed no HCA (see nccl.rank_transport)")
        return errored(
            HCA_LIST,
            host,
            expected,
            "no `NET/IB : Using [0]...` line from any rank of this host",
            "NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,NET prints the HCA list",
        )
    if not rails:
        return errored(
            HCA_LIST, host, expected, "no rail NICs known", "name fabric_intent.rails or read topo -m"
        )

    def problem(rank: RankFacts) -> str | None:
        stray = [d.name for d in rank.devices if d.link_layer and d.name not in rails]
        return quoted(f"stray device(s) {', '.join(stray)}", rank.devices_quote) if stray else None

    return _verdict(
        HCA_LIST,
        host,
        rdma,
        expected,
        problem,
        "restrict NCCL to the rails with NCCL_IB_HCA="
        + ",".join(f"={n}" for n in sorted(rails))
        + " or remove the device from the RDMA stack (a bond or management NIC carries no rail traffic)",
        f"{len(rdma[0].devices)} devices, all rail NICs",
    )


def _env_value(
    host: str,
    ranks: Sequence[RankFacts],
    check: str,
    variable: str,
    want: int | None,
    desired: DesiredNcclHost,
) -> Finding:
    if want is None:
        why = (
            "InfiniBand needs no GID index"
            if check == GID_INDEX and desired.kind == "ib"
            else "intent sets none"
        )
        return skipped(check, host, f"{why} (fabric_intent.nccl)")
    expected = f"{variable} {want} in every rank (`{variable} set by environment to {want}.`)"

    def problem(rank: RankFacts) -> str | None:
        shown = rank.env.get(variable)
        if shown is None:
            return f"no `{variable} set by environment` line: the launcher did not pass it to this rank"
        value, quote = shown
        return None if value == str(want) else quoted(f"{variable} {value}", quote)

    return _verdict(
        check,
        host,
        ranks,
        expected,
        problem,
        f"the ranks' environment overrides the intent: unset {variable} in the user's or the nodes' "
        "environment (/etc/nccl.conf, shell profiles), or fix fabric_intent.nccl",
        f"{variable} {want} on every rank",
    )


def check_busbw(run: NcclTestsRun | None, job: DesiredNcclJob, subject: str) -> Finding:
    """The job's all_reduce busbw at its largest size against its floor: the network's across NVLink
    domains (a fabric proof), NVLink's inside one domain (an NVLink proof, never a fabric proof)."""
    proof = "; an NVLink proof, not a fabric proof" if job.proof == PROOF_NVLINK else ""
    expected = (
        f">= {job.busbw_floor_gbytes:.2f} GB/s busbw at >= {job.min_bytes} B ({job.floor_basis}{proof})"
    )
    if run is None or not run.rows:
        return errored(
            BUSBW, subject, expected, "rank 0 printed no nccl-tests table", "read the run's output"
        )
    if not job.floor_known:
        return not_judged(
            BUSBW,
            subject,
            f"busbw >= the NVLink floor at >= {job.min_bytes} B ({job.floor_basis})",
            "every host in one NVLink domain and the intent gives no NVLink rate: no floor to judge",
            "set fabric_intent.nvlink.link_gbytes (and links_per_gpu), or plan hosts of two domains",
        )
    largest = max(run.rows, key=lambda row: row.bytes)
    busbw = max(largest.oop_busbw, largest.ip_busbw or 0.0)
    actual = f"{busbw:.2f} GB/s at {largest.bytes} B"
    figure = Measure(round(busbw, 2), "GB/s", round(job.busbw_floor_gbytes, 2))
    if largest.bytes < job.min_bytes:
        found = failed(
            BUSBW, subject, expected, f"largest size {largest.bytes} B", "run up to min_bytes (-e)"
        )
    elif not busbw >= job.busbw_floor_gbytes:  # also catches nan
        found = failed(
            BUSBW,
            subject,
            expected,
            actual,
            "below the NVLink floor: read host.nvlink, host.nvlink_fabric and host.imex, and the channels "
            "this stage read (P2P/MNNVL or NVLS expected inside the domain)"
            if job.proof == PROOF_NVLINK
            else "below the floor: read this stage's transport, GDR and rail findings, then per-NIC "
            "perftest and the PFC/ECN counters",
        )
    else:
        found = passed(BUSBW, subject, expected, actual)
    return replace(found, measure=figure) if math.isfinite(busbw) else found


def _span(numbers: Sequence[int]) -> str:
    """0-7 for a run, else a list."""
    items = sorted(numbers)
    if items and items == list(range(items[0], items[-1] + 1)) and len(items) > 2:
        return f"{items[0]}-{items[-1]}"
    return ", ".join(str(n) for n in items) or "none"


# ---- nccl.pair_transport: each pair of ranks over its class's transport (NVLink inside a domain)
PairClassOf = Callable[[str, str], str]  # (a rank's host, its peer's host) -> PAIR_NVLINK | PAIR_NETWORK


def pair_problem(line: ChannelLine, pair_class: str, same_host: bool) -> str | None:
    """Why a channel's transport is not its pair's class, or None when it is."""
    if pair_class == PAIR_HOST:
        return "TCP inside one host" if line.transport == NET and line.tcp else None
    if pair_class == PAIR_NVLINK:
        if line.transport == NET:
            return "NET inside one NVLink domain"
        if line.transport == SHM and not same_host:
            return "SHM between two hosts"
        return None
    if line.transport != NET:
        return f"{line.transport} across NVLink domains"
    return "TCP across NVLink domains" if line.tcp else None


def pair_hint(pair_class: str) -> str:
    if pair_class == PAIR_NVLINK:
        return (
            "NCCL fell back to the NICs inside an NVLink domain: between trays MNNVL needs IMEX active with "
            "the domain's node list and every GPU's fabric state Completed in one clique (host.imex, "
            "host.nvlink_fabric); inside a host the NVLinks up (host.nvlink) and NCCL_P2P_DISABLE unset; "
            "else the inventory's nvlink_domains groups hosts that are not one domain"
        )
    return (
        "across domains NCCL must reach the peer over the RDMA NICs: Socket means no usable RDMA device "
        f"(ibv_devinfo, NCCL_IB_HCA, the net plugin; roles {GPU_RDMA_ROLE}, {HOST_QOS_ROLE}); P2P means the "
        "two hosts share an NVLink domain the inventory does not declare (nvlink_domains)"
    )


def pair_label(rank: int, host: str | None) -> str:
    return f"rank {rank} ({host or 'host unknown'})"


def check_pair_transport(
    host: str, ranks: Sequence[RankFacts], host_of: Callable[[int], str | None], class_of: PairClassOf
) -> Finding:
    """Every channel line the ranks of `host` printed, judged by the class of its pair of hosts: inside an
    NVLink domain P2P/NVLS/SHM (never NET), across domains NET over RDMA (never Socket or P2P). A failure
    names both ranks, their hosts and the line."""
    expected = "each pair of ranks over its class's transport: inside an NVLink domain {}; across, {}".format(
        *(PAIR_EXPECTED[c] for c in (PAIR_NVLINK, PAIR_NETWORK))
    )
    seen: set[tuple[int, int, str]] = set()
    bad: list[tuple[str, str, str]] = []  # (pair class, the pair, what its line shows)
    unknown: list[str] = []
    counts = {PAIR_NVLINK: 0, PAIR_NETWORK: 0, PAIR_HOST: 0}
    for rank in ranks:
        mine = host_of(rank.rank) if rank.rank is not None else None
        for channel in rank.channels:
            line = channel.line
            key = (
                min(line.rank, line.peer),
                max(line.rank, line.peer),
                line.transport,
            )  # both ends print NET
            if key in seen:
                continue
            seen.add(key)
            peer_host = host_of(line.peer)
            me = mine or host
            if peer_host is None:
                unknown.append(quoted(f"rank {line.peer} is no rank of this job", channel.quote))
                continue
            pair_class = class_of(me, peer_host)
            counts[pair_class] += 1
            problem = pair_problem(line, pair_class, me == peer_host)
            if problem is not None:
                pair = f"{pair_label(line.rank, me)} <-> {pair_label(line.peer, peer_host)}"
                said = quoted(f"{pair}: {problem}", channel.quote)
                if pair_class == PAIR_NVLINK and me != peer_host and rank.mnnvl and not rank.mnnvl[0]:
                    said += "; " + quoted("NCCL did not enable MNNVL", rank.mnnvl[1])  # between trays
                bad.append((pair_class, pair, said))
    if not seen:
        return errored(
            PAIR_TRANSPORT,
            host,
            expected,
            "no channel line from this host's ranks",
            "NCCL prints one per connection with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,NET (or ALL)",
        )
    if bad:
        shown = "; ".join(text for _, _, text in bad[:_MAX_LISTED])
        more = f"; and {len(bad) - _MAX_LISTED} more pair(s)" if len(bad) > _MAX_LISTED else ""
        subject = bad[0][1] if len(bad) == 1 else f"{host}: {len(bad)} rank pairs"
        return failed(PAIR_TRANSPORT, subject, expected, shown + more, pair_hint(bad[0][0]))
    if unknown:
        return errored(
            PAIR_TRANSPORT,
            host,
            expected,
            unknown[0],
            "the log mixes communicators or jobs: judge one nccl-tests run",
        )
    return passed(
        PAIR_TRANSPORT,
        f"{host}: {len(ranks)} ranks",
        expected,
        f"{counts[PAIR_NVLINK]} pair channel(s) inside the NVLink domain on P2P/SHM, "
        f"{counts[PAIR_NETWORK]} across domains on RDMA NET"
        + (f", {counts[PAIR_HOST]} inside this host (no NVLink planned)" if counts[PAIR_HOST] else ""),
    )


# ---- the declarations: the nccl stage runs the job and these judges make its findings
LAUNCH = "nccl.launch"  # the job started and exited 0 (fabcheck.gate.nccl_stage)
_NCCL_RUN = ("the launched nccl-tests job's output (NCCL_DEBUG=INFO)",)

NCCL_CHECK_DECLS: tuple[Check[Any], ...] = (
    Check(LAUNCH, "nccl", "job", _NCCL_RUN, "the launcher starts the job and it exits 0", None, None),
    Check(
        RANKS,
        "nccl",
        "host",
        _NCCL_RUN,
        "every rank prints Init COMPLETE and no NCCL WARN",
        None,
        None,
    ),
    Check(
        TRANSPORT,
        "nccl",
        "host",
        _NCCL_RUN,
        "every rank on the RDMA network, never Socket or a TCP plugin",
        GPU_RDMA_ROLE,
        None,
    ),
    Check(
        GDR,
        "nccl",
        "host",
        _NCCL_RUN,
        "/GDRDMA on every inter-node (NET) channel",
        GPU_RDMA_ROLE,
        None,
    ),
    Check(
        RAIL_HCA,
        "nccl",
        "host",
        _NCCL_RUN,
        "each GPU's NET channels on its affine rail NIC",
        None,
        None,
    ),
    Check(HCA_LIST, "nccl", "host", _NCCL_RUN, "NCCL_IB_HCA names the rail NICs", None, None),
    Check(
        GID_INDEX,
        "nccl",
        "host",
        _NCCL_RUN,
        "NCCL_IB_GID_INDEX as intended in every rank",
        None,
        None,
    ),
    Check(
        TRAFFIC_CLASS,
        "nccl",
        "host",
        _NCCL_RUN,
        "NCCL_IB_TC as intended in every rank",
        None,
        None,
        kinds=ROCE,
    ),
    Check(
        BUSBW,
        "nccl",
        "job",
        _NCCL_RUN,
        "all_reduce busbw at the largest size at or above its NVLink-domain layout's floor",
        None,
        None,
    ),
    Check(
        PAIR_TRANSPORT,
        "nccl",
        "host",
        _NCCL_RUN,
        "each rank pair over its class's transport: P2P/NVLS inside an NVLink domain, RDMA NET across",
        None,
        None,
    ),
)
