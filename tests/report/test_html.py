"""`--html`: one self-contained file (nothing fetched, no script), sections in order, text escaped."""

from __future__ import annotations

import re
import time
from html.parser import HTMLParser

from labrun import lab_run
from reportdata import fabric_run, fleet

from fabcheck.checks.model import Status, failed
from fabcheck.report import fabric_map, html
from fabcheck.report.links import link_findings, link_rows, link_table
from fabcheck.report.model import NodeKind, Run, Subject

VOID = {"meta", "br"}


class Balance(HTMLParser):
    """Every opened element is closed in order (the report is hand-written HTML, so check it)."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.svg_rects = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "rect":
            self.svg_rects += 1
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "rect":
            self.svg_rects += 1

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def test_self_contained_and_balanced() -> None:
    page = html.render(fabric_run())
    assert page.startswith("<!DOCTYPE html>")
    for fetching in ("<script", "<link", "src=", "url(", "@import", "<img", "<iframe"):
        assert fetching not in page, fetching
    assert set(re.findall(r"https?://[^\s\"']+", page)) == {"http://www.w3.org/2000/svg"}  # a namespace
    checker = Balance()
    checker.feed(page)
    assert checker.errors == [] and checker.stack == []
    assert checker.svg_rects >= 2 * (4 + 16)  # two hosts' pictures: 4 GPU labels + 16 cells each


def test_sections_in_order_failures_first() -> None:
    page = html.render(fabric_run())
    marks = [
        "<h2>Fabric</h2>",
        '<h2 id="failures">Failures (3)</h2>',
        '<h2 id="errors">Not checked (1)</h2>',
        "<h2>Link coherence</h2>",
        "<h2>Nodes</h2>",
        "<h2>GPU-NIC affinity</h2>",
        '<h2 id="skips">Not applicable (skipped) (1)</h2>',
        '<h2 id="passes">Passed (',
    ]
    positions = [page.index(mark) for mark in marks]
    assert positions == sorted(positions)
    assert page.index('<svg xmlns="http://www.w3.org/2000/svg" class="fabric"') < positions[1]
    failures = section(page, "failures")
    for said in ("trust dscp", "trust pcp", "mlnx_qos -i ens1np0 --trust dscp", "GPU1 -&gt; mlx5_1 SYS"):
        assert said in failures
    assert "Connection refused" in section(page, "errors") and "Connection refused" not in failures
    affinity = page[page.index("<h2>GPU-NIC affinity</h2>") : positions[6]]
    # gpu02 fails affinity: drawn open; gpu01 passes: folded; gpu03 and gpu04 kept no topology
    assert affinity.index("<h3>gpu02 ") < affinity.index('<details class="affinity-passed">')
    assert affinity.index("<h3>gpu01 ") > affinity.index('<details class="affinity-passed">')
    assert "no topology record kept for gpu03, gpu04" in affinity
    links = page[page.index("<h2>Link coherence</h2>") : page.index("<h2>Nodes</h2>")]
    # open: header, the failing and the unjudged link; folded: header and the passing link
    assert links.count("<tr>") == 3 + 2 and links.index("v-pass") > links.index("<details")
    assert '<td class="v-fail">fail</td>' in links and '<td class="v-error">error</td>' in links
    assert '<details class="links-passed"><summary class="v-pass"><span class="count">1</span>' in links


def section(page: str, kind: str) -> str:
    start = page.index(f'<h2 id="{kind}">')
    return page[start : page.index("<h2", start + 1)]


def test_passes_are_folded_one_details_per_check() -> None:
    for run in (fabric_run(), lab_run()):
        page = html.render(run)
        passing = {f.check for _, f in run.findings() if f.status is Status.PASS}
        passes = page[page.index('<h2 id="passes">') :]  # the last section
        groups = re.findall(r'<details class="pass-group" data-check="([^"]*)" data-count="(\d+)">', passes)
        assert len(groups) == len(passing) and {check for check, _ in groups} == passing
        counted = {check: int(n) for check, n in groups}
        passed = [f for _, f in run.findings() if f.status is Status.PASS]
        links = {f for f in passed if f.check.startswith("link.")}  # one link finding, even filed twice
        assert sum(counted.values()) == len(passed) - sum(f in links for f in passed) + len(links)
    page = html.render(lab_run())
    assert '<span class="count">16</span> host.pfc (2 node(s))' not in page  # gpu02 mlx5_0 failed
    assert '<span class="count">15</span> host.pfc (2 node(s))' in page
    assert page.count("<details") < 60  # not one row per finding


def test_the_lab_run_fills_the_switch_port_from_the_cabling_map() -> None:
    """The gate gives no link detail: both ends still come from the link findings' subjects."""
    run = lab_run()
    assert run.links == ()
    page = html.render(run)
    links = page[page.index("<h2>Link coherence</h2>") : page.index("<h2>Nodes</h2>")]
    ports = re.findall(r"<tr><td>(gpu0\d:mlx5_\d)</td><td>([^<]*)</td>", links)
    assert len(ports) == 8 + 8 + 2
    assert all(re.fullmatch(r"leaf01:swp\d+", port) for _, port in ports)
    assert ("gpu02:mlx5_0", "leaf01:swp9") in ports and ("gpu03:mlx5_1", "leaf01:swp18") in ports
    failures = section(page, "failures")
    # the host's own PFC failure names its cable's switch port; the switch's names its host NIC
    assert "<td>host.pfc</td><td>mlx5_0</td><td>gpu02:mlx5_0</td><td>leaf01:swp9</td>" in failures
    assert "<td>switch.pfc</td><td>leaf01:swp1</td><td>gpu01:mlx5_0</td><td>leaf01:swp1</td>" in failures
    assert failures.count("<tr>") == 1 + 4


def test_hostile_text_is_escaped_and_files_have_no_picture() -> None:
    evil = failed("c.x", "<b>", "1", "<script>alert(1)</script>", 'a "quoted" & \x00 hint')
    page = html.render(Run("analyze", (Subject("t.txt", NodeKind.FILE, (evil,), label="topo"),)))
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "a &quot;quoted&quot; &amp; \\x00 hint" in page
    assert "GPU-NIC affinity" not in page
    assert "<h2>Link coherence</h2>" in page and "no link checks in this run" in page


def test_link_rows_match_the_link_table_module_and_a_fleet_renders_fast() -> None:
    """The report indexes link findings by NIC; `links.link_rows` compares every detail with every
    finding (400 hosts x 8 NICs: 41 s measured). Same table, and the fleet in well under a second."""
    for run in (fabric_run(), lab_run()):
        indexed = link_table(html._link_rows(run, fabric_map.cable_map(run)))
        assert indexed == link_table(link_rows(link_findings(run), fabric_map.derived_links(run)))
    big = fleet(400, failing={3, 7, 120, 250})
    started = time.perf_counter()
    page = html.render(big)
    assert time.perf_counter() - started < 5
    assert page.count('class="nic"') == 4 * 8  # compact: the four failing hosts drawn, 396 folded
    assert 'data-hosts="396"' in page
