"""The gate's link stage, pure: both ends of every cable of the inventory's cabling map, judged against
each other from what the host and switch stages read (the settings, fabcheck.checks.link; the wire,
fabcheck.checks.link_health). A link finding is filed under its host end (its
subject names both ends); one whose first end is no planned host (a port whose LLDP neighbour the map
does not cable there) under that switch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from fabcheck.checks.host import Unreadable
from fabcheck.checks.link import NicEnd, check_links
from fabcheck.checks.link_health import WireEnd, check_link_health
from fabcheck.checks.model import Finding
from fabcheck.checks.switch import SwitchEvidence
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
        if not plan.fabric.links:
            return StageOutcome(self.name, ())
        findings = check_links(
            plan.fabric,
            nic_ends(context.hosts, plan),
            plan.desired.nics,
            {r.switch: r.evidence for r in context.switches},
            plan.desired.switches,
        )
        unread = {r.switch: r.evidence.unreachable for r in context.switches if r.evidence.unreachable}
        findings += check_link_health(
            plan.fabric,
            host_wire_ends(context.hosts, plan),
            switch_wire_ends([r.evidence for r in context.switches], plan),
            unread,
        )
        return StageOutcome(self.name, by_node(findings, plan))


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
