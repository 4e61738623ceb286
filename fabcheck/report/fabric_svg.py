"""The fabric picture of the HTML report, as inline SVG: hosts as rows, NICs (rails) as columns, and in
each cell the NIC, its cable and the switch port the cabling map puts at its other end, each filled with
the worst verdict of the findings about it. Pure: a Run in, SVG text out; no script, nothing fetched.

What colours what (a finding's part and ends are its Where fields, node / part / peer, where the check
gave them; only a finding without them, an analyzer's or an older snapshot's, is read by its subject):
- a NIC: the host's findings about the NIC (`mlx5_0`) or one of its ports (`mlx5_0/1`), and the GPU-NIC
  affinity finding of the GPU whose rail it is (when the rails are known);
- a cable: the `link.*` findings about `host:nic`;
- a switch port: the switch's findings about one of its ports. Switch-wide findings (no part) colour the
  switch's box in the strip under the grid, not every port.
The worst verdict is fail, then error, then pass, then skip; a part no finding is about is "not judged".

The cabling map is read from the run's link details and from the `link.*` findings' ends (Where, or the
subject `gpu01:mlx5_0 <-> leaf01:swp1`). A host's NICs are those the cabling map or its rails name, and
those its port findings (`mlx5_0/1`) name.

Size rule: up to DETAIL_MAX_HOSTS hosts every host gets a full row (NIC, cable, switch and port names).
Above that the picture is compact (one thin row per host, three squares per NIC: NIC, cable, port), and
hosts where nothing fails or errs (host, NICs, cables, ports) are folded into one count row, its squares
green where every folded host passes that part; at most COMPACT_MAX_ROWS hosts that fail or err are drawn,
the rest are counted in one row (the failure table lists every failure).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape

from fabcheck.checks.model import Finding, Status
from fabcheck.checks.topo import CHECK as AFFINITY_CHECK
from fabcheck.report.model import LinkDetail, LinkEnds, NodeKind, Run, Subject
from fabcheck.report.palette import INK, PAPER, RULE, SOLID, UNJUDGED
from fabcheck.report.textsafe import xml_text

LINK_PREFIX = "link."
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

# Worst first: a definite failure, then "could not tell", then a pass; a skip only when nothing else.
_WORST = (Status.FAIL, Status.ERROR, Status.PASS, Status.SKIP)


def worst(findings: Iterable[Finding]) -> Status | None:
    """The colour-giving verdict of some findings; None when there are none (not judged)."""
    statuses = {f.status for f in findings}
    return next((s for s in _WORST if s in statuses), None)


@dataclass(frozen=True)
class Cell:
    """One NIC of one host, its cable and the switch port at the cable's other end."""

    host: str
    nic: str
    switch: str  # "" when the cabling map names no port for this NIC
    port: str
    nic_findings: tuple[Finding, ...]
    cable_findings: tuple[Finding, ...]
    port_findings: tuple[Finding, ...]

    @property
    def nic_status(self) -> Status | None:
        return worst(self.nic_findings)

    @property
    def cable_status(self) -> Status | None:
        return worst(self.cable_findings)

    @property
    def port_status(self) -> Status | None:
        return worst(self.port_findings) if self.switch else None

    @property
    def status(self) -> Status | None:
        return worst((*self.nic_findings, *self.cable_findings, *self.port_findings))

    @property
    def passes(self) -> bool:
        parts = [self.nic_status, self.cable_status] + ([self.port_status] if self.switch else [])
        return all(p is Status.PASS for p in parts)


@dataclass(frozen=True)
class HostRow:
    host: str
    status: Status | None  # every finding of the host
    cells: Mapping[str, Cell]  # by NIC name
    counts: str = ""  # "2 fail, 181 pass": every finding of the host, worst first

    @property
    def passes(self) -> bool:
        return self.status is Status.PASS and all(cell.passes for cell in self.cells.values())

    @property
    def quiet(self) -> bool:
        """Nothing of the host fails or errs: folded in the compact picture (a part may be unjudged,
        e.g. every port when the switch stage did not run, or skipped)."""
        bad = (Status.FAIL, Status.ERROR)
        return self.status is Status.PASS and all(cell.status not in bad for cell in self.cells.values())


