"""NCCL_DEBUG=INFO proof that NCCL takes the RDMA path with GPUDirect, and ran without transport errors; and
that each pair of ranks talks over its class's transport (NVLink inside an NVLink domain, RDMA NET across)."""

from __future__ import annotations

import re
from collections.abc import Callable

from fabcheck.checks.evidence import not_judged
from fabcheck.checks.model import Finding, failed, passed, skipped
from fabcheck.checks.nccl_ranks import PAIR_EXPECTED, PAIR_TRANSPORT, pair_hint, pair_label, pair_problem
from fabcheck.checks.roles import GPU_RDMA_ROLE, HOST_QOS_ROLE
from fabcheck.desired.nvlink import PAIR_HOST, PAIR_NETWORK, PAIR_NVLINK
from fabcheck.ibverbs import describe_wc_status
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.nccl_log import NcclLogSummary
from fabcheck.parsers.nccl_log.channels import NET, ChannelLine

# NCCL names RoCE ports "RoCE" and InfiniBand ports "IB" in its NET/IB Using line.
_LINK_LAYER_NAMES = {"roce": "RoCE", "ib": "IB"}
_SOCKET = re.compile("socket", re.IGNORECASE)
_MAX_PAIRS_SHOWN = 8
DomainOf = Callable[[str], str]  # a host -> its NVLink domain's name (a host in none: its own name)


def _own_domain(host: str) -> str:
    return host


def check_nccl_log(
    log: NcclLogSummary, intent: FabricIntent, domain_of: DomainOf = _own_domain
) -> list[Finding]:
    inside = nvlink_only(log, domain_of)
    return [
        _transport(log, intent, inside),
        _link_layers(log, intent, inside),
        _gdr(log, intent, inside),
        _init(log),
        *_errors(log),
        _pair_transport(log, domain_of, nvlink_planned=intent.nvlink.gpus is not None),
    ]


def nvlink_only(log: NcclLogSummary, domain_of: DomainOf) -> str | None:
    """Why the log shows no network path to judge: its communicator lies inside one NVLink domain (every
    rank of nranks on a host the log names, one domain) and every channel line is P2P/SHM. None when some
    pair used NET, or the log does not show the whole communicator (an excerpt of one rank's lines)."""
    if not log.pairs or any(p.transport == NET for p in log.pairs) or log.nranks is None:
        return None
    hosts = dict(log.rank_hosts)
    if any(rank not in hosts for rank in range(log.nranks)):
        return None
    domains = {domain_of(host) for host in hosts.values()}
    if len(domains) != 1:
        return None
    return (
        f"all {log.nranks} ranks inside NVLink domain {domains.pop()} and every channel line P2P/SHM: "
        f"no pair used a NIC ({PAIR_TRANSPORT} judges each pair)"
    )


def _init(log: NcclLogSummary) -> Finding:
    check, expected = "nccl.init", "every communicator reaches 'Init COMPLETE'"
    if log.init_complete:
        return passed(check, "NCCL", expected, "Init COMPLETE")
    return not_judged(
        check,
        "NCCL",
        expected,
        "no 'Init COMPLETE' line: NCCL init did not finish (a hang) or the log was cut before it",
        "a hang in init: a rank waits on a peer it cannot reach (bootstrap interface, firewall, a down "
        "link); otherwise keep the log up to 'Init COMPLETE' or leave the check out (--skip-check nccl.init)",
    )


