"""A plan written as inventory (fabcheck.fabricplan.inventory) loads through the real loader
(fabcheck.intent.loader, read_fabric, read_ib_plan) with every planned cable present, named as each
platform names its ports; placeholders the plan cannot know are refused until set."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabcheck.cli.intent import fabric_summary
from fabcheck.errors import IntentError
from fabcheck.fabricplan.catalog import CATALOG, generic_model
from fabcheck.fabricplan.inventory import (
    host_fabric_links,
    plan_group_vars,
    plan_inventory,
    switch_variables,
    write_plan_inventory,
)
from fabcheck.fabricplan.model import FabricPlan, PlanError, PlanInput, SwitchModel
from fabcheck.fabricplan.ports import port_name
from fabcheck.fabricplan.sizing import plan_fabric
from fabcheck.intent.fabric import Fabric, fabric_of
from fabcheck.intent.loader import load_inventory


def plan(fabric: str, gpus: int, per_node: int, leaf: SwitchModel, gbps: int = 400) -> FabricPlan:
    return plan_fabric(PlanInput(fabric, gpus, per_node, per_node, gbps, leaf, leaf))


def completed(plan_: FabricPlan, directory: Path) -> Fabric:
    """Write the plan, set what the user sets (switch addresses and login), load it whole."""
    write_plan_inventory(plan_, directory)
    if plan_.input.fabric != "ib":
        (directory / "group_vars" / "switches.yml").write_text(
            "switch_username: admin\n"
            "switch_password: \"{{ lookup('ansible.builtin.env', 'FABCHECK_SWITCH_PASSWORD') }}\"\n"
        )
        (directory / "host_vars").mkdir()
        for index, switch in enumerate(plan_.switches, start=1):
            (directory / "host_vars" / f"{switch.name}.yml").write_text(f"switch_address: 192.0.2.{index}\n")
    return fabric_of(load_inventory(directory))


def planned_ends(plan_: FabricPlan) -> tuple[set[tuple[str, str, str, str]], set[tuple[str, str, str, str]]]:
    """(host cables, switch cables) of the plan, each as (a device, a port, b device, b port) numbers."""
    host = {(c.a.device, c.a.port, c.b.device, c.b.port) for c in plan_.cables if c.tier == "host"}
    switch = {(c.a.device, c.a.port, c.b.device, c.b.port) for c in plan_.cables if c.tier != "host"}
    return host, switch


def assert_ethernet_cables_present(plan_: FabricPlan, fabric: Fabric) -> None:
    lanes = plan_.input.leaf_model.lanes(plan_.input.nic_gbps)
    platform = plan_.input.leaf_model.platform
    spine_lanes = plan_.input.spine_model.lanes(plan_.input.nic_gbps)
    host, switch = planned_ends(plan_)
    assert {(lk.host, lk.nic, lk.switch, lk.port) for lk in fabric.links} == {
        (h, nic, leaf, port_name(platform, int(p), lanes)) for h, nic, leaf, p in host
    }

    def named(device: str, port: str) -> str:
        tier = next(s.tier for s in plan_.switches if s.name == device)
        return port_name(platform, int(port), lanes if tier == "leaf" else spine_lanes)

    assert {(sl.a_switch, sl.a_port, sl.b_switch, sl.b_port) for sl in fabric.switch_links} == {
        (a, named(a, ap), b, named(b, bp)) for a, ap, b, bp in switch
    }
    assert len(fabric.links) + len(fabric.switch_links) == len(plan_.cables) == plan_.bom.cables
    tiers = {s.name: s.tier for s in plan_.switches}
    assert {s.name: s.tier for s in fabric.switches} == tiers
    for switch_ in fabric.switches:
        if tiers[switch_.name] != "leaf":
            assert switch_.host_ports == () and switch_.uplinks


def test_one_tier_roce_loads_with_every_cable(tmp_path: Path) -> None:
    one = plan("roce", 64, 8, CATALOG["sn5600"])
    assert one.tiers == 1
    fabric = completed(one, tmp_path)
    assert_ethernet_cables_present(one, fabric)
    assert fabric.switch_links == () and len(fabric.links) == 64
    assert host_fabric_links(one)["gpu01"]["mlx5_0"] == "leaf-01:swp1s0"


def test_two_tier_rail_optimised_roce_on_sn5600(tmp_path: Path) -> None:
    two = plan("roce", 256, 8, CATALOG["sn5600"])
    assert (two.tiers, two.bom.switches["leaf"], two.bom.switches["spine"]) == (2, 8, 2)
    fabric = completed(two, tmp_path)
    assert_ethernet_cables_present(two, fabric)
    leaf = fabric.switch("leaf-01-r0")
    assert (len(leaf.host_ports), len(leaf.uplinks)) == (32, 32)
    assert fabric_summary(fabric)[0] == (
        "switches: 10 nvue (8 leaf, 2 spine); cabling map: 256 host-to-switch and 256 switch-to-switch "
        "cable(s) (fabric_links)"
    )
    assert leaf.host_ports[0] == "swp1s0" and leaf.uplinks[0] == "swp17s0"  # uplinks in the next cages


@pytest.mark.parametrize("platform", ["sonic", "eos"])
def test_two_tier_roce_on_other_platforms(tmp_path: Path, platform: str) -> None:
    two = plan("roce", 64, 4, generic_model(8, 800, "roce", platform))
    assert two.tiers == 2
    assert_ethernet_cables_present(two, completed(two, tmp_path))


def test_three_tier_roce_loads_with_every_cable(tmp_path: Path) -> None:
    three = plan("roce", 40, 2, generic_model(8, 400, "roce", "nvue"))
    assert three.tiers == 3 and three.bom.switches["core"] > 0
    fabric = completed(three, tmp_path)
    assert_ethernet_cables_present(three, fabric)
    assert {s.tier for s in fabric.switches} == {"leaf", "spine", "core"}


def assert_ib_cables_present(plan_: FabricPlan, fabric: Fabric) -> None:
    host, switch = planned_ends(plan_)
    loaded = {(c.a.node, c.a.nic or str(c.a.port), c.b.node, str(c.b.port)) for c in fabric.ib.cables}
    assert loaded == host | switch
    assert len(fabric.ib.cables) == plan_.bom.cables
    assert {s.name: s.tier for s in fabric.ib.switches} == {s.name: s.tier for s in plan_.switches}
    assert {s.port_count for s in fabric.ib.switches} == {s.ports for s in plan_.switches}


def test_two_tier_ib_on_qm9700(tmp_path: Path) -> None:
    two = plan("ib", 128, 8, CATALOG["qm9700"])
    assert two.tiers == 2
    fabric = completed(two, tmp_path)  # nothing to set: IB switches are read in-band
    assert_ib_cables_present(two, fabric)
    assert host_fabric_links(two)["gpu01"]["mlx5_0"] == "leaf-01-r0/1"


def test_three_tier_ib_loads_with_every_cable(tmp_path: Path) -> None:
    three = plan("ib", 40, 2, generic_model(8, 400, "ib"))
    assert three.tiers == 3
    assert_ib_cables_present(three, completed(three, tmp_path))


def test_ethernet_placeholders_are_refused_until_set(tmp_path: Path) -> None:
    two = plan("roce", 64, 4, generic_model(8, 800, "roce", "nvue"))
    write_plan_inventory(two, tmp_path)
    with pytest.raises(IntentError) as err:
        fabric_of(load_inventory(tmp_path))
    problems = err.value.problems
    assert len(problems) == 2 * len(two.switches)
    assert all(
        "switch_address = None: required" in p or "switch_username = None: required" in p for p in problems
    )


def test_switch_cables_are_declared_once_at_the_lower_end() -> None:
    two = plan("roce", 256, 8, CATALOG["sn5600"])
    variables = switch_variables(two)
    assert variables["spine-01"]["switch_ports"] == [] and "fabric_links" not in variables["spine-01"]
    declared = sum(len(v.get("fabric_links", {})) for v in variables.values())
    assert declared == two.bom.links["leaf_spine"]
    inventory = plan_inventory(two)
    assert set(inventory["all"]["children"]["switches"]["children"]) == {"switches_nvue"}


def test_existing_files_are_not_overwritten_unless_told(tmp_path: Path) -> None:
    one = plan("roce", 16, 8, CATALOG["sn5600"])
    written = write_plan_inventory(one, tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == ["hosts.yml", "group_vars/all.yml"]
    before = (tmp_path / "hosts.yml").read_text()
    with pytest.raises(PlanError, match=r"hosts\.yml exists; not overwritten"):
        write_plan_inventory(plan("roce", 32, 8, CATALOG["sn5600"]), tmp_path)
    assert (tmp_path / "hosts.yml").read_text() == before
    write_plan_inventory(plan("roce", 32, 8, CATALOG["sn5600"]), tmp_path, overwrite=True)
    assert (tmp_path / "hosts.yml").read_text() != before


def test_an_ethernet_plan_without_a_platform_is_refused(tmp_path: Path) -> None:
    no_platform = plan("roce", 16, 8, generic_model(64, 800, "roce"))
    with pytest.raises(
        PlanError, match="--platform: switch model generic of leaf-01 names no Ethernet platform"
    ):
        write_plan_inventory(no_platform, tmp_path)
    assert not (tmp_path / "hosts.yml").exists()


def test_the_switch_role_filter_renders_every_planned_switch(tmp_path: Path) -> None:
    """What role switch_qos renders from the written inventory (its filter, fabcheck_switch_config):
    every planned switch, a spine's desired ports all its uplinks, each uplink named in its config."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "fabcheck_desired_filter",
        Path(__file__).resolve().parents[2] / "plugins" / "filter" / "fabcheck_desired.py",
    )
    assert spec and spec.loader
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    two = plan("roce", 64, 4, generic_model(8, 800, "roce", "sonic"))
    completed(two, tmp_path)
    inventory = load_inventory(tmp_path)
    hostvars = {h.name: dict(h.variables) | {"group_names": list(h.groups)} for h in inventory.hosts}
    groups = {
        "gpu_hosts": [h.name for h in inventory.hosts if "gpu_hosts" in h.groups],
        "switches": [h.name for h in inventory.hosts if "switches" in h.groups],
    }
    variables = switch_variables(two)
    for switch in two.switches:
        intent = plan_group_vars(two)["fabric_intent"]
        result = plugin.fabcheck_switch_config(switch.name, intent, hostvars, groups)
        roles = {port["port"]: port["role"] for port in result["desired"]["ports"]}
        expected = {p: "host" for p in variables[switch.name]["switch_ports"]}
        expected |= {p: "uplink" for p in variables[switch.name]["switch_uplinks"]}
        assert roles == expected and expected
        assert all(port in result["config"] for port in variables[switch.name]["switch_uplinks"])
        if switch.tier == "spine":
            assert set(roles.values()) == {"uplink"}


@pytest.mark.parametrize("fabric", ["roce", "ib"])
def test_a_plan_file_writes_the_same_inventory(tmp_path: Path, fabric: str) -> None:
    """`fabcheck lab up --plan FILE` and `--inventory` agree: a plan read back from its JSON file writes
    the inventory the plan itself writes."""
    from fabcheck.fabricplan.planfile import read_plan_file, write_plan_file

    model = generic_model(8, 800, fabric, "eos" if fabric == "roce" else None)
    planned = plan(fabric, 80, 4, model)
    assert planned.tiers == 2
    write_plan_file(planned, tmp_path / "plan.json")
    assert plan_inventory(read_plan_file(tmp_path / "plan.json")) == plan_inventory(planned)
