"""Verdict vocabulary shared by every check: statuses, findings and how they combine."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from enum import Enum


class Status(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"  # the check could not run (missing evidence): never counts as a pass
    SKIP = "skip"  # not applicable to this input or intent


@dataclass(frozen=True)
class Finding:
    check: str  # dotted name, e.g. "topo.rail_affinity"
    status: Status
    subject: str  # what was judged: "GPU3", "mlx5_2", "8589934592 B row"
    expected: str
    actual: str
    hint: str = ""  # what to do about it, and which role or setting fixes it

    def to_json(self) -> dict[str, str]:
        data = asdict(self)
        data["status"] = self.status.value
        return data


# A definite failure outranks "could not tell"; a pass needs at least one passing check and no other.
_PRECEDENCE = (Status.FAIL, Status.ERROR, Status.PASS)


def verdict(findings: Iterable[Finding]) -> Status:
    statuses = {f.status for f in findings}
    for status in _PRECEDENCE:
        if status in statuses:
            return status
    return Status.ERROR  # nothing was checked at all: not a pass


def passed(check: str, subject: str, expected: str, actual: str) -> Finding:
    return Finding(check, Status.PASS, subject, expected, actual)


def failed(check: str, subject: str, expected: str, actual: str, hint: str) -> Finding:
    return Finding(check, Status.FAIL, subject, expected, actual, hint)


def errored(check: str, subject: str, expected: str, actual: str, hint: str) -> Finding:
    return Finding(check, Status.ERROR, subject, expected, actual, hint)


def skipped(check: str, subject: str, reason: str) -> Finding:
    return Finding(check, Status.SKIP, subject, "n/a", reason)
