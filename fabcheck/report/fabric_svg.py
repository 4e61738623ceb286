"""The fabric picture of the HTML report, as inline SVG: hosts as rows, NICs (rails) as columns, and in
each cell the NIC, its cable and the switch port the cabling map puts at its other end, each filled with
the worst verdict of the findings about it. Pure: a Run in, SVG text out; no script, nothing fetched.

Size rule: up to DETAIL_MAX_HOSTS hosts every host gets a full row (NIC, cable, switch and port names).
Above that the picture is compact (one thin row per host, three squares per NIC: NIC, cable, port), and
hosts where nothing fails or errs (host, NICs, cables, ports) are folded into one count row, its squares
green where every folded host passes that part; at most COMPACT_MAX_ROWS hosts that fail or err are drawn,
the rest are counted in one row (the failure table lists every failure).

Which findings colour which part is decided in fabcheck.report.fabric_map; this module only draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from fabcheck.checks.model import Finding, Status
from fabcheck.report.fabric_map import WORST_FIRST, Cell, Fabric, HostRow, SwitchBox, fabric
from fabcheck.report.model import Run
from fabcheck.report.palette import INK, PAPER, RULE, SOLID, UNJUDGED
from fabcheck.report.textsafe import xml_text

DETAIL_MAX_HOSTS = 32
COMPACT_MAX_ROWS = 120

# Full rows.
PAD, LABEL_W, HEADER_H = 12, 150, 30
CELL_W, ROW_H = 104, 72
BOX_W, BOX_H = 92, 20
# Compact rows.
MINI_ROW_H, MINI = 14, 10
MINI_CELL_W = 3 * MINI + 2 * 2 + 8
LEGEND_H, SWITCH_H = 64, 34


def render(run: Run) -> str:
    """The picture, or "" when the run has no host with a NIC to draw."""
    picture = fabric(run)
    if not picture.columns:
        return ""
    if len(picture.rows) <= DETAIL_MAX_HOSTS:
        return _draw(picture, compact=False)
    return _draw(picture, compact=True)


def rule_note(run: Run) -> str:
    """What the picture shows, for the sentence under it."""
    picture = fabric(run)
    hosts = len(picture.rows)
    if hosts <= DETAIL_MAX_HOSTS:
        return (
            f"{hosts} host(s) x {len(picture.columns)} NIC(s): each cell is the NIC (host checks), its "
            "cable (link checks) and the switch port the cabling map puts at its other end (switch "
            "checks on that port). Hover a part for the checks behind its colour."
        )
    return (
        f"{hosts} hosts: more than {DETAIL_MAX_HOSTS}, so one thin row per host (three squares per NIC: "
        "NIC, cable, switch port); hosts where nothing fails or errs are folded into one count row, "
        f"and at most {COMPACT_MAX_ROWS} hosts that fail or err are drawn (the failure table lists "
        "every failure)."
    )


def _draw(picture: Fabric, compact: bool) -> str:
    cell_w = MINI_CELL_W if compact else CELL_W
    row_h = MINI_ROW_H if compact else ROW_H
    label_w = LABEL_W
    lines: list[str] = []
    y = PAD + HEADER_H
    header = _header(picture.columns, label_w, cell_w, compact)
    if compact:
        shown = [row for row in picture.rows if not row.quiet]
        quiet = [row for row in picture.rows if row.quiet]
        folded = len(quiet)
        hidden = max(0, len(shown) - COMPACT_MAX_ROWS)
        for row in shown[:COMPACT_MAX_ROWS]:
            lines += _row(row, picture.columns, y, label_w, cell_w, row_h, compact)
            y += row_h
        if hidden:
            lines.append(_note_row(y, f"... {hidden} more host(s) that fail or err: see the failures"))
            y += row_h
        if folded:
            lines += _folded_row(quiet, picture.columns, y, label_w, cell_w, row_h)
            y += row_h
    else:
        for row in picture.rows:
            lines += _row(row, picture.columns, y, label_w, cell_w, row_h, compact)
            y += row_h
    width = max(PAD * 2 + label_w + cell_w * len(picture.columns), 640)
    y += 8
    lines += _switch_strip(picture.switches, y, width)
    y += SWITCH_H if picture.switches else 0
    lines += _legend(PAD, y + 6, compact)
    height = y + LEGEND_H
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="fabric" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="fabric: {len(picture.rows)} hosts by {len(picture.columns)} NICs">'
    )
    body = [
        head,
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="{PAPER}"/>',
        f'<g font-family="sans-serif" font-size="{10 if compact else 11}" fill="{INK}">',
        *header,
        *lines,
        "</g>",
        "</svg>",
    ]
    return "\n".join(body)


def _header(columns: Sequence[str], label_w: int, cell_w: int, compact: bool) -> list[str]:
    """NIC names over the columns; compact columns are narrow, so they show what follows the prefix
    every column shares (`mlx5_0` .. `mlx5_7`: `0` .. `7`, the corner says `mlx5_*`)."""
    prefix = _shared_prefix(columns) if compact else ""
    corner = f"host \\ NIC {prefix}*" if prefix else "host \\ NIC (rail)"
    out = [_text(PAD, PAD + HEADER_H / 2, corner, weight="bold", anchor="start")]
    for index, nic in enumerate(columns):
        x = PAD + label_w + index * cell_w + cell_w / 2
        shown = nic if not compact else _short(nic[len(prefix) :], 6)
        out.append(
            f'<text x="{x:g}" y="{PAD + HEADER_H / 2:g}" text-anchor="middle" dominant-baseline="central" '
            f'font-weight="bold" data-nic="{_e(nic)}"><title>{_e(nic)}</title>{_e(shown)}</text>'
        )
    return out


def _shared_prefix(names: Sequence[str]) -> str:
    """The longest start all names share, cut after its last non-digit (`mlx5_`, never `mlx5_1`)."""
    if len(names) < 2:
        return ""
    first, last = min(names), max(names)
    size = next(
        (i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), min(len(first), len(last))
    )
    common = first[:size]
    while common and common[-1].isdigit():
        common = common[:-1]
    return common if all(len(n) > len(common) for n in names) else ""


def _row(
    row: HostRow, columns: Sequence[str], y: float, label_w: int, cell_w: int, row_h: int, compact: bool
) -> list[str]:
    label_h = MINI if compact else BOX_H * 2 + 10
    label_y = y + (row_h - label_h) / 2
    out = [
        f'<g class="host" data-host="{_e(row.host)}" data-status="{_said(row.status)}">',
        _rect(PAD, label_y, label_w - 10, label_h, _fill(row.status), f"{row.host}: {_said(row.status)}"),
    ]
    light = row.status is not None
    if compact:
        out.append(
            _text(PAD + 6, y + row_h / 2, _short(row.host, 24), anchor="start", light=light, weight="bold")
        )
    else:
        out.append(
            _text(
                PAD + 8, y + row_h / 2 - 8, _short(row.host, 20), anchor="start", light=light, weight="bold"
            )
        )
        out.append(_text(PAD + 8, y + row_h / 2 + 9, row.counts, anchor="start", light=light))
    out.append("</g>")
    for index, nic in enumerate(columns):
        x = PAD + label_w + index * cell_w
        cell = row.cells.get(nic)
        if cell is None:
            if not compact:
                out.append(_text(x + cell_w / 2, y + row_h / 2, "no such NIC", muted=True))
            continue
        out += _mini_cell(cell, x, y + (row_h - MINI) / 2) if compact else _cell(cell, x, y)
    return out


def _cell(cell: Cell, x: float, y: float) -> list[str]:
    left = x + (CELL_W - BOX_W) / 2
    mid = x + CELL_W / 2
    nic_top, port_top = y + 6, y + ROW_H - 6 - BOX_H
    out = [_cell_group(cell)]
    out.append(_rect(left, nic_top, BOX_W, BOX_H, _fill(cell.nic_status), _tip(cell, "NIC")))
    out.append(
        _text(
            mid,
            nic_top + BOX_H / 2,
            f"{_short(cell.nic, 9)} {_word(cell.nic_status)}",
            light=cell.nic_status is not None,
        )
    )
    if not cell.switch:
        out.append(
            _cable(mid, nic_top + BOX_H, port_top, cell.cable_status, _tip(cell, "cable"), dashed=True)
        )
        out.append(_text(mid, port_top + BOX_H / 2, "no cable in map", muted=True))
    else:
        out.append(_cable(mid, nic_top + BOX_H, port_top, cell.cable_status, _tip(cell, "cable")))
        out.append(_rect(left, port_top, BOX_W, BOX_H, _fill(cell.port_status), _tip(cell, "port")))
        out.append(
            _text(
                mid,
                port_top + BOX_H / 2,
                _short(f"{cell.switch} {cell.port}", 15),
                light=cell.port_status is not None,
            )
        )
    out.append("</g>")
    return out


def _mini_cell(cell: Cell, x: float, y: float) -> list[str]:
    """Three squares: NIC, cable, port (two when the cabling map names no port)."""
    out = [_cell_group(cell)]
    parts = [("NIC", cell.nic_status), ("cable", cell.cable_status)]
    if cell.switch:
        parts.append(("port", cell.port_status))
    for index, (part, status) in enumerate(parts):
        out.append(_rect(x + 4 + index * (MINI + 2), y, MINI, MINI, _fill(status), _tip(cell, part)))
    out.append("</g>")
    return out


def _cell_group(cell: Cell) -> str:
    port = f"{cell.switch}:{cell.port}" if cell.switch else ""
    return (
        f'<g class="nic" data-host="{_e(cell.host)}" data-nic="{_e(cell.nic)}" '
        f'data-status="{_said(cell.status)}" data-nic-status="{_said(cell.nic_status)}" '
        f'data-cable-status="{_said(cell.cable_status)}" data-port="{_e(port)}" '
        f'data-port-status="{_said(cell.port_status)}">'
    )


def _tip(cell: Cell, part: str) -> str:
    """The hover text of one part: what it is, its verdict, and the checks that did not pass."""
    if part == "NIC":
        name, findings, status = f"{cell.host} {cell.nic}", cell.nic_findings, cell.nic_status
    elif part == "cable":
        port = f"{cell.switch}:{cell.port}" if cell.switch else "no port in the cabling map"
        name, findings, status = (
            f"cable {cell.host}:{cell.nic} - {port}",
            cell.cable_findings,
            cell.cable_status,
        )
    else:
        name, findings, status = f"{cell.switch} {cell.port}", cell.port_findings, cell.port_status
    bad = sorted({f.check for f in findings if f.status in (Status.FAIL, Status.ERROR)})
    counted = f"{len(findings)} finding(s)" if findings else "no finding"
    said = f"{name}: {_said(status)} ({counted}{'; not passed: ' + ', '.join(bad) if bad else ''})"
    if part == "cable":
        # A failing cable names what failed and what to do (link.health: the direction, which end to
        # clean, reseat or replace), so the picture alone says where to go.
        said += "".join(f"\n{_finding_line(f)}" for f in findings if f.status is Status.FAIL)
    return said


TIP_FINDING_CHARS = 400  # one finding's line in a tooltip; the report's table holds the whole text


def _finding_line(finding: Finding) -> str:
    line = f"{finding.check}: {finding.actual}" + (f" -> {finding.hint}" if finding.hint else "")
    return line if len(line) <= TIP_FINDING_CHARS else line[: TIP_FINDING_CHARS - 3] + "..."


def _folded_row(
    rows: Sequence[HostRow], columns: Sequence[str], y: float, label_w: int, cell_w: int, row_h: int
) -> list[str]:
    """One row for the hosts where nothing fails or errs: per NIC column and part, pass when every
    folded host's part passes, else not judged (or skip) with how many hosts it concerns."""
    count, top = len(rows), y + (row_h - MINI) / 2
    green = SOLID[Status.PASS]
    out = [
        f'<g class="folded" data-hosts="{count}">',
        _rect(PAD, top, label_w - 10, MINI, green, f"{count} host(s): nothing fails, nothing errs"),
        _text(
            PAD + 6,
            y + row_h / 2,
            f"{count} hosts: no fail/error",
            anchor="start",
            light=True,
            weight="bold",
        ),
    ]
    for index, nic in enumerate(columns):
        x = PAD + label_w + index * cell_w
        cells = [row.cells[nic] for row in rows if nic in row.cells]
        if not cells:
            continue
        parts = [("NIC", [c.nic_status for c in cells]), ("cable", [c.cable_status for c in cells])]
        cabled = [c.port_status for c in cells if c.switch]
        if cabled:
            parts.append(("port", cabled))
        for place, (part, statuses) in enumerate(parts):
            passing = statuses.count(Status.PASS)
            status = Status.PASS if passing == len(statuses) else (None if None in statuses else Status.SKIP)
            tip = f"{nic} {part}: {passing} of {len(statuses)} folded host(s) pass"
            out.append(_rect(x + 4 + place * (MINI + 2), top, MINI, MINI, _fill(status), tip))
    out.append("</g>")
    return out


