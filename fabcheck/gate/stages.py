"""Stages that plug into the gate after host -> switch -> link: the subnet manager, NCCL, perftest, incast.

A plugged stage is declared once, in its own module, as a `Stage`: its name, the stages whose results it
reads, whether it runs when `--stages` is not given, which inventory nodes it judges, and `run`, which
turns a `StageContext` (the inventory, the plan, the earlier stages' results) into a `StageOutcome`:
findings per node, notes, and figures for the HTML report. The gate and the reporters know nothing
else about it. A stage's module is named in PLUGGED_STAGES and imported only when the gate needs it.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from fabcheck.checks.model import Finding
from fabcheck.collect.host import TimeLimits
from fabcheck.errors import DeadlinePassed
from fabcheck.intent.loader import HostEntry, Inventory
from fabcheck.report.model import Figure, NodeKind

if TYPE_CHECKING:
    from fabcheck import validate
    from fabcheck.gate.fabric import GatePlan
    from fabcheck.gate.switches import SwitchResult

# Modules that each define STAGE: a Stage. Order is run order (after host, switch and link).
PLUGGED_STAGES: tuple[str, ...] = (
    "fabcheck.gate.sm_stage",
    "fabcheck.gate.nccl_stage",
    "fabcheck.gate.perftest_stage",
    "fabcheck.gate.incast_stage",
)


@dataclass(frozen=True)
class NodeOutcome:
    """What a stage found on one node. Findings of a node the host or switch stage judged too are
    reported under that same node."""

    node: str
    kind: NodeKind
    findings: tuple[Finding, ...]


@dataclass(frozen=True)
class StageOutcome:
    stage: str
    nodes: tuple[NodeOutcome, ...]
    notes: tuple[str, ...] = ()
    figures: tuple[Figure, ...] = ()


C = TypeVar("C", bound=Callable[..., Any])  # a stage's collector, whatever its signature


@dataclass(frozen=True)
class StageContext:
    inventory: Inventory
    plan: GatePlan
    limits: TimeLimits
    concurrency: int
    deadline_s: float | None
    hosts: tuple[validate.HostResult, ...] = ()
    switches: tuple[SwitchResult, ...] = ()
    # Outcomes of the plugged stages that ran before this one, by stage name.
    earlier: Mapping[str, StageOutcome] = field(default_factory=dict)
    # What a stage that reads its nodes itself reads them through, by stage name, when the run's source
    # says (a snapshot replay, a recorder around the live reads); a stage not named reads live.
    collectors: Mapping[str, Callable[..., Any]] = field(default_factory=dict)

    # When --deadline ends the run, on time.monotonic()'s clock (None: no deadline).
    ends_at: float | None = None

    def collector_of(self, stage: str, live: C) -> C:
        """The collector `stage` uses in this run: the source's stand-in, else its own live one."""
        return self.collectors.get(stage, live)  # type: ignore[return-value]

    def seconds_left(self, before: str) -> float | None:
        """Seconds until the deadline (None without one); DeadlinePassed when none are left, naming
        what the stage was about to start."""
        if self.ends_at is None:
            return None
        left = self.ends_at - time.monotonic()
        if left <= 0:
            said = f"the run's deadline (--deadline {self.deadline_s:g} s) passed before {before}"
            raise DeadlinePassed(said)
        return left

    def limits_left(self, before: str) -> TimeLimits:
        """The run's time limits, cut so that what starts now ends by the deadline."""
        left = self.seconds_left(before)
        return self.limits if left is None else self.limits.within(left)


class Stage(Protocol):
    name: str
    requires: tuple[str, ...]  # stages that must run too, because this one reads their results
    by_default: bool  # runs when --stages is not given (a stage that loads the fabric does not)

    def claims(self, entry: HostEntry) -> bool:
        """Whether this stage judges the node (so it is not listed as "not checked")."""
        ...

    def run(self, context: StageContext) -> StageOutcome: ...


@cache
def plugged() -> tuple[Stage, ...]:
    """The declared stages, in run order."""
    stages = tuple(importlib.import_module(module).STAGE for module in PLUGGED_STAGES)
    names = [stage.name for stage in stages]
    if len(set(names)) != len(names):
        raise ValueError(f"two plugged stages share a name: {names}")
    return stages


def plugged_named(names: Sequence[str]) -> tuple[Stage, ...]:
    wanted = set(names)
    return tuple(stage for stage in plugged() if stage.name in wanted)
