"""The report as titled tables of strings, the one layout the text, Markdown and HTML reporters share.
Pure: numbers are formatted here once (GB/s with 2 decimals as nccl-tests prints them)."""

from __future__ import annotations

from dataclasses import dataclass

from fabcheck.perf.analysis import Regime
from fabcheck.perf.compare import Comparison
from fabcheck.perf.report import CurveReport, OpReport, PerfReport, format_size


@dataclass(frozen=True)
class Table:
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    kind: str  # CSS class in HTML; tests find tables by it


def overview(report: PerfReport) -> list[str]:
    """The sentences above the tables: what was read, the limit used, what was left out."""
    data = report.data
    lines = [
        f"{len(data.curves)} nccl-tests output(s) read from {data.directory}, {len(data.skipped)} skipped."
    ]
    if report.limit is None:
        lines.append("Efficiency against the physical limit: not computed (no intent; give -i INVENTORY).")
    else:
        limit = report.limit
        lines.append(
            f"Physical limit per node: {limit.nics_per_node} NICs x {limit.speed_gbps:g} Gb/s = "
            f"{limit.gbytes:.2f} GB/s (from the intent)."
        )
    return lines


def files_table(report: PerfReport) -> Table:
    rows = [
        (
            c.source,
            c.key.op,
            c.series,
            ", ".join(c.hosts),
            c.nccl_version or "not printed",
            f"{format_size(c.points[0].bytes)}..{format_size(c.points[-1].bytes)} ({len(c.points)})",
            "; ".join(c.truncated) or "complete",
        )
        for c in report.data.curves
    ]
    rows += [(s.source, "-", "-", "-", "-", "-", f"skipped: {s.reason}") for s in report.data.skipped]
    header = ("file", "op", "series", "hosts", "NCCL", "sizes", "state")
    return Table("Files", header, tuple(rows), "files")


def transport_table(report: PerfReport) -> Table:
    """The NCCL transport proof per output, where `fabcheck bench nccl` recorded one."""
    rows = []
    for curve in report.data.curves:
        proof = report.data.transport.get(curve.source)
        if proof is None:
            continue
        findings = proof.get("findings", [])
        bad = [
            f"{f['check']} {f['status']}: {f['actual']}" for f in findings if f["status"] in ("fail", "error")
        ]
        rows.append(
            (
                curve.source,
                str(proof.get("network") or "not shown"),
                _yes_no(proof.get("rdma")),
                _yes_no(proof.get("gdr")),
                ", ".join(proof.get("hcas") or []) or "-",
                "; ".join(bad) or f"{len(findings)} check(s) pass",
            )
        )
    header = ("file", "network", "RDMA", "GDR", "HCAs", "proof")
    return Table("Transport (NCCL_DEBUG=INFO of each run)", header, tuple(rows), "transport")


def _yes_no(value: object) -> str:
    if value is None:
        return "not shown"
    return "yes" if value else "no"


def representative_table(op: OpReport) -> Table:
    size = format_size(op.size) if op.size is not None else "none (the curves share no size)"
    header = (
        "series",
        "nodes",
        "ranks",
        "BusBW (GB/s)",
        "plateau (GB/s)",
        "efficiency",
        "cross-node",
        "regimes",
    )
    rows = tuple(
        (
            r.curve.series,
            str(r.curve.key.nodes),
            str(r.curve.key.ranks),
            _gbs(r.busbw),
            _gbs(r.plateau),
            _efficiency(r, op),
            _cross_node(r, op),
            _spans(r),
        )
        for r in op.curves
    )
    return Table(f"{op.op}: BusBW at the representative size {size}", header, rows, "representative")


def by_size_table(op: OpReport) -> Table:
    sizes = sorted({p.bytes for r in op.curves for p in r.curve.points})
    header = ("size", *(r.curve.series for r in op.curves))
    rows = tuple(
        (format_size(size), *(_gbs(r.curve.busbw_at(size), "") for r in op.curves)) for size in sizes
    )
    return Table(f"{op.op}: BusBW (GB/s) by size", header, rows, "bysize")


def scaling_table(op: OpReport) -> Table:
    rows = tuple(
        (str(rpn), str(p.nodes), p.series, _gbs(p.busbw), f"{p.drop_pct:.1f}")
        for rpn, points in op.scaling.items()
        for p in points
    )
    header = ("ranks per node", "nodes", "series", "BusBW (GB/s)", "drop from fewest nodes (%)")
    return Table(f"{op.op}: scaling at {format_size(op.size or 0)}", header, rows, "scaling")


def anomalies_table(op: OpReport) -> Table:
    rows = tuple(
        (r.curve.series, a.kind.value, _range(a.first, a.last), a.detail)
        for r in op.curves
        for a in r.anomalies
    )
    return Table(f"{op.op}: anomalies", ("series", "kind", "sizes", "detail"), rows, "anomalies")


def comparison_tables(comparison: Comparison) -> list[Table]:
    wins = tuple(
        (c.op, c.series, w.regime.value, str(w.sizes), _gbs(w.mean_a), _gbs(w.mean_b), w.winner)
        for c in comparison.curves
        for w in c.wins
    )
    diffs = tuple(
        (c.op, c.series, format_size(d.bytes), _gbs(d.a), _gbs(d.b), _pct(d.diff_pct), d.regime.value)
        for c in comparison.curves
        for d in c.diffs
    )
    unmatched = tuple((name, "A only") for name in comparison.only_a) + tuple(
        (name, "B only") for name in comparison.only_b
    )
    return [
        Table(
            f"Compare A = {comparison.a_name} vs B = {comparison.b_name}: regime wins",
            ("op", "series", "regime (on A)", "sizes", "mean A (GB/s)", "mean B (GB/s)", "wins"),
            wins,
            "wins",
        ),
        Table(
            "Compare: % difference A vs B per size",
            ("op", "series", "size", "A (GB/s)", "B (GB/s)", "A vs B (%)", "regime (on A)"),
            diffs,
            "diffs",
        ),
        Table("Compare: curves without a partner", ("curve", "where"), unmatched, "unmatched"),
    ]


def _efficiency(report: CurveReport, op: OpReport) -> str:
    if report.curve.key.nodes == 1:
        return "n/a (one node: NVLink, not the NICs)"
    if report.efficiency is None:
        return "not computed (no intent)" if report.busbw is not None else "n/a (no value at that size)"
    bound = f" of {report.bound[0]:.2f} GB/s ({report.bound[1]})" if report.bound is not None else ""
    return f"{report.efficiency:.1%}{bound}"


def _cross_node(report: CurveReport, op: OpReport) -> str:
    if report.curve.key.nodes == 1:
        return "-"
    if op.single_node is None:
        return "n/a (no single-node run)"
    return f"{report.cross_node:.1%} of {op.single_node}" if report.cross_node is not None else "n/a"


def _spans(report: CurveReport) -> str:
    parts = []
    for regime in Regime:
        if regime in report.spans:
            low, high, count = report.spans[regime]
            parts.append(f"{regime.value} {_range(low, high)} ({count})")
    return "; ".join(parts)


def _range(low: int, high: int) -> str:
    return format_size(low) if low == high else f"{format_size(low)}..{format_size(high)}"


def _gbs(value: float | None, missing: str = "n/a") -> str:
    return missing if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "n/a (B is 0)" if value is None else f"{value:+.1f}"
