"""The whole-fabric gate: plan the nodes by kind, then the stages host -> switch -> link, then the
plugged stages (fabcheck.gate.stages: subnet manager, NCCL, perftest, ...).

The host stage is one round trip per GPU host (fabcheck.validate); the switch stage one read-only netmiko
session per switch (fabcheck.gate.switches); the link stage is pure: it judges both ends of every cable of
the inventory's cabling map from what the first two stages read. A node the run does not judge yet
(nodes no selected stage claims) is named in a note, never counted as a pass.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabcheck import validate
from fabcheck.checks.host import Unreadable
from fabcheck.checks.link import NicEnd, check_links
from fabcheck.checks.model import Finding, errored
from fabcheck.checks.switch import SwitchEvidence, check_switch
from fabcheck.collect.host import TimeLimits
from fabcheck.desired.nic import DesiredNic, desired_host
from fabcheck.desired.switch import desired_switch
from fabcheck.errors import FabcheckError, UsageError
from fabcheck.gate.stages import NodeOutcome, Stage, StageContext, StageOutcome, plugged, plugged_named
from fabcheck.gate.switches import Connect, SwitchResult, collect_switches, switch_login
from fabcheck.intent.fabric import Fabric, fabric_of
from fabcheck.intent.loader import HostEntry, Inventory
from fabcheck.report.model import NodeKind
from fabcheck.switch.connect import SwitchLogin

BUILTIN_STAGES = ("host", "switch", "link")
# Kept for callers that only know the built-in stages; stage_names() also lists the plugged ones.
STAGES = BUILTIN_STAGES
# Nodes collected at once in each stage (ssh round trips to hosts, netmiko sessions to switches).
DEFAULT_CONCURRENCY = validate.WORKERS


@dataclass(frozen=True)
class GatePlan:
    """What one run judges: GPU hosts, switches and the cables between them; and what it leaves out."""

    hosts: tuple[HostEntry, ...]
    switches: tuple[str, ...]
    fabric: Fabric  # narrowed to the planned switches and the cables with both ends planned
    cabled: frozenset[tuple[str, str]]  # (host, NIC) of every cable in the inventory, planned or not
    not_checked: tuple[HostEntry, ...]  # nodes no selected stage judges
    stages: tuple[str, ...] = BUILTIN_STAGES  # the stages this run executes, in run order
    chosen: tuple[HostEntry, ...] = ()  # every node --limit selected (a plugged stage picks its own)


@dataclass(frozen=True)
class GateResult:
    hosts: tuple[validate.HostResult, ...]
    switches: tuple[SwitchResult, ...]
    links: tuple[Finding, ...]
    stages: tuple[StageOutcome, ...] = ()  # the plugged stages' outcomes, in run order


def stage_names() -> tuple[str, ...]:
    """Every stage `--stages` accepts, in run order."""
    return BUILTIN_STAGES + tuple(stage.name for stage in plugged())


def default_stages() -> tuple[str, ...]:
    """The stages that run when --stages is not given."""
    return BUILTIN_STAGES + tuple(stage.name for stage in plugged() if stage.by_default)


def plan_gate(
    inventory: Inventory, limit: str | None = None, stages: Sequence[str] | None = None
) -> GatePlan:
    """Nodes of the inventory narrowed by an Ansible --limit pattern, by kind. UsageError when nothing
    of what the stages judge is left, or a stage runs without one it reads."""
    stages = tuple(default_stages() if stages is None else stages)
    known = stage_names()
    unknown = [stage for stage in stages if stage not in known]
    if unknown:
        raise UsageError(f"unknown stage(s) {', '.join(unknown)}: expected some of {', '.join(known)}")
    extra = plugged_named(stages)
    for stage in extra:
        missing = [need for need in stage.requires if need not in stages]
        if missing:
            needs = ", ".join(missing)
            raise UsageError(f"stage {stage.name} reads the results of {needs}: add it to --stages")
    fabric = fabric_of(inventory)
    chosen = validate.limited_hosts(inventory, limit)
    names = {entry.name for entry in chosen}
    hosts = tuple(h for h in chosen if validate.GPU_HOSTS in h.groups) if "host" in stages else ()
    switches = tuple(s.name for s in fabric.switches if s.name in names) if "switch" in stages else ()
    judged = {h.name for h in hosts} | set(switches)
    claimed = {h.name for h in chosen for stage in extra if stage.claims(h)}
    rest = tuple(h for h in chosen if h.name not in judged | claimed and not _is_switch(h, fabric))
    links = (
        tuple(link for link in fabric.links if link.host in names and link.switch in names)
        if "link" in stages
        else ()
    )
    narrowed = Fabric(tuple(s for s in fabric.switches if s.name in switches), links)
    if not hosts and not switches and not claimed:
        scope = "" if limit is None else f" matching --limit {limit!r}"
        raise UsageError(
            f"no GPU host (group {validate.GPU_HOSTS}) or switch{scope} to check in {inventory.source}"
        )
    if "link" in stages and ("host" not in stages or "switch" not in stages):
        raise UsageError("stage link compares both ends: it needs stages host and switch too")
    cabled = frozenset((link.host, link.nic) for link in fabric.links)
    ordered = tuple(name for name in known if name in stages)
    return GatePlan(hosts, switches, narrowed, cabled, rest, ordered, tuple(chosen))


def _is_switch(entry: HostEntry, fabric: Fabric) -> bool:
    return any(s.name == entry.name for s in fabric.switches)


def run_gate(
    inventory: Inventory,
    plan: GatePlan,
    limits: TimeLimits,
    *,
    deadline_s: float | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    on_host_done: Callable[[validate.HostResult], None] = lambda _result: None,
    login_of: Callable[[HostEntry, Fabric], SwitchLogin] | None = None,
    collector: validate.Collector | None = None,
    connect: Connect | None = None,
    stage_collectors: Mapping[str, Callable[..., Any]] | None = None,
) -> GateResult:
    """Every stage of the plan. One node's failure to answer is an error for that node only.

    ``collector`` reads a host (default: the native ssh round trip; fabcheck.gate.backends for testinfra,
    fabcheck.gate.snapshot for a replay), ``connect`` opens a switch session (default: netmiko),
    ``stage_collectors`` stand in for a plugged stage's own reads, by stage name (StageContext.collectors:
    a snapshot's replay or recorder)."""
    ends_at = None if deadline_s is None else time.monotonic() + deadline_s
    hosts = validate.validate(
        plan.hosts,
        limits,
        collector=collector,
        deadline_s=deadline_s,
        workers=concurrency,
        on_done=on_host_done,
    )
    switches = _switch_stage(inventory, plan, concurrency, login_of or _inventory_login, connect)
    links = (
        check_links(
            plan.fabric,
            _nic_ends(hosts, plan),
            _desired_nics(plan),
            {r.switch: r.evidence for r in switches},
            {name: desired_switch(inventory.intent, plan.fabric, name) for name in plan.switches},
        )
        if plan.fabric.links
        else []
    )
    outcomes: dict[str, StageOutcome] = {}
    for stage in plugged_named(plan.stages):
        context = StageContext(
            inventory,
            plan,
            limits,
            concurrency,
            deadline_s,
            tuple(hosts),
            tuple(switches),
            dict(outcomes),
            stage_collectors or {},
            ends_at,
        )
        outcomes[stage.name] = _run_stage(stage, context)
    return GateResult(tuple(hosts), tuple(switches), tuple(links), tuple(outcomes.values()))


