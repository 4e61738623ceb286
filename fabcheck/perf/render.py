"""The report as text (stdout), Markdown (tickets), self-contained HTML (plots inline) and JSON.

All four read the PerfReport; the three human ones lay it out through views.Table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from html import escape
from typing import Any

from fabcheck.checks.model import Status
from fabcheck.perf import plots, views
from fabcheck.perf.report import OpReport, PerfReport
from fabcheck.perf.views import Table
from fabcheck.report.model import SEVERITY
from fabcheck.report.palette import TINT
from fabcheck.report.textsafe import xml_text


def tables(report: PerfReport) -> Iterable[tuple[str | None, list[Table]]]:
    """(op or None, its tables) in report order: files, then per op, then the comparison."""
    yield (
        None,
        [views.files_table(report), *([views.transport_table(report)] if report.data.transport else [])],
    )
    for op in report.ops:
        tables = [views.representative_table(op), views.scaling_table(op), views.anomalies_table(op)]
        yield op.op, [*tables, views.by_size_table(op)]
    if report.comparison is not None:
        yield None, views.comparison_tables(report.comparison)


def verdict_line(report: PerfReport) -> str:
    run = report.run
    counts = ", ".join(f"{run.count(s)} {s.value}" for s in sorted(Status, key=SEVERITY.__getitem__))
    return f"fabcheck report: {run.verdict.value.upper()} ({counts} over {len(run.subjects)} file(s))"


# --- text -------------------------------------------------------------------------------------------


def text(report: PerfReport) -> str:
    out = [verdict_line(report), *views.overview(report), ""]
    for _, group in tables(report):
        for table in group:
            if table.kind != "bysize":  # the per-size grid is for files; the terminal gets the summary
                out += [table.title, *_aligned(table), ""]
    out += ["Rules:", *(f"  - {rule}" for rule in report.rules)]
    return "\n".join(out)


def _aligned(table: Table) -> list[str]:
    if not table.rows:
        return ["  (none)"]
    widths = [max(len(row[i]) for row in (table.header, *table.rows)) for i in range(len(table.header))]
    return [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in (table.header, *table.rows)
    ]


# --- Markdown ---------------------------------------------------------------------------------------


def markdown(report: PerfReport) -> str:
    out = [f"# {verdict_line(report)}", "", *views.overview(report), ""]
    for _, group in tables(report):
        for table in group:
            out += [f"## {_md(table.title)}", "", *_md_table(table), ""]
    out += ["## Rules", "", *(f"- {_md(rule)}" for rule in report.rules), ""]
    return "\n".join(out)


def _md_table(table: Table) -> list[str]:
    if not table.rows:
        return ["(none)"]
    rows = [table.header, *table.rows]
    lines = ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("---" for _ in table.header) + "|")
    return lines


def _md(text: str) -> str:
    return xml_text(text).replace("|", "\\|").replace("\n", " ")


# --- HTML -------------------------------------------------------------------------------------------

_STYLE = """
body { font-family: sans-serif; margin: 16px 24px; color: #222222; background: #ffffff; }
h1 { font-size: 22px; margin: 0 0 6px 0; } h2 { font-size: 18px; margin: 22px 0 8px 0; }
h3 { font-size: 15px; margin: 14px 0 6px 0; }
table { border-collapse: collapse; margin: 4px 0 12px 0; font-size: 13px; }
th, td { border: 1px solid #999999; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #e6e6e6; } .note { color: #555555; } .figure svg { max-width: 100%; height: auto; }
"""


def html(report: PerfReport) -> str:
    status = report.run.verdict
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(verdict_line(report))}</title>",
        f"<style>{_STYLE}h1 span {{ background: {TINT[status]}; }}</style>",
        "</head><body>",
        f"<h1>fabcheck report <span>{_e(status.value.upper())}</span></h1>",
        f"<p>{_e(verdict_line(report))}</p>",
        *(f'<p class="note">{_e(line)}</p>' for line in views.overview(report)),
    ]
    by_op = {op.op: op for op in report.ops}
    for op_name, group in tables(report):
        if op_name is not None:
            parts += [
                f"<h2>{_e(op_name)}</h2>",
                f'<div class="figure">{plots.busbw_svg(by_op[op_name])}</div>',
            ]
        for table in group:
            parts += [f"<h3>{_e(table.title)}</h3>", _html_table(table)]
    parts += ["<h2>Rules</h2>", "<ul>", *(f"<li>{_e(rule)}</li>" for rule in report.rules), "</ul>"]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _html_table(table: Table) -> str:
    if not table.rows:
        return '<p class="note">none</p>'
    head = "".join(f"<th>{_e(h)}</th>" for h in table.header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    return f'<table class="{table.kind}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _e(text: str) -> str:
    return escape(xml_text(text), quote=True)


# --- JSON -------------------------------------------------------------------------------------------


def json_document(report: PerfReport) -> str:
    return json.dumps(_document(report), indent=1, sort_keys=False)


def _document(report: PerfReport) -> dict:
    limit = report.limit
    return {
        "directory": report.data.directory,
        "verdict": report.run.verdict.value,
        "limit": None
        if limit is None
        else {"nics_per_node": limit.nics_per_node, "speed_gbps": limit.speed_gbps, "gbytes": limit.gbytes},
        "skipped": [{"file": s.source, "reason": s.reason} for s in report.data.skipped],
        "ops": [_op_json(op, report.data.transport) for op in report.ops],
        "comparison": None if report.comparison is None else _comparison_json(report),
        "findings": [
            {"file": subject.name, **finding.to_json()} for subject, finding in report.run.findings()
        ],
        "rules": list(report.rules),
    }


def _op_json(op: OpReport, transport: Mapping[str, Any]) -> dict:
    return {
        "op": op.op,
        "representative_bytes": op.size,
        "single_node_series": op.single_node,
        "curves": [
            {
                "series": r.curve.series,
                "file": r.curve.source,
                "nodes": r.curve.key.nodes,
                "ranks": r.curve.key.ranks,
                "hosts": list(r.curve.hosts),
                "nccl_version": r.curve.nccl_version,
                "truncated": list(r.curve.truncated),
                "transport": transport.get(r.curve.source),
                "busbw_gbytes": r.busbw,
                "plateau_gbytes": r.plateau,
                "efficiency": r.efficiency,
                "bound": None if r.bound is None else {"gbytes": r.bound[0], "basis": r.bound[1]},
                "cross_node_efficiency": r.cross_node,
                "points": [
                    {
                        "bytes": p.bytes,
                        "busbw": p.busbw,
                        "ip_busbw": p.ip_busbw,
                        "wrong": p.wrong,
                        "regime": regime.value,
                    }
                    for p, regime in zip(r.curve.points, r.regimes, strict=True)
                ],
                "anomalies": [
                    {"kind": a.kind.value, "first_bytes": a.first, "last_bytes": a.last, "detail": a.detail}
                    for a in r.anomalies
                ],
            }
            for r in op.curves
        ],
        "scaling": [
            {
                "ranks_per_node": rpn,
                "nodes": p.nodes,
                "series": p.series,
                "busbw": p.busbw,
                "drop_pct": p.drop_pct,
            }
            for rpn, points in op.scaling.items()
            for p in points
        ],
    }


def _comparison_json(report: PerfReport) -> dict:
    comparison = report.comparison
    assert comparison is not None
    return {
        "a": comparison.a_name,
        "b": comparison.b_name,
        "curves": [
            {
                "op": c.op,
                "series": c.series,
                "sizes": [
                    {"bytes": d.bytes, "a": d.a, "b": d.b, "diff_pct": d.diff_pct, "regime": d.regime.value}
                    for d in c.diffs
                ],
                "regime_wins": [
                    {
                        "regime": w.regime.value,
                        "sizes": w.sizes,
                        "mean_a": w.mean_a,
                        "mean_b": w.mean_b,
                        "winner": w.winner,
                    }
                    for w in c.wins
                ],
            }
            for c in comparison.curves
        ],
        "only_a": list(comparison.only_a),
        "only_b": list(comparison.only_b),
    }


REPORTERS: dict[str, Callable[[PerfReport], str]] = {"html": html, "markdown": markdown}
