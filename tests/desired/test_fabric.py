"""Switch inventory and cabling map: what is accepted, and one clear error per problem."""

from __future__ import annotations

from typing import Any

import pytest

from fabcheck.errors import IntentError
from fabcheck.intent.fabric import Fabric, InventoryNode, Link, fabric_of, read_fabric


def nowhere(_value: Any) -> str:
    return ""


def switch(name: str, platform: str = "nvue", **overrides: Any) -> InventoryNode:
    ports = {
        "nvue": ["swp1", "swp2"],
        "sonic": ["Ethernet0", "Ethernet4"],
        "eos": ["Ethernet1/1", "Ethernet2"],
    }
    variables = {
        "switch_address": "127.0.3.1",
        "switch_username": "admin",
        "switch_ports": ports[platform],
        "switch_password": "{{ lookup('ansible.builtin.env', 'SWITCH_PASSWORD') }}",
    } | overrides
    return InventoryNode(name, ("switches", f"switches_{platform}"), variables, {})


def host(name: str, links: Any, rails: dict[int, str] | None = None) -> InventoryNode:
    variables = {} if links is None else {"fabric_links": links}
    return InventoryNode(name, ("gpu_hosts",), variables, rails if rails is not None else {0: "mlx5_0"})


def link_of_nic(fabric: Fabric, host: str, nic: str) -> Link:
    (link,) = (lk for lk in fabric.links if (lk.host, lk.nic) == (host, nic))
    return link


def problems(nodes: list[InventoryNode]) -> list[str]:
    with pytest.raises(IntentError) as err:
        read_fabric(nodes, nowhere)
    return err.value.problems


def test_switches_and_links_are_read() -> None:
    fabric = read_fabric(
        [
            switch("leaf01", switch_port_speeds={"swp2": 200}),
            switch("leaf02", "eos", switch_uplinks=["Ethernet49/1"]),
            host("gpu01", {"mlx5_0": "leaf01:swp1"}),
            host("gpu02", {"mlx5_0": "leaf02:Ethernet1/1"}),
        ],
        nowhere,
    )
    leaf01, leaf02 = fabric.switches
    assert (leaf01.platform, leaf01.device_type, leaf01.ssh_port) == ("nvue", "cumulus_linux", 22)
    assert leaf01.port_speeds == {"swp2": 200}
    assert (leaf02.device_type, leaf02.uplinks) == ("arista_eos", ("Ethernet49/1",))
    assert link_of_nic(fabric, "gpu02", "mlx5_0").switch_end == "leaf02:Ethernet1/1"
    assert [lk.host for lk in fabric.links_of_switch("leaf01")] == ["gpu01"]


def test_hosts_without_switches_need_no_cabling() -> None:
    assert read_fabric([host("gpu01", None)], nowhere).links == ()


def test_switch_platform_variable_and_contradictions() -> None:
    by_var = InventoryNode("sw", ("switches",), switch("x").variables | {"switch_platform": "nvue"}, {})
    assert read_fabric([by_var], nowhere).switches[0].platform == "nvue"
    found = problems(
        [
            InventoryNode("nx", ("switches",), switch("x").variables | {"switch_platform": "nxos"}, {}),
            switch("leaf01", switch_platform="eos"),
            switch("leaf02", netmiko_device_type="arista_eos"),
        ]
    )
    assert any("nx: switch_platform = 'nxos': no templates or driver" in p for p in found)
    assert any("leaf01: switch_platform = 'eos': contradicts its group(s) switches_nvue" in p for p in found)
    assert any(
        "leaf02: netmiko_device_type = 'arista_eos': platform nvue is driven as cumulus_linux" in p
        for p in found
    )


def test_every_switch_problem_is_reported_at_once() -> None:
    found = problems(
        [
            switch(
                "leaf01",
                switch_address="",
                switch_port="22x",
                switch_ports=["swp1", "Ethernet0", "swp1"],
                switch_uplinks=["swp1"],
                switch_port_speeds={"swp9": 100},
            )
        ]
    )
    text = "\n".join(found)
    assert "switch_address = '': required" in text
    assert "switch_port = '22x': expected a TCP port" in text
    assert "['Ethernet0'] are not nvue port names" in text
    assert "['swp1'] listed more than once" in text
    assert "['swp1'] are also host-facing switch_ports" in text
    assert "switch_port_speeds = 'swp9': not one of switch_ports" in text


def test_plain_text_password_is_refused_without_echoing_it() -> None:
    found = problems([switch("leaf01", switch_password="hunter2")])
    assert found == [
        "leaf01: switch_password = <redacted>: a password in plain text in the inventory: encrypt it "
        "with ansible-vault or read it with lookup('ansible.builtin.env', ...)"
    ]
    assert "hunter2" not in "".join(found)


def test_cabling_problems() -> None:
    found = problems(
        [
            switch("leaf01"),
            host("gpu01", {"mlx5_0": "leaf09:swp1", "mlx5_1": "leaf01:swp7", "mlx5_2": "swp1"}, {}),
            host("gpu02", {"mlx5_0": "leaf01:swp1"}),
            host("gpu03", {"mlx5_0": "leaf01:swp1"}),
            host("gpu04", None, {0: "mlx5_0", 1: "mlx5_1"}),
        ]
    )
    text = "\n".join(found)
    assert "gpu01: fabric_links.mlx5_0 = 'leaf09:swp1': unknown switch 'leaf09' (switches: leaf01)" in text
    assert "gpu01: fabric_links.mlx5_1 = 'leaf01:swp7': swp7 is not one of leaf01's switch_ports" in text
    assert "gpu01: fabric_links.mlx5_2 = 'swp1': expected 'switch:port'" in text
    assert "switch port leaf01:swp1 is cabled to 2 NICs: gpu02:mlx5_0, gpu03:mlx5_0" in text
    assert "gpu04: fabric_links: rail NIC(s) mlx5_0, mlx5_1 have no switch port" in text


def test_problems_in_a_real_inventory_name_file_and_line(tmp_path: Any) -> None:
    from fabcheck.intent.loader import load_inventory

    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent:\n  rails: {0: mlx5_0}\n")
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(
        "all:\n"
        "  children:\n"
        "    gpu_hosts:\n"
        "      hosts:\n"
        "        gpu01:\n"
        "          fabric_links: {mlx5_0: 'leaf01:swp9'}\n"
        "    switches_nvue:\n"
        "      hosts:\n"
        "        leaf01:\n"
        "          switch_address: 192.0.2.1\n"
        "          switch_username: \"{{ 'cumulus' }}\"\n"
        "          switch_password: plain-secret\n"
        "          switch_ports: [swp1]\n"
    )
    inventory = load_inventory(tmp_path)
    with pytest.raises(IntentError) as err:
        fabric_of(inventory)
    text = "\n".join(err.value.problems)
    assert f"{hosts}:6" in text and "fabric_links.mlx5_0 = 'leaf01:swp9': swp9 is not one of" in text
    assert f"{hosts}:12" in text and "switch_password = <redacted>" in text
    assert "plain-secret" not in text


def test_the_example_inventory_is_fully_cabled() -> None:
    from pathlib import Path

    from fabcheck.intent.loader import load_inventory

    inventory = load_inventory(Path(__file__).resolve().parents[2] / "inventory" / "example")
    fabric = fabric_of(inventory)
    assert [s.name for s in fabric.switches] == ["leaf01", "leaf02"]
    assert len(fabric.links) == 32
    assert link_of_nic(fabric, "gpu04", "mlx5_7").switch_end == "leaf02:Ethernet16"
