"""The InfiniBand plan as an inventory writes it, in process (no lab start): a lab fabric model written as
an Ansible inventory (group ib_switches by tier, every cable in fabric_links, each at its lower end) ->
load_inventory -> plan_gate -> GatePlan.desired.ib_fabric -> check_ib_fabric against what the mock tools
print for that fabric (fabcheck_lab.ib_fabric renderers, the real parsers). The plan the inventory gives
is the one the fabric shows: every cable passes; a fault fails its check on its cable."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from ibmock import REPO, T0, WINDOW, evidence, inventory_of

from fabcheck.checks.ib import LINK, TOPOLOGY, check_ib_fabric
from fabcheck.checks.model import Finding, Status
from fabcheck.desired.ib import DesiredIbFabric
from fabcheck.gate.plan import plan_gate
from fabcheck.intent.loader import load_inventory
from fabcheck_lab import ib_fabric as model


def planned(fabric: model.Fabric, tmp_path: Path) -> DesiredIbFabric:
    plan = plan_gate(
        load_inventory(inventory_of(fabric, tmp_path / "inv")), stages=("host",), counter_window_s=WINDOW
    )
    desired = plan.desired.ib_fabric
    assert desired is not None
    return desired


def judged(fabric: model.Fabric, desired: DesiredIbFabric) -> list[tuple[str, Finding]]:
    results = check_ib_fabric(evidence(fabric), desired)
    return [(node, finding) for node, findings in results.items() for finding in findings]


def fat_tree() -> model.Fabric:
    """A 3-tier fat tree, each switch with its own LID (model.fat_tree at 8df8edf gives every switch of a
    tier the same LID: `first_lid + len(switches)` is read once per tier's list)."""
    fabric = model.fat_tree(model.modelled_hcas(8, per_host=2), radix=8)
    first = max(h.lid for h in fabric.hcas) + 1
    switches = tuple(dataclasses.replace(s, lid=first + i) for i, s in enumerate(fabric.switches))
    return dataclasses.replace(fabric, switches=switches)


FABRICS = {
    "2 leaves, 2 spines": lambda: model.two_tier(model.modelled_hcas(4, per_host=2), leaves=2, spines=2),
    "3-tier fat tree": fat_tree,
}


@pytest.mark.parametrize("shape", sorted(FABRICS))
def test_the_plan_the_inventory_gives_is_the_fabric_the_tools_show(shape: str, tmp_path: Path) -> None:
    fabric = FABRICS[shape]()
    desired = planned(fabric, tmp_path)
    assert desired.reader == "gpu01" and desired.counter_window_s == WINDOW  # no SM node: the first host
    shown = {(c.a.node, c.a.port, c.b.node, c.b.port) for c in fabric.cables}
    hcas = {h.key: h for h in fabric.hcas}
    as_planned = {
        (f"{link.a.node}/{link.a.nic}" if link.a.nic else link.a.node, link.a.port, link.b.node, link.b.port)
        for link in desired.links
    }
    assert as_planned == shown
    assert {d: (h, n) for d, (h, n) in desired.host_descriptions.items()} == {
        h.description: (h.host, h.nic) for h in hcas.values()
    }
    found = judged(fabric, desired)
    assert [(n, f.check, f.subject, f.actual) for n, f in found if f.status is not Status.PASS] == []
    assert sum(f.check == TOPOLOGY for _, f in found) == len(fabric.cables)


def test_a_link_trained_down_fails_on_the_cable_the_inventory_names(tmp_path: Path) -> None:
    healthy = FABRICS["2 leaves, 2 spines"]()
    desired = planned(healthy, tmp_path)
    (index,) = model.fault_cables(healthy, "ib-link-width", "leaf01")
    cable = healthy.cables[index]
    found = judged(model.with_fault(healthy, "ib-link-width", "leaf01", since=T0 - 5), desired)
    failing = {(n, f.check, f.subject) for n, f in found if f.status is Status.FAIL}
    assert failing == {("leaf01", LINK, f"leaf01/{cable.a.port} ↔ {cable.b.node}/{cable.b.port}")}


def test_the_lab_inventory_reads_as_the_lab_fabric(tmp_path: Path) -> None:
    """`fabcheck lab up --profile ib --hosts 4 --switches 4` writes an inventory whose IB plan is the
    fabric the mock tools print: written here without starting anything (inventory.write_inventory)."""
    from fabcheck_lab import ib_lab, inventory, nodes
    from fabcheck_lab.state import LabPaths, LabState

    state = LabState(
        project=str(tmp_path),
        run_dir=str(tmp_path / "run"),
        profile="ib",
        hosts=4,
        switches=4,
        net="lo",
        nodes=nodes.plan_nodes("ib", 4, 4),
    )
    paths = LabPaths(project=tmp_path, run_dir=tmp_path / "run")
    shutil.copytree(REPO / "inventory/lab", paths.inventory.parent)
    inventory.write_inventory(paths, state)
    plan = plan_gate(load_inventory(paths.inventory.parent), stages=("host", "sm"), counter_window_s=WINDOW)
    fabric = ib_lab.lab_fabric(state)
    desired = plan.desired.ib_fabric
    assert fabric is not None and desired is not None
    assert desired.reader == "sm01"  # the lab's intended SM master
    assert [(s.name, s.tier, s.description) for s in desired.switches] == [
        (s.name, s.tier, s.description) for s in fabric.switches
    ]
    as_planned = {
        (f"{link.a.node}/{link.a.nic}" if link.a.nic else link.a.node, link.a.port, link.b.node, link.b.port)
        for link in desired.links
    }
    assert as_planned == {(c.a.node, c.a.port, c.b.node, c.b.port) for c in fabric.cables}
    assert dict(desired.host_descriptions) == {h.description: (h.host, h.nic) for h in fabric.hcas}
    assert not {"leaf01", "leaf02", "spine01", "spine02"} & {h.name for h in plan.hosts}
