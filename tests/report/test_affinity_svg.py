"""The GPU-NIC picture: the matrix, with each GPU's judged NIC cell filled by its verdict colour."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from reportdata import RAILS, TOPO, affinity_findings

from fabcheck.checks.model import Status
from fabcheck.report import affinity_svg
from fabcheck.report.model import Affinity
from fabcheck.report.palette import NEUTRAL, SOLID, UNJUDGED

SVG = "{http://www.w3.org/2000/svg}"


def cells(svg: str) -> dict[str, str]:
    """rect title -> fill, for the matrix cells and GPU labels."""
    root = ET.fromstring(svg)
    out = {}
    for rect in root.iter(f"{SVG}rect"):
        title = rect.find(f"{SVG}title")
        if title is not None:
            out[title.text or ""] = rect.get("fill") or ""
    return out


def test_rail_cells_carry_the_verdict_and_other_cells_stay_neutral() -> None:
    svg = affinity_svg.render("gpu02", Affinity(TOPO, RAILS), affinity_findings(failing_gpu=1))
    fills = cells(svg)
    assert fills["GPU1 - mlx5_1: SYS (fail)"] == SOLID[Status.FAIL]
    assert fills["GPU1: fail"] == SOLID[Status.FAIL]
    assert fills["GPU0 - mlx5_0: PIX (pass)"] == SOLID[Status.PASS]
    assert fills["GPU3 - mlx5_3: PIX (pass)"] == SOLID[Status.PASS]
    assert fills["GPU1 - mlx5_2: PIX"] == NEUTRAL  # the near NIC is not GPU1's rail
    assert len(fills) == 4 + 4 * 4
    assert sum(fill == SOLID[Status.FAIL] for fill in fills.values()) == 2


def test_without_rails_the_nearest_nics_are_judged_and_missing_findings_are_unjudged() -> None:
    svg = affinity_svg.render("gpu05", Affinity(TOPO), [])
    fills = cells(svg)
    assert fills["GPU1 - mlx5_2: PIX (not judged)"] == UNJUDGED
    assert fills["GPU1: not judged"] == NEUTRAL
    assert fills["GPU1 - mlx5_1: SYS"] == NEUTRAL


def test_a_rail_nic_missing_from_the_matrix_colours_only_the_gpu_label() -> None:
    findings = affinity_findings(failing_gpu=2)
    svg = affinity_svg.render("gpu06", Affinity(TOPO, {**RAILS, 2: "mlx5_9"}), findings)
    fills = cells(svg)
    assert fills["GPU2: fail"] == SOLID[Status.FAIL]
    assert not any(title.startswith("GPU2 - ") and "(" in title for title in fills)


def test_names_are_escaped() -> None:
    svg = affinity_svg.render('gpu<"7">', Affinity(TOPO, RAILS), [])
    assert 'aria-label="gpu&lt;&quot;7&quot;&gt; GPU-NIC affinity"' in svg
    ET.fromstring(svg)
