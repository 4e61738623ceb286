"""Judging BusBW curves: regimes, anomalies, the representative size, efficiency and scaling. Pure.

Every rule is a constant here and is stated in the report in these words (RULES), so a reader can
recompute any flag by hand from the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from fabcheck.perf.curves import Curve, Point

LATENCY_BELOW = 0.10  # of the plateau: below it a size is latency-bound
SATURATED_FROM = 0.90  # of the plateau: from it a size is bandwidth-bound
DIP_FRACTION = 0.20  # a dip: this much below the best BusBW at any smaller size ...
DIP_MIN_GBPS = 0.05  # ... and by more than the printing resolution of nccl-tests (2 decimals)
DIP_REFERENCE_FLOOR = 0.01  # ... and that best at least 1% of the plateau (not rounding noise)
INPLACE_TOLERANCE = 0.10  # in-place vs out-of-place BusBW: a larger gap, outside latency, is flagged
DEFAULT_REPRESENTATIVE = 8 << 30  # 8 GiB, when every curve of the op has it

RULES = (
    "BusBW is the out-of-place busbw column (GB/s); the plateau of a curve is its highest BusBW.",
    f"Regimes by fraction of the plateau: latency-bound below {LATENCY_BELOW:.0%}, "
    f"bandwidth-bound from {SATURATED_FROM:.0%}, transition in between.",
    f"Representative size: {DEFAULT_REPRESENTATIVE} B (8 GiB) when every curve of the op has it, else the "
    "largest size every curve of the op has.",
    f"Dip: BusBW more than {DIP_FRACTION:.0%} and more than {DIP_MIN_GBPS} GB/s below the best BusBW at "
    f"any smaller size, where that best is at least {DIP_REFERENCE_FLOOR:.0%} of the plateau.",
    f"In-place disagreement: in-place and out-of-place BusBW differ by more than {INPLACE_TOLERANCE:.0%} "
    "of the larger, at a size outside the latency-bound regime.",
    "Wrong data: #wrong above 0 at any size, or out-of-bounds values above 0.",
    "Efficiency: BusBW at the representative size / the op's network bound on the curve's layout, from the "
    "intent's NICs per node x line rate (ring all_reduce, all_gather, reduce_scatter: a node's NICs; "
    "alltoall, hypercube: a rank's NIC share x (n-1)/(n-G); sendrecv, broadcast, reduce: one GPU's NIC "
    "share; a node counts at most one NIC per rank); cross-node efficiency: BusBW / the single-node BusBW "
    "of the same op at that size.",
    "Scaling: BusBW at the representative size by node count at one rank count per node; drop in % "
    "from the smallest node count.",
)


class Regime(str, Enum):
    LATENCY = "latency-bound"
    TRANSITION = "transition"
    SATURATED = "bandwidth-bound"


class AnomalyKind(str, Enum):
    DIP = "dip"
    INPLACE = "in-place disagreement"
    WRONG = "wrong data"


@dataclass(frozen=True)
class Anomaly:
    kind: AnomalyKind
    first: int  # bytes
    last: int
    detail: str


def plateau(points: Sequence[Point]) -> float:
    return max((p.busbw for p in points), default=0.0)


def regimes(points: Sequence[Point]) -> tuple[Regime, ...]:
    top = plateau(points)
    return tuple(_regime(p.busbw, top) for p in points)


def _regime(busbw: float, top: float) -> Regime:
    if top <= 0 or busbw < LATENCY_BELOW * top:
        return Regime.LATENCY
    return Regime.SATURATED if busbw >= SATURATED_FROM * top else Regime.TRANSITION


def regime_spans(points: Sequence[Point]) -> dict[Regime, tuple[int, int, int]]:
    """Per regime present: (smallest size, largest size, how many sizes)."""
    spans: dict[Regime, tuple[int, int, int]] = {}
    for point, regime in zip(points, regimes(points), strict=True):
        low, _, count = spans.get(regime, (point.bytes, point.bytes, 0))
        spans[regime] = (low, point.bytes, count + 1)
    return spans


def anomalies(curve: Curve) -> tuple[Anomaly, ...]:
    return (*_dips(curve.points), *_inplace(curve.points), *_wrong(curve))


def _dips(points: Sequence[Point]) -> list[Anomaly]:
    floor = DIP_REFERENCE_FLOOR * plateau(points)
    flagged: list[tuple[Point, Point]] = []  # (dipping point, the best smaller point it falls from)
    best: Point | None = None
    for point in points:
        if (
            best is not None
            and best.busbw >= floor
            and point.busbw < (1 - DIP_FRACTION) * best.busbw
            and best.busbw - point.busbw > DIP_MIN_GBPS
        ):
            flagged.append((point, best))
        if best is None or point.busbw > best.busbw:
            best = point
    return _grouped(AnomalyKind.DIP, flagged, points, _describe_dip)


def _describe_dip(run: list[tuple[Point, Point]]) -> str:
    worst, reference = min(p.busbw for p, _ in run), run[0][1]
    return (
        f"BusBW {worst:.2f} GB/s at worst, {_drop(worst, reference.busbw):.0f}% below "
        f"{reference.busbw:.2f} GB/s at {reference.bytes} B"
    )


def _grouped(
    kind: AnomalyKind,
    flagged: list[tuple[Point, Point]],
    points: Sequence[Point],
    describe: Callable[[list[tuple[Point, Point]]], str],
) -> list[Anomaly]:
    """Flagged points next to each other in the sweep form one anomaly (a collapse over several sizes).
    Each flagged item is (the point, the point it is judged against)."""
    index = {p.bytes: i for i, p in enumerate(points)}
    groups: list[list[tuple[Point, Point]]] = []
    for item in flagged:
        if groups and index[item[0].bytes] == index[groups[-1][-1][0].bytes] + 1:
            groups[-1].append(item)
        else:
            groups.append([item])
    return [Anomaly(kind, group[0][0].bytes, group[-1][0].bytes, describe(group)) for group in groups]


def _inplace(points: Sequence[Point]) -> list[Anomaly]:
    flagged = [(p, p) for p, regime in zip(points, regimes(points), strict=True) if _inplace_apart(p, regime)]
    return _grouped(AnomalyKind.INPLACE, flagged, points, _describe_inplace)


def _describe_inplace(run: list[tuple[Point, Point]]) -> str:
    worst = max((p for p, _ in run), key=_apart)
    return (
        f"up to {_apart(worst):.0%} apart; at {worst.bytes} B out-of-place {worst.busbw:.2f} GB/s, "
        f"in-place {worst.ip_busbw:.2f} GB/s"
    )


def _apart(point: Point) -> float:
    """How far in-place is from out-of-place, as a fraction of the larger of the two."""
    larger = max(point.busbw, point.ip_busbw or 0.0)
    return 0.0 if point.ip_busbw is None or larger <= 0 else abs(point.busbw - point.ip_busbw) / larger


def _inplace_apart(point: Point, regime: Regime) -> bool:
    return regime is not Regime.LATENCY and _apart(point) > INPLACE_TOLERANCE


def _wrong(curve: Curve) -> list[Anomaly]:
    out = [
        Anomaly(AnomalyKind.WRONG, p.bytes, p.bytes, f"#wrong {p.wrong}") for p in curve.points if p.wrong > 0
    ]
    if curve.out_of_bounds > 0:
        last = curve.points[-1].bytes
        out.append(Anomaly(AnomalyKind.WRONG, last, last, f"{curve.out_of_bounds} out-of-bounds value(s)"))
    return out


def representative_size(curves: Sequence[Curve]) -> int | None:
    """The op's size to tabulate: 8 GiB when all curves have it, else the largest common size."""
    common = set(curves[0].sizes).intersection(*(c.sizes for c in curves[1:])) if curves else set()
    if DEFAULT_REPRESENTATIVE in common:
        return DEFAULT_REPRESENTATIVE
    return max(common, default=None)


def efficiency(busbw: float | None, limit_gbytes: float | None) -> float | None:
    if busbw is None or not limit_gbytes:
        return None
    return busbw / limit_gbytes


@dataclass(frozen=True)
class ScalingPoint:
    nodes: int
    series: str
    busbw: float
    drop_pct: float  # from the smallest node count of its row; 0 for that one


def scaling(curves: Sequence[Curve], size: int) -> dict[int, tuple[ScalingPoint, ...]]:
    """Per ranks-per-node: BusBW at `size` by node count (one curve per node count: the first)."""
    by_rpn: dict[int, dict[int, tuple[str, float]]] = {}
    for curve in curves:
        value = curve.busbw_at(size)
        if value is not None:
            by_rpn.setdefault(curve.key.ranks_per_node, {}).setdefault(curve.key.nodes, (curve.series, value))
    out = {}
    for rpn, by_nodes in sorted(by_rpn.items()):
        nodes = sorted(by_nodes)
        base = by_nodes[nodes[0]][1]
        out[rpn] = tuple(ScalingPoint(n, *by_nodes[n], _drop(by_nodes[n][1], base)) for n in nodes)
    return out


def _drop(value: float, base: float) -> float:
    return 0.0 if base <= 0 else (base - value) / base * 100
