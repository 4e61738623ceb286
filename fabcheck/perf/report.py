"""The whole report of a run directory, built once from its curves; every reporter reads only this. Pure.

Findings per output file (wrong data, dips, in-place disagreement, truncation) feed the project's exit
policy (fabcheck/report/model.py): a dip or wrong data fails, a truncated output is an error (sizes
were not measured), a file that is not nccl-tests output is a skip with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabcheck.checks.model import Finding, Status, errored, failed, passed, skipped
from fabcheck.desired.collectives import OPS, NetworkLimit, RankLayout, network_bound
from fabcheck.desired.nccl import physical_limit_gbytes
from fabcheck.perf import analysis
from fabcheck.perf.analysis import Anomaly, AnomalyKind, Regime, ScalingPoint
from fabcheck.perf.compare import COMPARE_RULE, Comparison, compare
from fabcheck.perf.curves import Curve, RunData
from fabcheck.report.model import NodeKind, Run, Subject


@dataclass(frozen=True)
class Limit:
    """The physical limit of one node from the intent: its NICs at line rate."""

    nics_per_node: int
    speed_gbps: float

    @property
    def gbytes(self) -> float:
        return physical_limit_gbytes(self.nics_per_node, self.speed_gbps)

    def op_bound(self, curve: Curve) -> tuple[float, str]:
        """What the network lets the curve's op reach on its layout (each node its own NVLink domain,
        README "busbw floors per collective"); an op with no rule there: the node's NICs."""
        key = curve.key
        if key.op not in OPS or key.nodes < 2:
            return self.gbytes, f"{self.nics_per_node} NICs x {self.speed_gbps:g} Gb/s"
        per_node = max(1, key.ranks_per_node)
        layout = RankLayout(key.ranks, per_node, 1, per_node, key.nodes)
        limit = NetworkLimit(self.gbytes, 1.0, self.nics_per_node, self.speed_gbps)
        return network_bound(key.op, layout, limit)


@dataclass(frozen=True)
class CurveReport:
    curve: Curve
    plateau: float
    regimes: tuple[Regime, ...]
    spans: dict[Regime, tuple[int, int, int]]
    anomalies: tuple[Anomaly, ...]
    busbw: float | None  # at the op's representative size
    efficiency: float | None  # against the op's bound; None: no intent, single node, or no value
    cross_node: float | None  # against the op's single-node curve; None: no such curve or it is one
    bound: tuple[float, str] | None = None  # the op's network bound (GB/s, how) on this layout


@dataclass(frozen=True)
class OpReport:
    op: str
    size: int | None  # representative size; None: the curves share no size
    curves: tuple[CurveReport, ...]
    scaling: dict[int, tuple[ScalingPoint, ...]]  # ranks per node -> by node count
    single_node: str | None  # series of the single-node curve cross-node efficiency is against


@dataclass(frozen=True)
class PerfReport:
    data: RunData
    ops: tuple[OpReport, ...]
    limit: Limit | None
    rules: tuple[str, ...]
    comparison: Comparison | None
    run: Run  # the findings, for the exit code and the findings table


def build_report(data: RunData, limit: Limit | None = None, other: RunData | None = None) -> PerfReport:
    ops = tuple(_op_report(op, [c for c in data.curves if c.key.op == op], limit) for op in _ops(data.curves))
    comparison = compare(data.directory, data.curves, other.directory, other.curves) if other else None
    rules = analysis.RULES + ((COMPARE_RULE,) if other else ())
    return PerfReport(data, ops, limit, rules, comparison, _findings_run(data, ops))


def _ops(curves: Sequence[Curve]) -> list[str]:
    return sorted({c.key.op for c in curves})


