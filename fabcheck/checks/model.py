"""Verdict vocabulary shared by every check: statuses, findings and how they combine."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class Status(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"  # the check could not run (missing evidence): never counts as a pass
    SKIP = "skip"  # not applicable to this input or intent


@dataclass(frozen=True)
class Where:
    """The part of the fabric a finding is about, as fields: reporters read these, never `subject`."""

    node: str  # the host, switch or subnet manager
    part: str = ""  # its NIC, port, GPU or netdev ("": the node as a whole)
    peer: str = ""  # the other end of the part's cable, "leaf01:swp1" or "gpu01:mlx5_0" ("": none)

    def to_json(self) -> dict[str, str]:
        # Not dataclasses.asdict: its deepcopy was ~18 ms a host of --json at fleet scale (bench/scale.py).
        pairs = (("node", self.node), ("part", self.part), ("peer", self.peer))
        return {key: value for key, value in pairs if value}

    @classmethod
    def from_json(cls, data: dict[str, str]) -> Where:
        """The Where of `to_json`'s dict; KeyError or TypeError when it is not one."""
        return cls(_str(data["node"]), _str(data.get("part", "")), _str(data.get("peer", "")))


@dataclass(frozen=True)
class Measure:
    """A figure the check measured, and the one it was judged against."""

    value: float
    unit: str  # "Gb/s", "GB/s", "ms", ...
    expected: float | None = None  # the floor or target (None: judged against something else, e.g. peers)

    def to_json(self) -> dict[str, float | str]:
        data: dict[str, float | str] = {"value": self.value, "unit": self.unit}
        if self.expected is not None:
            data["expected"] = self.expected
        return data

    @classmethod
    def from_json(cls, data: dict[str, float | str]) -> Measure:
        """The Measure of `to_json`'s dict; KeyError, TypeError or ValueError when it is not one."""
        expected = data.get("expected")
        return cls(
            _number(data["value"]), _str(data["unit"]), None if expected is None else _number(expected)
        )


@dataclass(frozen=True)
class Finding:
    check: str  # dotted name, e.g. "topo.rail_affinity"
    status: Status
    subject: str  # what was judged, as a reader names it: "GPU3", "mlx5_2", "8589934592 B row"
    expected: str
    actual: str
    hint: str = ""  # what to do about it, and which role or setting fixes it
    where: Where | None = None  # the same subject as fields, where the check knows them
    measure: Measure | None = None  # the measured figure, where there is one

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "check": self.check,
            "status": self.status.value,
            "subject": self.subject,
            "expected": self.expected,
            "actual": self.actual,
            "hint": self.hint,
        }
        if self.where is not None:
            data["where"] = self.where.to_json()
        if self.measure is not None:
            data["measure"] = self.measure.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Finding:
        """The Finding of `to_json`'s dict (a node's judgement read back: fabcheck.gate.step_judge);
        KeyError, TypeError or ValueError when it is not one."""
        if not isinstance(data, dict):
            raise TypeError(f"a finding is a JSON object, not {type(data).__name__}")
        where, measure = data.get("where"), data.get("measure")
        return cls(
            _str(data["check"]),
            Status(data["status"]),
            _str(data["subject"]),
            _str(data["expected"]),
            _str(data["actual"]),
            _str(data["hint"]),
            None if where is None else Where.from_json(where),  # type: ignore[arg-type]
            None if measure is None else Measure.from_json(measure),  # type: ignore[arg-type]
        )


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not text")
    return value


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{value!r} is not a number")
    return value


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