def _run_stage(stage: Stage, context: StageContext) -> StageOutcome:
    """A stage that cannot run is an error on every node it would have judged, never a silent pass."""
    try:
        return stage.run(context)
    except FabcheckError as err:
        finding = errored(
            f"{stage.name}.stage",
            stage.name,
            f"stage {stage.name} runs",
            f"it could not run: {err}",
            f"fix the cause, then `fabcheck validate --stages {stage.name}`",
        )
        nodes = [entry for entry in context.plan.chosen if stage.claims(entry)]
        kind = NodeKind.SM if stage.name == "sm" else NodeKind.HOST
        outcomes = [NodeOutcome(entry.name, kind, (finding,)) for entry in nodes]
        return StageOutcome(stage.name, tuple(outcomes or [NodeOutcome(stage.name, kind, (finding,))]))


def _inventory_login(entry: HostEntry, fabric: Fabric) -> SwitchLogin:
    return switch_login(fabric.switch(entry.name), entry.variables)


def _switch_stage(
    inventory: Inventory,
    plan: GatePlan,
    concurrency: int,
    login_of: Callable[[HostEntry, Fabric], SwitchLogin],
    connect: Connect | None = None,
) -> list[SwitchResult]:
    """Switches whose login resolves are read; one without a usable login is an error for it alone."""
    logins: dict[str, SwitchLogin] = {}
    refused: dict[str, str] = {}
    for name in plan.switches:
        try:
            logins[name] = login_of(inventory.host(name), plan.fabric)
        except FabcheckError as err:
            refused[name] = str(err)
    read = (
        collect_switches(
            plan.fabric,
            inventory.intent,
            logins,
            concurrency=concurrency,
            switches=list(logins),
            **({} if connect is None else {"connect": connect}),
        )
        if logins
        else []
    )
    by_name = {r.switch: r for r in read}
    return [
        by_name[name] if name in by_name else _refused(inventory, plan, name, refused[name])
        for name in plan.switches
    ]


