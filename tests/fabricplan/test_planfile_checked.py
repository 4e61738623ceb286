"""A plan file is user input and may be hand-edited: read_plan_file refuses one that does not hold
together, in one PlanError line naming the file and the first bad key, before the inventory writer or
the lab indexes by it (a KeyError, ValueError or IndexError there before) or silently takes two cables on
one port or a bill of materials its cabling does not count."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fabcheck.cli import main
from fabcheck.fabricplan.catalog import CATALOG
from fabcheck.fabricplan.model import PlanError, PlanInput
from fabcheck.fabricplan.planfile import plan_to_json, read_plan_file, write_plan_file
from fabcheck.fabricplan.sizing import plan_fabric

Edit = Callable[[dict[str, Any]], None]


def document() -> dict[str, Any]:
    """32 nodes x 8 rails on SN5600s at 400G: two tiers, 8 leaves of 128 ports and 2 spines, 512 cables,
    host cables first (node by node: cabling[8] is gpu02:mlx5_0 - leaf-01-r0:2)."""
    sn5600 = CATALOG["sn5600"]
    plan = plan_fabric(PlanInput("roce", 256, 8, 8, 400, sn5600, sn5600, oversubscription=1))
    data: dict[str, Any] = json.loads(json.dumps(plan_to_json(plan)))
    return data


def cabling(data: dict[str, Any]) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = data["plan"]["cabling"]
    return rows


def _set(index: int, side: str, value: str) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        cabling(data)[index][side] = value

    return edit


def _bom(data: dict[str, Any]) -> None:
    data["switches"]["spine"] += 1
    data["switches"]["total"] += 1


def _drop_last_cable(data: dict[str, Any]) -> None:
    cabling(data).pop()


def _swap_two_host_ports(data: dict[str, Any]) -> None:
    rows = cabling(data)
    rows[0]["b"], rows[8]["b"] = rows[8]["b"], rows[0]["b"]


def _rename_switch(data: dict[str, Any]) -> None:
    data["plan"]["switches"][0]["name"] = "leaf-99-r0"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set(0, "b", "nosuch-switch:1"),
         r"plan\.cabling\[0\]\.b: 'nosuch-switch:1': nosuch-switch is not a planned node or switch"),
        (_set(0, "b", "leaf-01-r0:abc"),
         r"plan\.cabling\[0\]\.b: 'leaf-01-r0:abc': expected a port 1\.\.128 of leaf-01-r0"),
        (_set(0, "b", "leaf-01-r0:999"),
         r"plan\.cabling\[0\]\.b: 'leaf-01-r0:999': expected a port 1\.\.128"),
        (_set(0, "b", "leaf-01-r0:0"), r"'leaf-01-r0:0': expected a port 1\.\.128"),
        (_set(0, "b", "leaf-01-r0:²"), r"'leaf-01-r0:²': expected a port 1\.\.128"),
        (_set(1, "b", "leaf-01-r0:1"),
         r"plan\.cabling\[1\]\.b: 'leaf-01-r0:1': already cabled at plan\.cabling\[0\]\.b"),
        (_set(0, "a", "gpu01:mlx5_8"),
         r"plan\.cabling\[0\]\.a: 'gpu01:mlx5_8': expected a NIC mlx5_0\.\.7 of gpu01"),
        (_set(0, "a", "gpu01:eth0"), r"'gpu01:eth0': expected a NIC mlx5_0\.\.7"),
        (_set(0, "a", "gpu99:mlx5_0"), r"'gpu99:mlx5_0': gpu99 is not a planned node or switch"),
        (_bom, r"plan\.json: switches: \{'leaf': 8, 'spine': 3, 'core': 0, 'total': 11\}: "
         r"its cabling counts \{'leaf': 8, 'spine': 2, 'core': 0, 'total': 10\}$"),
        (_drop_last_cable, r"plan\.json: plan\.cabling: 511 entries: its input plans 512$"),
        (_swap_two_host_ports, r"plan\.cabling\[0\]: gpu01:mlx5_0 - leaf-01-r0:2 \(host\): its input plans "
         r"gpu01:mlx5_0 - leaf-01-r0:1 \(host\) here$"),
        (_rename_switch,
         r"plan\.cabling\[0\]\.b: 'leaf-01-r0:1': leaf-01-r0 is not a planned node or switch"),
    ],
)  # fmt: skip
def test_an_inconsistent_plan_file_is_one_line(tmp_path: Path, edit: Edit, message: str) -> None:
    data = document()
    edit(data)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PlanError, match=message) as caught:
        read_plan_file(path)
    assert "\n" not in str(caught.value) and str(caught.value).startswith(f"{path}: ")


def test_an_input_that_cannot_be_planned_is_named(tmp_path: Path) -> None:
    data = document()
    data["input"]["gpus"] = 99999999999999999999992
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    with pytest.raises(
        PlanError, match=r"plan\.json: input: cannot be planned: --gpus: .* at most 524288 GPUs"
    ):
        read_plan_file(path)


def test_an_unedited_plan_file_reads_back(tmp_path: Path) -> None:
    sn5600 = CATALOG["sn5600"]
    plan = plan_fabric(PlanInput("roce", 256, 8, 8, 400, sn5600, sn5600))
    write_plan_file(plan, tmp_path / "plan.json")
    assert read_plan_file(tmp_path / "plan.json") == plan


def test_the_lab_refuses_it_before_anything_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fabcheck lab up --plan` reads through read_plan_file (fromplan.load_plan): exit 2, one line."""
    from fabcheck_lab import fromplan

    data = document()
    _set(0, "b", "leaf-01-r0:999")(data)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PlanError, match=r"'leaf-01-r0:999': expected a port 1\.\.128"):
        fromplan.load_plan(path)
    (tmp_path / "inventory").mkdir()
    monkeypatch.setattr("fabcheck_lab.cli.project_root", lambda: tmp_path)
    monkeypatch.setattr("fabcheck_lab.lifecycle.up", lambda *a, **k: pytest.fail("a lab would start"))
    assert main(["lab", "up", "--plan", str(path)]) == 2
