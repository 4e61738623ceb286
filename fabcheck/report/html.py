"""A self-contained HTML report (`--html FILE`): inline CSS and SVG, no script, nothing fetched.

Order, what a person needs first at the top:
1. the run's verdict, its counts and notes;
2. above FOLD_NODES nodes, the aggregate first: per check, how many nodes fail and could not be checked,
   the first AGGREGATE_NAMED of them named (the picture and the tables below hold each one);
2b. the fabric picture (fabric_svg): hosts x NICs, each NIC, its cable and its switch port coloured;
2c. the InfiniBand fabric (ib_picture), when the ib stage ran: its switches in tiers with their cables
    coloured by verdict, and the table of its cables naming both ends (failures open, passes folded);
3. failures, with node, host NIC and switch port (from the cabling map), expected, actual and the fix
   (every row; a table over FOLD_PROBLEM_ROWS rows starts folded under its count);
4. what could not be checked (errors), the same columns;
5. the link-coherence table (both ends of every cable), links that do not pass first, passing ones folded;
6. the node table (folded above FOLD_NODES nodes), the stages' figures, the GPU-NIC affinity pictures
   (hosts that do not pass open, passing hosts folded, at most AFFINITY_MAX drawn);
7. skips and passes, each folded per check id: one `<details>` per check with its count, at most
   FOLD_ROWS rows inside (the JSON output has every finding).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from fabcheck.checks.model import Finding, Status
from fabcheck.report import affinity_svg, fabric_map, fabric_svg, ib_picture
from fabcheck.report.links import LinkRow, link_findings, link_rows, link_table
from fabcheck.report.model import NodeKind, Run, Subject, by_severity, subjects_by_severity
from fabcheck.report.palette import TINT
from fabcheck.report.text import summary
from fabcheck.report.textsafe import xml_text

FOLD_NODES = 32  # a longer node table starts folded
FOLD_ROWS = 500  # rows inside one folded check
AFFINITY_MAX = 32  # GPU-NIC pictures drawn at most
AGGREGATE_NAMED = 5  # nodes named per check in the aggregate view
FOLD_PROBLEM_ROWS = 200  # a longer failure or error table starts folded (all its rows still inside)

_TINT_CSS = "".join(
    f"td.v-{status.value}, span.v-{status.value}, summary.v-{status.value} {{ background: {tint}; }}\n"
    for status, tint in TINT.items()
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
td.fix { max-width: 520px; }
.note { color: #555555; }
details { margin: 2px 0; }
summary { cursor: pointer; padding: 2px 6px; font-size: 14px; }
summary .count { font-weight: bold; }
div.figure svg { max-width: 100%; height: auto; }
"""
    + _TINT_CSS
)

_WHERE = ["node", "check", "subject", "host NIC", "switch port"]


def render(run: Run) -> str:
    title = f"fabcheck {run.command}: {run.verdict.value.upper()}"
    findings = _unique_findings(run)
    cables = fabric_map.cable_map(run)
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
    if len(run.subjects) > FOLD_NODES:
        parts += _aggregate_section(findings)
    parts += _fabric_section(run)
    parts += _ib_section(run)
    parts += _problem_section(
        "failures", "Failures", findings, Status.FAIL, cables, "nothing failed", fix="fix"
    )
    parts += _problem_section(
        "errors",
        "Not checked",
        findings,
        Status.ERROR,
        cables,
        "everything asked was read and judged",
        fix="what to do",
    )
    parts += _links_section(run, cables)
    parts += _nodes_table(run)
    parts += _figures_section(run)
    parts += _affinity_section(run)
    parts += _folded_section("skips", "Not applicable (skipped)", findings, Status.SKIP)
    parts += _folded_section("passes", "Passed", findings, Status.PASS)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _unique_findings(run: Run) -> list[tuple[Subject, Finding]]:
    """Every finding with its node, in run order; a link finding filed under both ends counts once."""
    seen: set[Finding] = set()
    out = []
    for subject, finding in run.findings():
        if finding.check.startswith(fabric_map.LINK_PREFIX):
            if finding in seen:
                continue
            seen.add(finding)
        out.append((subject, finding))
    return out


