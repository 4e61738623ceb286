"""Localisation on simulated fleets: one bad NIC among N named in <= 3 rounds for any N, k bad NICs
in <= 3 rounds when k is small against N, bad hosts and bad links told apart from bad NICs; and the
outlier rule (median-based, robust to several bad links)."""

from __future__ import annotations

import random

import pytest

from fabcheck.pairs.localise import localise
from fabcheck.pairs.rounds import FAST, Endpoint, Pair, plan_rounds
from fabcheck.pairs.simulate import Fleet, SimulatedRunner, fleet_of
from fabcheck.pairs.verdict import Judge, Measurement, peer_stats

FLOOR = 360.0  # 90% of 400 Gb/s


def _judge(results: list[Measurement]) -> Judge:
    return Judge.from_survey(lambda _pair: FLOOR, results)


def _run(fleet: Fleet, seed: int = 1) -> tuple[object, SimulatedRunner]:
    runner = SimulatedRunner(fleet, seed=seed)
    diagnosis = localise(plan_rounds(fleet.nics_by_host, FAST), runner, _judge, fleet.endpoints)
    return diagnosis, runner


@pytest.mark.parametrize("count", [3, 4, 6, 7, 64, 256, 1024])
def test_one_bad_nic_is_named_within_three_rounds(count: int) -> None:
    bad = Endpoint(f"gpu{count // 2 - 1:04d}", "mlx5_3")
    diagnosis, runner = _run(fleet_of(count, bad_nics=[bad]))
    assert diagnosis.bad_nics == (bad,)
    assert diagnosis.bad_hosts == diagnosis.bad_links == diagnosis.unlocalised == ()
    assert diagnosis.rounds == len(runner.rounds_run) <= 3


@pytest.mark.parametrize("k", [2, 3, 8])
def test_k_bad_nics_at_1024_hosts_within_three_rounds(k: int) -> None:
    rng = random.Random(k)
    hosts = rng.sample(range(1024), k)
    bad = sorted(Endpoint(f"gpu{h:04d}", f"mlx5_{rng.randrange(8)}") for h in hosts)
    diagnosis, runner = _run(fleet_of(1024, bad_nics=bad), seed=k)
    assert list(diagnosis.bad_nics) == bad
    assert diagnosis.bad_links == diagnosis.unlocalised == ()
    assert len(runner.rounds_run) <= 3


def test_two_bad_nics_tested_against_each_other_are_both_named() -> None:
    fleet = fleet_of(16)
    (survey,) = plan_rounds(fleet.nics_by_host, FAST)
    pair = survey[0]
    diagnosis, _ = _run(fleet_of(16, bad_nics=list(pair.ends)))
    assert set(diagnosis.bad_nics) == set(pair.ends) and diagnosis.rounds == 2


def test_a_bad_host_is_named_as_the_host_and_a_bad_link_as_the_link() -> None:
    plain = fleet_of(1024)
    (survey,) = plan_rounds(plain.nics_by_host, FAST)
    links = [survey[5].key, survey[700].key, survey[2000].key]
    fleet = fleet_of(1024, bad_hosts=["gpu0100"], bad_links=links)
    diagnosis, runner = _run(fleet)
    assert diagnosis.bad_hosts == ("gpu0100",)
    assert diagnosis.bad_nics == ()
    assert set(diagnosis.bad_links) == set(links)
    assert len(runner.rounds_run) <= 3


def test_two_hosts_cannot_tell_which_end_is_slow() -> None:
    # No third NIC on the rail to re-pair with: both ends stay suspects, neither is passed.
    bad = Endpoint("gpu0000", "mlx5_3")
    diagnosis, _ = _run(fleet_of(2, bad_nics=[bad]))
    assert diagnosis.unlocalised == (bad, Endpoint("gpu0001", "mlx5_3"))
    assert diagnosis.bad_nics == () and diagnosis.rounds == 1


def test_a_healthy_fleet_is_one_round_and_nothing_slow() -> None:
    diagnosis, _runner = _run(fleet_of(256))
    assert (diagnosis.rounds, diagnosis.slow) == (1, {})


def test_a_subtle_outlier_above_the_floor_is_found_against_its_peers() -> None:
    # 0.94 x 384 Gb/s = 361 Gb/s: above the 360 floor, 6% under the peers.
    bad = Endpoint("gpu0007", "mlx5_1")
    diagnosis, _ = _run(fleet_of(64, bad_nics=[bad], factor=0.94))
    assert diagnosis.bad_nics == (bad,)


def test_outlier_reference_is_robust_to_several_bad_links() -> None:
    healthy = [384.0 - (i % 5) * 0.4 for i in range(40)]
    several_bad = healthy + [200.0] * 8
    with_bad, without = peer_stats(several_bad), peer_stats(healthy)
    assert with_bad is not None and without is not None
    assert abs(with_bad.median - without.median) < 2.0
    judge = Judge(lambda _p: 100.0, {100.0: with_bad})
    pair = Pair(Endpoint("a", "mlx5_0"), Endpoint("b", "mlx5_0"))
    assert judge.slow_reason(Measurement(pair, 370.0, 1)) is not None
    assert judge.slow_reason(Measurement(pair, 380.0, 1)) is None
    assert judge.slow_reason(Measurement(pair, None, 1, error="timed out")) == "no bandwidth: timed out"
    # A quiet fabric (MAD 0) still needs a 3% drop before a pair is an outlier.
    flat = peer_stats([384.0] * 10)
    assert flat is not None and flat.outlier_below == pytest.approx(384.0 * 0.97)
    assert peer_stats([384.0] * 3) is None


@pytest.mark.parametrize("slow_host", ["gpu0000", "gpu0001", "gpu0002", "gpu0003"])
def test_the_lab_shape_names_a_slow_host_within_three_rounds(slow_host: str) -> None:
    # Three 8-NIC hosts and one 2-NIC host: rails 2..7 have three hosts, so one NIC sits out the survey.
    fleet = fleet_of(4, bad_hosts=[slow_host], factor=0.1)
    nics = {h: list(fleet.rails) for h in fleet.hosts[:3]} | {"gpu0003": ["mlx5_0", "mlx5_1"]}
    runner = SimulatedRunner(fleet)
    ends = [Endpoint(h, n) for h, ns in nics.items() for n in ns]
    diagnosis = localise(plan_rounds(nics, FAST), runner, _judge, ends)
    assert diagnosis.bad_hosts == (slow_host,)
    assert diagnosis.bad_nics == diagnosis.bad_links == diagnosis.unlocalised == ()
    assert len(runner.rounds_run) <= 3
