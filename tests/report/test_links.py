"""The link-coherence table from `link.*` findings and optional per-link detail."""

from __future__ import annotations

from dataclasses import replace

from reportdata import LINK_MTU_PASS, LINK_PFC_FAIL, fabric_run

from fabcheck.checks.model import Status, Where, failed, passed
from fabcheck.report.links import details_of, link_findings, link_rows, link_table
from fabcheck.report.model import LinkDetail, LinkEnds


def test_rows_take_verdicts_from_findings_and_settings_from_detail() -> None:
    run = fabric_run()
    rows = link_rows(link_findings(run), run.links)
    assert [(r.host_end, r.switch_end, r.verdict) for r in rows] == [
        ("gpu02:mlx5_0", "leaf01:swp2", Status.FAIL),
        ("gpu03:mlx5_0", "leaf01:swp3", Status.ERROR),  # cabled, but no link check judged it
        ("gpu01:mlx5_0", "leaf01:swp1", Status.PASS),
    ]
    table = link_table(rows)
    assert table.header == (
        "host NIC",
        "switch port",
        "pfc (NIC)",
        "pfc (port)",
        "mtu (NIC)",
        "mtu (port)",
        "verdict",
        "checks not passed",
    )
    assert table.rows[0][:7] == ("gpu02:mlx5_0", "leaf01:swp2", "3", "4", "9000", "9216", "fail")
    assert "link.pfc: expected PFC on priority 3 at both ends, actual NIC 3, port 4" in table.rows[0][7]
    assert "role switch_qos fixes leaf01" in table.rows[0][7]
    assert table.rows[1][4:7] == ("-", "-", "error") and table.rows[1][7] == "no link check judged this link"
    assert table.rows[2][7] == "-"


def test_a_finding_filed_under_both_ends_counts_once() -> None:
    run = fabric_run()
    doubled = [*link_findings(run), LINK_PFC_FAIL]
    [row] = [r for r in link_rows(doubled, run.links) if r.host_end == "gpu02:mlx5_0"]
    assert row.findings == (LINK_PFC_FAIL,)


def test_findings_without_detail_get_rows_of_their_own_keyed_by_subject() -> None:
    uncabled = failed("link.cabled", "gpu05:mlx5_3", "a cabled switch port", "none in fabric_links", "add it")
    rows = link_rows([LINK_MTU_PASS, uncabled])
    assert [(r.link, r.host_end, r.verdict) for r in rows] == [
        ("gpu05:mlx5_3", "", Status.FAIL),
        ("gpu01:mlx5_0 <-> leaf01:swp1", "", Status.PASS),
    ]
    assert link_table(rows).rows[0][:2] == ("gpu05:mlx5_3", "-")


def test_an_end_matches_whole_names_only() -> None:
    detail = LinkDetail(LinkEnds("gpu01", "mlx5_1", "leaf01", "swp1"))
    other = passed("link.mtu", "gpu01:mlx5_10 <-> leaf01:swp10", "9000", "9000")
    rows = link_rows([other], [detail])
    assert [(r.host_end or r.link, r.verdict) for r in rows] == [
        ("gpu01:mlx5_1", Status.ERROR),
        ("gpu01:mlx5_10 <-> leaf01:swp10", Status.PASS),
    ]


def test_link_records_come_from_the_findings_where_not_their_subject() -> None:
    about = Where("gpu01", "mlx5_0", "leaf01:swp1")
    pfc = replace(failed("link.pfc", "either end", "3", "none", "h"), where=about)
    mtu = replace(passed("link.mtu", "written another way", "9000", "9216"), where=about)
    other = replace(passed("link.mtu", "x", "9000", "9216"), where=Where("gpu02", "mlx5_0", "leaf01:swp2"))
    details = details_of([pfc, mtu, other, passed("host.pfc", "mlx5_0", "3", "3")])
    assert [d.ends for d in details] == [
        LinkEnds("gpu01", "mlx5_0", "leaf01", "swp1"),
        LinkEnds("gpu02", "mlx5_0", "leaf01", "swp2"),
    ]
    rows = {row.host_end: row for row in link_rows([pfc, mtu, other], details)}
    assert rows["gpu01:mlx5_0"].switch_end == "leaf01:swp1"
    assert rows["gpu01:mlx5_0"].findings == (pfc, mtu) and rows["gpu01:mlx5_0"].verdict is Status.FAIL
    assert rows["gpu02:mlx5_0"].findings == (other,)
