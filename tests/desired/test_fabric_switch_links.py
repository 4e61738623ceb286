"""Ethernet switch-to-switch cabling (issue 39): a switch's `fabric_links: {uplink: 'switch:port'}`,
`switch_tier`, and spines with no host ports; every problem one error naming file:line and variable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fabcheck.errors import IntentError
from fabcheck.intent.fabric import InventoryNode, SwitchLink, fabric_of, read_fabric

PASSWORD = "{{ lookup('ansible.builtin.env', 'SWITCH_PASSWORD') }}"


def nowhere(_value: Any) -> str:
    return ""


def switch(
    name: str, tier: str | None, ports: list[str] | None, uplinks: list[str], **more: Any
) -> InventoryNode:
    variables: dict[str, Any] = {
        "switch_address": "127.0.3.1",
        "switch_username": "admin",
        "switch_password": PASSWORD,
        "switch_uplinks": uplinks,
    }
    if tier is not None:
        variables["switch_tier"] = tier
    if ports is not None:
        variables["switch_ports"] = ports
    return InventoryNode(name, ("switches", "switches_nvue"), variables | more, {})


def host(name: str, links: dict[str, str]) -> InventoryNode:
    return InventoryNode(name, ("gpu_hosts",), {"fabric_links": links}, {0: "mlx5_0"})


def two_tiers(**leaf_more: Any) -> list[InventoryNode]:
    return [
        switch("leaf-01", None, ["swp1"], ["swp33", "swp34"], **leaf_more),
        switch("spine-01", "spine", None, ["swp1", "swp2"], fabric_links={"swp2": "leaf-01:swp34"}),
        host("gpu01", {"mlx5_0": "leaf-01:swp1"}),
    ]


def problems(nodes: list[InventoryNode]) -> list[str]:
    with pytest.raises(IntentError) as err:
        read_fabric(nodes, nowhere)
    return err.value.problems


def test_cables_declared_at_either_end_or_both_read_once_lower_tier_first() -> None:
    fabric = read_fabric(
        two_tiers(fabric_links={"swp33": "spine-01:swp1", "swp34": "spine-01:swp2"}), nowhere
    )
    assert fabric.switch_links == (
        SwitchLink("leaf-01", "swp33", "spine-01", "swp1"),
        SwitchLink("leaf-01", "swp34", "spine-01", "swp2"),
    )
    assert fabric.switch_links[0].label == "leaf-01:swp33 -- spine-01:swp1"
    spine = fabric.switch("spine-01")
    assert (spine.tier, spine.host_ports, spine.uplinks) == ("spine", (), ("swp1", "swp2"))
    assert fabric.switch("leaf-01").tier == "leaf"  # the default


def test_a_core_above_a_spine_and_natural_port_order() -> None:
    nodes = [
        switch("spine-01", "spine", None, ["swp2", "swp10"], fabric_links={"swp10": "core-01:swp1"}),
        switch("core-01", "core", [], ["swp1", "swp2"], fabric_links={"swp2": "spine-01:swp2"}),
    ]
    fabric = read_fabric(nodes, nowhere)
    assert [link.label for link in fabric.switch_links] == [
        "spine-01:swp2 -- core-01:swp2",
        "spine-01:swp10 -- core-01:swp1",
    ]


def test_a_leaf_still_needs_host_ports_and_a_spine_needs_ports_of_some_kind() -> None:
    found = problems([switch("leaf-01", "leaf", None, ["swp33"]), switch("spine-01", "spine", None, [])])
    assert len(found) == 2
    assert all("switch_ports = None: expected a list of port names" in p for p in found)


def test_bad_tier_refused() -> None:
    (found,) = problems([switch("leaf-01", "aggregation", ["swp1"], [])])
    assert "leaf-01: switch_tier = 'aggregation': expected one of leaf, spine, core" in found


@pytest.mark.parametrize(
    ("links", "message"),
    [
        ({"swp1": "spine-01:swp1"}, "swp1 is not one of leaf-01's switch_uplinks (swp33, swp34)"),
        ({"swp33": "spine-09:swp1"}, "unknown switch 'spine-09' (switches: leaf-01, spine-01)"),
        ({"swp33": "spine-01:swp7"}, "swp7 is not one of spine-01's switch_uplinks (swp1, swp2)"),
        ({"swp33": "spine-01"}, "expected 'switch:port'"),
        ({"swp33": "leaf-01:swp34"}, "a cable from a switch to itself"),
        (
            {"swp33": "spine-01:swp1", "swp34": "spine-01:swp1"},
            "switch port spine-01:swp1 is cabled to 2 ports",
        ),
        (
            {"swp33": "spine-01:swp2"},
            "switch port spine-01:swp2 is cabled to 2 ports",
        ),  # the spine says swp34
    ],
)
def test_bad_switch_links_refused(links: dict[str, str], message: str) -> None:
    found = problems(two_tiers(fabric_links=links))
    assert any(message in p for p in found), found


def test_a_cable_between_two_switches_of_one_tier_refused() -> None:
    nodes = [
        switch("leaf-01", "leaf", ["swp1"], ["swp33"], fabric_links={"swp33": "leaf-02:swp33"}),
        switch("leaf-02", "leaf", ["swp1"], ["swp33"]),
    ]
    (found,) = problems(nodes)
    assert "leaf-01: fabric_links.swp33 = 'leaf-02:swp33': a cable between two leaf switches" in found


def test_bad_switch_links_in_a_real_inventory_name_file_and_line(tmp_path: Path) -> None:
    from fabcheck.intent.loader import load_inventory

    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent:\n  rails: {0: mlx5_0}\n")
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(
        "all:\n"
        "  children:\n"
        "    gpu_hosts:\n"
        "      hosts:\n"
        "        gpu01: {fabric_links: {mlx5_0: 'leaf-01:swp1'}}\n"
        "    switches_nvue:\n"
        "      vars: {switch_address: 192.0.2.1, switch_username: cumulus}\n"
        "      hosts:\n"
        "        leaf-01:\n"
        "          switch_ports: [swp1]\n"
        "          switch_uplinks: [swp33]\n"
        "          fabric_links: {swp33: 'spine-01:swp5'}\n"
        "        spine-01:\n"
        "          switch_tier: spine\n"
        "          switch_uplinks: [swp1]\n"
    )
    with pytest.raises(IntentError) as err:
        fabric_of(load_inventory(tmp_path))
    (found,) = err.value.problems
    assert found.startswith(f"{hosts}:12: leaf-01: fabric_links.swp33 = 'spine-01:swp5': swp5 is not one of")
