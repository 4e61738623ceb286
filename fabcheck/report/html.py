"""A self-contained HTML report (`--html FILE`): inline CSS and SVG, no script, nothing fetched.

Order: the run's verdict, the node summary table, the link-coherence table, then per node (failures
first) its GPU-NIC affinity picture (hosts whose topology record was kept) and its findings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from fabcheck.checks.model import Finding, Status
from fabcheck.report import affinity_svg
from fabcheck.report.links import link_findings, link_rows, link_table
from fabcheck.report.model import NodeKind, Run, Subject, by_severity, subjects_by_severity
from fabcheck.report.palette import TINT
from fabcheck.report.text import summary
from fabcheck.report.textsafe import xml_text

_TINT_CSS = "".join(
    f"td.v-{status.value}, span.v-{status.value} {{ background: {tint}; }}\n" for status, tint in TINT.items()
)
_STYLE = (
    """
body { font-family: sans-serif; margin: 16px 24px; color: #222222; background: #ffffff; }
h1 { font-size: 22px; margin: 0 0 6px 0; }
h2 { font-size: 18px; margin: 22px 0 8px 0; }
h3 { font-size: 15px; margin: 16px 0 6px 0; }
table { border-collapse: collapse; margin: 4px 0 12px 0; font-size: 13px; }
th, td { border: 1px solid #999999; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #e6e6e6; }
td.n { text-align: right; }
.note { color: #555555; }
"""
    + _TINT_CSS
)


def render(run: Run) -> str:
    title = f"fabcheck {run.command}: {run.verdict.value.upper()}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title>",
        f"<style>{_STYLE}</style>",
        "</head><body>",
        f'<h1>fabcheck {_e(run.command)} <span class="v-{run.verdict.value}">'
        f"{_e(run.verdict.value.upper())}</span></h1>",
        f"<p>{_e(summary(run))}</p>",
    ]
    parts += [f'<p class="note">{_e(note)}</p>' for note in run.notes]
    parts += _nodes_table(run)
    parts += _links_section(run)
    parts += _figures_section(run)
    for subject in subjects_by_severity(run.subjects):
        parts += _subject_section(subject)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _nodes_table(run: Run) -> list[str]:
    header = ["node", "kind", "verdict", "fail", "error", "skip", "pass"]
    rows = []
    for subject in subjects_by_severity(run.subjects):
        counts = [str(subject.count(s)) for s in (Status.FAIL, Status.ERROR, Status.SKIP, Status.PASS)]
        name = f"{subject.name} ({subject.label})" if subject.label else subject.name
        cells = [_td(name), _td(subject.kind.value), _verdict_td(subject.verdict)]
        rows.append(cells + [f'<td class="n">{c}</td>' for c in counts])
    return ["<h2>Nodes</h2>", _table("nodes", header, rows)]


def _links_section(run: Run) -> list[str]:
    table = link_table(link_rows(link_findings(run), run.links))
    out = ["<h2>Link coherence</h2>"]
    if not table.rows:
        return [*out, '<p class="note">no link checks in this run</p>']
    rows = []
    for cells, status in zip(table.rows, table.verdicts, strict=True):
        verdict_at = table.header.index("verdict")
        rows.append([_verdict_td(status) if i == verdict_at else _td(c) for i, c in enumerate(cells)])
    return [*out, _table("links", list(table.header), rows)]


def _figures_section(run: Run) -> list[str]:
    out: list[str] = []
    for figure in run.figures:
        out += [f"<h2>{_e(figure.title)}</h2>", f'<div class="figure">{figure.svg()}</div>']
    return out


def _subject_section(subject: Subject) -> list[str]:
    out = [
        f"<h2>{_e(subject.name)} "
        f'<span class="v-{subject.verdict.value}">{_e(subject.verdict.value.upper())}</span></h2>'
    ]
    if subject.kind is NodeKind.HOST:
        out.append("<h3>GPU-NIC affinity</h3>")
        if subject.affinity is None:
            out.append('<p class="note">no topology record kept for this host: no picture</p>')
        else:
            out.append(affinity_svg.render(subject.name, subject.affinity, subject.findings))
    out.append("<h3>Findings</h3>")
    out.append(_findings_table(subject.findings))
    return out


def _findings_table(findings: Iterable[Finding]) -> str:
    header = ["status", "check", "subject", "expected", "actual", "hint"]
    rows = [
        [_verdict_td(f.status), _td(f.check), _td(f.subject), _td(f.expected), _td(f.actual), _td(f.hint)]
        for f in by_severity(findings, lambda f: f.status)
    ]
    return _table("findings", header, rows)


def _table(kind: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(f"<tr>{''.join(cells)}</tr>" for cells in rows)
    return f'<table class="{kind}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _td(text: str) -> str:
    return f"<td>{_e(text)}</td>"


def _verdict_td(status: Status) -> str:
    return f'<td class="v-{status.value}">{_e(status.value)}</td>'


def _e(text: str) -> str:
    return escape(xml_text(text), quote=True)
