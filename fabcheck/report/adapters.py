"""Build the shared result model from what the runners return (validate's HostResult, analyze's
Analysis), without the runners knowing about reporters."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from fabcheck.checks.model import Finding, errored
from fabcheck.report.model import Affinity, LinkDetail, NodeKind, Run, Subject

if TYPE_CHECKING:
    from fabcheck.analyze import Analysis
    from fabcheck.gate.fabric import GateResult
    from fabcheck.gate.stages import StageOutcome
    from fabcheck.validate import HostResult

INPUT_CHECK = "input.readable"


def host_subject(result: HostResult, affinity: Affinity | None = None) -> Subject:
    return Subject(result.host, NodeKind.HOST, tuple(result.findings), affinity=affinity)


def validate_run(
    results: Iterable[HostResult],
    affinities: Mapping[str, Affinity] | None = None,
    links: Iterable[LinkDetail] = (),
    notes: Iterable[str] = (),
) -> Run:
    """Host results in their order; `affinities` by host name (HostResult does not carry topo yet)."""
    affinities = affinities or {}
    subjects = tuple(host_subject(r, affinities.get(r.host)) for r in results)
    return Run("validate", subjects, tuple(links), tuple(notes))


def gate_run(
    result: GateResult,
    affinities: Mapping[str, Affinity] | None = None,
    notes: Iterable[str] = (),
) -> Run:
    """Hosts, then switches, in plan order. A link finding is filed under its host end (the subject
    names both ends; the link table lists it once)."""
    affinities = affinities or {}
    links_by_host: dict[str, list[Finding]] = {}
    for finding in result.links:
        links_by_host.setdefault(finding.subject.split(":", 1)[0], []).append(finding)
    subjects = [
        Subject(
            r.host,
            NodeKind.HOST,
            (*r.findings, *links_by_host.pop(r.host, ())),
            affinity=affinities.get(r.host),
        )
        for r in result.hosts
    ]
    subjects += [Subject(s.switch, NodeKind.SWITCH, tuple(s.findings)) for s in result.switches]
    # A link finding whose first end is no planned host (a switch port LLDP contradicts the map for)
    # shows under that switch.
    switches = {s.name: i for i, s in enumerate(subjects) if s.kind is NodeKind.SWITCH}
    for name, findings in links_by_host.items():
        if name in switches:
            known = subjects[switches[name]]
            subjects[switches[name]] = replace(known, findings=(*known.findings, *findings))
        else:
            subjects.append(Subject(findings[0].subject, NodeKind.SWITCH, tuple(findings)))
    subjects = _with_stage_findings(subjects, result.stages)
    notes = (*notes, *(note for outcome in result.stages for note in outcome.notes))
    figures = tuple(figure for outcome in result.stages for figure in outcome.figures)
    return Run("validate", tuple(subjects), (), tuple(notes), figures=figures)


def _with_stage_findings(subjects: list[Subject], outcomes: Iterable[StageOutcome]) -> list[Subject]:
    """A plugged stage's findings join the node's subject when an earlier stage judged it already."""
    index = {subject.name: i for i, subject in enumerate(subjects)}
    merged = list(subjects)
    for outcome in outcomes:
        for node in outcome.nodes:
            if node.node in index:
                known = merged[index[node.node]]
                merged[index[node.node]] = replace(known, findings=(*known.findings, *node.findings))
            else:
                index[node.node] = len(merged)
                merged.append(Subject(node.node, node.kind, node.findings))
    return merged


def analysis_subject(analysis: Analysis) -> Subject:
    return Subject(
        analysis.source,
        NodeKind.FILE,
        tuple(analysis.findings),
        label=analysis.kind,
        facts=MappingProxyType(dict(analysis.facts)),
    )


def unreadable_subject(source: str, kind: str, expected: str, message: str, line: int | None) -> Subject:
    """A file that could not be read as `kind` at all: one error finding, and exit 2 for the run."""
    where = source if line is None else f"{source}:{line}"
    finding = errored(
        INPUT_CHECK,
        where,
        expected,
        message,
        f"give `fabcheck analyze {kind}` a file that holds {expected}",
    )
    facts = {"parse_error": True, "line": line, "error": message}
    return Subject(
        source, NodeKind.FILE, (finding,), label=kind, facts=MappingProxyType(facts), input_error=True
    )


def analyze_run(subjects: Iterable[Subject]) -> Run:
    return Run("analyze", tuple(subjects))
