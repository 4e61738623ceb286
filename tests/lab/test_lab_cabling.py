"""The lab's cabling map is complete, never cables a port twice, and spreads rails over the switches."""

from __future__ import annotations

import pytest

from fabcheck_lab.cabling import plan_links, ports_needed


def test_every_rail_gets_its_own_port() -> None:
    rails = {f"gpu{h:02d}": [f"mlx5_{r}" for r in range(8)] for h in range(1, 5)}
    ports = {"leaf01": [f"swp{i}" for i in range(1, 17)], "leaf02": [f"Ethernet{8 * i}" for i in range(16)]}
    links = plan_links(rails, ports)
    ends = [end for nics in links.values() for end in nics.values()]
    assert sorted(links) == sorted(rails) and all(len(nics) == 8 for nics in links.values())
    assert len(ends) == len(set(ends)) == 32
    assert links["gpu01"]["mlx5_0"] == "leaf01:swp1" and links["gpu01"]["mlx5_1"] == "leaf02:Ethernet0"
    assert sum(end.startswith("leaf01:") for end in ends) == 16


def test_port_count_grows_with_the_lab() -> None:
    assert ports_needed(2048, 16, 32) == 128
    assert ports_needed(16, 16, 32) == 32
    assert ports_needed(10, 0, 32) == 0


def test_too_few_ports_is_an_error() -> None:
    with pytest.raises(ValueError, match="too few"):
        plan_links({"gpu01": ["mlx5_0", "mlx5_1"]}, {"leaf01": ["swp1"]})


def test_no_switches_no_links() -> None:
    assert plan_links({"gpu01": ["mlx5_0"]}, {}) == {}