def _op_report(op: str, curves: list[Curve], limit: Limit | None) -> OpReport:
    curves.sort(key=lambda c: (c.key.nodes, c.key.ranks, c.series))
    size = analysis.representative_size(curves)
    single = max((c for c in curves if c.key.nodes == 1), key=lambda c: c.key.ranks, default=None)
    single_busbw = single.busbw_at(size) if single is not None and size is not None else None
    reports = []
    for curve in curves:
        busbw = curve.busbw_at(size) if size is not None else None
        multi = curve.key.nodes > 1
        bound = limit.op_bound(curve) if limit is not None and multi else None
        reports.append(
            CurveReport(
                curve=curve,
                plateau=analysis.plateau(curve.points),
                regimes=analysis.regimes(curve.points),
                spans=analysis.regime_spans(curve.points),
                anomalies=analysis.anomalies(curve),
                busbw=busbw,
                efficiency=analysis.efficiency(busbw, bound[0] if bound else None) if multi else None,
                cross_node=analysis.efficiency(busbw, single_busbw) if multi else None,
                bound=bound,
            )
        )
    return OpReport(
        op,
        size,
        tuple(reports),
        analysis.scaling(curves, size) if size is not None else {},
        single.series if single is not None else None,
    )


def _findings_run(data: RunData, ops: Sequence[OpReport]) -> Run:
    by_source = {r.curve.source: r for op in ops for r in op.curves}
    subjects = [
        Subject(
            c.source,
            NodeKind.FILE,
            tuple(_curve_findings(by_source[c.source], data.transport.get(c.source))),
            label=c.key.op,
        )
        for c in data.curves
    ]
    subjects += [
        Subject(s.source, NodeKind.FILE, (skipped("perf.input", "file", s.reason),), label="skipped")
        for s in data.skipped
    ]
    return Run("report", tuple(subjects))


_CHECKS = {
    AnomalyKind.WRONG: ("perf.correctness", "#wrong 0 and no out-of-bounds values"),
    AnomalyKind.DIP: ("perf.dip", "no size far below the best BusBW at a smaller size"),
    AnomalyKind.INPLACE: ("perf.inplace", "in-place and out-of-place BusBW agree outside the latency regime"),
}
_HINTS = {
    AnomalyKind.WRONG: "data corruption: suspect a GPU, NVLink or NIC; rerun per node pair to localise it",
    AnomalyKind.DIP: "a protocol or algorithm switch, congestion (PFC/ECN counters) or adaptive routing; "
    "rerun the sizes around it, then compare NCCL_ALGO/NCCL_PROTO",
    AnomalyKind.INPLACE: "buffer placement or a noisy run; rerun with more iterations (-n) to tell",
}


def _curve_findings(report: CurveReport, transport: Mapping[str, Any] | None) -> list[Finding]:
    curve = report.curve
    findings = [
        Finding(**{**f, "status": Status(f["status"])}) for f in (transport or {}).get("findings", [])
    ]
    for kind, (check, expected) in _CHECKS.items():
        mine = [a for a in report.anomalies if a.kind is kind]
        if kind is AnomalyKind.INPLACE and all(p.ip_busbw is None for p in curve.points):
            findings.append(skipped(check, curve.series, "no in-place values in this output"))
            continue
        findings += [failed(check, _sizes(a), expected, a.detail, _HINTS[kind]) for a in mine]
        if not mine:
            findings.append(passed(check, curve.series, expected, f"{len(curve.points)} sizes"))
    if curve.truncated:
        findings.append(
            errored(
                "perf.complete",
                curve.series,
                "the whole sweep with its footer",
                "; ".join(curve.truncated),
                "the sizes shown are used; rerun the sweep to measure the rest",
            )
        )
    else:
        findings.append(passed("perf.complete", curve.series, "the whole sweep with its footer", "complete"))
    return findings


def finding_of(data: Mapping[str, Any]) -> Finding:
    """A finding back from its JSON form (Finding.to_json), as the bench summary keeps them."""
    return Finding(**{**data, "status": Status(data["status"])})


def _sizes(anomaly: Anomaly) -> str:
    if anomaly.first == anomaly.last:
        return format_size(anomaly.first)
    return f"{format_size(anomaly.first)}..{format_size(anomaly.last)}"


def format_size(size: int) -> str:
    """Powers of two as nccl-tests' -b/-e options read them: 8 GiB, 512 MiB; anything else in bytes."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"