def _fabric_section(run: Run) -> list[str]:
    out = ["<h2>Fabric</h2>"]
    svg = fabric_svg.render(run)
    if not svg:
        return [*out, '<p class="note">no host NIC in this run: no fabric picture</p>']
    return [
        *out,
        f'<div class="figure fabric">{svg}</div>',
        f'<p class="note">{_e(fabric_svg.rule_note(run))}</p>',
    ]


def _ib_section(run: Run) -> list[str]:
    picture = ib_picture.ib_fabric(run)
    if not picture.cables:
        return []
    out = ["<h2>InfiniBand fabric</h2>"]
    svg = ib_picture.render(picture)
    if svg:
        out.append(f'<div class="figure ib-fabric">{svg}</div>')
    out.append(f'<p class="note">{_e(ib_picture.rule_note(picture))}</p>')
    header = list(ib_picture.TABLE_HEADER)
    open_rows: list[list[str]] = []
    passing: list[list[str]] = []
    for cells, status in ib_picture.table_rows(picture):
        row = [_td(cells[0]), _verdict_td(status), *(_td(c) for c in cells[2:])]
        (passing if status is Status.PASS else open_rows).append(row)
    if open_rows:
        out.append(_table("ib-links", header, open_rows))
    if passing:
        shown = passing[:FOLD_ROWS]
        more = len(passing) - len(shown)
        tail = f'<p class="note">{more} more: see the JSON output (--json)</p>' if more else ""
        out.append(
            f'<details class="ib-links-passed"><summary class="v-pass"><span class="count">{len(passing)}'
            f"</span> IB cable(s) pass</summary>{_table('ib-links', header, shown)}{tail}</details>"
        )
    return out


def _problem_section(
    kind: str,
    title: str,
    findings: Sequence[tuple[Subject, Finding]],
    status: Status,
    cables: fabric_map.Cables,
    none: str,
    fix: str,
) -> list[str]:
    mine = [(s, f) for s, f in findings if f.status is status]
    out = [f'<h2 id="{kind}">{_e(title)} ({len(mine)})</h2>']
    if not mine:
        return [*out, f'<p class="note">{_e(none)}</p>']
    header = [*_WHERE, "expected", "actual", fix]
    rows = []
    for subject, finding in mine:
        nic, port = fabric_map.where(subject, finding, cables)
        cells = [subject.name, finding.check, finding.subject, nic or "-", port or "-"]
        rows.append(
            [_verdict_td(status, subject.name)]
            + [_td(c) for c in cells[1:]]
            + [_td(finding.expected), _td(finding.actual), _td(finding.hint, "fix")]
        )
    if len(rows) > FOLD_PROBLEM_ROWS:
        return [
            *out,
            f'<details class="{kind}-table"><summary class="v-{status.value}"><span class="count">'
            f"{len(rows)}</span> row(s), by check in the aggregate above</summary>"
            f"{_table(kind, header, rows)}</details>",
        ]
    return [*out, _table(kind, header, rows)]


def _aggregate_section(findings: Sequence[tuple[Subject, Finding]]) -> list[str]:
    """Per check id, the nodes it fails and could not check (O(findings)): what a fleet's reader needs
    before any row; checks that fail or error on the most nodes first, passing checks counted."""
    failing: dict[str, dict[Status, dict[str, None]]] = {}
    passing: set[str] = set()
    for subject, finding in findings:
        if finding.status in (Status.FAIL, Status.ERROR):
            nodes = failing.setdefault(finding.check, {Status.FAIL: {}, Status.ERROR: {}})
            nodes[finding.status][subject.name] = None
        elif finding.status is Status.PASS:
            passing.add(finding.check)
    out = ['<h2 id="aggregate">By check</h2>']
    if not failing:
        return [
            *out,
            f'<p class="note">every check passes or does not apply ({len(passing)} check(s) judged)</p>',
        ]
    ranked = sorted(
        failing.items(), key=lambda item: (-len(item[1][Status.FAIL]) - len(item[1][Status.ERROR]), item[0])
    )
    rows = []
    for check, nodes in ranked:
        cells = [_td(check)]
        for status in (Status.FAIL, Status.ERROR):
            names = list(nodes[status])
            named = ", ".join(names[:AGGREGATE_NAMED]) + (
                f" and {len(names) - AGGREGATE_NAMED} more" if len(names) > AGGREGATE_NAMED else ""
            )
            count = f'<td class="n{" v-" + status.value if names else ""}">{len(names)}</td>'
            cells += [count, _td(named or "-")]
        rows.append(cells)
    header = ["check", "nodes failing", "first failing", "nodes not checked", "first not checked"]
    clean = len(passing - failing.keys())
    note = f'<p class="note">{clean} more check(s) pass on every node they judged</p>' if clean else ""
    return [*out, _table("aggregate", header, rows), note]


