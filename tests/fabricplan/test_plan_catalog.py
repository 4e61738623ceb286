"""The switch catalog: each model's facts as its source states them, the generic model, default_model."""

from __future__ import annotations

import pytest

from fabcheck.fabricplan.catalog import CATALOG, catalog_model, default_model, generic_model
from fabcheck.fabricplan.model import PlanError


@pytest.mark.parametrize(
    ("name", "fabric", "cages", "cage_gbps", "ports_at"),
    [
        ("qm9700", "ib", 32, 800, {400: 64, 200: 128, 800: 0}),
        ("q3400", "ib", 72, 1600, {800: 144}),
        ("sn5600", "roce", 64, 800, {800: 64, 400: 128, 200: 256, 100: 0}),
        ("7060x6-64pe", "roce", 64, 800, {800: 64, 400: 128, 200: 256, 100: 512}),
    ],
)
def test_catalog_facts(name: str, fabric: str, cages: int, cage_gbps: int, ports_at: dict[int, int]) -> None:
    model = CATALOG[name]
    assert (model.fabric, model.cages, model.cage_gbps) == (fabric, cages, cage_gbps)
    assert {speed: model.ports(speed) for speed in ports_at} == ports_at
    assert model.source.startswith("https://")
    assert (model.platform is None) == (fabric == "ib")


def test_generic_model_breaks_out_evenly() -> None:
    model = generic_model(48, 800, "roce", "sonic")
    assert model.link_gbps == (800, 400, 200, 100) and model.ports(400) == 96 and model.ports(300) == 0
    assert model.platform == "sonic" and model.source == ""
    with pytest.raises(PlanError, match=r"^--switch-ports: "):
        generic_model(0, 800)
    with pytest.raises(PlanError, match=r"^--switch-port-gbps: "):
        generic_model(8, 0)


def test_default_model_per_fabric_and_speed() -> None:
    assert default_model("ib", 400).name == "qm9700"
    assert default_model("ib", 800).name == "q3400"
    assert default_model("roce", 400).name == "sn5600"
    with pytest.raises(PlanError, match=r"^--nic-gbps: "):
        default_model("ib", 1600)


def test_unknown_model_is_refused_naming_the_option() -> None:
    assert catalog_model("QM9700").name == "qm9700"
    with pytest.raises(PlanError, match=r"^--spine-switch: unknown switch model 'qm9999'; known: qm9700"):
        catalog_model("qm9999", "--spine-switch")
