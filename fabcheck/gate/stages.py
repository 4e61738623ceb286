"""The gate's one kind of stage: host, switch, link, subnet manager, NCCL, perftest, incast, extra.

Every stage is declared once, in its own module, as a `Stage`: its name, the stages whose results it
reads, whether it runs when `--stages` is not given, which inventory nodes it judges, and `run`, which
turns a `StageContext` (the inventory, the plan with the desired state, the earlier stages' outcomes)
into a `StageOutcome`: findings per node, notes, and figures for the HTML report. The gate and the
reporters know nothing else about it. A stage's module is named in STAGE_MODULES and imported only when
the gate needs it.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from fabcheck.checks.model import Finding
from fabcheck.collect.ssh import TimeLimits
from fabcheck.errors import DeadlinePassed
from fabcheck.gate.reader import Reader, Tape
from fabcheck.intent.loader import HostEntry, Inventory
from fabcheck.report.model import Figure, NodeKind

if TYPE_CHECKING:
    from fabcheck.collect.backends import Collector
    from fabcheck.collect.switch import Connect
    from fabcheck.gate.host_stage import HostResult
    from fabcheck.gate.plan import GatePlan
    from fabcheck.gate.snapshot import Recording
    from fabcheck.gate.switch_stage import SwitchResult
    from fabcheck.intent.fabric import Fabric
    from fabcheck.switch.connect import SwitchLogin

# Modules that each define STAGE: a Stage. Order is run order.
STAGE_MODULES: tuple[str, ...] = (
    "fabcheck.gate.host_stage",
    "fabcheck.gate.switch_stage",
    "fabcheck.gate.link_stage",
    "fabcheck.gate.sm_stage",
    "fabcheck.gate.ib_stage",
    "fabcheck.gate.nccl_stage",
    "fabcheck.gate.perftest_stage",
    "fabcheck.gate.incast_stage",
    "fabcheck.gate.extra_stage",
)


@runtime_checkable
class NodeResult(Protocol):
    """What a stage found on one node. The host and switch stages' results carry what they read too
    (HostResult, SwitchResult); every reporter reads only these three fields."""

    @property
    def node(self) -> str: ...

    @property
    def kind(self) -> NodeKind: ...

    @property
    def findings(self) -> tuple[Finding, ...]: ...


@dataclass(frozen=True)
class NodeOutcome:
    """A node's findings of a stage that keeps no evidence. Findings of a node an earlier stage judged
    too are reported under that same node."""

    node: str
    kind: NodeKind
    findings: tuple[Finding, ...]


@dataclass(frozen=True)
class StageOutcome:
    stage: str
    nodes: tuple[NodeResult, ...]
    notes: tuple[str, ...] = ()
    figures: tuple[Figure, ...] = ()


@dataclass(frozen=True)
class Reads:
    """How the host and switch stages reach their nodes in this run. None: the live default (the native
    ssh round trip, netmiko, the inventory's switch login)."""

    host: Collector | None = None
    switch_connect: Connect | None = None
    switch_login: Callable[[HostEntry, Fabric], SwitchLogin] | None = None
    on_host_done: Callable[[HostResult], None] = lambda _result: None


@dataclass(frozen=True)
class ExtraChecks:
    """`--extra-checks DIR`: the user's pytest tests, run after the other stages (gate/extra_stage.py)."""

    directory: Path
    inventory: str  # the inventory path as given, for the plugin and testinfra's ansible backend
    timeout_s: float
    urls: Mapping[str, str]  # testinfra URL per host the source knows one for
    recording: Recording  # what the run's stages read: the extra tests judge it


@dataclass(frozen=True)
class StageContext:
    inventory: Inventory
    plan: GatePlan
    limits: TimeLimits
    concurrency: int
    deadline_s: float | None
    # Outcomes of the stages that ran before this one, by stage name.
    earlier: Mapping[str, StageOutcome] = field(default_factory=dict)
    # Where the stages' reads are kept (--save-snapshot, --extra-checks) or served from
    # (--from-snapshot); None: read live, kept by nobody.
    tape: Tape | None = None

    # When --deadline ends the run, on time.monotonic()'s clock (None: no deadline).
    ends_at: float | None = None
    reads: Reads = field(default_factory=Reads)
    extra_checks: ExtraChecks | None = None
    # Nodes read at once by a stage whose every node waits the counter window (host, switch): more than
    # `concurrency` when the run chose its own pool (fabric.knee_concurrency); None: `concurrency`.
    window_concurrency: int | None = None

    @property
    def hosts(self) -> tuple[HostResult, ...]:
        """The host stage's results, with the evidence each host showed (empty: it did not run)."""
        from fabcheck.gate.host_stage import HostResult

        outcome = self.earlier.get("host")
        return () if outcome is None else tuple(n for n in outcome.nodes if isinstance(n, HostResult))

    @property
    def switches(self) -> tuple[SwitchResult, ...]:
        """The switch stage's results, with the evidence each switch showed (empty: it did not run)."""
        from fabcheck.gate.switch_stage import SwitchResult

        outcome = self.earlier.get("switch")
        return () if outcome is None else tuple(n for n in outcome.nodes if isinstance(n, SwitchResult))

    @property
    def reader(self) -> Reader:
        """How a read stage reads its nodes in this run: the pool, the deadline, the snapshot."""
        return Reader(self.limits, self.concurrency, self.ends_at, self.deadline_s, self.tape)

    @property
    def window_reader(self) -> Reader:
        """The reader of a stage whose every node waits the plan's counter window inside its own read:
        each node's limits grow by the window (a --deadline shares what is left with it), and as many
        nodes are read at once as the window lets the controller (window_concurrency)."""
        limits = self.limits.with_window(self.plan.counter_window_s)
        pool = self.window_concurrency or self.concurrency
        return Reader(limits, pool, self.ends_at, self.deadline_s, self.tape)

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
    # Sends test traffic: also a command of its own (`fabcheck nccl`, cli/validate.py), and a snapshot
    # cannot replay it.
    traffic: bool

    def claims(self, entry: HostEntry, fabric: Fabric) -> bool:
        """Whether this stage judges the node (so it is not listed as "not checked")."""
        ...

    def run(self, context: StageContext) -> StageOutcome: ...


@cache
def all_stages() -> tuple[Stage, ...]:
    """The declared stages, in run order."""
    stages = tuple(importlib.import_module(module).STAGE for module in STAGE_MODULES)
    names = [stage.name for stage in stages]
    if len(set(names)) != len(names):
        raise ValueError(f"two stages share a name: {names}")
    return stages


def stages_named(names: Sequence[str]) -> tuple[Stage, ...]:
    wanted = set(names)
    return tuple(stage for stage in all_stages() if stage.name in wanted)


def stage_names() -> tuple[str, ...]:
    """Every stage `--stages` accepts, in run order."""
    return tuple(stage.name for stage in all_stages())


def default_stage_names() -> tuple[str, ...]:
    """The stages that run when --stages is not given."""
    return tuple(stage.name for stage in all_stages() if stage.by_default)