def _note_row(y: float, text: str) -> str:
    return _text(PAD + 6, y + MINI_ROW_H / 2, text, anchor="start", muted=True)


def _switch_strip(switches: Sequence[SwitchBox], y: float, width: int) -> list[str]:
    """One box a switch, the ones that fail or err first; what does not fit on the line is counted."""
    if not switches:
        return []
    out = [_text(PAD, y + SWITCH_H / 2 - 4, "switches", weight="bold", anchor="start")]
    x = PAD + LABEL_W
    ordered = sorted(
        switches, key=lambda b: WORST_FIRST.index(b.status) if b.status is not None else len(WORST_FIRST)
    )
    drawn = 0
    for box in ordered:
        label = f"{_short(box.name, 16)} {_said(box.status)}"
        w = max(110, 8 * len(label) + 16)
        if x + w > width - PAD - 150 and drawn < len(ordered) - 1:
            break
        tip = f"switch {box.name}: {_said(box.status)} (all its findings; {box.ports} cabled port(s))"
        out.append(f'<g class="switch" data-switch="{_e(box.name)}" data-status="{_said(box.status)}">')
        out.append(_rect(x, y, w, BOX_H + 4, _fill(box.status), tip))
        out.append(_text(x + w / 2, y + (BOX_H + 4) / 2, label, light=box.status is not None, weight="bold"))
        out.append("</g>")
        x += w + 8
        drawn += 1
    rest = ordered[drawn:]
    if rest:
        said: dict[str, int] = {}
        for box in rest:
            said[_said(box.status)] = said.get(_said(box.status), 0) + 1
        counts = ", ".join(f"{n} {word}" for word, n in said.items())
        out.append(_text(x, y + (BOX_H + 4) / 2, f"+{len(rest)} more: {counts}", anchor="start"))
    return out


