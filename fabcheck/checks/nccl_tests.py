"""nccl-tests: the run completed, data correctness, and every op's bus-bandwidth floor for its rank layout
(fabcheck.desired.collectives: the network floor across NVLink domains, the NVLink floor inside one).

A run that measured nothing (no rows, one rank, an op that cannot be named, validation off) is not judged
(error), never passed. A run whose ranks are all in one host or NVLink domain sent nothing over the
network: it is no fabric proof, so it is not judged unless the NVLink view is asked for (`--scope node`),
where it is judged against the NVLink floor as an NVLink proof (fabcheck.checks.evidence)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from fabcheck.checks.evidence import not_judged
from fabcheck.checks.model import Finding, Measure, Status, errored, failed, passed
from fabcheck.desired.collectives import (
    BOUND_NVLINK,
    OPS,
    RING_OPS,
    NetworkLimit,
    NvlinkLimit,
    OpFloor,
    RankLayout,
    op_floor,
    rank_layout,
)
from fabcheck.desired.nccl import node_nics, physical_limit_gbytes
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.nccl_tests import NcclTestsRun

COMPLETED = "nccl_tests.completed"
CORRECTNESS = "nccl_tests.correctness"
BUSBW = "nccl_tests.busbw"


def check_nccl_tests(
    run: NcclTestsRun,
    intent: FabricIntent,
    domain_of: Callable[[str], str] | None = None,
    nvlink_scope: bool = False,
) -> list[Finding]:
    """`domain_of`: a host's NVLink domain (default: each host its own); `nvlink_scope`: judge a run
    inside one domain against the NVLink floor (`--scope node`) rather than leave it unjudged."""
    judge = _busbw(run, intent, domain_of or (lambda host: host), nvlink_scope)
    return [_completed(run), _correctness(run), judge]


def network_limit(intent: FabricIntent) -> NetworkLimit:
    """One host's NICs at line rate, from the intent (performance.nics_per_node, link.speed_gbps)."""
    nics, speed = node_nics(intent), intent.link.speed_gbps
    return NetworkLimit(
        physical_limit_gbytes(nics, speed), intent.performance.nccl_busbw_min_fraction, nics, speed
    )


def nvlink_limit(intent: FabricIntent) -> NvlinkLimit | None:
    """One GPU's NVLink bandwidth from the intent's nvlink (None: the per-link rate is not given)."""
    nvlink = intent.nvlink
    if nvlink.link_gbytes is None:
        return None
    gpu = nvlink.links_per_gpu * nvlink.link_gbytes
    return NvlinkLimit(gpu, nvlink.busbw_min_fraction, nvlink.links_per_gpu, nvlink.link_gbytes)


def run_floor(
    run: NcclTestsRun, intent: FabricIntent, domain_of: Callable[[str], str]
) -> tuple[RankLayout | None, OpFloor | None]:
    """The run's layout (None without a full '# Rank' list) and its op's floor there (None: no floor:
    inside one domain with no NVLink rate, or an op whose floor needs the layout)."""
    assert run.op is not None
    if run.rank_hosts:
        layout = rank_layout(run.rank_hosts, domain_of)
        return layout, op_floor(run.op, layout, network_limit(intent), nvlink_limit(intent))
    if run.op in RING_OPS:
        # No '# Rank' lines: a ring's network floor needs only a host's NICs (the pre-domain rule).
        unknown = RankLayout(run.nranks or 2, node_nics(intent), 1, node_nics(intent), 2)
        return None, op_floor(run.op, unknown, network_limit(intent), None)
    return None, None


def _completed(run: NcclTestsRun) -> Finding:
    expected = "no 'Test NCCL failure' / 'Test failure' line"
    if run.failures:
        return failed(
            COMPLETED,
            run.op or "nccl-tests",
            expected,
            run.failures[0] + (f" (+{len(run.failures) - 1} more)" if len(run.failures) > 1 else ""),
            "the test aborted: rerun with NCCL_DEBUG=INFO and read the first NCCL WARN on the host named",
        )
    return passed(COMPLETED, run.op or "nccl-tests", expected, f"{len(run.rows)} rows, no failure line")


