"""A Markdown report (`--markdown FILE`) for a ticket or a merge-request comment: the verdict, a node
table, the link-coherence table, then every finding that did not pass, per node, failures first.
Passing findings are counted in the node table, not listed."""

from __future__ import annotations

from collections.abc import Sequence

from fabcheck.checks.model import Status
from fabcheck.report.links import link_findings, link_rows, link_table
from fabcheck.report.model import Run, by_severity, subjects_by_severity
from fabcheck.report.text import summary
from fabcheck.report.textsafe import xml_text

_COUNTED = (Status.FAIL, Status.ERROR, Status.SKIP, Status.PASS)


def render(run: Run) -> str:
    out = [f"# fabcheck {run.command}: {run.verdict.value.upper()}", "", _cell(summary(run)), ""]
    out += [f"> {_cell(note)}" for note in run.notes]
    out += ["", "## Nodes", ""]
    rows = [
        [
            f"{s.name} ({s.label})" if s.label else s.name,
            s.kind.value,
            s.verdict.value.upper(),
            *(str(s.count(status)) for status in _COUNTED),
        ]
        for s in subjects_by_severity(run.subjects)
    ]
    out += _table(["node", "kind", "verdict", "fail", "error", "skip", "pass"], rows)
    out += ["", "## Link coherence", ""]
    table = link_table(link_rows(link_findings(run), run.links))
    out += (
        _table(list(table.header), [list(r) for r in table.rows])
        if table.rows
        else ["no link checks in this run"]
    )
    out += ["", "## Findings that did not pass", ""]
    shown = 0
    for subject in subjects_by_severity(run.subjects):
        bad = [f for f in by_severity(subject.findings, lambda f: f.status) if f.status is not Status.PASS]
        if not bad:
            continue
        shown += 1
        out += [f"### {_cell(subject.name)}: {subject.verdict.value.upper()}", ""]
        header = ["status", "check", "subject", "expected", "actual", "hint"]
        out += _table(
            header, [[f.status.value, f.check, f.subject, f.expected, f.actual, f.hint] for f in bad]
        )
        out.append("")
    if not shown:
        out += ["every finding passed", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) or " " for c in row) + " |" for row in rows]
    return lines


def _cell(text: str) -> str:
    """One table cell: no line breaks, pipes escaped, and no raw HTML (renderers would run it)."""
    text = xml_text(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(text.replace("|", "\\|").split())
