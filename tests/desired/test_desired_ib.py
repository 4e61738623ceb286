"""Desired state of the InfiniBand fabric (issue 37): derived once from the intent and the IB plan, in
the node descriptions and port numbers the fabric tools print."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fabcheck.desired.ib import DesiredIbEnd, desired_ib_fabric
from fabcheck.gate.plan import plan_gate
from fabcheck.intent.fabric import fabric_of
from fabcheck.intent.ib_fabric import IbPlan, node_description
from fabcheck.intent.loader import Inventory, load_inventory
from fabcheck.intent.model import FabricIntent

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def example() -> Inventory:
    return load_inventory(REPO / "inventory/example-ib")


@pytest.mark.parametrize(
    ("template", "hostname", "expected"),
    [
        ("%h %d", "gpu01", "gpu01 mlx5_0"),  # rdma-ndd's default format
        ("%h %d", "gpu01.cluster.example", "gpu01 mlx5_0"),  # %h stops at the first dot
        ("%h", "gpu01", "gpu01"),
        ("node-%h:%d", "gpu01", "node-gpu01:mlx5_0"),
        ("%h%q %d", "gpu01", "gpu01 mlx5_0"),  # an unknown %x writes nothing and eats its letter
        ("%d " + "x" * 80, "gpu01", "mlx5_0 " + "x" * 56),  # 63 characters: a 64-byte buffer with its NUL
    ],
)
def test_node_description_replays_rdma_ndd_build_node_desc(
    template: str, hostname: str, expected: str
) -> None:
    """rdma-core rdma-ndd/rdma-ndd.c@691953d8d502f54088f776c5ba2aeed0a5ac945d build_node_desc."""
    assert node_description(template, hostname, "mlx5_0") == expected


def test_example_fabric_links_in_the_tools_terms(example: Inventory) -> None:
    desired = desired_ib_fabric(
        example.intent, fabric_of(example).ib, subnet_managers=["sm01", "sm02"], counter_window_s=30
    )
    assert desired is not None
    assert desired.reader == "sm01"  # the intended SM master (sm_priorities sm01=15)
    assert (desired.width, desired.speed, desired.read_port, desired.counter_window_s) == (
        "4x",
        "NDR",
        None,
        30,
    )
    assert [(s.name, s.tier, s.description) for s in desired.switches][::3] == [
        ("leaf01", "leaf", "MF0;leaf01:MQM9700/U1"),
        ("spine02", "spine", "MF0;spine02:MQM9700/U1"),
    ]
    first, last = desired.links[0], desired.links[-1]
    assert first.a == DesiredIbEnd("ibgpu01", "ibgpu01 mlx5_0", 1, "CA", "mlx5_0")
    assert first.b == DesiredIbEnd("leaf01", "MF0;leaf01:MQM9700/U1", 1, "SW")
    assert (first.label, first.width, first.speed) == ("ibgpu01/mlx5_0 ↔ leaf01/1", "4x", "NDR")
    assert last.label == "leaf02/40 ↔ spine02/8"
    assert len(desired.links) == 34
    assert desired.host_descriptions["sm02 mlx5_0"] == ("sm02", "mlx5_0")
    assert len(desired.host_descriptions) == 18
    assert dict(desired.max_errors) == {} and dict(desired.firmware) == {}


def test_intent_settings_reach_the_desired_fabric(example: Inventory) -> None:
    settings = example.intent.ib_fabric.model_dump() | (
        {
            "read_from": "ibgpu02",
            "read_port": "mlx5_3/1",
            "width": "4x",
            "speed": "HDR",
            "host_description": "%h:%d",
            "max_errors": {"SymbolErrorCounter": 5},
            "firmware": [{"device_id": 54002, "version": "31.2012.1024"}],
        }
    )
    intent = FabricIntent.model_validate(example.intent.model_dump() | {"ib_fabric": settings})
    plan = fabric_of(example).ib
    plan = dataclasses.replace(plan, hostnames=(("ibgpu01", "node-a.example"),))
    desired = desired_ib_fabric(intent, plan, subnet_managers=["sm01"])
    assert desired is not None
    assert (desired.reader, desired.read_port, desired.speed) == ("ibgpu02", ("mlx5_3", 1), "HDR")
    assert desired.links[0].a.description == "node-a:mlx5_0"  # ib_hostname, up to its first dot
    assert desired.host_descriptions["ibgpu02:mlx5_7"] == ("ibgpu02", "mlx5_7")
    assert dict(desired.max_errors) == {"SymbolErrorCounter": 5}
    assert dict(desired.firmware) == {54002: "31.2012.1024"}


def test_reader_falls_back_to_the_first_sm_node_then_the_first_gpu_host(example: Inventory) -> None:
    unprioritised = example.intent.model_copy(
        update={"subnet_manager": example.intent.subnet_manager.model_copy(update={"sm_priorities": {}})}
    )
    plan = fabric_of(example).ib
    by_sm = desired_ib_fabric(unprioritised, plan, subnet_managers=["sm02", "sm01"], gpu_hosts=["ibgpu01"])
    by_host = desired_ib_fabric(unprioritised, plan, gpu_hosts=["ibgpu02", "ibgpu01"])
    assert by_sm is not None and by_sm.reader == "sm02"
    assert by_host is not None and by_host.reader == "ibgpu02"


def test_no_ib_switch_no_ib_fabric(example: Inventory) -> None:
    assert desired_ib_fabric(example.intent, IbPlan(), gpu_hosts=["ibgpu01"]) is None
    roce = load_inventory(REPO / "inventory/example")
    assert plan_gate(roce, stages=["host"]).desired.ib_fabric is None


def test_plan_derives_it_once_with_the_window_and_keeps_the_plan_when_narrowing(example: Inventory) -> None:
    plan = plan_gate(example, "ibgpu01", ("host", "sm"), counter_window_s=12)
    desired = plan.desired.ib_fabric
    assert desired is not None and desired.counter_window_s == 12
    assert desired.reader == "sm01"  # the whole fabric: --limit does not move the reader
    assert len(desired.links) == 34
    assert plan.fabric.ib == plan.whole.ib and len(plan.fabric.ib.switches) == 4
    # IB switches are neither Ethernet switches nor GPU hosts of the plan.
    assert plan.switches == () and plan.fabric.switches == ()
    assert [h.name for h in plan.hosts] == ["ibgpu01"]
    whole = plan_gate(example, None, ("host", "sm"))
    assert [h.name for h in whole.hosts] == ["ibgpu01", "ibgpu02"]
    assert {h.name for h in whole.not_checked} == {"leaf01", "leaf02", "spine01", "spine02"}