def _correctness(run: NcclTestsRun) -> Finding:
    expected = "#wrong 0 and no out-of-bounds values"
    subject = run.op or "nccl-tests"
    bad = [r for r in run.rows if (r.oop_wrong or 0) > 0 or (r.ip_wrong or 0) > 0]
    if run.wrong_total or bad or (run.out_of_bounds or 0) > 0:
        sizes = ", ".join(str(r.bytes) for r in bad[:5])
        return failed(
            CORRECTNESS,
            subject,
            expected,
            f"{run.wrong_total} wrong element(s)"
            + (f" at {sizes} B" if sizes else "")
            + (f", {run.out_of_bounds} out of bounds" if run.out_of_bounds else ""),
            "data corruption: suspect a GPU, NVLink or NIC; rerun per node pair to localise it",
        )
    if not run.rows:
        return not_judged(
            CORRECTNESS, subject, expected, "no result rows", "the run printed its table header and no row"
        )
    if all(r.oop_wrong is None and r.ip_wrong is None for r in run.rows):
        return not_judged(
            CORRECTNESS,
            subject,
            expected,
            "#wrong is N/A on every row (validation off, -c 0)",
            "rerun without -c 0, or leave the check out with --skip-check nccl_tests.correctness",
        )
    return passed(CORRECTNESS, subject, expected, f"{len(run.rows)} rows, #wrong 0")


def floor_facts(
    run: NcclTestsRun, intent: FabricIntent, domain_of: Callable[[str], str]
) -> dict[str, object]:
    """The layout and floor a report shows: which link bounds the op and what proof the run is."""
    if run.op not in OPS or not run.rows or (run.nranks or 0) < 2:
        return {"layout": None, "floor": None, "proof": None}
    layout, floor = run_floor(run, intent, domain_of)
    shape = None
    if layout is not None:
        shape = {
            "ranks": layout.ranks,
            "ranks_per_host": layout.ranks_per_host,
            "hosts_per_domain": layout.hosts_per_domain,
            "ranks_per_domain": layout.ranks_per_domain,
            "domains": layout.domains,
        }
    judged = None if floor is None else {"gbytes": floor.gbytes, "basis": floor.basis, "bound": floor.bound}
    proof = None if floor is None else ("nvlink" if layout is not None and layout.one_domain else "fabric")
    return {"layout": shape, "floor": judged, "proof": proof}


def _busbw(
    run: NcclTestsRun, intent: FabricIntent, domain_of: Callable[[str], str], nvlink_scope: bool
) -> Finding:
    perf = intent.performance
    subject = run.op or "nccl-tests"
    expected = f"busbw >= the op's floor at >= {perf.nccl_min_bytes} B"
    if not run.rows:
        return not_judged(BUSBW, subject, expected, "no result rows", "rerun the test to completion")
    if run.nranks == 1 or all(r.oop_busbw == 0 and (r.ip_busbw or 0) == 0 for r in run.rows):
        return not_judged(
            BUSBW,
            subject,
            expected,
            "1 rank: busbw 0.00 on every row, nothing crossed a link"
            if run.nranks == 1
            else "busbw 0.00 on every row: no size large enough to measure",
            "run one rank per GPU on at least two hosts (mpirun -np N, -g 1)",
        )
    if run.op is None:
        return not_judged(
            BUSBW,
            subject,
            expected,
            "the collective cannot be named (no test banner, binary name or '# Rank' lines, and the "
            "busbw/algbw ratio fits more than one op)",
            "keep the '# Collective test starting' banner and the '# Rank' lines, or name the op in the file "
            "name (all_reduce...)",
        )
    if run.op not in OPS:
        return not_judged(
            BUSBW,
            subject,
            expected,
            f"{run.op}: no busbw floor is derived for this op",
            f"judge one of {', '.join(OPS)}, or leave the check out with --skip-check {BUSBW}",
        )
    layout, floor = run_floor(run, intent, domain_of)
    if layout is not None and layout.one_domain and not nvlink_scope:
        where = _one_domain(run, domain_of)
        return not_judged(
            BUSBW,
            subject,
            expected + " over the network",
            f"every rank in {where}: NVLink/NVLS/PCIe carried it, nothing crossed the network, so it is no "
            "fabric proof",
            "run across hosts (NVLink domains) to prove the network, or judge it as an NVLink proof with "
            "--scope node",
        )
    if floor is None:
        return _no_floor(run, subject, expected, layout)
    finding = _judge(run, intent, floor, nvlink_proof=layout is not None and layout.one_domain)
    if layout is None and finding.status is Status.PASS:
        # Without the '# Rank' list the hosts are unknown: a result over the network floor may be NVLink
        # inside one host (no fabric proof); one under it fails either way (NVLink is faster still).
        return not_judged(
            BUSBW,
            subject,
            finding.expected,
            f"{finding.actual}, but the output has no '# Rank' lines: every rank may have run on one host "
            "(NVLink), so it proves no fabric",
            "keep nccl-tests' '# Rank N ... on HOST' lines in the output (they are printed before the table)",
        )
    return finding


