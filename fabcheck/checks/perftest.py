"""perftest: bandwidth against the NIC line rate, link layer and MTU against the intent, clean completion."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from fabcheck.checks.declare import Check, Inputs
from fabcheck.checks.evidence import not_judged
from fabcheck.checks.model import Finding, Measure, errored, failed, passed, skipped
from fabcheck.checks.roles import HOST_QOS_ROLE
from fabcheck.ibverbs import describe_wc_status
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.perftest import PerftestRun


@dataclass(frozen=True)
class BandwidthInputs(Inputs):
    # Bandwidth is judged on large messages only: small ones are message-rate bound, not wire bound.
    large_message_bytes: int = 65536


BANDWIDTH_INPUTS = BandwidthInputs()  # perftest.bandwidth (fabcheck analyze) and the perftest stage's pairs


@dataclass(frozen=True)
class OutlierInputs(Inputs):
    # A pair is slow against its peers when below their median by more than `mads` robust standard
    # deviations (1.4826 x MAD) AND by more than `min_drop` of the median: the second bound keeps a very
    # quiet fabric (MAD near 0) from flagging noise.
    mads: float = 5.0
    min_drop: float = 0.03


@dataclass(frozen=True)
class DriftInputs(Inputs):
    # Drift against the stored baseline: slower than the pair's recorded median by more than this share.
    max_drop: float = 0.10


OUTLIER_INPUTS = OutlierInputs()  # perftest.nic / perftest.host: the pair rounds' peer reference
DRIFT_INPUTS = DriftInputs()  # perftest.drift, and `fabcheck baseline diff`


def check_perftest(
    run: PerftestRun, intent: FabricIntent, line_rate_gbps: float | None = None
) -> list[Finding]:
    return [
        *_completion(run),
        _link_layer(run, intent),
        _mtu(run, intent),
        _bandwidth(run, intent, line_rate_gbps or intent.link.speed_gbps),
    ]


def _completion(run: PerftestRun) -> list[Finding]:
    check = "perftest.completion"
    if not run.errors:
        return [passed(check, run.test or "perftest", "run completes without errors", "completed")]
    return [
        failed(
            check,
            f"line {e.line}",
            "run completes without errors",
            e.message,
            describe_wc_status(e.status)
            if e.status is not None
            else "the test did not complete: check connectivity (GID index, IPs) and RDMA device state",
        )
        for e in run.errors
    ]


def _link_layer(run: PerftestRun, intent: FabricIntent) -> Finding:
    check, want = "perftest.link_layer", ("Ethernet" if intent.kind == "roce" else "IB")
    if run.link_layer is None:
        return not_judged(
            check,
            run.test or "perftest",
            f"Link type {want}",
            "the output has no 'Link type' header line",
            "keep perftest's whole header in the capture, or leave the check out (--skip-check)",
        )
    if run.link_layer != want:
        return failed(
            check,
            run.device or "device",
            f"Link type {want}",
            f"Link type {run.link_layer}",
            "perftest ran over the wrong device: pass -d with the fabric NIC, or fix LINK_TYPE",
        )
    return passed(check, run.device or "device", f"Link type {want}", f"Link type {run.link_layer}")


def _mtu(run: PerftestRun, intent: FabricIntent) -> Finding:
    check, expected = "perftest.mtu", f"MTU {intent.mtu.rdma}"
    if run.mtu is None:
        return not_judged(
            check,
            run.test or "perftest",
            expected,
            "the output has no 'Mtu' header line",
            "keep perftest's whole header in the capture, or leave the check out (--skip-check)",
        )
    if run.mtu < intent.mtu.rdma:
        return failed(
            check,
            run.device or "device",
            expected,
            f"MTU {run.mtu}",
            f"raise the netdev MTU to {intent.mtu.netdev} so active_mtu reaches {intent.mtu.rdma} "
            f"(role {HOST_QOS_ROLE}), and run perftest with -m {intent.mtu.rdma} if needed",
        )
    return passed(check, run.device or "device", expected, f"MTU {run.mtu}")


def _bandwidth(run: PerftestRun, intent: FabricIntent, line_rate: float) -> Finding:
    check = "perftest.bandwidth"
    if run.lat_unit is not None and run.bw_unit is None:
        return skipped(check, run.test or "perftest", "latency test: the intent sets no latency bound")
    if run.bw_unit is None or not run.rows:
        return not_judged(
            check,
            run.test or "perftest",
            "a bandwidth result table",
            "the output has no result row" + (" (the run failed)" if run.errors else ""),
            "rerun the test to completion and keep its result table",
        )
    rate = message_rate_run(run)
    if rate is not None:
        # Small messages are bound by the NIC's packet rate, not the wire: a bandwidth floor would fail a
        # healthy NIC. The figure that such a run measures is the message rate.
        best_rate = max((r.msg_rate for r in run.rows if r.msg_rate is not None), default=None)
        shown = f"; {best_rate:g} Mpps" if best_rate is not None else ""
        finding = skipped(
            check, run.test or "perftest", f"message-rate run ({rate}): bandwidth is not its measure{shown}"
        )
        return replace(finding, measure=Measure(best_rate, "Mpps")) if best_rate is not None else finding
    if not math.isfinite(line_rate) or line_rate <= 0:
        # A zero or nan line rate would make every floor pass.
        return errored(
            check,
            run.test or "perftest",
            "a NIC line rate above 0 Gb/s",
            f"line rate {line_rate}",
            "set link.speed_gbps in the intent or pass --line-rate-gbps with the NIC's rate",
        )
    floor = intent.performance.perftest_min_fraction * line_rate
    expected = f">= {floor:.2f} Gb/sec ({intent.performance.perftest_min_fraction:.0%} of {line_rate:g} Gb/s)"
    rows = [r for r in run.rows if r.bw_avg is not None]
    unreadable = [r for r in rows if not math.isfinite(r.bw_avg or 0.0)]
    if unreadable:
        # The parser refuses nan/inf; a record built elsewhere must not slip through either:
        # nan compares False with every floor, so it would read as a pass.
        return errored(
            check,
            f"{unreadable[0].bytes} B",
            expected,
            f"bandwidth {unreadable[0].bw_avg} is not a finite number",
            "the output is damaged or the run did not measure: rerun the test",
        )
    large = [r for r in rows if r.bytes >= BANDWIDTH_INPUTS.large_message_bytes] or rows
    if not large:
        return failed(
            check, run.test or "perftest", expected, "no bandwidth rows", "the run produced no results"
        )
    if run.bw_gbps(large[0]) is None:
        return errored(
            check,
            run.test or "perftest",
            expected,
            f"bandwidth unit {run.bw_unit!r} is not Gb/sec or MB/sec",
            "rerun with --report_gbits, or report the unit so it can be read",
        )
    best = max(large, key=lambda r: run.bw_gbps(r) or 0.0)
    gbps = per_direction_gbps(run, run.bw_gbps(best) or 0.0)
    actual = f"{gbps:.2f} Gb/sec average at {best.bytes} B ({best.bw_avg} {run.bw_unit})"
    if run.bidirectional:
        actual = (
            f"{gbps:.2f} Gb/sec per direction at {best.bytes} B "
            f"(bidirectional sum {best.bw_avg} {run.bw_unit})"
        )
    if gbps < floor:
        return failed(
            check,
            f"{best.bytes} B",
            expected,
            actual,
            "check link speed/width (ibstat Rate, ethtool), PCIe width, NUMA placement of the test, "
            "PFC pause storms and ECN marking on the path; the intent's link.speed_gbps must match the NIC",
        )
    return passed(check, f"{best.bytes} B", expected, actual)


def per_direction_gbps(run: PerftestRun, gbps: float) -> float:
    """perftest's bidirectional report (-b) adds both directions: each direction carries half."""
    return gbps / 2 if run.bidirectional else gbps


