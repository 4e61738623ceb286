"""`fabcheck node-check`: the gate's host checks judged on the node itself, against its desired record.

No ssh and no inventory on the node: the record (fabcheck.desired.record) carries the host's desired
state and intent as the gate planned them (`host_record` below is the one place a record is made, from
`plan_gate`), the collection script runs here under the same bounds as a native round trip
(fabcheck.collect.backends.local), and the host stage's own `judge` turns it into findings. The fleet
checks (what must agree across hosts: GID index, versions, firmware, the NVLink fabric) compare hosts,
so they are not judged here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fabcheck.checks.model import Status
from fabcheck.collect.backends.local import collect_local
from fabcheck.collect.backends.slurm import NodeJudging
from fabcheck.collect.host import HostCollection
from fabcheck.collect.ssh import TimeLimits
from fabcheck.desired.record import HostRecord, StepRecords
from fabcheck.errors import UsageError
from fabcheck.gate.host_stage import HostResult, judge, located, with_nvlink
from fabcheck.gate.plan import GatePlan, plan_gate
from fabcheck.gate.step_judge import FLEET_READS, code_fingerprint, forward_list
from fabcheck.intent.loader import Inventory
from fabcheck.report.model import EXIT_FAIL, EXIT_NOT_CHECKED, EXIT_PASS

# The collection's limit on the node when the caller gives none: the gate's --timeout default (30 s)
# plus the record's counter window (TimeLimits.host_s).
DEFAULT_COMMAND_S = 30.0
LOCAL_CONNECT_S = 1.0

# (host, lossless priority, limits) -> the collection
LocalCollector = Callable[[str, int, TimeLimits], HostCollection]


def host_records(inventory: Inventory, counter_window_s: int) -> dict[str, HostRecord]:
    """Every GPU host's desired record from one plan of the whole inventory, exactly as the gate plans
    a run with this counter window (plan_gate)."""
    return records_of(plan_gate(inventory, stages=("host",), counter_window_s=counter_window_s))


def records_of(plan: GatePlan) -> dict[str, HostRecord]:
    """Every planned GPU host's record, as the host stage judges it (with its NVLink domain attached)."""
    desired = with_nvlink(plan.desired.hosts, plan.desired.nvlink)
    return {entry.name: HostRecord(desired[entry.name], entry.intent) for entry in plan.hosts}


def node_judging(plan: GatePlan, *, every_section: bool = False) -> NodeJudging:
    """What `validate --via slurm` hands its nodes so each judges itself (fabcheck.gate.step_judge): the
    plan's records, and the raw sections that still come back: the fleet checks' reads; every section
    when a selected stage that reads the host stage's results runs, or with `every_section` (--metrics
    and --extra-checks read the host evidence too)."""
    later = any("host" in stage.requires for stage in plan.selected() if stage.name != "host")
    forward = forward_list(None if every_section or later else FLEET_READS)
    return NodeJudging(StepRecords.of(records_of(plan)), forward, code_fingerprint())


def host_record(inventory: Inventory, host: str, counter_window_s: int) -> HostRecord:
    """One GPU host's record (host_records); UsageError when `host` is not a GPU host the gate judges."""
    records = host_records(inventory, counter_window_s)
    if host not in records:
        known = ", ".join(records) or "none"
        raise UsageError(f"{host} is not a GPU host of {inventory.source} (GPU hosts: {known})")
    return records[host]


def local_limits(record: HostRecord, command_s: float = DEFAULT_COMMAND_S) -> TimeLimits:
    """The bounds of one node-check collection: the gate's per-host limits with the record's window;
    nothing to connect to (LOCAL_CONNECT_S only enters the client's overall limit)."""
    return TimeLimits(LOCAL_CONNECT_S, command_s, counter_window_s=record.desired.counter_window_s)


def check_node(record: HostRecord, limits: TimeLimits, collector: LocalCollector | None = None) -> HostResult:
    """Collect on this node (bounded by `limits`) and judge the host checks against the record."""
    collect = collector or _collect
    collection = collect(record.host, record.desired.template.ecn_priority, limits)
    return located(judge(collection, record.intent, record.desired), {})


def _collect(host: str, priority: int, limits: TimeLimits) -> HostCollection:
    return collect_local(host, priority, limits)


@dataclass(frozen=True)
class NodeVerdict:
    """node-check's answer: the result, and the exit code its verdict maps to (0 pass, 1 fail, 3 not
    judged: an error is never a pass)."""

    result: HostResult

    @property
    def exit_code(self) -> int:
        return {Status.PASS: EXIT_PASS, Status.FAIL: EXIT_FAIL}.get(self.result.verdict, EXIT_NOT_CHECKED)