def _refused(inventory: Inventory, plan: GatePlan, name: str, reason: str) -> SwitchResult:
    """A switch without a usable login is judged as an unreachable one: every check an error."""
    desired = desired_switch(inventory.intent, plan.fabric, name)
    why = f"no login ({reason}); give it credentials as the switch_qos role gets them"
    evidence = SwitchEvidence(name, desired.platform, {}, frozenset(), unreachable=why)
    return SwitchResult(name, evidence, (), tuple(check_switch(evidence, desired)))


def _nic_ends(hosts: Sequence[validate.HostResult], plan: GatePlan) -> dict[tuple[str, str], NicEnd]:
    """The host end of each RoCE NIC a host showed: its mlnx_qos record and netdev MTU, by (host, NIC)."""
    ends: dict[tuple[str, str], NicEnd] = {}
    planned = {(link.host, link.nic) for link in plan.fabric.links}
    for result in hosts:
        shown = result.evidence
        if shown is None or not isinstance(shown.links, tuple):
            continue
        for link in shown.links:
            netdev = shown.netdevs.get(link.netdev or "")
            if netdev is None:
                continue  # no RoCE netdev: an InfiniBand port or one the host gate did not read
            if (result.host, link.dev) in plan.cabled and (result.host, link.dev) not in planned:
                continue  # cabled to a switch this run leaves out (--limit)
            qos = netdev.qos if not isinstance(netdev.qos, Unreadable) else None
            mtu = netdev.mtu if isinstance(netdev.mtu, int) else None
            ends[(result.host, link.dev)] = NicEnd.of(result.host, link.dev, qos, mtu, link.netdev)
    return ends


def _desired_nics(plan: GatePlan) -> dict[tuple[str, str], DesiredNic]:
    """The desired state of every cabled NIC of the planned hosts (a NIC outside the rails gets the
    host's shared settings, as the role configures it)."""
    wanted: dict[tuple[str, str], DesiredNic] = {}
    by_name: Mapping[str, HostEntry] = {h.name: h for h in plan.hosts}
    for link in plan.fabric.links:
        entry = by_name.get(link.host)
        if entry is None:
            continue
        host = desired_host(entry.intent, entry.name)
        nic = next((n for n in host.nics if n.device == link.nic), None)
        wanted[(link.host, link.nic)] = nic or dataclasses.replace(host.template, device=link.nic)
    return wanted
