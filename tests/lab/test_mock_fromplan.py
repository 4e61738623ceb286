"""A lab from a fabric plan (`fabcheck lab up --plan FILE`, issue 39), in process: the nodes, the LLDP every
planned cable makes heard at both ends (parsed as the switch stage parses it), the uplink-swap fault, the IB
fabric model, the inventory and every refusal. No lab is started."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from fabcheck.checks.ib import IbEvidence, check_ib_fabric
from fabcheck.desired.ib import desired_ib_fabric
from fabcheck.fabricplan.catalog import catalog_model, generic_model
from fabcheck.fabricplan.inventory import switch_variables
from fabcheck.fabricplan.model import FabricPlan, PlanInput
from fabcheck.fabricplan.planfile import write_plan_file
from fabcheck.fabricplan.sizing import plan_fabric
from fabcheck.intent.fabric import fabric_of
from fabcheck.intent.loader import load_inventory
from fabcheck.parsers import switch_lldp
from fabcheck.parsers.ibnetdiscover import parse_ibnetdiscover_ports
from fabcheck.parsers.ibqueryerrors import parse_ibqueryerrors, sweep_deltas
from fabcheck.parsers.saquery import parse_saquery_nodes
from fabcheck.parsers.vendstat import parse_vendstat_general
from fabcheck_lab import fromplan, ib_fabric, ib_lab, inventory, lifecycle
from fabcheck_lab.assemble import _switch_spec
from fabcheck_lab.mockhost.tools import ib_diags
from fabcheck_lab.mockswitch.device import SwitchDevice
from fabcheck_lab.mockswitch.server import make_device
from fabcheck_lab.mockswitch.spec import MockSwitchError, read_spec, write_spec
from fabcheck_lab.state import LabError, LabPaths, LabState

LLDP_PROBES = {
    "nvue": ("nv show interface lldp", switch_lldp.parse_nvue_lldp),
    "sonic": ("show lldp table", switch_lldp.parse_sonic_lldp),
    "eos": ("show lldp neighbors | json", switch_lldp.parse_eos_lldp),
}


def _plan(
    fabric: str = "roce",
    gpus: int = 16,
    ports: int = 8,
    *,
    platform: str | None = "nvue",
    spine_platform: str | None = None,
    rail_optimised: bool = False,
    nics: int = 8,
    nic_gbps: int = 400,
) -> FabricPlan:
    leaf = generic_model(ports, 400, fabric, platform)
    spine = generic_model(ports, 400, fabric, spine_platform or platform)
    return plan_fabric(PlanInput(fabric, gpus, 8, nics, nic_gbps, leaf, spine, 1.0, rail_optimised))


def _state(tmp_path: Path, plan: FabricPlan) -> LabState:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "plan.json"
    write_plan_file(plan, path)
    paths = LabPaths(tmp_path / "project", tmp_path / "run")
    return lifecycle.new_state(paths, "roce", 4, None, "lo", 0.0, fromplan.load_plan(path))


def _devices(tmp_path: Path, state: LabState) -> dict[str, SwitchDevice]:
    """The lab's switches as the switch server makes them from the spec `up` writes."""
    heard, ups = fromplan.switch_neighbors(state), fromplan.up_ports(state)
    specs = [_switch_spec(n, "pw", heard.get(n.name, []), ups.get(n.name, ())) for n in state.switch_nodes()]
    devices = {spec.name: make_device(spec, tmp_path / "no-run-dir") for spec in specs}
    for device in devices.values():
        device.cable_peers = devices
    return devices


def _heard(device: SwitchDevice) -> dict[str, tuple[str, str]]:
    """What the switch stage reads: the platform's LLDP command through the mock CLI, parsed."""
    command, parse = LLDP_PROBES[device.platform]
    output, status = device.new_session("admin").run_once(command)
    assert status == 0, output
    return {str(port): (n.system, n.port) for port, n in parse(output) if n is not None}


