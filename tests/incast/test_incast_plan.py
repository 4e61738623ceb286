"""fabcheck.incast.plan: who is victim and who sends, per leaf (the victim rotating over the leaves, a
leaf with one host left out with the reason) or per rail without switches, and the waves incasts pack into."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from fabcheck.errors import UsageError
from fabcheck.gate import incast_stage
from fabcheck.incast.plan import Incast, bounded_int, plan_by_leaf, plan_by_rail
from fabcheck.intent.fabric import Link
from fabcheck.pairs.rounds import Endpoint

VICTIM = Endpoint("gpu01", "mlx5_0")
SENDERS = (Endpoint("gpu02", "mlx5_0"), Endpoint("gpu03", "mlx5_0"))


def links(cabling: Mapping[tuple[str, str], str]) -> list[Link]:
    return [Link(host, nic, *end.split(":")) for (host, nic), end in cabling.items()]


def test_one_leaf_three_hosts_takes_the_first_host_as_victim_and_senders_one_per_host_in_turn() -> None:
    cabling = {
        (h, n): f"leaf01:swp{i}"
        for i, (h, n) in enumerate(
            ((h, n) for h in ("gpu01", "gpu02", "gpu03") for n in ("mlx5_0", "mlx5_1")), start=1
        )
    }
    plan = plan_by_leaf(["gpu01", "gpu02", "gpu03"], links(cabling), fan_in=3)
    [incast] = plan.incasts
    assert incast.victim == VICTIM
    # The victim's rail first on each host, one NIC per host per turn, capped at 3.
    assert incast.senders == (*SENDERS, Endpoint("gpu02", "mlx5_1"))
    assert incast.port_of(VICTIM) == "swp1" and incast.port_of(Endpoint("gpu02", "mlx5_1")) == "swp4"
    assert all(pair.server == VICTIM for pair in incast.pairs)


def test_the_victim_rotates_over_the_leaves_and_a_leaf_with_one_host_is_left_out_with_the_reason() -> None:
    cabling = {
        ("gpu01", "mlx5_0"): "leaf01:swp1",
        ("gpu02", "mlx5_0"): "leaf01:swp2",
        ("gpu01", "mlx5_1"): "leaf02:swp1",
        ("gpu02", "mlx5_1"): "leaf02:swp2",
        ("gpu01", "mlx5_2"): "leaf03:swp1",
    }
    plan = plan_by_leaf(["gpu01", "gpu02"], links(cabling), fan_in=8)
    assert [(i.where, i.victim) for i in plan.incasts] == [
        ("leaf01", VICTIM),
        ("leaf02", Endpoint("gpu02", "mlx5_1")),
    ]
    assert plan.left_out == ("leaf03: only gpu01 has NICs there, no sender for an incast",)


def test_without_switches_there_is_one_incast_per_rail() -> None:
    plan = plan_by_rail(
        {"gpu01": ("mlx5_0", "mlx5_1"), "gpu02": ("mlx5_0", "mlx5_1"), "gpu03": ("mlx5_0",)}, 8
    )
    assert [(i.where, i.victim, i.senders, i.switch) for i in plan.incasts] == [
        ("rail mlx5_0", VICTIM, SENDERS, None),
        ("rail mlx5_1", Endpoint("gpu02", "mlx5_1"), (Endpoint("gpu01", "mlx5_1"),), None),
    ]


@pytest.mark.parametrize("value", [0, -1, 65, "8", True, 2.5])
def test_a_bad_fan_in_is_a_usage_error_naming_the_variable(value: Any) -> None:
    with pytest.raises(UsageError, match=r"incast_fan_in=.*whole number from 1 to 64"):
        bounded_int({"incast_fan_in": value}, "incast_fan_in", 8, 64)
    assert bounded_int({}, "incast_fan_in", 8, 64) == 8


def test_incasts_pack_into_waves_without_splitting_one() -> None:
    one = Incast("leaf01", "leaf01", VICTIM, SENDERS)
    big = Incast("leaf02", "leaf02", VICTIM, SENDERS * 3)
    assert incast_stage.waves([one, one, big, one], width=4) == [[one, one], [big], [one]]