@dataclass(frozen=True)
class SwitchBox:
    name: str
    status: Status | None  # every finding of the switch
    ports: int  # ports of this switch the cabling map uses


@dataclass(frozen=True)
class Fabric:
    """What the picture draws, built from the Run (tests read it directly)."""

    columns: tuple[str, ...]  # NIC names, natural order
    rows: tuple[HostRow, ...]  # hosts in run order
    switches: tuple[SwitchBox, ...]

    def cell(self, host: str, nic: str) -> Cell | None:
        row = next((r for r in self.rows if r.host == host), None)
        return None if row is None else row.cells.get(nic)


# ---------------------------------------------------------------------------------------- the data


def split_end(end: str, names: Iterable[str] = ()) -> tuple[str, str] | None:
    """`gpu01:mlx5_0` -> (`gpu01`, `mlx5_0`). The node is what comes before the first `:`, unless a
    known node name that itself holds `:` starts the text (the longest such name wins)."""
    node, colon, part = end.partition(":")
    known = set(names)
    if node not in known:
        for name in sorted((n for n in known if ":" in n), key=len, reverse=True):
            if end.startswith(f"{name}:") and len(end) > len(name) + 1:
                return name, end[len(name) + 1 :]
    return (node, part) if colon and node and part else None


def link_ends(subject: str, hosts: Iterable[str] = (), switches: Iterable[str] = ()) -> LinkEnds | None:
    """The two ends a link finding's subject names (`gpu01:mlx5_0 <-> leaf01:swp1`), or None."""
    host_end, arrow, switch_end = subject.partition(" <-> ")
    if not arrow:
        return None
    host, switch = split_end(host_end.strip(), hosts), split_end(switch_end.strip(), switches)
    if host is None or switch is None:
        return None
    return LinkEnds(host[0], host[1], switch[0], switch[1])


def finding_ends(
    finding: Finding, hosts: Iterable[str] = (), switches: Iterable[str] = ()
) -> LinkEnds | None:
    """The two ends of a link finding: its Where (host, NIC, the switch end as peer) where the check
    gave one, else the ends its subject names (an analyzer's finding, an older snapshot's)."""
    where = finding.where
    if where is not None and where.part and where.peer:
        switch = split_end(where.peer, switches)
        if switch is not None:
            return LinkEnds(where.node, where.part, switch[0], switch[1])
    return link_ends(finding.subject, hosts, switches)


def finding_part(finding: Finding, node: str) -> str | None:
    """The part of `node` a finding is about (a NIC, `NIC/port`, a switch port): its Where's where the
    check gave one for this node, else what its subject names (`mlx5_0/1`, `leaf01:swp1`); None for the
    node as a whole."""
    where = finding.where
    if where is not None and where.node == node:
        return where.part or None
    end = split_end(finding.subject, [node])
    if end is not None and end[0] == node:
        return end[1]
    return finding.subject if finding.subject != node and ":" not in finding.subject else None


@dataclass(frozen=True)
class Cables:
    """The cabling map as far as the run tells: (host, NIC) -> (switch, port), and back."""

    by_nic: Mapping[tuple[str, str], tuple[str, str]]
    by_port: Mapping[str, str]  # "leaf01:swp1" -> "gpu01:mlx5_0"
    nics: Mapping[str, frozenset[str]]  # host -> its cabled NICs
    hosts: frozenset[str]  # the run's host nodes
    switches: frozenset[str]  # the run's switch nodes and every switch a cable names

    def nics_of(self, host: str) -> frozenset[str]:
        return self.nics.get(host, frozenset())


