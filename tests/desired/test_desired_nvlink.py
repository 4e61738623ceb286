"""Each GPU host's desired NVLink state (issue 38): derived once, in the gate plan, from the fleet's
nvlink intent and the inventory's domains; pair classes; one intent per domain."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabcheck.desired.nvlink import (
    PAIR_NETWORK,
    PAIR_NVLINK,
    DesiredNvlinkHost,
    desired_nvlink,
    desired_nvlink_host,
)
from fabcheck.errors import IntentError
from fabcheck.gate.plan import plan_gate
from fabcheck.intent.loader import load_inventory
from fabcheck.intent.model import NvlinkIntent
from fabcheck.intent.nvlink import NvlinkDomain, NvlinkPlan

REPO = Path(__file__).resolve().parents[2]
GB200 = NvlinkIntent(gpus=4, links_per_gpu=18, link_gbytes=53.125, imex=True)
PLAN = NvlinkPlan((NvlinkDomain("nvl_rack1", ("gpu01", "gpu02"), ("10.0.0.1", "10.0.0.2")),))


def test_a_domain_member_reaches_its_domain_over_nvlink_and_the_rest_over_the_network() -> None:
    desired = desired_nvlink_host(GB200, PLAN, "gpu02")
    assert desired == DesiredNvlinkHost(
        "gpu02", "nvl_rack1", ("gpu01", "gpu02"), ("10.0.0.1", "10.0.0.2"), 4, 18, 53.125, True, False, 0.6
    )
    assert desired.multi_node and desired.gpu_gbytes == 18 * 53.125
    assert [desired.pair_class(peer) for peer in ("gpu01", "gpu02", "gpu03")] == [
        PAIR_NVLINK,
        PAIR_NVLINK,
        PAIR_NETWORK,
    ]


def test_a_host_in_no_domain_is_its_own() -> None:
    desired = desired_nvlink_host(
        NvlinkIntent(gpus=8, link_gbytes=26.562, fabric_manager=True), PLAN, "hgx01"
    )
    assert (desired.domain, desired.members, desired.addresses) == ("hgx01", ("hgx01",), ())
    assert not desired.multi_node and desired.fabric_manager and not desired.imex
    assert desired.pair_class("hgx01") == PAIR_NVLINK and desired.pair_class("gpu01") == PAIR_NETWORK


def test_one_domain_has_one_intent_naming_both_hosts() -> None:
    other = GB200.model_copy(update={"links_per_gpu": 16})
    with pytest.raises(IntentError) as err:
        desired_nvlink({"gpu01": GB200, "gpu02": other}, PLAN, ["gpu01"])
    [problem] = err.value.problems
    assert problem.startswith(
        "NVLink domain nvl_rack1: gpu01 and gpu02 resolve different fabric_intent.nvlink"
    )
    assert "links_per_gpu=16" in problem


def test_hosts_of_different_domains_may_differ_and_only_planned_hosts_are_derived() -> None:
    lone = NvlinkIntent(gpus=8, fabric_manager=True)
    desired = desired_nvlink({"gpu01": GB200, "gpu02": GB200, "hgx01": lone}, PLAN, ["gpu02", "hgx01"])
    assert set(desired) == {"gpu02", "hgx01"}
    assert desired["hgx01"].fabric_manager and desired["gpu02"].imex


def test_to_json_is_what_the_role_reads() -> None:
    assert desired_nvlink_host(GB200, PLAN, "gpu01").to_json() == {
        "host": "gpu01",
        "domain": "nvl_rack1",
        "members": ["gpu01", "gpu02"],
        "addresses": ["10.0.0.1", "10.0.0.2"],
        "gpus": 4,
        "links_per_gpu": 18,
        "link_gbytes": 53.125,
        "imex": True,
        "fabric_manager": False,
        "busbw_min_fraction": 0.6,
    }


def test_the_gate_plan_derives_it_once_for_every_planned_gpu_host() -> None:
    inventory = load_inventory(REPO / "inventory/example-nvl")
    plan = plan_gate(inventory, limit="tray03", stages=["host"])
    assert set(plan.desired.nvlink) == {"tray03"}
    tray03 = plan.desired.nvlink["tray03"]
    assert tray03.members == ("tray03", "tray04") and tray03.addresses == ("198.51.100.33", "198.51.100.34")
    assert tray03.pair_class("tray04") == PAIR_NVLINK and tray03.pair_class("tray01") == PAIR_NETWORK
    assert plan.fabric.nvlink == plan.whole.nvlink  # --limit never narrows a domain
    whole = plan_gate(inventory, stages=["host"])
    assert [h.domain for h in whole.desired.nvlink.values()] == ["nvl_rack1"] * 2 + ["nvl_rack2"] * 2


def test_an_inventory_without_domains_gives_every_host_its_own() -> None:
    plan = plan_gate(load_inventory(REPO / "inventory/example"), stages=["host"])
    assert plan.desired.nvlink and all(d.members == (d.host,) for d in plan.desired.nvlink.values())
    assert all(d.gpus is None for d in plan.desired.nvlink.values())
