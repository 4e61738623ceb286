"""The gate's link stage, pure: both ends of every cable of the inventory's cabling map, judged against
each other from what the host and switch stages read (the settings, fabcheck.checks.link; the wire,
fabcheck.checks.link_health), and every switch-to-switch cable from both switches' LLDP
(fabcheck.checks.uplinks). A link finding is filed under its host end (its subject names both ends); one
whose first end is no planned host (a port whose LLDP neighbour the map does not cable there) under that
switch; a switch cable's under its lower-tier end; the run's summary (link.as_planned,
fabcheck.checks.as_planned) under the first top-tier switch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from fabcheck.checks.as_planned import host_tally, link_summary, switch_tally, top_switch
from fabcheck.checks.host import Unreadable
from fabcheck.checks.link import NicEnd, check_links, host_hearing
from fabcheck.checks.link_health import WireEnd, check_link_health
from fabcheck.checks.model import Finding
from fabcheck.checks.switch import SwitchEvidence
from fabcheck.checks.uplinks import check_switch_links, extra_switch_cables
from fabcheck.gate.host_stage import HostResult
from fabcheck.gate.plan import GatePlan
from fabcheck.gate.stages import NodeOutcome, StageContext, StageOutcome
from fabcheck.intent.fabric import Fabric
from fabcheck.intent.loader import HostEntry
from fabcheck.parsers.wire_records import LinkDelta, ModuleOptics
from fabcheck.report.model import NodeKind

RecordT = TypeVar("RecordT")


@dataclass(frozen=True)
class LinkStage:
    name: str = "link"
    requires: tuple[str, ...] = ("host", "switch")
    by_default: bool = True
    traffic: bool = False

    def claims(self, entry: HostEntry, fabric: Fabric) -> bool:
        return False  # it judges cables, whose ends the host and switch stages claim

    def run(self, context: StageContext) -> StageOutcome:
        plan = context.plan
        fabric = plan.fabric
        if not fabric.links and not fabric.switch_links:
            return StageOutcome(self.name, ())
        evidence = {r.switch: r.evidence for r in context.switches}
        nics = nic_ends(context.hosts, plan)
        findings: list[Finding] = []
        if fabric.links:
            findings += check_links(fabric, nics, plan.desired.nics, evidence, plan.desired.switches)
            unread = {r.switch: r.evidence.unreachable for r in context.switches if r.evidence.unreachable}
            findings += check_link_health(
                fabric,
                host_wire_ends(context.hosts, plan),
                switch_wire_ends([r.evidence for r in context.switches], plan),
                unread,
            )
        judged = check_switch_links(fabric, evidence)
        extras = extra_switch_cables(fabric, evidence, judged) if fabric.switch_links else []
        findings += [j.finding for j in judged] + extras
        nodes = list(by_node(findings, plan))
        hosts = host_tally(fabric, findings, host_hearing(fabric, nics, evidence))
        summary = link_summary(hosts, switch_tally(judged, extras))
        return StageOutcome(self.name, filed_at(nodes, top_switch(fabric), summary))


def by_node(findings: Sequence[Finding], plan: GatePlan) -> tuple[NodeOutcome, ...]:
    hosts = {entry.name for entry in plan.hosts}
    grouped: dict[str, list[Finding]] = {}
    for finding in findings:
        grouped.setdefault(finding.subject.split(":", 1)[0], []).append(finding)
    return tuple(
        NodeOutcome(
            node if node in hosts or node in plan.switches else found[0].subject,
            NodeKind.HOST if node in hosts else NodeKind.SWITCH,
            tuple(found),
        )
        for node, found in grouped.items()
    )


def filed_at(nodes: list[NodeOutcome], node: str | None, finding: Finding) -> tuple[NodeOutcome, ...]:
    """The run's summary finding appended to `node`'s outcome (a switch; its own outcome if it has none)."""
    if node is None:
        return tuple(nodes)
    for i, outcome in enumerate(nodes):
        if outcome.node == node:
            nodes[i] = NodeOutcome(node, outcome.kind, (*outcome.findings, finding))
            return tuple(nodes)
    return (*nodes, NodeOutcome(node, NodeKind.SWITCH, (finding,)))


def nic_ends(hosts: Sequence[HostResult], plan: GatePlan) -> dict[tuple[str, str], NicEnd]:
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


def host_wire_ends(hosts: Sequence[HostResult], plan: GatePlan) -> dict[tuple[str, str], WireEnd]:
    """The host end of each cable's wire: its RoCE netdev's counters and module, by (host, NIC)."""
    ends: dict[tuple[str, str], WireEnd] = {}
    for result in hosts:
        shown, desired = result.evidence, plan.desired.hosts.get(result.host)
        if shown is None or desired is None or not isinstance(shown.links, tuple):
            continue
        for link in shown.links:
            if not link.netdev or link.netdev not in shown.netdevs:
                continue  # no RoCE netdev: nothing of the wire to read
            wire = shown.wire(link.netdev)
            optics = None if wire.no_module else wire.optics
            name = f"{result.host}:{link.dev}"
            ends[(result.host, link.dev)] = WireEnd(name, wire.counters, optics, desired.link_health)
    return ends


def switch_wire_ends(switches: Sequence[SwitchEvidence], plan: GatePlan) -> dict[tuple[str, str], WireEnd]:
    """The switch end of each cable's wire, by (switch, port); a switch that was not read has none."""
    ends: dict[tuple[str, str], WireEnd] = {}
    for evidence in switches:
        desired = plan.desired.switches.get(evidence.switch)
        if evidence.unreachable is not None or desired is None:
            continue
        for link in plan.fabric.links_of_switch(evidence.switch):
            counters = _shown(evidence, LinkDelta, link.port)
            optics = _shown(evidence, ModuleOptics, link.port)
            name = link.switch_end
            ends[(link.switch, link.port)] = WireEnd(name, counters, optics, desired.link_health)
    return ends


def _shown(evidence: SwitchEvidence, kind: type[RecordT], port: str) -> RecordT | Unreadable | None:
    """The port's record; None where the platform's views give none at all; Unreadable where they
    should have and did not."""
    if kind not in evidence.provided:
        return None
    record, _own = evidence.get(kind, port)
    if record is not None:
        return record
    reason, _switch_wide = evidence.why_missing((kind,), port)
    return Unreadable(f"{evidence.switch} ({evidence.platform}): the {kind.__name__} view of {port}", reason)


STAGE = LinkStage()
