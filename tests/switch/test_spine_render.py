"""A spine or core (issue 39: `switch_tier`, no host ports, only `switch_uplinks`) renders on every
platform, and its uplinks are configured exactly as a leaf's are: nothing in its configuration that a
leaf with the same uplinks would not have."""

from __future__ import annotations

import re

import pytest

from fabcheck.desired import desired_switch
from fabcheck.intent.fabric import InventoryNode, read_fabric
from fabcheck.intent.model import FabricIntent
from fabcheck.switch.render import render_switch

PORTS = {  # (host ports, uplinks) in each platform's names (fabcheck.fabricplan.ports)
    "nvue": (["swp1s0", "swp1s1"], ["swp17s0", "swp17s1"]),
    "sonic": (["Ethernet0", "Ethernet4"], ["Ethernet128", "Ethernet132"]),
    "eos": (["Ethernet1/1", "Ethernet1/5"], ["Ethernet17/1", "Ethernet17/5"]),
}


def switch_node(name: str, platform: str, variables: dict[str, object]) -> InventoryNode:
    login = {
        "switch_address": "192.0.2.1",
        "switch_username": "admin",
        "switch_password": "{{ lookup('ansible.builtin.env', 'P') }}",
    }
    return InventoryNode(name, ("switches", f"switches_{platform}"), login | variables, {})


def rendered(platform: str, tier: str) -> tuple[str, list[str]]:
    """The rendered text of `spine-01` as a spine (uplinks only) or as a leaf (host ports too)."""
    hosts, uplinks = PORTS[platform]
    if tier == "spine":
        spine = switch_node("spine-01", platform, {"switch_tier": "spine", "switch_uplinks": uplinks})
        leaf = switch_node(
            "leaf-01",
            platform,
            {
                "switch_ports": hosts,
                "switch_uplinks": uplinks,
                "fabric_links": {
                    mine: f"spine-01:{theirs}" for mine, theirs in zip(uplinks, uplinks, strict=True)
                },
            },
        )
        nodes = [spine, leaf]
    else:
        nodes = [switch_node("spine-01", platform, {"switch_ports": hosts, "switch_uplinks": uplinks})]
    gpu = InventoryNode(
        "gpu01", ("gpu_hosts",), {"fabric_links": {"mlx5_0": f"{nodes[-1].name}:{hosts[0]}"}}, {0: "mlx5_0"}
    )
    fabric = read_fabric([*nodes, gpu], lambda _value: "")
    desired = desired_switch(FabricIntent.model_validate({}), fabric, "spine-01")
    if tier == "spine":
        assert [p.role for p in desired.ports] == ["uplink", "uplink"]
        assert len(fabric.switch_links) == 2
    return render_switch(desired).text, uplinks


NVUE_PORT_LIST = re.compile(r"^(nv set interface )(\S+)( .*)$")


def per_port_lines(text: str) -> set[str]:
    """The rendered lines, an NVUE `nv set interface a,b,c ...` line split into one line per port."""
    lines = set()
    for line in text.splitlines():
        match = NVUE_PORT_LIST.match(line)
        if match and "," in match[2]:
            lines.update(f"{match[1]}{port}{match[3]}" for port in match[2].split(","))
        else:
            lines.add(line)
    return lines


@pytest.mark.parametrize("platform", sorted(PORTS))
def test_a_spine_renders_its_uplinks_as_a_leaf_does(platform: str) -> None:
    spine_text, uplinks = rendered(platform, "spine")
    leaf_text, _ = rendered(platform, "leaf")
    assert all(port in spine_text for port in uplinks)
    hosts = PORTS[platform][0]
    assert not any(port in spine_text for port in hosts if not any(port in up for up in uplinks))
    assert per_port_lines(spine_text) <= per_port_lines(leaf_text)