def cable_map(run: Run) -> Cables:
    """The run's link details first, then the link findings' subjects (`host:nic <-> switch:port`)."""
    hosts, switches = _names(run, NodeKind.HOST), _names(run, NodeKind.SWITCH)
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for detail in run.links:
        out.setdefault((detail.ends.host, detail.ends.nic), (detail.ends.switch, detail.ends.port))
    for _, finding in run.findings():
        if finding.check.startswith(LINK_PREFIX):
            ends = finding_ends(finding, hosts, switches)
            if ends is not None:
                out.setdefault((ends.host, ends.nic), (ends.switch, ends.port))
    back = {f"{s}:{p}": f"{h}:{n}" for (h, n), (s, p) in out.items()}
    nics: dict[str, set[str]] = {}
    for host, nic in out:
        nics.setdefault(host, set()).add(nic)
    named = {switch for switch, _ in out.values()}
    frozen = {host: frozenset(names) for host, names in nics.items()}
    return Cables(out, back, frozen, frozenset(hosts), frozenset(switches | named))


def derived_links(run: Run) -> tuple[LinkDetail, ...]:
    """The run's link details, then one (without settings) for every other cable the link findings name:
    so the link table knows both ends of every cable the cabling map knows."""
    known = {(d.ends.host, d.ends.nic) for d in run.links}
    extra = [
        LinkDetail(LinkEnds(host, nic, switch, port))
        for (host, nic), (switch, port) in cable_map(run).by_nic.items()
        if (host, nic) not in known
    ]
    return (*run.links, *extra)


def where(subject: Subject, finding: Finding, cables: Cables) -> tuple[str, str]:
    """(host NIC, switch port) a finding is about, as far as the cabling map tells; "" when unknown."""
    if finding.check.startswith(LINK_PREFIX):
        ends = finding_ends(finding, cables.hosts, cables.switches)
        if ends is not None:
            return ends.host_end, ends.switch_end
        if finding.subject in cables.by_port:
            return cables.by_port[finding.subject], finding.subject
    if subject.kind is NodeKind.SWITCH:
        port = finding_part(finding, subject.name)
        if port is None:
            return "", ""
        end = f"{subject.name}:{port}"
        return cables.by_port.get(end, ""), end
    if subject.kind is NodeKind.HOST:
        nic = _nic_of(finding_part(finding, subject.name), cables.nics_of(subject.name))
        if nic is not None:
            cable = cables.by_nic.get((subject.name, nic))
            return f"{subject.name}:{nic}", (f"{cable[0]}:{cable[1]}" if cable else "")
    return "", ""


def fabric(run: Run) -> Fabric:
    """Build the picture's data from the run (see the module docstring for what colours what)."""
    cables = cable_map(run)
    host_subjects = [s for s in run.subjects if s.kind is NodeKind.HOST]
    switch_subjects = [s for s in run.subjects if s.kind is NodeKind.SWITCH]
    on_cable = link_findings_by_nic(run, cables)
    ports: dict[tuple[str, str], list[Finding]] = {}
    for switch in switch_subjects:
        for finding in switch.findings:
            if finding.check.startswith(LINK_PREFIX):
                continue
            port = finding_part(finding, switch.name)
            if port is not None:
                ports.setdefault((switch.name, port), []).append(finding)
    rows = []
    for subject in host_subjects:
        nics = _host_nics(subject, cables)
        about: dict[str, list[Finding]] = {}
        for finding in subject.findings:
            if not finding.check.startswith(LINK_PREFIX):
                nic = _finding_nic(subject, finding, nics)
                if nic is not None:
                    about.setdefault(nic, []).append(finding)
        cells = {}
        for nic in nics:
            switch_name, port = cables.by_nic.get((subject.name, nic), ("", ""))
            cable = tuple(on_cable.get((subject.name, nic), ()))
            at_port = tuple(ports.get((switch_name, port), ())) if switch_name else ()
            cells[nic] = Cell(subject.name, nic, switch_name, port, tuple(about.get(nic, ())), cable, at_port)
        rows.append(HostRow(subject.name, worst(subject.findings), cells, _counts(subject.findings)))
    columns = tuple(sorted({nic for row in rows for nic in row.cells}, key=_natural))
    used: dict[str, int] = {}
    for switch_name, _port in cables.by_nic.values():
        used[switch_name] = used.get(switch_name, 0) + 1
    by_name = {s.name: s for s in switch_subjects}
    others = sorted(set(used) - set(by_name) - cables.hosts, key=_natural)
    boxes = tuple(
        SwitchBox(name, worst(by_name[name].findings) if name in by_name else None, used.get(name, 0))
        for name in [*by_name, *others]
    )
    return Fabric(columns, tuple(rows), boxes)