def _legend(x: float, y: float, compact: bool) -> list[str]:
    items = [(SOLID[s], s.value) for s in (Status.PASS, Status.FAIL, Status.ERROR, Status.SKIP)]
    items.append((UNJUDGED, "? not judged"))
    out = []
    for index, (fill, name) in enumerate(items):
        left = x + index * 104
        out.append(f'<rect x="{left:g}" y="{y:g}" width="14" height="14" fill="{fill}" stroke="{RULE}"/>')
        out.append(_text(left + 20, y + 7, name, anchor="start"))
    key = (
        "each NIC: three squares, NIC | cable | switch port"
        if compact
        else "each cell: NIC (top), its cable (line), the switch port it is cabled to (bottom)"
    )
    out.append(_text(x, y + 32, f"rows: hosts; columns: NICs (rails); {key}", anchor="start"))
    return out


def _cable(x: float, top: float, bottom: float, status: Status | None, tip: str, dashed: bool = False) -> str:
    dash = ' stroke-dasharray="4 3"' if dashed else ""
    return (
        f'<line class="cable" x1="{x:g}" y1="{top:g}" x2="{x:g}" y2="{bottom:g}" stroke="{_fill(status)}" '
        f'stroke-width="6"{dash}><title>{_e(tip)}</title></line>'
    )


def _fill(status: Status | None) -> str:
    return UNJUDGED if status is None else SOLID[status]


def _word(status: Status | None) -> str:
    """The verdict printed in a box (colour is not the only cue): FAIL in capitals, `?` not judged."""
    if status is None:
        return "?"
    return status.value.upper() if status is Status.FAIL else status.value


def _said(status: Status | None) -> str:
    return "not judged" if status is None else status.value


def _short(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "\u2026"


def _rect(x: float, y: float, w: float, h: float, fill: str, title: str) -> str:
    return (
        f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" rx="3" fill="{fill}">'
        f"<title>{_e(title)}</title></rect>"
    )


def _text(
    x: float,
    y: float,
    text: str,
    weight: str = "normal",
    anchor: str = "middle",
    light: bool = False,
    muted: bool = False,
) -> str:
    colour = PAPER if light else ("#777777" if muted else INK)
    return (
        f'<text x="{x:g}" y="{y:g}" text-anchor="{anchor}" dominant-baseline="central" '
        f'font-weight="{weight}" fill="{colour}">{_e(text)}</text>'
    )


def _e(text: str) -> str:
    return escape(xml_text(text), quote=True)
