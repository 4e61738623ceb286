"""The InfiniBand fabric of the HTML report (issue 37), pure: a Run in, SVG and table rows out.

What it reads: the cable findings of the ib stage (ib.topology, ib.link, ib.errors), whose subject names
both ends of a cable, the lower tier first (`gpu01/mlx5_0 ↔ leaf01/1`, `leaf03/17 ↔ spine02/5`), and the
IB switches' own findings (ib.guids, ib.firmware). A cable is coloured by the worst verdict of its
findings (fail, then error, then pass, then skip; grey: nothing judged it).

The picture draws the switches in tiers, leaves at the bottom and each higher tier above (a switch's
tier: one above the highest switch cabled below it; a switch with a host cable is a leaf), every
switch-to-switch pair of boxes joined by one line for its cables, and under each leaf one bar for its
host cables. Above DRAW_MAX_SWITCHES switches nothing is drawn (the table still lists every cable).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from fabcheck.checks.model import Finding, Status
from fabcheck.report.fabric_map import worst
from fabcheck.report.model import NodeKind, Run
from fabcheck.report.palette import INK, PAPER, RULE, SOLID, UNJUDGED
from fabcheck.report.textsafe import xml_text

CABLE_CHECKS = ("ib.topology", "ib.link", "ib.errors")
IB_PREFIX = "ib."
ARROW = " ↔ "
DRAW_MAX_SWITCHES = 160

PAD, BOX_W, BOX_H, GAP_X, TIER_H, HOSTS_H, LEGEND_H = 16, 96, 24, 24, 110, 40, 28


@dataclass(frozen=True)
class IbCable:
    """One cable as the ib findings name it, with every finding about it."""

    label: str  # "leaf03/17 ↔ spine02/5"
    a: str  # "leaf03/17" (the lower tier)
    b: str  # "spine02/5"
    findings: tuple[Finding, ...]

    @property
    def status(self) -> Status | None:
        return worst(self.findings)

    def of(self, check: str) -> Finding | None:
        return next((f for f in self.findings if f.check == check), None)


@dataclass(frozen=True)
class IbFabric:
    """What the picture and the table show."""

    cables: tuple[IbCable, ...]  # in the order the findings came
    tiers: tuple[tuple[str, ...], ...]  # switch names, leaves first
    switch_status: Mapping[str, Status | None]  # each switch's own (not cable) findings
    switches: frozenset[str]


def node_of(end: str) -> str:
    return end.split("/", 1)[0]


def ib_fabric(run: Run) -> IbFabric:
    by_label: dict[str, list[Finding]] = {}
    switches = {s.name for s in run.subjects if s.kind is NodeKind.IB_SWITCH}
    own: dict[str, list[Finding]] = {}
    for subject, finding in run.findings():
        if finding.check in CABLE_CHECKS and ARROW in finding.subject:
            by_label.setdefault(finding.subject, []).append(finding)
            if finding.where is not None:
                switches.add(finding.where.node)
        elif finding.check.startswith(IB_PREFIX) and subject.kind is NodeKind.IB_SWITCH:
            own.setdefault(subject.name, []).append(finding)
    cables = []
    for label, found in by_label.items():
        a, _, b = label.partition(ARROW)
        cables.append(IbCable(label, a, b, tuple(dict.fromkeys(found))))
    tiers = _tiers(cables, switches)
    status = {name: worst(own.get(name, ())) for name in switches}
    return IbFabric(tuple(cables), tiers, status, frozenset(switches))


def _tiers(cables: Sequence[IbCable], switches: set[str]) -> tuple[tuple[str, ...], ...]:
    level: dict[str, int] = {}
    for cable in cables:
        a, b = node_of(cable.a), node_of(cable.b)
        if a not in switches and b in switches:
            level[b] = 1
    for _ in range(len(switches)):
        changed = False
        for cable in cables:
            a, b = node_of(cable.a), node_of(cable.b)
            if a in switches and b in switches and a != b:
                wanted = level.get(a, 1) + 1
                if level.get(b, 1) < wanted:
                    level[b], changed = wanted, True
        if not changed:
            break
    rows: dict[int, list[str]] = {}
    for name in switches:
        rows.setdefault(level.get(name, 1), []).append(name)
    return tuple(tuple(sorted(rows[k], key=_natural)) for k in sorted(rows))


def _natural(name: str) -> tuple[tuple[int, int | str], ...]:
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", name))


# ---- the picture ----------------------------------------------------------------------------------


def render(picture: IbFabric) -> str:
    """The SVG, or "" when there is nothing (or too much) to draw."""
    count = sum(len(tier) for tier in picture.tiers)
    if not picture.cables or count == 0 or count > DRAW_MAX_SWITCHES:
        return ""
    widest = max(len(tier) for tier in picture.tiers)
    width = 2 * PAD + widest * (BOX_W + GAP_X)
    height = 2 * PAD + len(picture.tiers) * TIER_H + HOSTS_H + LEGEND_H
    centre: dict[str, tuple[float, float]] = {}
    for index, tier in enumerate(picture.tiers):
        row_top = PAD + (len(picture.tiers) - 1 - index) * TIER_H
        step = (width - 2 * PAD) / len(tier)
        for i, name in enumerate(tier):
            centre[name] = (PAD + step * (i + 0.5), row_top + BOX_H / 2)
    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg" class="ib-fabric" '
        f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="{PAPER}"/>',
    ]
    pairs: dict[tuple[str, str], list[IbCable]] = {}
    hosts: dict[str, list[IbCable]] = {}
    for cable in picture.cables:
        a, b = node_of(cable.a), node_of(cable.b)
        if a in centre and b in centre:
            pairs.setdefault((a, b), []).append(cable)
        elif b in centre:
            hosts.setdefault(b, []).append(cable)
        elif a in centre:
            hosts.setdefault(a, []).append(cable)
    for (a, b), cables in pairs.items():
        (x1, y1), (x2, y2) = centre[a], centre[b]
        status = worst(f for c in cables for f in c.findings)
        parts.append(
            f'<line class="ib-cable" data-ends="{_e(a)} {_e(b)}" data-verdict="{_word(status)}" '
            f'x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{_fill(status)}" '
            f'stroke-width="{_stroke(cables)}">'
            f"<title>{_e(_tip(cables))}</title></line>"
        )
    leaf_y = float(PAD + (len(picture.tiers) - 1) * TIER_H + BOX_H)
    for leaf, cables in hosts.items():
        x, _ = centre[leaf]
        status = worst(f for c in cables for f in c.findings)
        top = leaf_y + 8
        parts.append(
            f'<line x1="{x:.1f}" y1="{leaf_y:.1f}" x2="{x:.1f}" y2="{top:.1f}" '
            f'stroke="{_fill(status)}" stroke-width="3"/>'
        )
        parts.append(
            f'<rect class="ib-hosts" data-leaf="{_e(leaf)}" data-verdict="{_word(status)}" '
            f'x="{x - BOX_W / 2:.1f}" y="{top:.1f}" width="{BOX_W}" height="14" fill="{_fill(status)}">'
            f"<title>{_e(_tip(cables))}</title></rect>"
        )
        parts.append(_text(x, top + 26, f"{len(cables)} host cable(s)"))
    for name, (x, y) in centre.items():
        status = picture.switch_status.get(name)
        parts.append(
            f'<rect class="ib-switch" data-switch="{_e(name)}" data-verdict="{_word(status)}" '
            f'x="{x - BOX_W / 2:.1f}" y="{y - BOX_H / 2:.1f}" width="{BOX_W}" height="{BOX_H}" rx="3" '
            f'fill="{PAPER}" stroke="{_fill(status) if status else RULE}" stroke-width="3">'
            f"<title>{_e(name)}: {_word(status)} (its own checks: ib.guids, ib.firmware)</title></rect>"
        )
        parts.append(_text(x, y + 4, name, bold=True))
    parts += _legend(PAD, height - PAD - 8)
    parts.append("</svg>")
    return "".join(parts)


def rule_note(picture: IbFabric) -> str:
    count = sum(len(tier) for tier in picture.tiers)
    if count > DRAW_MAX_SWITCHES:
        return (
            f"{count} IB switches: more than {DRAW_MAX_SWITCHES}, not drawn; the table lists every cable "
            "that does not pass"
        )
    return (
        f"{count} IB switch(es) in {len(picture.tiers)} tier(s), leaves at the bottom; each line is the "
        "cables between two switches, each bar a leaf's host cables, coloured by the worst of ib.topology, "
        "ib.link and ib.errors; a switch's outline is its own checks. Hover for the cables."
    )


def _tip(cables: Sequence[IbCable]) -> str:
    lines = []
    for cable in cables:
        bad = [f for f in cable.findings if f.status is not Status.PASS]
        said = "; ".join(f"{f.check} {f.status.value}: {f.actual}" for f in bad) or "pass"
        lines.append(f"{cable.label}: {said}")
    shown = lines[:12] + ([f"... {len(lines) - 12} more"] if len(lines) > 12 else [])
    return "\n".join(shown)


def _stroke(cables: Sequence[IbCable]) -> int:
    return min(2 + 2 * len(cables), 10)


def _legend(x: float, y: float) -> list[str]:
    out = []
    for i, (status, word) in enumerate(
        (
            (Status.PASS, "pass"),
            (Status.FAIL, "fail"),
            (Status.ERROR, "error"),
            (Status.SKIP, "skip"),
            (None, "not judged"),
        )
    ):
        left = x + i * 90
        out.append(f'<rect x="{left}" y="{y - 9}" width="14" height="10" fill="{_fill(status)}"/>')
        out.append(_text(left + 20, y, word, anchor="start"))
    return out


def _fill(status: Status | None) -> str:
    return UNJUDGED if status is None else SOLID[status]


def _word(status: Status | None) -> str:
    return "not-judged" if status is None else status.value


def _text(x: float, y: float, text: str, bold: bool = False, anchor: str = "middle") -> str:
    weight = ' font-weight="bold"' if bold else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{INK}"{weight}>{_e(text)}</text>'


def _e(text: str) -> str:
    return escape(xml_text(text), quote=True)


# ---- the link table -------------------------------------------------------------------------------

TABLE_HEADER = ("cable", "verdict", "ib.topology", "ib.link", "ib.errors", "fix")


def table_rows(picture: IbFabric) -> list[tuple[tuple[str, ...], Status]]:
    """One row per cable, its ends both named, failures first: (cells, verdict); a cable no check
    judged is an error (never a pass)."""
    rows = []
    for cable in picture.cables:
        cells = [cable.label]
        for check in CABLE_CHECKS:
            found = cable.of(check)
            cells.append("" if found is None else f"{found.status.value}: {found.actual}")
        hints = dict.fromkeys(f.hint for f in cable.findings if f.status is not Status.PASS and f.hint)
        status = cable.status or Status.ERROR
        rows.append(((cells[0], status.value, *cells[1:], "; ".join(hints)), status))
    order = {Status.FAIL: 0, Status.ERROR: 1, Status.SKIP: 2, Status.PASS: 3}
    return sorted(rows, key=lambda row: order[row[1]])