def _transport(log: NcclLogSummary, intent: FabricIntent, inside: str | None) -> Finding:
    check, expected = (
        "nccl.transport",
        f"RDMA network ({', '.join(intent.nccl.allowed_networks)} or an RDMA plugin)",
    )
    if inside is not None:  # the network its processes chose carried no pair: no proof either way
        return skipped(check, "NCCL", inside)
    network = log.network or "unknown"
    # One node without RDMA drags the whole job onto sockets: judge every rank, not only the first.
    socket_hosts = sorted(
        {r.host or f"rank {r.rank}" for r in log.ranks if r.network and _SOCKET.search(r.network)}
    )
    if socket_hosts and log.rdma is not False:
        return failed(
            check,
            ", ".join(socket_hosts),
            expected,
            f"network Socket on {', '.join(socket_hosts)}, {network} elsewhere",
            "these hosts found no usable RDMA device (ibv_devinfo, rdma link, NCCL_IB_HCA); "
            f"roles {GPU_RDMA_ROLE}, {HOST_QOS_ROLE}",
        )
    if log.rdma is False or log.socket_fallback:
        why = f"network {network} (no RDMA)"
        if log.ib_missing:
            failed_ib = [p for p in log.failed_plugins if p in ("IB", "IBext")]
            why += "; " + (
                f"'Failed to initialize NET plugin {failed_ib[0]}'"
                if failed_ib
                else "'NET/IB : No device found.'"
            )
        return failed(
            check,
            "NCCL",
            expected,
            why,
            "NCCL fell back to sockets: RDMA devices missing or unusable (ibv_devinfo, rdma link), "
            f"NCCL_IB_HCA / NCCL_NET wrong, or the net plugin failed to load; roles {GPU_RDMA_ROLE}, "
            f"{HOST_QOS_ROLE}",
        )
    if log.rdma is None:
        return not_judged(
            check,
            "NCCL",
            expected,
            "the log shows no transport choice",
            "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and keep the whole log",
        )
    return passed(check, "NCCL", expected, f"network {network}")


def _link_layers(log: NcclLogSummary, intent: FabricIntent, inside: str | None) -> Finding:
    check, want = "nccl.link_layer", _LINK_LAYER_NAMES[intent.kind]
    expected = f"every NCCL HCA on {want}"
    if not log.link_layers and inside is not None:
        return skipped(check, "NCCL", inside)
    if not log.link_layers:
        return not_judged(
            check,
            "NCCL",
            expected,
            "the log has no NET/IB Using line listing HCAs",
            "keep the 'NET/IB : Using [0]...' lines (NCCL_DEBUG_SUBSYS=INIT,NET), or leave the check out "
            "(--skip-check nccl.link_layer) for a plugin that does not list its devices",
        )
    actual = f"{', '.join(log.hcas)} on {'/'.join(log.link_layers)}"
    if set(log.link_layers) != {want}:
        return failed(
            check,
            "NCCL",
            expected,
            actual,
            "NCCL uses HCAs of the wrong link layer: restrict it with NCCL_IB_HCA to the fabric's "
            "NICs, or fix the port LINK_TYPE (mlxconfig)",
        )
    return passed(check, "NCCL", expected, actual)


def _gdr(log: NcclLogSummary, intent: FabricIntent, inside: str | None) -> Finding:
    check = "nccl.gpudirect_rdma"
    if not intent.nccl.gdr_required:
        return skipped(check, "NCCL", "fabric_intent.nccl.gdr_required is false")
    if inside is not None:  # a 'GPU Direct RDMA Disabled' line then speaks of a NIC no pair used
        return skipped(check, "NCCL", inside)
    expected = "GPUDirect RDMA on every NET channel (via NET/.../GDRDMA)"
    without = sorted({f"{r.host or '?'}[{r.rank}]" for r in log.ranks if r.gdr is False})
    if without and log.gdr is not False:
        return failed(
            check,
            ", ".join(without[:8]) + (f" and {len(without) - 8} more" if len(without) > 8 else ""),
            expected,
            f"{len(without)} rank(s) with NET channels without GDRDMA",
            "GPUDirect is off for these ranks: nvidia_peermem not loaded on their host, or the NIC is too "
            f"far from the GPU (NCCL_NET_GDR_LEVEL, topology); role {GPU_RDMA_ROLE}",
        )
    if log.gdr is True:
        return passed(check, "NCCL", expected, "GDRDMA")
    if log.gdr is False:
        return failed(
            check,
            "NCCL",
            expected,
            "NET channels without GDRDMA (or GPU Direct RDMA Disabled)",
            f"load nvidia_peermem (or use DMA-BUF), check NCCL_NET_GDR_LEVEL and that the NIC is "
            f"within the GPU's PCIe switch; role {GPU_RDMA_ROLE}",
        )
    return not_judged(
        check,
        "NCCL",
        expected,
        "the log shows no NET channel and no GPU Direct RDMA line",
        "rerun with NCCL_DEBUG=INFO across nodes so NET channels are printed",
    )