def link_findings_by_nic(run: Run, cables: Cables) -> dict[tuple[str, str], list[Finding]]:
    """Every `link.*` finding once, under the host NIC its subject names (`host:nic <-> switch:port`,
    `host:nic` alone for a NIC no cable names, or the `switch:port` a cable of the map ends at). A
    finding that names no host NIC is left out (the link table gives it a row of its own)."""
    out: dict[tuple[str, str], list[Finding]] = {}
    for finding in _unique(f for _, f in run.findings() if f.check.startswith(LINK_PREFIX)):
        ends = finding_ends(finding, cables.hosts, cables.switches)
        if ends is not None:
            out.setdefault((ends.host, ends.nic), []).append(finding)
            continue
        end = split_end(finding.subject, cables.hosts)
        if end is not None and end[0] in cables.hosts:
            out.setdefault(end, []).append(finding)
        elif finding.subject in cables.by_port:  # a switch end the map cables
            host = split_end(cables.by_port[finding.subject], cables.hosts)
            if host is not None:
                out.setdefault(host, []).append(finding)
    return out


def _counts(findings: Iterable[Finding]) -> str:
    statuses = [f.status for f in findings]
    parts = [f"{statuses.count(s)} {s.value}" for s in _WORST if statuses.count(s)]
    return ", ".join(parts) or "no finding"


def _names(run: Run, kind: NodeKind) -> set[str]:
    return {s.name for s in run.subjects if s.kind is kind}


def _unique(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    return tuple(dict.fromkeys(findings))


_PORT = re.compile(r"^(?P<nic>[^\s/:]+)/\d+$")


def _host_nics(subject: Subject, cables: Cables) -> list[str]:
    nics = set(cables.nics_of(subject.name))
    if subject.affinity is not None:
        nics |= set(subject.affinity.rails.values())
    for finding in subject.findings:
        match = _PORT.match(finding_part(finding, subject.name) or "")
        if match:
            nics.add(match.group("nic"))
    return sorted(nics, key=_natural)


def _nic_of(part: str | None, nics: Iterable[str]) -> str | None:
    """The NIC a host finding's part names: `mlx5_0` or one of its ports `mlx5_0/1`; None otherwise."""
    if part is None:
        return None
    match = _PORT.match(part)
    if match:
        return match.group("nic")
    return part if part in set(nics) else None


def _finding_nic(subject: Subject, finding: Finding, nics: Sequence[str]) -> str | None:
    """The NIC a host finding is about; a GPU's affinity finding is about its rail NIC."""
    if finding.check == AFFINITY_CHECK:
        if subject.affinity is None:
            return None
        rails = {f"GPU{index}": name for index, name in subject.affinity.rails.items()}
        return rails.get(finding.subject)
    return _nic_of(finding_part(finding, subject.name), nics)


def _natural(name: str) -> list[tuple[int, int | str]]:
    """mlx5_2 before mlx5_10; numbers before words at each position, so the key always compares."""
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name)]


# ------------------------------------------------------------------------------------------ drawing


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
    return f"{name}: {_said(status)} ({counted}{'; not passed: ' + ', '.join(bad) if bad else ''})"


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
    ordered = sorted(switches, key=lambda b: _WORST.index(b.status) if b.status is not None else len(_WORST))
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
