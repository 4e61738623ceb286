"""Human report on a terminal: findings grouped by node (or by check), failures first, then one summary.

    FAIL  gpu02
      FAIL  host.trust [mlx5_0]
            expected: trust dscp
            actual:   trust pcp
            hint:     role roce_host sets it fleet-wide; ...
      15/16 checks passed

Groups are ordered fail, error, pass (inventory order within each); passing findings are listed only
with `verbose`. The last line is the run's verdict and counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fabcheck.checks.model import Finding, Status, verdict
from fabcheck.report.model import Run, Subject, by_severity, subjects_by_severity

GROUP_BY = ("node", "check")
_MARK = {Status.PASS: "PASS", Status.FAIL: "FAIL", Status.ERROR: "ERROR", Status.SKIP: "skip"}


def render(run: Run, group_by: str = "node", verbose: bool = False) -> str:
    if group_by not in GROUP_BY:
        raise ValueError(f"group_by must be one of {GROUP_BY}, not {group_by!r}")
    out = _by_check(run, verbose) if group_by == "check" else _by_node(run, verbose)
    out.append(summary(run))
    return "\n".join(out)


def summary(run: Run) -> str:
    passed, failed = run.subjects_with(Status.PASS), run.subjects_with(Status.FAIL)
    errors = len(run.subjects) - passed - failed
    return (
        f"{run.verdict.value.upper()}: {len(run.subjects)} {run.noun}: {passed} pass, {failed} fail, "
        f"{errors} could not be checked"
    )


def _by_node(run: Run, verbose: bool) -> list[str]:
    out: list[str] = []
    for subject in subjects_by_severity(run.subjects):
        out.append(f"{_MARK[subject.verdict]:5} {_title(subject)}")
        out += render_findings(subject.findings, verbose)
    return out


def _title(subject: Subject) -> str:
    return f"{subject.name} ({subject.label})" if subject.label else subject.name


def _by_check(run: Run, verbose: bool) -> list[str]:
    groups: dict[str, list[tuple[Subject, Finding]]] = {}
    for subject, finding in run.findings():
        groups.setdefault(finding.check, []).append((subject, finding))
    ordered = by_severity(groups.items(), lambda item: _check_status(f for _, f in item[1]))
    out: list[str] = []
    for check, items in ordered:
        out.append(f"{_MARK[_check_status(f for _, f in items)]:5} {check}")
        out += _finding_lines([(f"{s.name} [{f.subject}]", f) for s, f in items], verbose)
    return out


def _check_status(findings: Iterable[Finding]) -> Status:
    """A check skipped on every node is `skip` (not applicable), not an error of the check."""
    findings = tuple(findings)
    if all(f.status is Status.SKIP for f in findings):
        return Status.SKIP
    return verdict(findings)


def render_findings(findings: Iterable[Finding], verbose: bool = False) -> list[str]:
    """Indented lines for the findings that matter (every one with `verbose`), failures first, then the
    pass count."""
    return _finding_lines([(f"{f.check} [{f.subject}]", f) for f in findings], verbose)


def _finding_lines(items: Sequence[tuple[str, Finding]], verbose: bool) -> list[str]:
    out: list[str] = []
    for title, finding in by_severity(items, lambda item: item[1].status):
        if finding.status is Status.PASS and not verbose:
            continue
        out.append(f"  {_MARK[finding.status]:5} {title}")
        out.append(f"        expected: {finding.expected}")
        out.append(f"        actual:   {finding.actual}")
        if finding.hint:
            out.append(f"        hint:     {finding.hint}")
    passes = sum(f.status is Status.PASS for _, f in items)
    out.append(f"  {passes}/{len(items)} checks passed")
    return out