MESSAGE_RATE_MAX_BYTES = 1024  # a sweep that never goes above this measures packets, not the wire


def message_rate_run(run: PerftestRun) -> str | None:
    """Why this run measures message rate rather than bandwidth (None: it measures bandwidth)."""
    if run.test == "ib_atomic_bw":
        return "ib_atomic_bw: 8-byte atomics"
    post_list = run.settings.get("post list")
    if post_list is not None and post_list.strip() not in ("", "1"):
        return f"--post_list {post_list.strip()}"
    biggest = max((r.bytes for r in run.rows), default=0)
    if 0 < biggest <= MESSAGE_RATE_MAX_BYTES:
        return f"only messages up to {biggest} B"
    return None


# ---- the perftest stage's checks: its pair rounds (fabcheck.gate.perftest_stage) make the findings
NIC = "perftest.nic"
HOST = "perftest.host"
LINK = "perftest.link"
DRIFT = "perftest.drift"
_PAIRS = ("ib_write_bw between NIC pairs of the rail",)

PAIR_CHECK_DECLS: tuple[Check[Any], ...] = (
    Check(
        NIC,
        "perftest",
        "NIC",
        _PAIRS,
        "every NIC reaches the floor with its peers",
        None,
        None,
        inputs=OUTLIER_INPUTS,
    ),
    Check(
        HOST,
        "perftest",
        "host",
        _PAIRS,
        "no host slow with every known-good peer",
        None,
        None,
        inputs=OUTLIER_INPUTS,
    ),
    Check(
        LINK,
        "perftest",
        "NIC pair",
        _PAIRS,
        "every pair reaches the floor",
        None,
        None,
        inputs=BANDWIDTH_INPUTS,
    ),
    Check(
        DRIFT,
        "perftest",
        "NIC pair",
        ("the pair's recorded baseline (fabcheck baseline)",),
        "within the allowed drop of the pair's baseline median",
        None,
        None,
        inputs=DRIFT_INPUTS,
    ),
)
