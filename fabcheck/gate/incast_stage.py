"""The incast stage of the gate: losslessness under load. Per leaf, N sender NICs of other hosts write
into one victim NIC at once (ib_write_bw -D, each sender a client of its own server on the victim);
`ethtool -S` of every NIC involved and the leaf's queue, PFC, ECN and watchdog counters are read before
and after, and judged with lossless semantics (fabcheck.incast.judge).

Not run by default (it loads the fabric): `fabcheck validate --stages host,incast`. It reads the host
stage's results (each NIC's netdev) and the switches itself, so it needs no switch stage; with no switch
in the inventory (or none in --limit) it runs one incast per rail and judges the host counters only.
Inventory variables: incast_fan_in (senders per incast, default 8), incast_duration_s (default 2)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from fabcheck.checks.model import Finding, errored, skipped
from fabcheck.collect.switch import Connect, switch_login
from fabcheck.errors import FabcheckError
from fabcheck.gate.host_stage import HostResult
from fabcheck.gate.stages import NodeOutcome, StageContext, StageOutcome
from fabcheck.incast import capture
from fabcheck.incast.figure import CounterTable
from fabcheck.incast.judge import STAGE_CHECK, Captured, Incasted, judge_incasts
from fabcheck.incast.plan import (
    DEFAULT_DURATION_S,
    DEFAULT_FAN_IN,
    DURATION_VARIABLE,
    FAN_IN_VARIABLE,
    MAX_DURATION_S,
    MAX_FAN_IN,
    Incast,
    IncastPlan,
    bounded_int,
    plan_by_leaf,
    plan_by_rail,
)
from fabcheck.intent.fabric import GPU_HOSTS, Fabric
from fabcheck.intent.loader import HostEntry
from fabcheck.launch.fanout import each
from fabcheck.pairs.localise import Measure
from fabcheck.pairs.rounds import FAST, Endpoint, Pair
from fabcheck.pairs.session import Session, open_session, within_deadline
from fabcheck.pairs.verdict import Measurement
from fabcheck.report.model import NodeKind
from fabcheck.switch.connect import SwitchLogin
from fabcheck.switch.connect import connect as netmiko_connect


@dataclass(frozen=True)
class IncastStage:
    name: str = "incast"
    requires: tuple[str, ...] = ("host",)
    by_default: bool = False
    traffic: bool = True
    connect: Connect = netmiko_connect  # a test gives a fake switch session here

    def claims(self, entry: HostEntry, fabric: Fabric) -> bool:
        return GPU_HOSTS in entry.groups

    def run(self, context: StageContext) -> StageOutcome:
        roce = [e for e in context.plan.hosts if e.intent.kind == "roce"]
        findings: dict[str, list[Finding]] = {e.name: [] for e in context.plan.hosts}
        for entry in context.plan.hosts:
            if entry.intent.kind != "roce":
                why = f"fabric_intent.kind is {entry.intent.kind}: the incast reads RoCE NIC counters"
                findings[entry.name].append(skipped(STAGE_CHECK, entry.name, why))
        if not roce:
            return _outcome(self.name, findings, {}, ("incast: no RoCE host to load",), ())
        fan_in = bounded_int(roce[0].variables, FAN_IN_VARIABLE, DEFAULT_FAN_IN, MAX_FAN_IN)
        duration = bounded_int(roce[0].variables, DURATION_VARIABLE, DEFAULT_DURATION_S, MAX_DURATION_S)
        limits = context.limits_left("the incast's host setup")
        session = open_session(roce, limits, context.concurrency, FAST, context.plan.desired.perftest)
        for host, reason in session.left_out.items():
            findings[host].append(_stage_error(host, reason))
        fabric, leaves = _leaves(context)
        plan = _plan(session, fabric, leaves, fan_in)
        for host in session.runner.setup:
            if not any(end.host == host for incast in plan.incasts for end in incast.ends):
                findings[host].append(_stage_error(host, "in no incast: no other host shares a leaf or rail"))
        incasted = _incasted(context, fabric, plan.incasts)
        captured = _run(session, incasted, fabric, context, duration, self.connect)
        verdicts = judge_incasts(incasted, captured)
        for host, found in verdicts.hosts.items():
            findings[host] += found
        notes = _notes(plan, leaves, duration, session)
        figures = (CounterTable(tuple(verdicts.rows)),) if verdicts.rows else ()
        return _outcome(self.name, findings, verdicts.switches, notes, figures)


def _stage_error(host: str, reason: str) -> Finding:
    return errored(
        STAGE_CHECK, host, "the host takes part in an incast", reason, "fix the cause and rerun the stage"
    )


def _leaves(context: StageContext) -> tuple[Fabric, tuple[str, ...]]:
    """The inventory's fabric and the switches --limit leaves in (the incast reads them itself)."""
    return context.plan.whole, tuple(context.plan.desired.leaves)


def _plan(session: Session, fabric: Fabric, leaves: Sequence[str], fan_in: int) -> IncastPlan:
    ready = list(session.runner.setup)  # hosts that answered the setup probe, inventory order
    if leaves:
        links = [link for link in fabric.links if link.switch in leaves]
        return plan_by_leaf(ready, links, fan_in)
    return plan_by_rail({host: session.desired[host].nics for host in ready}, fan_in)