def _planned_ends(state: LabState) -> dict[tuple[str, str], tuple[str, str]]:
    """(switch, port) -> (system, port id) every planned cable should make heard, from the plan."""
    nodes = {n.name: n for n in state.nodes}
    ends = {}
    for host, nics in fromplan.host_links(state).items():
        for nic, end in nics.items():
            switch, port = end.split(":")
            netdev = f"ens{int(nic.removeprefix('mlx5_')) + 1}np0"  # the rail8 NIC's interface name
            ends[(switch, port)] = (host, netdev)
    for lower, port, upper, their in fromplan.switch_links(state):
        ends[(lower, port)] = (upper, fromplan.port_id(nodes[upper], their))
        ends[(upper, their)] = (lower, fromplan.port_id(nodes[lower], port))
    return ends


def test_roce_plan_nodes_are_the_planned_hosts_and_switches(tmp_path: Path) -> None:
    plan = _plan(spine_platform="eos")
    state = _state(tmp_path, plan)
    assert (state.profile, state.hosts, state.switches) == ("roce", 2, 6)
    hosts = state.host_nodes()
    assert [(n.name, n.profile, n.group) for n in hosts] == [
        ("gpu01", "rail8", "gpu_hosts"),
        ("gpu02", "rail8", "gpu_hosts"),
    ]
    switches = {n.name: n for n in state.switch_nodes()}
    assert sorted(switches) == sorted(s.name for s in plan.switches)
    assert switches["leaf-01"].profile == "nvue" and switches["leaf-01"].group == "switches_nvue"
    assert switches["leaf-01"].ports == tuple(f"swp{i}" for i in range(1, 9))
    assert switches["spine-01"].profile == "eos" and switches["spine-01"].username == "admin"
    assert switches["spine-01"].ports[:2] == ("Ethernet1/1", "Ethernet2/1")
    assert len({n.address for n in state.nodes}) == len(state.nodes)
    # The plan is part of what `up` was asked for: another plan is another lab.
    other = _state(tmp_path / "other", _plan(gpus=24, ports=12))
    assert state.shape != other.shape and json.loads(
        LabState.from_json(state.to_json()).to_json()
    ) == json.loads(state.to_json())


def test_breakout_ports_are_named_as_each_platform_names_them() -> None:
    sn5600 = catalog_model("sn5600")
    plan = plan_fabric(PlanInput("roce", 16, 8, 8, 400, sn5600, sn5600))
    leaf = plan.switches[0]
    assert fromplan.port_names(plan, leaf)[:3] == ("swp1s0", "swp1s1", "swp2s0")  # 2 x 400G in an 800G cage
    assert len(fromplan.port_names(plan, leaf)) == leaf.ports == 128


@pytest.mark.parametrize("spine_platform", ["nvue", "sonic", "eos"])
def test_every_planned_cable_is_heard_at_both_ends(tmp_path: Path, spine_platform: str) -> None:
    state = _state(tmp_path, _plan(spine_platform=spine_platform))
    devices = _devices(tmp_path, state)
    planned = _planned_ends(state)
    heard = {(name, port): end for name, device in devices.items() for port, end in _heard(device).items()}
    assert heard == planned
    assert len(planned) == 16 + 2 * 16  # 16 host cables heard at their leaf, 16 uplinks at both ends
    if spine_platform == "sonic":  # lldpmgrd: a SONiC port's LLDP port ID is its CONFIG_DB alias
        assert heard[("leaf-01", "swp5")] == ("spine-01", "etp1")
        assert devices["spine-01"].port_id("Ethernet0") == "etp1"


def test_uplink_swap_swaps_two_uplinks_of_a_leaf_at_both_ends_and_heals(tmp_path: Path) -> None:
    state = _state(tmp_path, _plan())
    devices = _devices(tmp_path, state)
    before = {name: _heard(device) for name, device in devices.items()}
    leaf = devices["leaf-01"]
    assert leaf.uplink_swap_ports() == ("swp5", "swp6")  # the first two uplinks, to different spines
    assert before["leaf-01"]["swp5"] == ("spine-01", "swp1") and before["leaf-01"]["swp6"] == (
        "spine-02",
        "swp1",
    )
    leaf.inject("uplink-swap")
    after = {name: _heard(device) for name, device in devices.items()}
    assert after["leaf-01"]["swp5"] == ("spine-02", "swp1") and after["leaf-01"]["swp6"] == (
        "spine-01",
        "swp1",
    )
    assert after["spine-01"]["swp1"] == ("leaf-01", "swp6") and after["spine-02"]["swp1"] == (
        "leaf-01",
        "swp5",
    )
    changed = {(n, p) for n in before for p in before[n] if before[n][p] != after[n][p]}
    assert changed == {("leaf-01", "swp5"), ("leaf-01", "swp6"), ("spine-01", "swp1"), ("spine-02", "swp1")}
    leaf.heal("uplink-swap")
    assert {name: _heard(device) for name, device in devices.items()} == before


