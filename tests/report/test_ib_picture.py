"""The InfiniBand fabric of the HTML report: switches in tiers, their cables coloured by the ib checks'
verdicts, and a cable table naming both ends; built from check_ib_fabric's real findings on the test
fabric of tests/checks/ibfabric.py (2 leaves, 2 spines, 4 hosts)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace

from fabcheck.checks.ib import check_ib_fabric
from fabcheck.checks.model import Status, Where, failed
from fabcheck.report import html, ib_picture
from fabcheck.report.model import NodeKind, Run, Subject
from fabcheck.report.palette import SOLID
from tests.checks.ibfabric import HOSTS, SWITCHES, UPLINKS, Shown, desired

SVG = "{http://www.w3.org/2000/svg}"


def ib_run(shown: Shown) -> Run:
    results = check_ib_fabric(shown.evidence(), desired())
    subjects = [Subject(name, NodeKind.IB_SWITCH, tuple(results[name])) for name in SWITCHES]
    subjects += [Subject(name, NodeKind.HOST, tuple(results.get(name, ()))) for name in HOSTS]
    return Run("validate", tuple(subjects))


def strokes(svg: str) -> dict[str, str]:
    root = ET.fromstring(svg)
    return {
        line.get("data-ends") or "": line.get("stroke") or ""
        for line in root.iter(f"{SVG}line")
        if line.get("class") == "ib-cable"
    }


def test_tiers_and_cables_coloured_by_verdict() -> None:
    shown = Shown()
    shown.cables[UPLINKS[0]] = (("1x", "NDR"), ("1x", "NDR"))  # leaf01/3 <-> spine01/1 trained down
    shown.deltas[("leaf02", 1)] = {"SymbolErrorCounter": 3}  # gpu03's host cable counts errors
    picture = ib_picture.ib_fabric(ib_run(shown))
    assert picture.tiers == (("leaf01", "leaf02"), ("spine01", "spine02"))
    svg = ib_picture.render(picture)
    assert strokes(svg) == {
        "leaf01 spine01": SOLID[Status.FAIL],
        "leaf01 spine02": SOLID[Status.PASS],
        "leaf02 spine01": SOLID[Status.PASS],
        "leaf02 spine02": SOLID[Status.PASS],
    }
    root = ET.fromstring(svg)
    bars = {
        r.get("data-leaf"): r.get("fill") for r in root.iter(f"{SVG}rect") if r.get("class") == "ib-hosts"
    }
    assert bars == {"leaf01": SOLID[Status.PASS], "leaf02": SOLID[Status.FAIL]}
    spine_y = {
        r.get("data-switch"): float(r.get("y") or 0)
        for r in root.iter(f"{SVG}rect")
        if r.get("class") == "ib-switch"
    }
    assert spine_y["spine01"] < spine_y["leaf01"]  # spines above leaves


def test_the_cable_table_names_both_ends_failures_first() -> None:
    shown = Shown()
    shown.swap_at_upper(UPLINKS[0], UPLINKS[2])
    report = html.render(ib_run(shown))
    assert "<h2>InfiniBand fabric</h2>" in report
    first = report.index('<table class="ib-links">')
    failing = report[first : report.index("</table>", first)]
    assert "leaf01/3 ↔ spine01/1" in failing and "leaf02/3 ↔ spine01/2" in failing
    assert "swap the cables at spine01/2 and spine01/1" in failing
    assert '<td class="v-fail">fail</td>' in failing
    assert "gpu01/mlx5_0 ↔ leaf01/1" not in failing  # passing cables are folded below
    assert "IB cable(s) pass</summary>" in report
    rows = ib_picture.table_rows(ib_picture.ib_fabric(ib_run(shown)))
    assert [status for _, status in rows][:2] == [Status.FAIL, Status.FAIL]
    assert len(rows) == 8


def test_too_many_switches_are_not_drawn_and_a_run_without_ib_has_no_section() -> None:
    findings = []
    for leaf in range(ib_picture.DRAW_MAX_SWITCHES + 1):
        name = f"leaf{leaf:03d}"
        finding = failed("ib.topology", f"gpu{leaf}/mlx5_0 ↔ {name}/1", "a cable", "no link", "reseat")
        findings.append(replace(finding, where=Where(name, "1", f"gpu{leaf}/mlx5_0")))
    run = Run("validate", tuple(Subject(f.where.node, NodeKind.IB_SWITCH, (f,)) for f in findings if f.where))
    picture = ib_picture.ib_fabric(run)
    assert ib_picture.render(picture) == ""
    assert "not drawn" in ib_picture.rule_note(picture)
    assert "<h2>InfiniBand fabric</h2>" not in html.render(
        Run("validate", (Subject("gpu01", NodeKind.HOST, ()),))
    )


def test_failure_rows_name_the_switch_port_and_host_hca_and_an_ib_only_run_counts_ib_switches() -> None:
    shown = Shown()
    shown.deltas[("leaf01", 1)] = {"SymbolErrorCounter": 7}
    run = ib_run(shown)
    report = html.render(run)
    failures = report[report.index('<table class="failures">') :]
    row = failures[: failures.index("</tr>", failures.index("<tbody>"))]
    assert "<td>gpu01/mlx5_0</td><td>leaf01/1</td>" in row
    switches_only = Run("validate", tuple(s for s in run.subjects if s.kind is NodeKind.IB_SWITCH))
    assert switches_only.noun == "IB switch(es)"
