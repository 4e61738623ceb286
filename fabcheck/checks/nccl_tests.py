"""nccl-tests: data correctness and the all_reduce bus-bandwidth floor from the node's NIC line rate."""

from __future__ import annotations

import math

from fabcheck.checks.model import Finding, errored, failed, passed, skipped
from fabcheck.desired.nccl import busbw_floor
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.nccl_tests import NcclTestsRun

FLOOR_OPS = {"all_reduce"}  # the intent's busbw floor is defined on all_reduce


def check_nccl_tests(run: NcclTestsRun, intent: FabricIntent) -> list[Finding]:
    return [_correctness(run), _busbw(run, intent)]


def _correctness(run: NcclTestsRun) -> Finding:
    check, expected = "nccl_tests.correctness", "#wrong 0 and no out-of-bounds values"
    bad = [r for r in run.rows if (r.oop_wrong or 0) > 0 or (r.ip_wrong or 0) > 0]
    if run.wrong_total or bad or (run.out_of_bounds or 0) > 0:
        sizes = ", ".join(str(r.bytes) for r in bad[:5])
        return failed(
            check,
            run.op or "nccl-tests",
            expected,
            f"{run.wrong_total} wrong element(s)"
            + (f" at {sizes} B" if sizes else "")
            + (f", {run.out_of_bounds} out of bounds" if run.out_of_bounds else ""),
            "data corruption: suspect a GPU, NVLink or NIC; rerun per node pair to localise it",
        )
    return passed(check, run.op or "nccl-tests", expected, f"{len(run.rows)} rows, #wrong 0")


def _busbw(run: NcclTestsRun, intent: FabricIntent) -> Finding:
    check = "nccl_tests.busbw"
    if run.op not in FLOOR_OPS:
        return skipped(check, run.op or "nccl-tests", "the busbw floor is defined for all_reduce")
    perf = intent.performance
    floor, basis = busbw_floor(intent)
    expected = f">= {floor:.2f} GB/s busbw at >= {perf.nccl_min_bytes} B ({basis})"
    large = [r for r in run.rows if r.bytes >= perf.nccl_min_bytes]
    if not large:
        biggest = max((r.bytes for r in run.rows), default=0)
        return failed(
            check,
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
            check,
            f"{row.bytes} B",
            expected,
            f"busbw {row.oop_busbw} / {row.ip_busbw} GB/s is not a finite number",
            "the output is damaged or the run did not measure: rerun the test",
        )
    best = max(large, key=lambda r: max(r.oop_busbw, r.ip_busbw or 0.0))
    busbw = max(best.oop_busbw, best.ip_busbw or 0.0)
    actual = f"{busbw:.2f} GB/s at {best.bytes} B"
    if busbw < floor:
        return failed(
            check,
            f"{best.bytes} B",
            expected,
            actual,
            "check the NCCL log for Socket fallback or missing GDRDMA, per-NIC perftest, rail "
            "affinity (topo) and PFC/ECN counters; nics_per_node must match the hosts",
        )
    return passed(check, f"{best.bytes} B", expected, actual)