def test_uplink_swap_is_refused_on_a_switch_without_uplinks(tmp_path: Path) -> None:
    state = _state(tmp_path, _plan(ports=16))  # one tier: 16 host links on one 16-port leaf
    devices = _devices(tmp_path, state)
    assert list(devices) == ["leaf-01"]
    with pytest.raises(MockSwitchError, match="uplink-swap needs two cabled up-facing ports on leaf-01"):
        devices["leaf-01"].inject("uplink-swap")
    spine_state = _state(tmp_path / "two", _plan())
    spine = _devices(tmp_path, spine_state)["spine-01"]
    with pytest.raises(MockSwitchError, match="up-facing"):
        spine.inject("uplink-swap")  # a spine of two tiers has nothing above it


def test_switch_miswired_still_swaps_host_cables_on_a_planned_leaf(tmp_path: Path) -> None:
    state = _state(tmp_path, _plan(ports=12, gpus=24))  # leaf-01: gpu01's 6 NICs then none of gpu02
    devices = _devices(tmp_path, state)
    leaf = devices["leaf-02"]  # gpu01 mlx5_6.. and gpu02 mlx5_0..
    before = _heard(leaf)
    leaf.inject("switch-miswired")
    after = _heard(leaf)
    swapped = [p for p in before if before[p] != after[p]]
    assert len(swapped) == 2 and {after[p][0] for p in swapped} == {"gpu01", "gpu02"}


def test_inventory_carries_the_planned_host_cables(tmp_path: Path) -> None:
    state = _state(tmp_path, _plan())
    document = inventory.inventory_document(LabPaths(tmp_path / "project", tmp_path / "run"), state)
    hosts = document["all"]["children"]["gpu_hosts"]["hosts"]
    assert hosts["gpu01"]["fabric_links"] == fromplan.host_links(state)["gpu01"]
    assert hosts["gpu02"]["fabric_links"]["mlx5_0"] == "leaf-03:swp1"
    assert document["all"]["vars"]["lab_fabric_kind"] == "roce"
    switches = document["all"]["children"]["switches"]["children"]["switches_nvue"]["hosts"]
    assert sorted(switches) == ["leaf-01", "leaf-02", "leaf-03", "leaf-04", "spine-01", "spine-02"]


# --- InfiniBand ----------------------------------------------------------------------------------


