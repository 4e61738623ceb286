"""Pairing: every pair of hosts exactly once per rail in all-pairs mode, no NIC twice in a round, and
fast mode covering every NIC in one round (two with an odd host count)."""

from __future__ import annotations

import itertools

import pytest

from fabcheck.pairs.rounds import (
    ALL_PAIRS,
    FAST,
    Endpoint,
    Round,
    circle_matchings,
    plan_rounds,
)


def is_disjoint(round_: Round) -> bool:
    """No NIC twice in the round (so on each rail no host twice)."""
    ends = [end for pair in round_ for end in pair.ends]
    return len(ends) == len(set(ends))


def _hosts(count: int) -> list[str]:
    return [f"h{i:02d}" for i in range(count)]


@pytest.mark.parametrize("count", [2, 3, 4, 5, 8, 9, 16, 31])
def test_circle_meets_every_pair_once_and_no_host_twice_a_round(count: int) -> None:
    matchings = circle_matchings(_hosts(count))
    assert len(matchings) == (count - 1 if count % 2 == 0 else count)
    met = [frozenset(pair) for matching in matchings for pair in matching]
    assert sorted(met, key=sorted) == sorted(
        (frozenset(p) for p in itertools.combinations(_hosts(count), 2)), key=sorted
    )
    for matching in matchings:
        hosts = [h for pair in matching for h in pair]
        assert len(hosts) == len(set(hosts))


@pytest.mark.parametrize("count", [4, 7])
def test_all_pairs_runs_rails_side_by_side(count: int) -> None:
    nics = {h: ["mlx5_0", "mlx5_1"] for h in _hosts(count)}
    rounds = plan_rounds(nics, ALL_PAIRS)
    assert len(rounds) == (count - 1 if count % 2 == 0 else count)
    assert all(is_disjoint(r) for r in rounds)
    links = [p.key for r in rounds for p in r]
    assert len(links) == len(set(links)) == 2 * count * (count - 1) // 2
    assert all(p.server.nic == p.client.nic for r in rounds for p in r)


def test_fast_mode_is_one_round_and_each_rail_meets_other_peers() -> None:
    nics = {h: [f"mlx5_{r}" for r in range(4)] for h in _hosts(8)}
    (only,) = plan_rounds(nics, FAST)
    assert is_disjoint(only)
    assert {end for p in only for end in p.ends} == {Endpoint(h, n) for h, ns in nics.items() for n in ns}
    of_h00 = [p for p in only if "h00" in (p.server.host, p.client.host)]
    peers_of_h00 = {p.client.host if p.server.host == "h00" else p.server.host for p in of_h00}
    assert len(peers_of_h00) == 4  # a different peer on each rail


def test_fast_mode_with_an_odd_rail_leaves_one_nic_per_such_rail_for_the_repairing() -> None:
    # The lab's shape: three 8-NIC hosts and one 2-NIC host; rails 2..7 have three hosts.
    nics = {h: [f"mlx5_{r}" for r in range(8)] for h in _hosts(3)} | {"h03": ["mlx5_0", "mlx5_1"]}
    (only,) = plan_rounds(nics, FAST)
    assert is_disjoint(only)
    every = {Endpoint(h, n) for h, ns in nics.items() for n in ns}
    left_out = every - {end for p in only for end in p.ends}
    assert sorted(end.nic for end in left_out) == [f"mlx5_{r}" for r in range(2, 8)]


def test_a_rail_with_one_host_has_no_pair_and_an_unknown_mode_is_refused() -> None:
    assert plan_rounds({"h00": ["mlx5_0"]}, FAST) == []
    with pytest.raises(ValueError, match="expected one of fast, all"):
        plan_rounds({"h00": ["mlx5_0"]}, "ring")
