"""What the fabric picture of the HTML report shows, pure: the cabling map, and per host row its NICs,
their cables and the switch ports at the other end, each with the worst verdict of the findings about it
(fabcheck.report.fabric_svg draws it).

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
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from fabcheck.checks.model import Finding, Status
from fabcheck.checks.topo import CHECK as AFFINITY_CHECK
from fabcheck.report.model import LinkDetail, LinkEnds, NodeKind, Run, Subject

LINK_PREFIX = "link."

# Worst first: a definite failure, then "could not tell", then a pass; a skip only when nothing else.
WORST_FIRST = (Status.FAIL, Status.ERROR, Status.PASS, Status.SKIP)


def worst(findings: Iterable[Finding]) -> Status | None:
    """The colour-giving verdict of some findings; None when there are none (not judged)."""
    statuses = {f.status for f in findings}
    return next((s for s in WORST_FIRST if s in statuses), None)


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
    if subject.kind is NodeKind.IB_SWITCH and finding.where is not None:
        # An ib finding: the switch's port (`leaf01/3`), the host HCA when the cable's other end is one.
        at = finding.where
        host = at.peer if at.peer.split("/", 1)[0] in cables.hosts else ""
        return host, (f"{at.node}/{at.part}" if at.part else "")
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
    parts = [f"{statuses.count(s)} {s.value}" for s in WORST_FIRST if statuses.count(s)]
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
