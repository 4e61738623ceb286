"""nccl-tests: the run completed, data correctness, and the all_reduce bus-bandwidth floor from the NICs.

A run that measured nothing (no rows, one rank, an op that cannot be named, validation off) is not judged
(error), never passed; a one-host run is intra-node (NVLink/NVLS/PCIe): the NIC floor does not apply and
it is no fabric proof (fabcheck.checks.evidence)."""

from __future__ import annotations

import math
from dataclasses import replace

from fabcheck.checks.evidence import not_judged
from fabcheck.checks.model import Finding, Measure, errored, failed, passed, skipped
from fabcheck.desired.nccl import busbw_floor
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.nccl_tests import NcclTestsRun

FLOOR_OPS = {"all_reduce"}  # the intent's busbw floor is defined on all_reduce
COMPLETED = "nccl_tests.completed"
CORRECTNESS = "nccl_tests.correctness"
BUSBW = "nccl_tests.busbw"


def check_nccl_tests(
    run: NcclTestsRun, intent: FabricIntent, floor: tuple[float, str] | None = None
) -> list[Finding]:
    """`floor` (GB/s, basis) overrides the intent's own, e.g. the job's slowest node."""
    return [_completed(run), _correctness(run), _busbw(run, intent, floor or busbw_floor(intent))]


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


def _busbw(run: NcclTestsRun, intent: FabricIntent, floor_basis: tuple[float, str]) -> Finding:
    perf = intent.performance
    floor, basis = floor_basis
    expected = f">= {floor:.2f} GB/s busbw at >= {perf.nccl_min_bytes} B ({basis})"
    subject = run.op or "nccl-tests"
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
    if run.scope == "intra-node":
        return skipped(
            BUSBW,
            subject,
            f"intra-node run (every rank on {run.hosts[0]}): NVLink/NVLS/PCIe, not the NICs; the NIC floor "
            "does not apply and it is no fabric proof",
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
    if run.op not in FLOOR_OPS:
        return skipped(BUSBW, subject, f"{run.op}: the busbw floor is defined for all_reduce")
    large = [r for r in run.rows if r.bytes >= perf.nccl_min_bytes]
    if not large:
        biggest = max((r.bytes for r in run.rows), default=0)
        return failed(
            BUSBW,
            run.op,
            expected,
            f"largest size {biggest} B",
            f"run all_reduce_perf up to at least {perf.nccl_min_bytes} B (-e 8G)",
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
    measure = Measure(busbw, "GB/s", floor)
    if busbw < floor:
        finding = failed(
            BUSBW,
            f"{best.bytes} B",
            expected,
            actual,
            "check the NCCL log for Socket fallback or missing GDRDMA, per-NIC perftest, rail "
            "affinity (topo) and PFC/ECN counters; nics_per_node must match the hosts",
        )
    else:
        finding = passed(BUSBW, f"{best.bytes} B", expected, actual)
    return replace(finding, measure=measure)
