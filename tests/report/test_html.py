"""`--html`: one self-contained file (nothing fetched, no script), sections in order, text escaped."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from reportdata import fabric_run

from fabcheck.checks.model import failed
from fabcheck.report import html
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
        "<h2>Nodes</h2>",
        "<h2>Link coherence</h2>",
        "<h2>gpu02 ",
        "<h2>gpu03 ",
        "<h2>gpu04 ",
        "<h2>gpu01 ",
    ]
    positions = [page.index(mark) for mark in marks]
    assert positions == sorted(positions)
    gpu02 = page[page.index("<h2>gpu02 ") : page.index("<h2>gpu03 ")]
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="affinity"' in gpu02
    gpu03 = page[page.index("<h2>gpu03 ") : page.index("<h2>gpu04 ")]
    assert "no topology record kept for this host" in gpu03 and "<svg" not in gpu03
    links = page[page.index("<h2>Link coherence</h2>") : page.index("<h2>gpu02 ")]
    assert links.count("<tr>") == 4  # header + three cabled links
    assert '<td class="v-fail">fail</td>' in links and '<td class="v-error">error</td>' in links


def test_hostile_text_is_escaped_and_files_have_no_picture() -> None:
    evil = failed("c.x", "<b>", "1", "<script>alert(1)</script>", 'a "quoted" & \x00 hint')
    page = html.render(Run("analyze", (Subject("t.txt", NodeKind.FILE, (evil,), label="topo"),)))
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "a &quot;quoted&quot; &amp; \\x00 hint" in page
    assert "GPU-NIC affinity" not in page
    assert "<h2>Link coherence</h2>" in page and "no link checks in this run" in page
