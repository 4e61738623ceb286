"""Regime, anomaly, scaling and comparison rules on synthetic curves, with values worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabcheck.desired.nccl import physical_limit_gbytes
from fabcheck.perf import analysis
from fabcheck.perf.analysis import AnomalyKind, Regime
from fabcheck.perf.compare import compare_curves
from fabcheck.perf.curves import Curve, Point, SeriesKey, load_run_dir, nominal_size
from fabcheck.perf.synthetic import SyntheticRun, render_output

MIB = 1 << 20


def curve(busbw: list[float], *, ip: list[float | None] | None = None, wrong: dict[int, int] | None = None,
          nodes: int = 2, ranks: int = 16, op: str = "all_reduce", first: int = MIB,
          out_of_bounds: int = 0) -> Curve:  # fmt: skip
    sizes = [first << i for i in range(len(busbw))]
    ips = ip if ip is not None else list(busbw)
    points = tuple(
        Point(size, value, ip_value, 10.0, (wrong or {}).get(size, 0))
        for size, value, ip_value in zip(sizes, busbw, ips, strict=True)
    )
    return Curve(SeriesKey(op, nodes, ranks), "a.txt", points, ("h1",), None, out_of_bounds)


def test_regimes_split_at_10_and_90_percent_of_the_plateau() -> None:
    # plateau 100: 9.99 is latency, 10 is transition (from 10%), 89.99 transition, 90 saturated
    c = curve([1.0, 9.99, 10.0, 50.0, 89.99, 90.0, 100.0])
    assert analysis.regimes(c.points) == (
        Regime.LATENCY, Regime.LATENCY, Regime.TRANSITION, Regime.TRANSITION, Regime.TRANSITION,
        Regime.SATURATED, Regime.SATURATED,
    )  # fmt: skip
    spans = analysis.regime_spans(c.points)
    assert spans[Regime.LATENCY] == (MIB, 2 * MIB, 2)
    assert spans[Regime.TRANSITION] == (4 * MIB, 16 * MIB, 3)
    assert spans[Regime.SATURATED] == (32 * MIB, 64 * MIB, 2)


def test_a_curve_that_never_measured_is_all_latency() -> None:
    assert set(analysis.regimes(curve([0.0, 0.0]).points)) == {Regime.LATENCY}


def test_one_size_dip_is_flagged_against_the_best_smaller_size() -> None:
    # 70 after a best of 100: 30% below (> 20%, > 0.05 GB/s); the next sizes recover
    [dip] = analysis.anomalies(curve([10.0, 50.0, 100.0, 70.0, 100.0, 101.0]))
    assert (dip.kind, dip.first, dip.last) == (AnomalyKind.DIP, 8 * MIB, 8 * MIB)
    assert dip.detail == "BusBW 70.00 GB/s at worst, 30% below 100.00 GB/s at 4194304 B"


def test_a_collapse_over_several_sizes_is_one_dip() -> None:
    [dip] = analysis.anomalies(curve([20.0, 30.0, 1.5, 3.0, 1.4, 25.0, 36.0]))
    # 1.5, 3.0 and 1.4 at 4..16 MiB; 25 at 32 MiB is back within 20% of 30 (the bound is 24)
    assert (dip.first, dip.last) == (4 * MIB, 16 * MIB)
    assert "1.40 GB/s at worst" in dip.detail and "95% below 30.00 GB/s" in dip.detail


@pytest.mark.parametrize(
    "busbw",
    [
        [50.0, 100.0, 81.0, 100.0],  # 19% below: inside the rule
        [0.05, 0.04, 0.03, 10.0],  # 40% below, but 0.05 GB/s is under 1% of the plateau: rounding noise
        [1.0, 2.0, 1.96, 2.0],  # 2% below
    ],
)
def test_no_dip_within_the_rule(busbw: list[float]) -> None:
    assert not [a for a in analysis.anomalies(curve(busbw)) if a.kind is AnomalyKind.DIP]


def test_a_dip_must_exceed_the_printing_resolution() -> None:
    # plateau 1.0: 0.10 -> 0.06 is 40% below but only 0.04 GB/s: two rounded decimals can do that
    assert not analysis.anomalies(curve([0.10, 0.06, 1.0]))
    [dip] = analysis.anomalies(curve([0.20, 0.10, 1.0]))  # 0.10 GB/s below: flagged
    assert dip.first == 2 * MIB


def test_in_place_disagreement_beyond_10_percent_outside_the_latency_regime() -> None:
    busbw = [1.0, 50.0, 100.0, 100.0]
    ip = [0.5, 50.0, 89.0, 91.0]  # 50% apart at 1 MiB but latency; 11% at 4 MiB; 9% at 8 MiB
    [flag] = analysis.anomalies(curve(busbw, ip=ip))
    assert (flag.kind, flag.first, flag.last) == (AnomalyKind.INPLACE, 4 * MIB, 4 * MIB)
    assert flag.detail.startswith("up to 11% apart")


def test_in_place_na_is_never_a_disagreement() -> None:
    assert not analysis.anomalies(curve([50.0, 100.0], ip=[None, None]))


def test_wrong_elements_and_out_of_bounds_are_wrong_data() -> None:
    flags = analysis.anomalies(curve([50.0, 100.0], wrong={2 * MIB: 3}, out_of_bounds=2))
    assert [(a.kind, a.first, a.detail) for a in flags] == [
        (AnomalyKind.WRONG, 2 * MIB, "#wrong 3"),
        (AnomalyKind.WRONG, 2 * MIB, "2 out-of-bounds value(s)"),
    ]


def test_representative_size_is_8_gib_when_all_have_it_else_the_largest_common() -> None:
    gib8 = 8 << 30
    long = curve([1.0] * 14, first=MIB)  # 1 MiB .. 8 GiB
    short = curve([1.0] * 11, first=MIB)  # 1 MiB .. 1 GiB
    assert analysis.representative_size([long, curve([1.0] * 15, first=MIB)]) == gib8
    assert analysis.representative_size([long, short]) == 1 << 30
    assert analysis.representative_size([curve([1.0], first=MIB), curve([1.0], first=4 * MIB)]) is None


def test_scaling_drop_from_the_fewest_nodes_per_ranks_per_node() -> None:
    curves = [
        curve([400.0], nodes=1, ranks=8),
        curve([360.0], nodes=2, ranks=16),
        curve([300.0], nodes=4, ranks=32),
        curve([100.0], nodes=4, ranks=4),  # 1 rank per node: a row of its own
    ]
    table = analysis.scaling(curves, MIB)
    assert [(p.nodes, p.busbw, round(p.drop_pct, 6)) for p in table[8]] == [
        (1, 400.0, 0.0),
        (2, 360.0, 10.0),
        (4, 300.0, 25.0),
    ]
    assert [(p.nodes, p.drop_pct) for p in table[1]] == [(4, 0.0)]


def test_efficiency_against_nics_times_line_rate() -> None:
    limit = physical_limit_gbytes(8, 400)  # 8 x 400 Gb/s = 3200 Gb/s = 400 GB/s
    assert limit == 400.0
    assert analysis.efficiency(360.0, limit) == pytest.approx(0.9)
    assert analysis.efficiency(360.0, None) is None


def test_compare_percent_per_size_and_regime_wins() -> None:
    a = curve([1.0, 5.0, 50.0, 100.0])  # regimes on A: latency, latency, transition, saturated
    b = curve([2.0, 5.0, 50.2, 80.0])
    result = compare_curves(a, b)
    assert [(d.bytes, d.diff_pct) for d in result.diffs] == [
        (MIB, -50.0),
        (2 * MIB, 0.0),
        (4 * MIB, pytest.approx((50.0 - 50.2) / 50.2 * 100)),
        (8 * MIB, 25.0),
    ]
    wins = {w.regime: (w.sizes, w.mean_a, w.mean_b, w.winner) for w in result.wins}
    assert wins[Regime.LATENCY] == (2, 3.0, 3.5, "B")  # B's mean 3.5 is 16.7% above 3.0
    assert wins[Regime.TRANSITION] == (1, 50.0, 50.2, "tie")  # 0.4%: within the 1% margin
    assert wins[Regime.SATURATED] == (1, 100.0, 80.0, "A")


def test_compare_a_zero_b_is_no_percentage() -> None:
    [diff] = compare_curves(curve([1.0]), curve([0.0])).diffs
    assert diff.diff_pct is None


def test_sizes_rounded_to_whole_elements_per_rank_line_up(tmp_path: Path) -> None:
    # 3 ranks: nccl-tests prints 1048572, 2097144, 4194288 B for the asked 1, 2, 4 MiB
    rounded = {1048572: 10.0, 2097144: 20.0, 4194288: 30.0}
    text = render_output(SyntheticRun("all_reduce", ["h1", "h2", "h3"], 1, rounded, asked=(1 << 20, 4 << 20)))
    (tmp_path / "three.txt").write_text(text)
    [three] = load_run_dir(tmp_path).curves
    assert three.sizes == (MIB, 2 * MIB, 4 * MIB) and not three.truncated
    assert nominal_size(4194288, MIB) == 4 * MIB
    assert nominal_size(960, 1024) == 1024  # 1 KiB over 24 ranks of float
    assert nominal_size(3 * MIB, MIB) == 3 * MIB  # not a rounding of 2 or 4 MiB: stays
    assert nominal_size(MIB + 4, MIB) == MIB + 4  # above a step: nccl-tests never rounds up
    assert nominal_size(4194288, None) == 4194288  # no doubling sweep: as printed