def _errors(log: NcclLogSummary) -> list[Finding]:
    check = "nccl.errors"
    if not log.errors:
        return [passed(check, "NCCL", "no transport errors", "none")]
    findings = []
    for error in log.errors[:20]:
        where = " ".join(
            p for p in (error.host or "", f"rank {error.rank}" if error.rank is not None else "") if p
        )
        findings.append(
            failed(
                check,
                f"line {error.line}" + (f" ({where})" if where else ""),
                "no transport errors",
                error.message[:300],
                describe_wc_status(error.status)
                if error.status is not None
                else "read the first WARN in the log: later errors are usually consequences",
            )
        )
    return findings


def _pair_transport(log: NcclLogSummary, domain_of: DomainOf, nvlink_planned: bool) -> Finding:
    """Each rank pair a channel line shows, by its hosts' NVLink domains (--nvlink-domain, -i's
    nvlink_domains; a host in none is its own): inside one, P2P/SHM, never NET; across, RDMA NET. Two
    GPUs of one host whose intent plans no NVLink (nvlink.gpus null) may use any transport but TCP."""
    expected = "each pair of ranks over its class's transport: inside an NVLink domain {}; across, {}".format(
        *(PAIR_EXPECTED[c] for c in (PAIR_NVLINK, PAIR_NETWORK))
    )
    if not log.pairs:
        return skipped(PAIR_TRANSPORT, "NCCL", "the log prints no channel line: no rank pair to judge")
    judged = [p for p in log.pairs if p.host is not None and p.peer_host is not None]
    if not judged:
        ambiguous = f"; rank(s) {_ranks(log.ambiguous_ranks)} on two hosts" if log.ambiguous_ranks else ""
        return skipped(
            PAIR_TRANSPORT,
            "NCCL",
            f"no channel line names both hosts (lines without the 'host:pid:tid [dev]' prefix{ambiguous})",
        )
    bad: list[tuple[str, str, str]] = []
    counts = {PAIR_NVLINK: 0, PAIR_NETWORK: 0, PAIR_HOST: 0}
    seen: set[tuple[int, int, str]] = set()
    for pair in judged:
        key = (min(pair.rank, pair.peer), max(pair.rank, pair.peer), pair.transport)  # both ends print NET
        if key in seen:
            continue
        seen.add(key)
        host, peer_host = pair.host or "", pair.peer_host or ""
        pair_class = PAIR_NVLINK if domain_of(host) == domain_of(peer_host) else PAIR_NETWORK
        if host == peer_host and not nvlink_planned:
            pair_class = PAIR_HOST
        counts[pair_class] += 1
        line = ChannelLine(0, pair.rank, pair.peer, None, pair.transport, pair.path)
        problem = pair_problem(line, pair_class, host == peer_host)
        if problem is not None:
            label = f"{pair_label(pair.rank, host)} <-> {pair_label(pair.peer, peer_host)}"
            bad.append((pair_class, label, f'{label}: {problem} (line {pair.line}: "{pair.text}")'))
    left = len(log.pairs) - len(judged)
    unjudged = f"; {left} pair(s) whose host the log does not tell not judged" if left else ""
    if bad:
        shown = "; ".join(text for _, _, text in bad[:_MAX_PAIRS_SHOWN])
        more = f"; and {len(bad) - _MAX_PAIRS_SHOWN} more pair(s)" if len(bad) > _MAX_PAIRS_SHOWN else ""
        subject = bad[0][1] if len(bad) == 1 else f"{len(bad)} rank pairs"
        hint = pair_hint(bad[0][0])
        if bad[0][0] == PAIR_NETWORK:
            hint += " (name a rack's trays as one domain with --nvlink-domain NAME=HOST,HOST or -i)"
        return failed(PAIR_TRANSPORT, subject, expected, shown + more + unjudged, hint)
    return passed(
        PAIR_TRANSPORT,
        "NCCL",
        expected,
        f"{counts[PAIR_NVLINK]} pair(s) inside NVLink domains on P2P/SHM, {counts[PAIR_NETWORK]} across "
        f"domains on RDMA NET"
        + (f", {counts[PAIR_HOST]} inside a host with no NVLink planned" if counts[PAIR_HOST] else "")
        + unjudged,
    )


def _ranks(numbers: tuple[int, ...]) -> str:
    return ", ".join(str(n) for n in numbers[:8]) + (" ..." if len(numbers) > 8 else "")
