"""The plan as people read it (fabcheck.fabricplan.render), on plans built here by hand so that every
figure printed is one the test wrote: the BOM rows, the per-tier port use, the per-rail leaves, and the
RoCE/InfiniBand comparison's differences in percent."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from fabcheck.fabricplan import render
from fabcheck.fabricplan.model import (
    Bom,
    FabricPlan,
    PlanError,
    PlanInput,
    PlannedCable,
    PlannedSwitch,
    PortEnd,
    SwitchModel,
)
from fabcheck.fabricplan.planfile import plan_from_json, plan_to_json
from fabcheck.fabricplan.sizing import plan_fabric

SMALL = SwitchModel("small", "a 4-port switch", "any", 4, 100, (100,), None, "")


def two_tier_plan(fabric: str = "roce", spines: int = 1) -> FabricPlan:
    """2 nodes x 2 rails on 4-port switches, non-blocking: one leaf per rail (2 down, 2 up) and
    `spines` spines (1: both ends of every uplink on spine-01; 2: one uplink of each leaf per spine)."""
    request = PlanInput(fabric, 4, 2, 2, 100, SMALL, SMALL)
    leaves = [PlannedSwitch(f"leaf-01-r{rail}", "leaf", "small", 4, rail=rail) for rail in (0, 1)]
    spine_switches = [PlannedSwitch(f"spine-0{j}", "spine", "small", 4) for j in range(1, spines + 1)]
    cables = [
        PlannedCable(PortEnd(node, f"mlx5_{rail}"), PortEnd(f"leaf-01-r{rail}", str(n + 1)), "host")
        for n, node in enumerate(("gpu01", "gpu02"))
        for rail in (0, 1)
    ]
    spine_port = {name.name: 0 for name in spine_switches}
    for rail in (0, 1):
        for up in (3, 4):
            spine = spine_switches[(up - 3) % spines].name
            spine_port[spine] += 1
            end = PortEnd(spine, str(spine_port[spine]))
            cables.append(PlannedCable(PortEnd(f"leaf-01-r{rail}", str(up)), end, "leaf_spine"))
    used_cages = 2 * 4 + sum(spine_port.values())  # one module per used cage, one lane a cage
    bom = Bom(
        switches={"leaf": 2, "spine": spines, "core": 0, "total": 2 + spines},
        links={"host": 4, "leaf_spine": 4, "spine_core": 0, "total": 8},
        transceivers={"nic": 4, "switch": used_cages, "total": 4 + used_cages},
        cables=8,
    )
    return FabricPlan(request, 2, ("gpu01", "gpu02"), (*leaves, *spine_switches), tuple(cables), bom)


def lines_of(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def test_the_table_prints_every_bom_figure_and_the_design() -> None:
    text = render.text(two_tier_plan())
    lines = text.splitlines()
    assert lines[0] == "fabric plan: roce, 4 GPUs = 2 nodes x 2 GPUs, 2 rails of 100G NICs"
    assert lines[1] == "switch: small (a 4-port switch), 4 x 100G cages = 4 ports of 100G (1 a cage)"
    assert lines[2] == "design: 2 tiers, non-blocking (1:1), rail-optimised"
    assert lines[3] == "leaves: 1 per rail (1 group of nodes, up to 2 host links a leaf)"
    rows = lines_of(text)
    for expected in (
        ["switches", "leaf", "2"],
        ["spine", "1"],
        ["core", "0"],
        ["total", "3"],
        ["links", "host", "(NIC", "to", "leaf)", "4"],
        ["leaf", "to", "spine", "4"],
        ["transceivers", "NIC", "ends", "4"],
        ["switch", "cages", "12"],
        ["total", "16"],
        ["cables", "8"],
        ["leaf", "2", "8", "8", "100%"],
        ["spine", "1", "4", "4", "100%"],
    ):
        assert expected in rows, (expected, text)
    assert not any(row and row[0] == "core" and len(row) == 5 for row in rows), "no core tier in the ports"


def test_a_different_spine_model_is_named_on_its_own_line() -> None:
    plan = two_tier_plan()
    bigger = SwitchModel("big", "an 8-port switch", "any", 8, 100, (100,), None, "")
    request = PlanInput("roce", 4, 2, 2, 100, SMALL, bigger)
    lines = render.text(FabricPlan(request, 2, plan.nodes, plan.switches, plan.cables, plan.bom)).splitlines()
    assert lines[1] == "leaf switch: small (a 4-port switch), 4 x 100G cages = 4 ports of 100G (1 a cage)"
    assert lines[2] == "spine switch: big (an 8-port switch), 8 x 100G cages = 8 ports of 100G (1 a cage)"


def test_markdown_holds_the_same_figures_as_tables() -> None:
    text = render.markdown(two_tier_plan())
    assert text.startswith("# Fabric plan: roce, 4 GPUs\n")
    assert "| bill of materials |  | count |\n|---|---|---:|\n" in text
    assert "| switches | leaf | 2 |" in text and "| transceivers | NIC ends | 4 |" in text
    assert "|  | switch cages | 12 |" in text and "| cables |  | 8 |" in text
    assert "| leaf | 2 | 8 | 8 | 100% |" in text


def test_json_is_the_plan_file_and_reads_back() -> None:
    plan = two_tier_plan()
    document = json.loads(render.json_document(plan))
    assert document["switches"] == {"leaf": 2, "spine": 1, "core": 0, "total": 3}
    assert document["cables"] == 8
    # Hand-built: 4 host links on 4-port switches, which the planner puts on one switch; reading it
    # back re-plans its input and refuses the difference (a hand-edited file is not trusted).
    with pytest.raises(PlanError, match=r"^<test>: tiers: 2: its input plans 1$"):
        plan_from_json(document, "<test>")
    planned = plan_fabric(replace(plan.input, gpus=8))
    assert plan_from_json(json.loads(render.json_document(planned)), "<test>") == planned


@pytest.mark.parametrize(
    ("base", "other", "expected"),
    [(4, 6, "+50.0%"), (8, 4, "-50.0%"), (3, 3, "+0.0%"), (0, 2, "-"), (3, 1, "-66.7%")],
)
def test_percent_differences(base: int, other: int, expected: str) -> None:
    assert render.percent_text(render.percent_difference(base, other)) == expected


def test_comparison_prints_both_boms_and_the_differences() -> None:
    roce, ib = two_tier_plan("roce", spines=1), two_tier_plan("ib", spines=2)
    text = render.comparison_text(roce, ib)
    rows = lines_of(text)
    assert ["bill", "of", "materials", "roce", "ib", "ib", "vs", "roce"] in rows
    assert ["switches", "leaf", "2", "2", "+0.0%"] in rows
    assert ["spine", "1", "2", "+100.0%"] in rows
    assert ["core", "0", "0", "-"] in rows
    assert ["total", "3", "4", "+33.3%"] in rows  # switches
    assert ["links", "host", "(NIC", "to", "leaf)", "4", "4"] in rows  # links: side by side, no difference
    assert ["switch", "cages", "12", "12", "+0.0%"] in rows  # 4 spine ports used either way
    assert ["cables", "8", "8", "+0.0%"] in rows
    assert "ib: small (a 4-port switch), 2 tiers" in text


def test_comparison_json_holds_both_plans_and_the_differences() -> None:
    roce, ib = two_tier_plan("roce", spines=1), two_tier_plan("ib", spines=2)
    document = json.loads(render.comparison_json_document(roce, ib))  # strict JSON: no NaN
    assert document["compare"] == ["roce", "ib"]
    # each side is that plan's file (hand-built plans: reading them back is refused, see above)
    for side, plan in (("roce", roce), ("ib", ib)):
        assert document[side] == json.loads(json.dumps(plan_to_json(plan)))
    differences = document["difference_percent"]
    assert differences["of"] == "ib" and differences["from"] == "roce"
    assert differences["switches"] == {"leaf": 0.0, "spine": 100.0, "core": None, "total": 33.3}
    assert differences["transceivers"] == {"nic": 0.0, "switch": 0.0, "total": 0.0}
    assert differences["cables"] == 0.0
    assert "links" not in differences


def test_comparison_markdown_is_one_table() -> None:
    text = render.comparison_markdown(two_tier_plan("roce"), two_tier_plan("ib", spines=2))
    assert text.startswith("# Fabric comparison: roce and ib, 4 GPUs\n")
    assert "| bill of materials |  | roce | ib | ib vs roce |" in text
    assert "|  | spine | 1 | 2 | +100.0% |" in text