def _one_domain(run: NcclTestsRun, domain_of: Callable[[str], str]) -> str:
    """'host gpu01' or 'NVLink domain rack1 (gpu01, gpu02)'."""
    if len(run.hosts) == 1:
        return f"host {run.hosts[0]}"
    return f"NVLink domain {domain_of(run.hosts[0])} ({', '.join(run.hosts)})"


def _no_floor(run: NcclTestsRun, subject: str, expected: str, layout: RankLayout | None) -> Finding:
    if layout is None:
        return not_judged(
            BUSBW,
            subject,
            expected,
            f"no complete '# Rank' list: {run.op}'s floor needs the ranks per host and per NVLink domain",
            "keep the '# Using devices' block with every '# Rank' line in the output",
        )
    return not_judged(
        BUSBW,
        subject,
        expected + " (NVLink floor)",
        "every rank in one NVLink domain and the intent gives no NVLink rate",
        "set fabric_intent.nvlink.link_gbytes (and links_per_gpu) for the NVLink floor",
    )


def _judge(run: NcclTestsRun, intent: FabricIntent, floor: OpFloor, nvlink_proof: bool) -> Finding:
    perf = intent.performance
    proof = "an NVLink proof, not a fabric proof" if nvlink_proof else "a fabric proof"
    expected = f">= {floor.gbytes:.2f} GB/s busbw at >= {perf.nccl_min_bytes} B ({floor.basis}; {proof})"
    large = [r for r in run.rows if r.bytes >= perf.nccl_min_bytes]
    if not large:
        biggest = max((r.bytes for r in run.rows), default=0)
        return failed(
            BUSBW,
            run.op or "nccl-tests",
            expected,
            f"largest size {biggest} B",
            f"run {run.op}_perf up to at least {perf.nccl_min_bytes} B (-e 8G)",
        )
    unreadable = [r for r in large if not all(math.isfinite(v) for v in (r.oop_busbw, r.ip_busbw or 0.0))]
    if unreadable:
        # The parser refuses nan/inf; a record built elsewhere must not pass (nan < floor is False).
        row = unreadable[0]
        return errored(
            BUSBW,
            f"{row.bytes} B",
            expected,
            f"busbw {row.oop_busbw} / {row.ip_busbw} GB/s is not a finite number",
            "the output is damaged or the run did not measure: rerun the test",
        )
    best = max(large, key=lambda r: max(r.oop_busbw, r.ip_busbw or 0.0))
    busbw = max(best.oop_busbw, best.ip_busbw or 0.0)
    actual = f"{busbw:.2f} GB/s at {best.bytes} B"
    subject = f"{best.bytes} B"
    if busbw < floor.gbytes:
        hint = (
            "NVLink below its floor: read host.nvlink and host.nvlink_fabric (links down, fabric state, "
            "IMEX) and the NCCL log's P2P/NVLS channels"
            if floor.bound == BOUND_NVLINK
            else "check the NCCL log for Socket fallback, NET inside an NVLink domain or missing GDRDMA, "
            "per-NIC perftest, rail affinity (topo) and PFC/ECN counters; nics_per_node must match the hosts"
        )
        finding = failed(BUSBW, subject, expected, actual, hint)
    else:
        finding = passed(BUSBW, subject, expected, actual)
    return replace(finding, measure=Measure(busbw, "GB/s", floor.gbytes))
