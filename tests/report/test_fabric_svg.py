"""The fabric picture: which findings colour a NIC, a cable and a port; the drawing's fills; escaping;
the compact rule for large fleets."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

from labrun import lab_run
from reportdata import fabric_run, fleet

from fabcheck.checks.model import Finding, Status, Where, errored, failed, passed
from fabcheck.report import fabric_map, fabric_svg, html
from fabcheck.report.model import NodeKind, Run, Subject
from fabcheck.report.palette import SOLID, UNJUDGED

SVG = "{http://www.w3.org/2000/svg}"


def cells(svg: str) -> dict[tuple[str, str], ET.Element]:
    root = ET.fromstring(svg)
    return {
        (g.get("data-host") or "", g.get("data-nic") or ""): g
        for g in root.iter(f"{SVG}g")
        if g.get("class") == "nic"
    }


def fills(group: ET.Element) -> list[str]:
    """The NIC box, then the port box (when cabled); the cable is a line."""
    return [rect.get("fill") or "" for rect in group.iter(f"{SVG}rect")]


def cable(group: ET.Element) -> str:
    line = group.find(f"{SVG}line")
    assert line is not None
    return line.get("stroke") or ""


def test_the_lab_run_nic_cable_and_port_verdicts() -> None:
    picture = fabric_map.fabric(lab_run())
    assert picture.columns == tuple(f"mlx5_{i}" for i in range(8))
    assert [row.host for row in picture.rows] == ["gpu01", "gpu02", "gpu03"]
    gpu02 = picture.cell("gpu02", "mlx5_0")
    assert gpu02 is not None and (gpu02.switch, gpu02.port) == ("leaf01", "swp9")
    assert (gpu02.nic_status, gpu02.cable_status, gpu02.port_status) == (
        Status.FAIL,
        Status.FAIL,
        Status.PASS,
    )
    assert {f.check for f in gpu02.nic_findings if f.status is Status.FAIL} == {"host.pfc"}
    # every per-NIC host check about mlx5_0 and mlx5_0/1, nothing about mlx5_1 or the host as a whole
    assert {f.subject for f in gpu02.nic_findings} == {"mlx5_0", "mlx5_0/1"}
    gpu01 = picture.cell("gpu01", "mlx5_0")
    assert gpu01 is not None and gpu01.port == "swp1"
    assert (gpu01.nic_status, gpu01.cable_status, gpu01.port_status) == (
        Status.PASS,
        Status.FAIL,
        Status.FAIL,
    )
    gpu03 = picture.cell("gpu03", "mlx5_1")
    assert gpu03 is not None and (gpu03.nic_status, gpu03.cable_status) == (None, Status.ERROR)
    assert picture.cell("gpu03", "mlx5_2") is None  # the PCIe server has two NICs
    [leaf01] = picture.switches
    assert (leaf01.name, leaf01.status, leaf01.ports) == ("leaf01", Status.FAIL, 18)
    passing = [c for row in picture.rows for c in row.cells.values() if c.passes]
    assert len(passing) == 18 - 2 - 2  # all but gpu01 and gpu02 mlx5_0 and gpu03's two


def test_the_failing_nic_box_is_drawn_in_the_fail_colour() -> None:
    drawn = cells(fabric_svg.render(lab_run()))
    assert len(drawn) == 18
    nic, port = fills(drawn[("gpu02", "mlx5_0")])
    assert (nic, port) == (SOLID[Status.FAIL], SOLID[Status.PASS])
    assert cable(drawn[("gpu02", "mlx5_0")]) == SOLID[Status.FAIL]
    assert drawn[("gpu02", "mlx5_0")].get("data-nic-status") == "fail"
    assert fills(drawn[("gpu01", "mlx5_0")]) == [SOLID[Status.PASS], SOLID[Status.FAIL]]
    assert fills(drawn[("gpu03", "mlx5_0")]) == [UNJUDGED, SOLID[Status.PASS]]
    assert cable(drawn[("gpu03", "mlx5_0")]) == SOLID[Status.ERROR]
    red_nics = [key for key, g in drawn.items() if fills(g)[0] == SOLID[Status.FAIL]]
    assert red_nics == [("gpu02", "mlx5_0")]


def test_the_hand_made_run_uses_link_details_and_rails() -> None:
    """gpu02's trust failure (subject `mlx5_0`) and GPU1's affinity failure (rail mlx5_1) colour NICs;
    gpu04 did not answer and names no NIC: it has a row with no cells."""
    picture = fabric_map.fabric(fabric_run())
    mlx5_0, mlx5_1 = picture.cell("gpu02", "mlx5_0"), picture.cell("gpu02", "mlx5_1")
    assert mlx5_0 is not None and mlx5_0.nic_status is Status.FAIL and mlx5_0.port == "swp2"
    assert mlx5_1 is not None and mlx5_1.nic_status is Status.FAIL and mlx5_1.switch == ""
    assert [f.subject for f in mlx5_1.nic_findings] == ["GPU1"]
    gpu03 = picture.cell("gpu03", "mlx5_0")
    assert gpu03 is not None and gpu03.cable_status is None and gpu03.port == "swp3"  # unjudged link
    gpu04 = next(row for row in picture.rows if row.host == "gpu04")
    assert gpu04.cells == {} and gpu04.status is Status.ERROR
    drawn = cells(fabric_svg.render(fabric_run()))
    assert fills(drawn[("gpu02", "mlx5_1")]) == [SOLID[Status.FAIL]]  # no port: no cable in the map


def test_names_are_escaped_and_the_svg_parses() -> None:
    host, nic = "<script>alert('x')</script>", 'mlx5_"0"&'
    finding = failed("link.pfc", f"{host}:{nic} <-> leaf<1>:swp1", "3", "4", "fix")
    run = Run("validate", (Subject(host, NodeKind.HOST, (finding,)),))
    svg = fabric_svg.render(run)
    assert "<script" not in svg and "&lt;script&gt;" in svg
    [(found_host, found_nic)] = cells(svg)
    assert (found_host, found_nic) == (host, nic)
    group = cells(svg)[(host, nic)]
    assert group.get("data-port") == "leaf<1>:swp1" and group.get("data-cable-status") == "fail"
    page = html.render(run)
    assert "<script" not in page
    titles = [t.text for t in ET.fromstring(svg).iter(f"{SVG}title")]
    assert f"{host}: fail" in titles


def test_subjects_are_split_at_known_node_names() -> None:
    assert fabric_map.split_end("gpu01:mlx5_0") == ("gpu01", "mlx5_0")
    assert fabric_map.split_end("a:b:mlx5_0", ["a:b"]) == ("a:b", "mlx5_0")
    assert fabric_map.split_end("mlx5_0") is None
    ends = fabric_map.link_ends("gpu01:mlx5_0 <-> leaf01:swp1")
    assert ends is not None and (ends.host_end, ends.switch_end) == ("gpu01:mlx5_0", "leaf01:swp1")
    assert fabric_map.link_ends("leaf01:swp9") is None


def test_where_fills_host_nic_and_switch_port_from_the_cabling_map() -> None:
    run = lab_run()
    cables = fabric_map.cable_map(run)
    assert len(cables.by_nic) == 18 and cables.by_nic[("gpu03", "mlx5_1")] == ("leaf01", "swp18")
    assert cables.by_port["leaf01:swp9"] == "gpu02:mlx5_0" and cables.switches == {"leaf01"}
    gpu02 = next(s for s in run.subjects if s.name == "gpu02")
    leaf01 = next(s for s in run.subjects if s.name == "leaf01")
    port_finding = passed("host.port_state", "mlx5_3/1", "ACTIVE", "ACTIVE")
    assert fabric_map.where(gpu02, port_finding, cables) == ("gpu02:mlx5_3", "leaf01:swp12")
    assert fabric_map.where(gpu02, passed("host.rp_params", "host", "", ""), cables) == ("", "")
    on_port = failed("switch.pfc", "leaf01:swp9", "3", "4", "")
    assert fabric_map.where(leaf01, on_port, cables) == ("gpu02:mlx5_0", "leaf01:swp9")
    uncabled = failed("switch.mtu", "leaf01:swp30", "9216", "1500", "")
    assert fabric_map.where(leaf01, uncabled, cables) == ("", "leaf01:swp30")
    assert fabric_map.where(leaf01, passed("switch.trust", "leaf01", "", ""), cables) == ("", "")


def test_a_large_fleet_is_drawn_compact_with_passing_hosts_folded() -> None:
    run = fleet(400, failing={7, 250})
    svg = fabric_svg.render(run)
    root = ET.fromstring(svg)
    rows = [g.get("data-host") for g in root.iter(f"{SVG}g") if g.get("class") == "host"]
    assert rows == ["gpu007", "gpu250"]
    [folded] = [g for g in root.iter(f"{SVG}g") if g.get("class") == "folded"]
    assert folded.get("data-hosts") == "398"
    squares = [r.get("fill") for r in folded.iter(f"{SVG}rect")][1:]  # after the label
    # per NIC column: NIC and cable pass on every folded host; no switch was judged: ports not judged
    assert squares == [SOLID[Status.PASS], SOLID[Status.PASS], UNJUDGED] * 8
    assert int(root.get("height") or 0) < 300
    nic = cells(svg)[("gpu250", "mlx5_3")]
    assert nic.get("data-nic-status") == "fail" and fills(nic)[0] == SOLID[Status.FAIL]
    assert "more than 32" in fabric_svg.rule_note(run)
    assert "host \\ NIC mlx5_*" in svg and "<title>mlx5_3</title>3</text>" in svg  # narrow columns
    assert "+98 more: 98 not judged" in svg  # 100 leaves: what does not fit on the line is counted


def test_more_failing_hosts_than_rows_are_counted_not_drawn() -> None:
    run = fleet(fabric_svg.COMPACT_MAX_ROWS + 40, failing=set(range(fabric_svg.COMPACT_MAX_ROWS + 10)))
    svg = fabric_svg.render(run)
    root = ET.fromstring(svg)
    rows = [g for g in root.iter(f"{SVG}g") if g.get("class") == "host"]
    assert len(rows) == fabric_svg.COMPACT_MAX_ROWS
    assert "... 10 more host(s) that fail or err" in svg
    [folded] = [g for g in root.iter(f"{SVG}g") if g.get("class") == "folded"]
    assert folded.get("data-hosts") == "30"


def test_no_host_nic_no_picture() -> None:
    switch_only = Run(
        "validate", (Subject("leaf01", NodeKind.SWITCH, (errored("switch.x", "leaf01", "", "", ""),)),)
    )
    assert fabric_svg.render(switch_only) == ""
    assert "no host NIC in this run: no fabric picture" in html.render(switch_only)


def test_worst_is_fail_then_error_then_pass_then_skip() -> None:
    def f(status: Status) -> Finding:
        return Finding("c", status, "s", "", "")

    assert fabric_map.worst([]) is None
    assert fabric_map.worst([f(Status.SKIP)]) is Status.SKIP
    assert fabric_map.worst([f(Status.SKIP), f(Status.PASS)]) is Status.PASS
    assert fabric_map.worst([f(Status.PASS), f(Status.ERROR)]) is Status.ERROR
    assert fabric_map.worst([f(Status.ERROR), f(Status.FAIL)]) is Status.FAIL


def test_the_picture_reads_a_findings_where_fields_not_its_subject_text() -> None:
    # Subjects in prose: only the Where fields say which NIC, cable and port each finding is about.
    from dataclasses import replace

    from fabcheck.checks.model import Where

    nic = replace(
        failed("host.pfc", "the first rail NIC", "3", "4", "role roce_host"), where=Where("gpu01", "mlx5_0/1")
    )
    wire = replace(
        failed("link.mtu", "cable A", "9216", "1500", "role switch_qos"),
        where=Where("gpu01", "mlx5_0", "leaf01:swp1"),
    )
    port = replace(
        failed("switch.pfc", "host port one", "3", "none", "role switch_qos"),
        where=Where("leaf01", "swp1", "gpu01:mlx5_0"),
    )
    whole = passed("switch.mtu", "leaf01", "9216", "9216")
    run = Run(
        "validate",
        (
            Subject("gpu01", NodeKind.HOST, (nic, wire)),
            Subject("leaf01", NodeKind.SWITCH, (port, whole, wire)),
        ),
    )
    cell = fabric_map.fabric(run).cell("gpu01", "mlx5_0")
    assert cell is not None and (cell.switch, cell.port) == ("leaf01", "swp1")  # cabled by the link's Where
    assert (cell.nic_status, cell.cable_status, cell.port_status) == (Status.FAIL, Status.FAIL, Status.FAIL)
    assert cell.nic_findings == (nic,) and cell.port_findings == (port,)
    assert fabric_map.where(run.subjects[1], port, fabric_map.cable_map(run)) == (
        "gpu01:mlx5_0",
        "leaf01:swp1",
    )


def test_a_cable_whose_link_health_fails_is_drawn_failed_and_its_tooltip_names_the_finding() -> None:
    """link.health (docs/checks/wire.md): the cable takes the fail colour and its hover text says what
    failed and which end to clean, reseat or replace."""
    health = failed(
        "link.health",
        "gpu01:mlx5_0 <-> leaf01:swp1",
        "the wire clean at both ends",
        "leaf01:swp1: fcs_errors +8123 in 5 s (limit 0)",
        "receive errors at leaf01:swp1 with a clean gpu01:mlx5_0: the cable or gpu01:mlx5_0's optic",
    )
    health = dataclasses.replace(health, where=Where("gpu01", "mlx5_0", "leaf01:swp1"))
    clean = passed("link.mtu", "gpu01:mlx5_0 <-> leaf01:swp1", "9000", "9000")
    run = Run("validate", (Subject("gpu01", NodeKind.HOST, (health, clean)),))
    group = cells(fabric_svg.render(run))[("gpu01", "mlx5_0")]
    assert cable(group) == SOLID[Status.FAIL] and group.get("data-cable-status") == "fail"
    line = group.find(f"{SVG}line")
    assert line is not None
    title = line.find(f"{SVG}title")
    assert title is not None and title.text is not None
    assert "not passed: link.health" in title.text
    assert (
        "link.health: leaf01:swp1: fcs_errors +8123 in 5 s (limit 0) -> receive errors at leaf01:swp1"
        in title.text
    )
    assert "link.mtu:" not in title.text  # a passing finding is counted, not spelled out