def test_ib_plan_builds_the_lab_fabric_model_from_the_plan(tmp_path: Path) -> None:
    plan = _plan("ib", gpus=16, ports=12, platform=None)  # 3 leaves (6, 6, 4 hosts), 2 spines
    state = _state(tmp_path, plan)
    assert [n.name for n in state.host_nodes()] == ["gpu01", "gpu02", "sm01", "sm02"]
    assert state.switch_nodes() == []  # IB switches are model entries
    fabric = ib_lab.lab_fabric(state)
    assert fabric is not None
    assert [(s.name, s.tier, s.port_count) for s in fabric.switches] == [
        (s.name, s.tier, 12) for s in sorted(plan.switches, key=lambda s: ("leaf", "spine").index(s.tier))
    ]
    as_cabled = {((c.a.node, c.a.port), (c.b.node, c.b.port)) for c in fabric.cables}
    for cable in plan.cables:
        a = (
            (f"{cable.a.device}/{cable.a.port}", 1)
            if cable.tier == "host"
            else (cable.a.device, int(cable.a.port))
        )
        assert (a, (cable.b.device, int(cable.b.port))) in as_cabled
    # The lab's SM nodes, which no plan holds, take the first free leaf ports: leaf-03 carries 4 hosts
    # on ports 1-4 and its 4 uplinks on the next ones (5-8), so 9 and 10 are the first free.
    sm = {c.a.node: (c.b.node, c.b.port) for c in fabric.cables if c.a.node.startswith("sm")}
    assert sm == {"sm01/mlx5_0": ("leaf-03", 9), "sm02/mlx5_0": ("leaf-03", 10)}
    assert len(fabric.cables) == len(plan.cables) + 2
    ends = [(e.node, e.port) for c in fabric.cables for e in (c.a, c.b) if not e.node.count("/")]
    assert len(ends) == len(set(ends))  # no switch port cabled twice
    # The ib lab's cable swap (ib-miswire) applies to a planned leaf: two uplinks swapped at a spine.
    swapped = ib_fabric.with_fault(fabric, "ib-miswire", "leaf-01", 0.0)
    assert len(set(swapped.cables) - set(fabric.cables)) == 2
    groups = inventory.inventory_document(LabPaths(tmp_path / "p", tmp_path / "r"), state)["all"]["children"]
    assert groups["gpu_hosts"]["hosts"]["gpu01"]["fabric_links"]["mlx5_0"] == "leaf-01/1"
    assert groups["subnet_managers"]["hosts"]["sm01"]["fabric_links"] == {"mlx5_0": "leaf-03/9"}


def test_ib_plan_without_a_free_leaf_port_for_the_sm_nodes_is_refused(tmp_path: Path) -> None:
    state = _state(tmp_path, _plan("ib", gpus=16, ports=8, platform=None))  # 4 full leaves
    with pytest.raises(LabError, match="no free leaf port for the lab's subnet-manager node sm01"):
        ib_lab.lab_fabric(state)


# --- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        (lambda: _plan(nics=4), "4 NICs per node: the lab's roce hosts \\(rail8\\) have 8 GPUs and 8 NICs"),
        (lambda: _plan(nic_gbps=200), "NICs at 200 Gb/s: the lab's run at 400 Gb/s"),
        (lambda: _plan(platform=None), "has platform None: the lab mocks nvue, sonic, eos"),
    ],
)
def test_plans_the_lab_cannot_build_are_refused_in_one_line(
    tmp_path: Path, plan: Callable[[], FabricPlan], message: str
) -> None:
    path = tmp_path / "plan.json"
    write_plan_file(plan(), path)
    with pytest.raises(LabError, match=message) as caught:
        fromplan.load_plan(path)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)


def test_lab_up_plan_with_shape_options_is_refused_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fabcheck.cli import main

    (tmp_path / "inventory").mkdir()
    monkeypatch.setattr("fabcheck_lab.cli.project_root", lambda: tmp_path)
    monkeypatch.setattr(lifecycle, "up", lambda *a, **k: pytest.fail("a lab would start"))
    path = tmp_path / "plan.json"
    write_plan_file(_plan(), path)
    assert main(["lab", "up", "--plan", str(path), "--hosts", "2"]) != 0
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["lab", "up", "--plan", str(bad)]) == 2  # PlanError: the bad key, exit 2


