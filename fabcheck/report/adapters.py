"""Build the shared result model from what `analyze` returns (the gate builds its own:
fabcheck.gate.fabric.gate_report), without the analyzers knowing about reporters."""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType
from typing import TYPE_CHECKING

from fabcheck.checks.model import errored
from fabcheck.report.model import NodeKind, Run, Subject

if TYPE_CHECKING:
    from fabcheck.analyze import Analysis

INPUT_CHECK = "input.readable"


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
