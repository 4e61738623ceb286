"""The whole-fabric gate: the plan's stages in run order (fabcheck.gate.stages), each handed the plan,
its desired state and the outcomes before it; the result is the tuple of their outcomes.

A stage that cannot run is an error on every node it would have judged, never a silent pass; a node no
selected stage claims is named in a note, never counted as a pass.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from fabcheck.checks.model import errored
from fabcheck.collect.ssh import TimeLimits
from fabcheck.errors import FabcheckError
from fabcheck.gate.host_stage import HostResult
from fabcheck.gate.plan import GatePlan, plan_gate
from fabcheck.gate.reader import RunEnded, Tape
from fabcheck.gate.stages import (
    ExtraChecks,
    NodeOutcome,
    NodeResult,
    Reads,
    Stage,
    StageContext,
    StageOutcome,
)
from fabcheck.gate.switch_stage import SwitchResult
from fabcheck.intent.loader import Inventory
from fabcheck.report.links import details_of
from fabcheck.report.model import Affinity, NodeKind, Run, Subject

# The connection budget (--concurrency default): where the controller's CPU saturates. A host in flight
# costs the controller CONTROLLER_CPU_PER_HOST_S (its ssh client with curve25519, fabcheck's parse and
# judge) over a round trip of ROUND_TRIP_S; more hosts in flight than cores x ROUND_TRIP_S /
# CONTROLLER_CPU_PER_HOST_S only queue for the CPU. Measured (bench/scale.py, 2026-12-03): 41 ms of
# controller CPU a host beyond the start at 256 lab hosts; a lone round trip 0.31 s (docs/performance.md,
# Benchmarks). On the 2-core lab the sweep is flat from 8 to 64 (its hosts' CPU bounds it): 15 here.
CONTROLLER_CPU_PER_HOST_S = 0.04
ROUND_TRIP_S = 0.3
CONCURRENCY_RANGE = (8, 256)  # at least 8 even on one core; at most what sshd-side limits tolerate


def knee_concurrency(cores: int | None = None, window_s: float = 0.0) -> int:
    """Hosts collected at once by default: the controller's cores x round trip / CPU per host. A round
    trip that waits a counter window of `window_s` costs the controller no more CPU, only time: its
    nodes are read that much more at once (5 s on 2 cores: every node of 256), so the window is waited
    about once per run, not once per pool's worth of nodes."""
    if cores is None:
        usable = getattr(os, "sched_getaffinity", None)  # the cores this process may run on
        cores = len(usable(0)) if usable is not None else os.cpu_count() or 1
    knee = round(cores * (ROUND_TRIP_S + window_s) / CONTROLLER_CPU_PER_HOST_S)
    return max(CONCURRENCY_RANGE[0], min(CONCURRENCY_RANGE[1], knee))


DEFAULT_CONCURRENCY = knee_concurrency()
# The gate in two calls: plan_gate (what one run judges), then run_gate.
__all__ = ["DEFAULT_CONCURRENCY", "GatePlan", "GateResult", "gate_report", "plan_gate", "run_gate"]


@dataclass(frozen=True)
class GateResult:
    """The outcome of every stage that ran, in run order."""

    stages: tuple[StageOutcome, ...]

    def outcome(self, stage: str) -> StageOutcome | None:
        return next((outcome for outcome in self.stages if outcome.stage == stage), None)

    @property
    def hosts(self) -> tuple[HostResult, ...]:
        """The host stage's results (empty: it did not run)."""
        return _nodes(self.outcome("host"), HostResult)

    @property
    def switches(self) -> tuple[SwitchResult, ...]:
        """The switch stage's results (empty: it did not run)."""
        return _nodes(self.outcome("switch"), SwitchResult)

    def nodes(self) -> Iterable[NodeResult]:
        return (node for outcome in self.stages for node in outcome.nodes)