def _link_rows(run: Run, cables: fabric_map.Cables) -> list[LinkRow]:
    """One row per cable the cabling map knows (the run's link details first, with their settings),
    holding the `link.*` findings about its host NIC; findings about no known NIC get rows of their own,
    as `links.link_rows` gives them. Indexed by NIC: `link_rows` compares every detail with every finding,
    which at thousands of links is minutes."""
    by_nic = fabric_map.link_findings_by_nic(run, cables)
    placed = {f for found in by_nic.values() for f in found}
    settings = {(d.ends.host, d.ends.nic): d.settings for d in run.links}
    rows = []
    for detail in fabric_map.derived_links(run):
        ends = detail.ends
        found = tuple(by_nic.get((ends.host, ends.nic), ()))
        link = f"{ends.host_end} - {ends.switch_end}"
        rows.append(
            LinkRow(link, ends.host_end, ends.switch_end, settings.get((ends.host, ends.nic), ()), found)
        )
    loose = link_rows(f for f in link_findings(run) if f not in placed)
    return by_severity([*rows, *loose], lambda row: row.verdict)


def _links_section(run: Run, cables: fabric_map.Cables) -> list[str]:
    table = link_table(_link_rows(run, cables))
    out = ["<h2>Link coherence</h2>"]
    if not table.rows:
        return [*out, '<p class="note">no link checks in this run</p>']
    verdict_at = table.header.index("verdict")
    open_rows: list[list[str]] = []
    passing: list[list[str]] = []
    for cells, status in zip(table.rows, table.verdicts, strict=True):
        row = [_verdict_td(status) if i == verdict_at else _td(c) for i, c in enumerate(cells)]
        (passing if status is Status.PASS else open_rows).append(row)
    if open_rows:
        out.append(_table("links", list(table.header), open_rows))
    if passing:
        out.append(
            f'<details class="links-passed"><summary class="v-pass"><span class="count">{len(passing)}'
            f"</span> link(s) pass at both ends</summary>{_table('links', list(table.header), passing)}"
            "</details>"
        )
    return out


def _nodes_table(run: Run) -> list[str]:
    header = ["node", "kind", "verdict", "fail", "error", "skip", "pass"]
    rows = []
    for subject in subjects_by_severity(run.subjects):
        counts = [str(subject.count(s)) for s in (Status.FAIL, Status.ERROR, Status.SKIP, Status.PASS)]
        name = f"{subject.name} ({subject.label})" if subject.label else subject.name
        cells = [_td(name), _td(subject.kind.value), _verdict_td(subject.verdict)]
        rows.append(cells + [f'<td class="n">{c}</td>' for c in counts])
    table = _table("nodes", header, rows)
    opened = " open" if len(run.subjects) <= FOLD_NODES else ""
    return [
        "<h2>Nodes</h2>",
        f'<details class="nodes"{opened}><summary><span class="count">{len(run.subjects)}</span> '
        f"{_e(run.noun)}</summary>{table}</details>",
    ]


def _figures_section(run: Run) -> list[str]:
    out: list[str] = []
    for figure in run.figures:
        out += [f"<h2>{_e(figure.title)}</h2>", f'<div class="figure">{figure.svg()}</div>']
    return out


