"""The rule every analyzer and stage follows: a pass needs every applicable check to have judged evidence.

A check that applies but finds nothing to judge (no result rows, no 'Link type' line, an op that cannot be
named) reports `error` with an actual that starts "not judged:", never `skip`: skip means "does not apply
to this input or intent" (a latency test has no bandwidth floor). `not judged` findings make the run's
verdict `error` (exit 3) unless the user's check selection leaves that check out (`--skip-check`).
"""

from __future__ import annotations

from collections.abc import Iterable

from fabcheck.checks.model import Finding, Status, errored, skipped

NOT_JUDGED = "not judged: "


def not_judged(check: str, subject: str, expected: str, why: str, hint: str) -> Finding:
    """An applicable check without the evidence to judge it."""
    return errored(check, subject, expected, NOT_JUDGED + why, hint)


def is_not_judged(finding: Finding) -> bool:
    return finding.status is Status.ERROR and finding.actual.startswith(NOT_JUDGED)


def unjudged(findings: Iterable[Finding]) -> list[str]:
    """'check: why' for each applicable check that could not judge: what an error verdict rests on."""
    return [f"{f.check}: {f.actual[len(NOT_JUDGED) :]}" for f in findings if is_not_judged(f)]


def deselect(findings: Iterable[Finding], excluded: Iterable[str]) -> tuple[Finding, ...]:
    """The user's selection: a left-out check (its dotted name, or a prefix ending in '.') is reported as
    skipped with that reason, whatever it found, so it neither fails nor blocks a pass."""
    names = tuple(excluded)
    if not names:
        return tuple(findings)

    def left_out(check: str) -> bool:
        return any(check == name or (name.endswith(".") and check.startswith(name)) for name in names)

    return tuple(
        skipped(f.check, f.subject, "left out by --skip-check") if left_out(f.check) else f for f in findings
    )
