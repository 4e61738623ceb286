"""The one shape every check of the gate is declared in, whatever stage judges it.

A `Check` says what one finding judges (scope), what the check reads (host probes, switch records,
stage records), where it applies (fabric kinds, congestion-control modes, a predicate that names why it
does not), the role and tag that fix a failure, its typed inputs (thresholds with documented defaults,
never module constants) and its judge. The catalog (fabcheck.gate.catalog) reads these declarations
and nothing else: the docs' tables, `--checks`/`--skip` and the pytest plugin derive from them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from fabcheck.intent.model import FabricIntent

Stage = Literal["host", "fleet", "switch", "link", "sm", "ib", "nccl", "perftest", "incast"]
ALL_KINDS = ("roce", "ib")
ROCE = ("roce",)


@dataclass(frozen=True)
class Inputs:
    """A check's typed inputs: a frozen dataclass per check that has any, each field with its default
    and a comment saying why that default. A check without inputs takes this empty one."""


NO_INPUTS = Inputs()

JudgeT = TypeVar("JudgeT")


def _always(_desired: Any) -> str | None:
    return None


@dataclass(frozen=True)
class Check(Generic[JudgeT]):
    """One check, declared once: everything the catalog, the stages and the docs read about it."""

    id: str  # dotted: "<stage or family>.<what>", the Finding.check of every finding it makes
    stage: Stage  # the stage whose run judges it (fleet: the host stage, once every host is read)
    scope: str  # what one finding judges: "nic", "port", "switch port", "SM node", "cable", ...
    reads: tuple[str, ...]  # host probe names, switch record types, or the stage records it judges
    summary: str  # the expected result, one line, as the docs' check table shows it
    role: str | None  # the role that sets what it judges (None: no fabcheck role does)
    tag: str | None  # the role's tag that scopes a run to it (None: the whole role)
    # The judge: evidence -> findings, with the signature its stage calls. None: the stage's own run
    # (nccl, perftest, incast traffic) makes the findings, and only declares the id here.
    judge: JudgeT | None = None
    inputs: Inputs = NO_INPUTS  # the judge's thresholds; declared here so the docs and a reader see them
    kinds: tuple[str, ...] = ALL_KINDS  # fabric_intent.kind values it applies to
    modes: tuple[str, ...] | None = None  # congestion_control values it applies to (None: all)
    # Where it applies beyond kinds and modes: given the stage's desired record, None or why it does not.
    applies: Callable[[Any], str | None] = _always

    def not_applicable(self, intent: FabricIntent, desired: Any) -> str | None:
        """Why this check does not apply to the node's intent and desired record, or None: the kind,
        then the mode, then the predicate (which reads the desired record)."""
        if intent.kind not in self.kinds:
            return other_kind(self.kinds, intent.kind)
        if self.modes is not None and intent.congestion_control not in self.modes:
            return (
                f"fabric_intent.congestion_control is {intent.congestion_control}: "
                f"judged with {' or '.join(self.modes)} only"
            )
        return self.applies(desired)

    def fix(self, command: str, where: str = "host") -> str:
        """The fix of a failure: the role (and tag) fleet-wide, the one command on this device."""
        if self.role is None:
            return f"no fabcheck role sets it; on this {where}: `{command}`"
        tag = f" (tag {self.tag})" if self.tag else ""
        return f"role {self.role}{tag} sets it fleet-wide; on this {where}: `{command}`"


def other_kind(kinds: tuple[str, ...], kind: str) -> str:
    only = "RoCE" if kinds == ROCE else "/".join(kinds)
    return f"{only}-only check; fabric_intent.kind is {kind}"


def ids(checks: tuple[Check[Any], ...]) -> tuple[str, ...]:
    return tuple(check.id for check in checks)