def _affinity_section(run: Run) -> list[str]:
    hosts = [s for s in subjects_by_severity(run.subjects) if s.kind is NodeKind.HOST]
    drawn = [s for s in hosts if s.affinity is not None]
    if not hosts:
        return []
    out = ["<h2>GPU-NIC affinity</h2>"]
    if not drawn:
        return [*out, '<p class="note">no topology record kept for any host: no GPU-NIC picture</p>']
    judged = [s for s in drawn if _affinity_status(s) is not Status.PASS]
    good = [s for s in drawn if _affinity_status(s) is Status.PASS]
    budget = AFFINITY_MAX
    for subject in judged[:budget]:
        out += _affinity_picture(subject)
    budget -= min(budget, len(judged))
    if good:
        shown = good[:budget]
        inner = "".join("".join(_affinity_picture(s)) for s in shown)
        more = len(good) - len(shown)
        if more:
            inner += f'<p class="note">{more} more passing host(s) not drawn</p>'
        out.append(
            f'<details class="affinity-passed"><summary class="v-pass"><span class="count">{len(good)}'
            f"</span> host(s) whose every GPU sits near its rail NIC</summary>{inner}</details>"
        )
    missing = [s.name for s in hosts if s.affinity is None]
    if missing:
        named = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        out.append(f'<p class="note">no topology record kept for {_e(named)}: no picture</p>')
    return out


def _affinity_status(subject: Subject) -> Status | None:
    return fabric_map.worst(f for f in subject.findings if f.check == affinity_svg.AFFINITY_CHECK)


def _affinity_picture(subject: Subject) -> list[str]:
    assert subject.affinity is not None
    status = _affinity_status(subject)
    said = "not judged" if status is None else status.value
    css = "error" if status is None else status.value
    return [
        f'<h3>{_e(subject.name)} <span class="v-{css}">{_e(said)}</span></h3>',
        affinity_svg.render(subject.name, subject.affinity, subject.findings),
    ]


def _folded_section(
    kind: str, title: str, findings: Sequence[tuple[Subject, Finding]], status: Status
) -> list[str]:
    mine = [(s, f) for s, f in findings if f.status is status]
    out = [f'<h2 id="{kind}">{_e(title)} ({len(mine)})</h2>']
    if not mine:
        return [*out, f'<p class="note">no {status.value} finding</p>']
    groups: dict[str, list[tuple[Subject, Finding]]] = {}
    for subject, finding in mine:
        groups.setdefault(finding.check, []).append((subject, finding))
    header = ["node", "subject", "expected", "actual"] + (["reason"] if status is Status.SKIP else [])
    for check, items in groups.items():
        nodes = len({s.name for s, _ in items})
        rows = []
        for subject, finding in items[:FOLD_ROWS]:
            cells = [subject.name, finding.subject, finding.expected, finding.actual]
            if status is Status.SKIP:
                cells = [subject.name, finding.subject, finding.expected, finding.actual, finding.hint]
            rows.append([_td(c) for c in cells])
        more = len(items) - len(rows)
        tail = f'<p class="note">{more} more: see the JSON output (--json)</p>' if more else ""
        out.append(
            f'<details class="{status.value}-group" data-check="{_e(check)}" data-count="{len(items)}">'
            f'<summary class="v-{status.value}"><span class="count">{len(items)}</span> {_e(check)} '
            f"({nodes} node(s))</summary>{_table(kind, header, rows)}{tail}</details>"
        )
    return out


def _table(kind: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(f"<tr>{''.join(cells)}</tr>" for cells in rows)
    return f'<table class="{kind}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _td(text: str, css: str = "") -> str:
    cls = f' class="{css}"' if css else ""
    return f"<td{cls}>{_e(text)}</td>"


def _verdict_td(status: Status, text: str | None = None) -> str:
    return f'<td class="v-{status.value}">{_e(status.value if text is None else text)}</td>'


def _e(text: str) -> str:
    return escape(xml_text(text), quote=True)