@pytest.mark.parametrize("fabric", ["roce", "ib"])
def test_lab_inventory_from_a_plan_loads_with_every_planned_cable(tmp_path: Path, fabric: str) -> None:
    """The inventory `up --plan` writes, beside the lab's own group_vars, read by the real loader: the
    switches carry the plan's cabling exactly as `fabcheck plan --inventory` writes it."""
    ib = fabric == "ib"
    plan = _plan(
        fabric, gpus=16, ports=12, platform=None if ib else "nvue", spine_platform=None if ib else "eos"
    )
    state = _state(tmp_path, plan)
    paths = LabPaths(tmp_path / "project", tmp_path / "run")
    shutil.copytree(Path(__file__).parents[2] / "inventory" / "lab", paths.inventory.parent)
    paths.run_dir.mkdir()
    paths.switch_password.write_text("lab-password\n")
    inventory.write_inventory(paths, state)
    hosts = yaml.safe_load(paths.inventory.read_text())["all"]["children"]
    if ib:
        leaves = hosts["ib_switches"]["children"]["ib_leaves"]["hosts"]
        assert leaves["leaf-01"]["ib_port_count"] == 12
        assert leaves["leaf-01"]["fabric_links"] == switch_variables(plan)["leaf-01"]["fabric_links"]
    else:
        switches = hosts["switches"]["children"]
        for name, variables in switch_variables(plan).items():
            group = "switches_nvue" if name.startswith("leaf") else "switches_eos"
            entry = switches[group]["hosts"][name]
            assert {key: entry[key] for key in variables} == variables
        assert switches["switches_eos"]["hosts"]["spine-01"]["switch_ports"] == []
    loaded = fabric_of(load_inventory(paths.inventory.parent))
    host_cables, switch_cables = _planned_cables(plan)
    if ib:
        cables = {(c.a.node, c.a.nic or c.a.port, c.b.node, c.b.port) for c in loaded.ib.cables}
        planned = {(h, nic, leaf, int(p)) for h, nic, leaf, p in host_cables}
        planned |= {(a, int(ap), b, int(bp)) for a, ap, b, bp in switch_cables}
        sm_cables = {(n, "mlx5_0", "leaf-03", port) for n, port in (("sm01", 9), ("sm02", 10))}
        assert cables == planned | sm_cables  # the lab's SM nodes on the first free leaf ports
        return
    names = {n.name: n for n in state.switch_nodes()}

    def named(device: str, port: str) -> str:
        return names[device].ports[int(port) - 1]

    assert {(lk.host, lk.nic, lk.switch, lk.port) for lk in loaded.links} == {
        (h, nic, leaf, named(leaf, p)) for h, nic, leaf, p in host_cables
    }
    assert {(s.a_switch, s.a_port, s.b_switch, s.b_port) for s in loaded.switch_links} == {
        (a, named(a, ap), b, named(b, bp)) for a, ap, b, bp in switch_cables
    }


def _planned_cables(
    plan: FabricPlan,
) -> tuple[set[tuple[str, str, str, str]], set[tuple[str, str, str, str]]]:
    host = {(c.a.device, c.a.port, c.b.device, c.b.port) for c in plan.cables if c.tier == "host"}
    switch = {(c.a.device, c.a.port, c.b.device, c.b.port) for c in plan.cables if c.tier != "host"}
    return host, switch


def test_ib_plan_lab_passes_the_ib_checks_and_ib_miswire_fails_ib_topology(tmp_path: Path) -> None:
    """The IB fabric the lab's nodes read (rendered as the mock infiniband-diags print it, parsed) judged by
    checks.ib against the lab's inventory of the same plan: clean; ib-miswire on a planned leaf fails
    ib.topology on exactly the two swapped cables; healed, clean again."""
    plan = _plan("ib", gpus=16, ports=12, platform=None)
    state = _state(tmp_path, plan)
    paths = LabPaths(tmp_path / "project", tmp_path / "run")
    shutil.copytree(Path(__file__).parents[2] / "inventory" / "lab", paths.inventory.parent)
    inventory.write_inventory(paths, state)
    loaded = load_inventory(paths.inventory.parent)
    desired = desired_ib_fabric(loaded.intent, fabric_of(loaded).ib, subnet_managers=list(fromplan.SM_NODES))
    assert desired is not None and len(desired.links) == len(plan.cables) + 2  # + the SM nodes' cables
    for record in state.host_nodes():
        (paths.node_root(record.name) / "state").mkdir(parents=True)
    ib_lab.prepare(paths, state)

    def not_passing() -> list[tuple[str, str, str]]:
        fabric = ib_diags.effective(ib_lab.read_fabric_state(paths, state))
        now = time.time()
        before = parse_ibqueryerrors(ib_fabric.render_ibqueryerrors(fabric, now)[0])
        after = parse_ibqueryerrors(ib_fabric.render_ibqueryerrors(fabric, now + 2)[0])
        evidence = IbEvidence(
            parse_ibnetdiscover_ports(ib_fabric.render_ibnetdiscover_ports(fabric)),
            parse_saquery_nodes(ib_fabric.render_saquery_nodes(fabric)),
            before,
            after,
            sweep_deltas(before, after),
            {
                s.lid: parse_vendstat_general(ib_fabric.render_vendstat_general(s), lid=s.lid)
                for s in fabric.switches
            },
            2,
        )
        judged = check_ib_fabric(evidence, replace(desired, counter_window_s=2))
        return sorted(
            (f.check, f.status.value, f.subject)
            for fs in judged.values()
            for f in fs
            if f.status.value != "pass"
        )

    assert not_passing() == []
    ib_lab.inject(paths, state, "ib-miswire", "leaf-01", now=time.time() - 10)
    swapped = [(check, subject) for check, status, subject in not_passing() if check == "ib.topology"]

    def first_uplink(leaf: str, spine: str | None = None) -> str:
        ports = [
            int(c.a.port)
            for c in plan.cables
            if c.a.device == leaf and c.tier == "leaf_spine" and spine in (None, c.b.device)
        ]
        return f"{leaf}/{min(ports)}"

    # ib-miswire: leaf-01's first uplink (to spine-01) and leaf-02's first to spine-01 swap spine ports.
    assert [subject.split(" ")[0] for _check, subject in swapped] == [
        first_uplink("leaf-01"),
        first_uplink("leaf-02", "spine-01"),
    ]
    ib_lab.heal(paths, state, "ib-miswire", "leaf-01")
    assert not_passing() == []


