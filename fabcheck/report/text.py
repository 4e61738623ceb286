"""Human report of analyses: a verdict line per input, then one line per finding that matters."""

from __future__ import annotations

from collections.abc import Iterable

from fabcheck.analyze import Analysis
from fabcheck.checks.model import Finding, Status

_MARK = {Status.PASS: "PASS", Status.FAIL: "FAIL", Status.ERROR: "ERROR", Status.SKIP: "skip"}


def render(analyses: Iterable[Analysis], verbose: bool = False) -> str:
    out: list[str] = []
    for analysis in analyses:
        out.append(f"{analysis.verdict.upper():5} {analysis.source} ({analysis.kind})")
        out += render_findings(analysis.findings, verbose)
    return "\n".join(out)


def render_findings(findings: Iterable[Finding], verbose: bool = False) -> list[str]:
    """Indented lines for the findings that matter (every one with `verbose`), then the pass count."""
    out: list[str] = []
    findings = tuple(findings)
    for finding in findings:
        if finding.status is Status.PASS and not verbose:
            continue
        out.append(f"  {_MARK[finding.status]:5} {finding.check} [{finding.subject}]")
        out.append(f"        expected: {finding.expected}")
        out.append(f"        actual:   {finding.actual}")
        if finding.hint:
            out.append(f"        hint:     {finding.hint}")
    passes = sum(f.status is Status.PASS for f in findings)
    out.append(f"  {passes}/{len(findings)} checks passed")
    return out
