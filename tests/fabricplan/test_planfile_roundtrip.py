"""A plan written as JSON reads back equal, and a bad key is refused naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabcheck.fabricplan.catalog import CATALOG, generic_model
from fabcheck.fabricplan.model import PlanError, PlanInput
from fabcheck.fabricplan.planfile import plan_to_json, read_plan_file, write_plan_file
from fabcheck.fabricplan.sizing import plan_fabric


@pytest.mark.parametrize(
    "request_",
    [
        PlanInput("ib", 4096, 8, 8, 400, CATALOG["qm9700"], CATALOG["qm9700"]),
        PlanInput(
            "roce", 96, 4, 4, 400, generic_model(16, 800, "any", "sonic"), CATALOG["sn5600"], 2.0, False
        ),
    ],
)
def test_plan_file_round_trip(tmp_path: Path, request_: PlanInput) -> None:
    plan = plan_fabric(request_)
    path = tmp_path / "plan.json"
    write_plan_file(plan, path)
    assert read_plan_file(path) == plan
    data = json.loads(path.read_text())
    assert data["switches"]["total"] == len(plan.switches) and data["cables"] == len(plan.cables)
    assert data["plan"]["cabling"][0] == {
        "a": f"{plan.nodes[0]}:mlx5_0",
        "b": f"{plan.cables[0].b.device}:1",
        "tier": "host",
    }


def test_bad_key_is_refused_naming_it(tmp_path: Path) -> None:
    data = plan_to_json(plan_fabric(PlanInput("ib", 256, 8, 8, 400, CATALOG["qm9700"], CATALOG["qm9700"])))
    data["plan"]["cabling"][3]["b"] = "leaf-01-r3"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    with pytest.raises(
        PlanError, match=r"plan.json: plan.cabling\[3\].b: 'leaf-01-r3': expected DEVICE:PORT"
    ):
        read_plan_file(path)