def test_the_switch_spec_keeps_the_up_ports_through_the_server(tmp_path: Path) -> None:
    """What `up` writes for the switch server (spec.json) and what the server reads back: the same
    neighbours and up-facing ports, so uplink-swap finds its ports in the running server."""
    state = _state(tmp_path, _plan())
    heard, ups = fromplan.switch_neighbors(state), fromplan.up_ports(state)
    specs = [_switch_spec(n, "pw", heard.get(n.name, []), ups.get(n.name, ())) for n in state.switch_nodes()]
    write_spec(tmp_path / "run", specs)
    assert read_spec(tmp_path / "run") == specs
    assert specs[0].up_ports == ("swp5", "swp6", "swp7", "swp8") and specs[-1].up_ports == ()
    with pytest.raises(MockSwitchError, match="up-facing ports \\['swp9'\\] are not among its ports"):
        replace(specs[0], up_ports=("swp9",))


def test_switch_miswired_on_a_spine_is_heard_at_both_ends_too(tmp_path: Path) -> None:
    state = _state(tmp_path, _plan(spine_platform="sonic"))
    devices = _devices(tmp_path, state)
    before = {name: _heard(device) for name, device in devices.items()}
    devices["spine-01"].inject("switch-miswired")  # its first port (leaf-01) and the first to leaf-02
    after = {name: _heard(device) for name, device in devices.items()}
    changed = {(n, p): after[n][p] for n in before for p in before[n] if before[n][p] != after[n][p]}
    assert changed == {
        ("spine-01", "Ethernet0"): ("leaf-02", "swp5"),
        ("spine-01", "Ethernet16"): ("leaf-01", "swp5"),
        ("leaf-01", "swp5"): ("spine-01", "etp3"),
        ("leaf-02", "swp5"): ("spine-01", "etp1"),
    }
    devices["spine-01"].heal("switch-miswired")
    assert {name: _heard(device) for name, device in devices.items()} == before


def test_switch_miswired_never_takes_an_uplink_and_is_refused_without_two_hosts(tmp_path: Path) -> None:
    devices = _devices(tmp_path, _state(tmp_path, _plan()))  # leaf-01: gpu01's 4 NICs, then 4 uplinks
    assert devices["leaf-01"].miswire_ports() is None
    with pytest.raises(MockSwitchError, match="switch-miswired needs two cabled ports of leaf-01"):
        devices["leaf-01"].inject("switch-miswired")
    assert devices["spine-01"].miswire_ports() == ("swp1", "swp3")  # leaf-01's first, leaf-02's first
