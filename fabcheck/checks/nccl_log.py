"""NCCL_DEBUG=INFO proof that NCCL takes the RDMA path with GPUDirect, and ran without transport errors."""

from __future__ import annotations

import re

from fabcheck.checks.evidence import not_judged
from fabcheck.checks.model import Finding, failed, passed, skipped
from fabcheck.checks.roles import GPU_RDMA_ROLE, HOST_QOS_ROLE
from fabcheck.ibverbs import describe_wc_status
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.nccl_log import NcclLogSummary

# NCCL names RoCE ports "RoCE" and InfiniBand ports "IB" in its NET/IB Using line.
_LINK_LAYER_NAMES = {"roce": "RoCE", "ib": "IB"}
_SOCKET = re.compile("socket", re.IGNORECASE)


def check_nccl_log(log: NcclLogSummary, intent: FabricIntent) -> list[Finding]:
    return [
        _transport(log, intent),
        _link_layers(log, intent),
        _gdr(log, intent),
        _init(log),
        *_errors(log),
    ]


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


def _transport(log: NcclLogSummary, intent: FabricIntent) -> Finding:
    check, expected = (
        "nccl.transport",
        f"RDMA network ({', '.join(intent.nccl.allowed_networks)} or an RDMA plugin)",
    )
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


def _link_layers(log: NcclLogSummary, intent: FabricIntent) -> Finding:
    check, want = "nccl.link_layer", _LINK_LAYER_NAMES[intent.kind]
    expected = f"every NCCL HCA on {want}"
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


def _gdr(log: NcclLogSummary, intent: FabricIntent) -> Finding:
    check = "nccl.gpudirect_rdma"
    if not intent.nccl.gdr_required:
        return skipped(check, "NCCL", "fabric_intent.nccl.gdr_required is false")
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