def _nodes(outcome: StageOutcome | None, kind: type[Any]) -> tuple[Any, ...]:
    return () if outcome is None else tuple(node for node in outcome.nodes if isinstance(node, kind))


def run_gate(
    inventory: Inventory,
    plan: GatePlan,
    limits: TimeLimits,
    *,
    deadline_s: float | None = None,
    concurrency: int | None = None,
    reads: Reads | None = None,
    tape: Tape | None = None,
    extra_checks: ExtraChecks | None = None,
) -> GateResult:
    """Every stage of the plan, each reading its nodes through the run's one reader (gate/reader.py:
    the pool of `concurrency`, the deadline, one node's failure an error for that node only).

    Without a `concurrency` the pool is the knee (DEFAULT_CONCURRENCY), and the host and switch stages,
    whose every node waits the plan's counter window, read the knee with that window at once
    (knee_concurrency); a `concurrency` given bounds every stage alike.

    ``reads`` says how hosts and switches are reached (default: the native ssh round trip and netmiko;
    a backend of fabcheck.collect.backends); ``tape`` keeps every stage's reads (snapshot.Recording,
    for --save-snapshot and --extra-checks) or serves them from a snapshot (snapshot.Replay)."""
    ends_at = None if deadline_s is None else time.monotonic() + deadline_s
    outcomes: dict[str, StageOutcome] = {}
    waiting = knee_concurrency(window_s=plan.counter_window_s) if concurrency is None else concurrency
    for stage in plan.selected():
        context = StageContext(
            inventory,
            plan,
            limits,
            DEFAULT_CONCURRENCY if concurrency is None else concurrency,
            deadline_s,
            dict(outcomes),
            tape=tape,
            ends_at=ends_at,
            reads=reads or Reads(),
            extra_checks=extra_checks,
            window_concurrency=waiting,
        )
        outcomes[stage.name] = _run_stage(stage, context)
    return GateResult(tuple(outcomes.values()))


def _run_stage(stage: Stage, context: StageContext) -> StageOutcome:
    """A stage that cannot run is an error on every node it would have judged, never a silent pass."""
    try:
        return stage.run(context)
    except RunEnded:
        raise  # a snapshot the replay cannot read, a batch backend that cannot start: exit 2
    except FabcheckError as err:
        finding = errored(
            f"{stage.name}.stage",
            stage.name,
            f"stage {stage.name} runs",
            f"it could not run: {err}",
            f"fix the cause, then `fabcheck validate --stages {stage.name}`",
        )
        fabric = context.plan.fabric
        nodes = [entry for entry in context.plan.chosen if stage.claims(entry, fabric)]
        kind = NodeKind.SM if stage.name == "sm" else NodeKind.HOST
        outcomes = [NodeOutcome(entry.name, kind, (finding,)) for entry in nodes]
        return StageOutcome(stage.name, tuple(outcomes or [NodeOutcome(stage.name, kind, (finding,))]))


def gate_report(
    result: GateResult,
    affinities: Mapping[str, Affinity] | None = None,
    notes: Iterable[str] = (),
) -> Run:
    """The result model the reporters read: one subject per node, in the order the stages first named
    it (hosts, then switches, ...); a later stage's findings of a node join that node's subject."""
    affinities = affinities or {}
    subjects: list[Subject] = []
    index: dict[str, int] = {}
    for node in result.nodes():
        if node.node in index:
            known = subjects[index[node.node]]
            subjects[index[node.node]] = replace(known, findings=(*known.findings, *node.findings))
        else:
            index[node.node] = len(subjects)
            picture = affinities.get(node.node)
            subjects.append(Subject(node.node, node.kind, tuple(node.findings), affinity=picture))
    notes = (*notes, *(note for outcome in result.stages for note in outcome.notes))
    figures = tuple(figure for outcome in result.stages for figure in outcome.figures)
    links = details_of(finding for node in result.nodes() for finding in node.findings)
    return Run("validate", tuple(subjects), links, tuple(notes), figures=figures)