def _incasted(context: StageContext, fabric: Fabric, incasts: Sequence[Incast]) -> list[Incasted]:
    netdevs = _netdevs(context.hosts)
    incasted = []
    for incast in incasts:
        nics = {end: context.plan.desired.nic(end.host, end.nic) for end in incast.ends}
        shown = {end: netdevs.get(end) for end in incast.ends}
        switch = context.plan.desired.leaves[incast.switch] if incast.switch else None
        incasted.append(Incasted(incast, nics, shown, switch))
    return incasted


def _netdevs(hosts: Sequence[HostResult]) -> dict[Endpoint, str]:
    """Each RDMA NIC's netdev as the host stage's `rdma link` showed it."""
    found: dict[Endpoint, str] = {}
    for result in hosts:
        links = result.evidence.links if result.evidence is not None else ()
        for link in links if isinstance(links, tuple) else ():
            if link.netdev:
                found.setdefault(Endpoint(result.host, link.dev), link.netdev)
    return found


def _run(
    session: Session,
    incasted: Sequence[Incasted],
    fabric: Fabric,
    context: StageContext,
    duration: int,
    connect: Connect,
) -> Captured:
    """Capture, load, capture: switches and hosts before, the incasts, hosts and switches after."""
    netdevs: dict[str, list[str]] = {}
    ports: dict[str, list[str]] = {}
    for one in incasted:
        for end in one.incast.ends:
            if one.netdevs.get(end):
                netdevs.setdefault(end.host, []).append(one.netdevs[end] or "")
            port = one.incast.port_of(end)
            if one.incast.switch and port:
                ports.setdefault(one.incast.switch, []).append(port)
    read_switches = _switch_reader(context, fabric, ports, connect)
    workers = max(1, context.concurrency)

    def read_host(host: str) -> capture.HostCapture:
        return capture.capture_host(session.runner, host, netdevs[host])

    def read_hosts(when: str) -> dict[str, capture.HostCapture]:
        session.runner.limits = context.limits_left(f"the host counters {when} the load")
        return each(list(netdevs), read_host, workers)

    switches_before = each(list(ports), read_switches, workers)
    hosts_before = read_hosts("before")
    measure = within_deadline(session, context.limits_left, "the incast")
    measurements = _load(session, measure, [one.incast for one in incasted], duration, workers)
    hosts_after = read_hosts("after")
    switches_after = each(list(ports), read_switches, workers)
    return Captured(hosts_before, hosts_after, switches_before, switches_after, measurements)


def _switch_reader(
    context: StageContext, fabric: Fabric, ports: Mapping[str, Sequence[str]], connect: Connect
) -> Callable[[str], capture.SwitchCapture]:
    # Resolved once, here, one after the other: Ansible's templating (vault, lookups) is not safe to
    # run from the capture threads (2 of 3 leaves read "cannot resolve the value" there).
    logins: dict[str, SwitchLogin | str] = {}
    for name in ports:
        try:
            logins[name] = switch_login(fabric.switch(name), context.inventory.host(name).variables)
        except FabcheckError as err:
            logins[name] = f"no login ({err})"

    def read(name: str) -> capture.SwitchCapture:
        login = logins[name]
        if isinstance(login, str):
            return login
        return capture.capture_switch(login, fabric.switch(name).platform, ports[name], connect)

    return read


def _load(
    session: Session, measure: Measure, incasts: Sequence[Incast], duration: int, width: int
) -> dict[Pair, Measurement]:
    """Every incast's senders at once; incasts side by side as far as `width` pairs allow. `measure`
    runs a wave on the session's runner (within the run's deadline)."""
    session.runner.duration_s = duration
    measured: dict[Pair, Measurement] = {}
    for number, wave in enumerate(waves(incasts, width), start=1):
        pairs = tuple(pair for incast in wave for pair in incast.pairs)
        session.runner.concurrency = len(pairs)  # one wave: every sender of the incast writes at once
        for measurement in measure(pairs, number):
            measured[measurement.pair] = measurement
    return measured


def waves(incasts: Sequence[Incast], width: int) -> list[list[Incast]]:
    """Incasts packed in order into waves of at most `width` pairs (an incast is never split)."""
    packed: list[list[Incast]] = []
    size = 0
    for incast in incasts:
        if not packed or size + len(incast.pairs) > width:
            packed.append([])
            size = 0
        packed[-1].append(incast)
        size += len(incast.pairs)
    return packed


def _notes(plan: IncastPlan, leaves: Sequence[str], duration: int, session: Session) -> tuple[str, ...]:
    shown = "; ".join(f"{i.where}: {len(i.senders)}->1 into {i.victim}" for i in plan.incasts)
    said = [f"incast: {len(plan.incasts)} incasts of ib_write_bw -D {duration} ({shown or 'none'})"]
    if not leaves:
        said.append("incast: no switch in the inventory or --limit: one incast per rail, host counters only")
    said += [f"incast left out {why}" for why in plan.left_out]
    if session.unpinned:
        said.append(f"incast ran unpinned (no numactl) on {', '.join(session.unpinned)}")
    return tuple(said)


def _outcome(
    stage: str,
    hosts: Mapping[str, list[Finding]],
    switches: Mapping[str, list[Finding]],
    notes: tuple[str, ...],
    figures: tuple[CounterTable, ...],
) -> StageOutcome:
    nodes = [NodeOutcome(host, NodeKind.HOST, tuple(found)) for host, found in hosts.items()]
    nodes += [NodeOutcome(switch, NodeKind.SWITCH, tuple(found)) for switch, found in switches.items()]
    return StageOutcome(stage, tuple(nodes), notes, figures)


STAGE = IncastStage()
