"""Run A against run B, curve by curve: % difference per size and which side wins each regime. Pure.

Curves are matched by op and series name (node count, rank count). The regime of a size is the one
it has on A's curve; a side wins a regime when its mean BusBW over that regime's sizes is more than
WIN_MARGIN higher than the other's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fabcheck.perf.analysis import Regime, regimes
from fabcheck.perf.curves import Curve

WIN_MARGIN = 0.01
COMPARE_RULE = (
    "Compare: % difference = (A - B) / B per size on curves of the same op, node and rank count; "
    "the regime of a size is its regime on A's curve; a side wins a regime when its mean BusBW over "
    f"that regime's sizes is more than {WIN_MARGIN:.0%} above the other's, else it is a tie."
)


@dataclass(frozen=True)
class SizeDiff:
    bytes: int
    a: float
    b: float
    diff_pct: float | None  # None where B is 0
    regime: Regime


@dataclass(frozen=True)
class RegimeWin:
    regime: Regime
    sizes: int
    mean_a: float
    mean_b: float
    winner: str  # "A", "B" or "tie"


@dataclass(frozen=True)
class CurveComparison:
    op: str
    series: str
    diffs: tuple[SizeDiff, ...]
    wins: tuple[RegimeWin, ...]


@dataclass(frozen=True)
class Comparison:
    a_name: str
    b_name: str
    curves: tuple[CurveComparison, ...]
    only_a: tuple[str, ...]  # "op: series" of curves without a partner
    only_b: tuple[str, ...]


def compare(a_name: str, a: Sequence[Curve], b_name: str, b: Sequence[Curve]) -> Comparison:
    b_by_id = {(c.key.op, c.series): c for c in b}
    a_ids = {(c.key.op, c.series) for c in a}
    matched = [compare_curves(c, b_by_id[(c.key.op, c.series)]) for c in a if (c.key.op, c.series) in b_by_id]
    return Comparison(
        a_name,
        b_name,
        tuple(matched),
        tuple(f"{c.key.op}: {c.series}" for c in a if (c.key.op, c.series) not in b_by_id),
        tuple(f"{c.key.op}: {c.series}" for c in b if (c.key.op, c.series) not in a_ids),
    )


def compare_curves(a: Curve, b: Curve) -> CurveComparison:
    b_at = {p.bytes: p.busbw for p in b.points}
    diffs = tuple(
        SizeDiff(p.bytes, p.busbw, b_at[p.bytes], _pct(p.busbw, b_at[p.bytes]), regime)
        for p, regime in zip(a.points, regimes(a.points), strict=True)
        if p.bytes in b_at
    )
    return CurveComparison(a.key.op, a.series, diffs, _wins(diffs))


def _pct(a: float, b: float) -> float | None:
    return None if b == 0 else (a - b) / b * 100


def _wins(diffs: Sequence[SizeDiff]) -> tuple[RegimeWin, ...]:
    out = []
    for regime in Regime:
        inside = [d for d in diffs if d.regime is regime]
        if not inside:
            continue
        mean_a = sum(d.a for d in inside) / len(inside)
        mean_b = sum(d.b for d in inside) / len(inside)
        out.append(RegimeWin(regime, len(inside), mean_a, mean_b, _winner(mean_a, mean_b)))
    return tuple(out)


def _winner(mean_a: float, mean_b: float) -> str:
    if mean_a > mean_b * (1 + WIN_MARGIN):
        return "A"
    if mean_b > mean_a * (1 + WIN_MARGIN):
        return "B"
    return "tie"
