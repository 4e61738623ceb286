"""Lossless verdict of the incasts: what the captures before and after show -> findings. Pure.

Per NIC (victim and senders) the NIC counter semantics of fabcheck.checks.counters, under `incast.` ids:
traffic on the lossless priority, no drop, nothing out of sequence, DCQCN engaged (ECN marks or CNPs)
when the intent runs it, pause frames on the lossless priority only. Per incast: PFC engaged (pause frames
somewhere on the path, or DCQCN holding the queue below the PFC threshold instead). Per leaf port of the
incast: no drop on the lossless queue, ECN marks on the victim's egress queue when the queue marks, and
no PFC watchdog storm. A capture or counter that could not be read is an error, never a pass; a counter
the platform's probes do not read is a skip saying so.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fabcheck.checks.counters import ECN_COUNTERS, check_counters, counter_deltas, lossless_want
from fabcheck.checks.incast import (
    COUNTERS,
    ECN_ENGAGED,
    HOST_DROPS,
    LOSSLESS_TRAFFIC,
    OUT_OF_SEQUENCE,
    PAUSE,
    PFC_ENGAGED,
    SWITCH_DROPS,
    SWITCH_ECN,
    TRAFFIC,
    WATCHDOG,
)
from fabcheck.checks.model import Finding, Status, errored, failed, passed, skipped
from fabcheck.checks.roles import HOST_QOS_ROLE, SWITCH_QOS_ROLE
from fabcheck.checks.switch import fix_hint
from fabcheck.collect.probes import Collected
from fabcheck.desired.nic import DesiredNic
from fabcheck.desired.switch import DesiredSwitch
from fabcheck.incast.capture import HostCapture, PortPauseEcn, SwitchCapture, reads
from fabcheck.incast.plan import Incast
from fabcheck.pairs.rounds import Endpoint, Pair
from fabcheck.pairs.verdict import Measurement
from fabcheck.parsers.switch_records import QueueDrops, WatchdogStatus

STAGE_CHECK = "incast.stage"
# The NIC counter checks of fabcheck.checks.counters, as the incast names them.
FROM_COUNTERS = {
    "counters.readable": COUNTERS,
    "counters.lossless_traffic": LOSSLESS_TRAFFIC,
    "counters.lossless_drops": HOST_DROPS,
    "counters.out_of_sequence": OUT_OF_SEQUENCE,
    "counters.congestion": ECN_ENGAGED,
    "counters.pause": PAUSE,
}
# The roce_host / switch_qos tag that sets what a failing NIC check depends on.
FIXING_TAG = {HOST_DROPS: "pfc", OUT_OF_SEQUENCE: "pfc", ECN_ENGAGED: "ecn", PAUSE: "pfc"}
# The per-NIC counter deltas the report's table shows, in its column order.
SHOWN = ("prio_packets", "pause", "np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "drops")


@dataclass(frozen=True)
class Captured:
    """Everything read around the incasts."""

    hosts_before: Mapping[str, HostCapture]
    hosts_after: Mapping[str, HostCapture]
    switches_before: Mapping[str, SwitchCapture] = field(default_factory=dict)
    switches_after: Mapping[str, SwitchCapture] = field(default_factory=dict)
    measurements: Mapping[Pair, Measurement] = field(default_factory=dict)


@dataclass(frozen=True)
class CounterRow:
    """One NIC's line of the report's table: what moved on it during its incast."""

    incast: str
    role: str
    end: Endpoint
    netdev: str
    moved: tuple[int, ...]  # SHOWN, in order


@dataclass
class Verdicts:
    hosts: dict[str, list[Finding]] = field(default_factory=dict)
    switches: dict[str, list[Finding]] = field(default_factory=dict)
    rows: list[CounterRow] = field(default_factory=list)

    def on_host(self, host: str, *findings: Finding) -> None:
        self.hosts.setdefault(host, []).extend(findings)

    def on_switch(self, switch: str, *findings: Finding) -> None:
        self.switches.setdefault(switch, []).extend(findings)


@dataclass(frozen=True)
class Incasted:
    """One incast with what the judge needs of its NICs and its leaf."""

    incast: Incast
    nics: Mapping[Endpoint, DesiredNic]
    netdevs: Mapping[Endpoint, str | None]  # None: the host stage showed no netdev for the NIC
    switch: DesiredSwitch | None = None

    @property
    def label(self) -> str:
        return f"{self.incast.where} incast"

    def role(self, end: Endpoint) -> str:
        return "victim" if end == self.incast.victim else f"sender into {self.incast.victim}"


def judge_incasts(incasts: Sequence[Incasted], captured: Captured) -> Verdicts:
    verdicts = Verdicts()
    for incasted in incasts:
        _judge_one(incasted, captured, verdicts)
    return verdicts


def _judge_one(incasted: Incasted, captured: Captured, verdicts: Verdicts) -> None:
    incast = incasted.incast
    for pair in incast.pairs:
        verdicts.on_host(pair.client.host, _traffic(incasted, pair, captured.measurements.get(pair)))
    moved: dict[Endpoint, dict[str, int]] = {}
    for end in incast.ends:
        findings, deltas = _nic(incasted, end, captured)
        verdicts.on_host(end.host, *findings)
        if deltas is not None:
            moved[end] = deltas
            verdicts.rows.append(_row(incasted, end, deltas))
    switch_moved = _switch(incasted, captured, verdicts) if incasted.switch is not None else {}
    verdicts.on_host(incast.victim.host, _pfc_engaged(incasted, moved, switch_moved))


def _traffic(incasted: Incasted, pair: Pair, measured: Measurement | None) -> Finding:
    expected = f"ib_write_bw from here into {pair.server} during the {incasted.label}"
    if measured is None or measured.gbps is None:
        why = "not run" if measured is None else (measured.error or "no result")
        return errored(
            TRAFFIC,
            pair.client.nic,
            expected,
            why,
            "the incast needs every sender writing: fix the cause (perftest, the port, ssh) and rerun",
        )
    return passed(TRAFFIC, pair.client.nic, expected, f"{measured.gbps:.2f} Gb/sec")


def _nic(
    incasted: Incasted, end: Endpoint, captured: Captured
) -> tuple[list[Finding], dict[str, int] | None]:
    """The NIC's counter findings and deltas (None when they could not be read)."""
    netdev = incasted.netdevs.get(end)
    expected = f"`ethtool -S` of {end.nic} before and after the {incasted.label}"
    if netdev is None:
        why = "the host stage showed no netdev for this NIC"
        return [errored(COUNTERS, end.nic, expected, why, "fix the host stage's errors on this NIC")], None
    before, after = captured.hosts_before.get(end.host), captured.hosts_after.get(end.host)
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        unread = (after if isinstance(before, Mapping) else before) or "not captured"
        hint = "the host must answer over ssh with ethtool installed; rerun the stage"
        return [errored(COUNTERS, end.nic, expected, f"not read: {unread}", hint)], None
    if netdev not in before or netdev not in after:
        why = f"`ethtool -S {netdev}` printed no statistics"
        return [
            errored(COUNTERS, end.nic, expected, why, "check the netdev exists and ethtool reads it")
        ], None
    want = lossless_want(incasted.nics[end])
    findings = [
        _renamed(finding, incasted, end)
        for finding in check_counters(netdev, before[netdev], after[netdev], want)
    ]
    deltas, _ = counter_deltas(before[netdev], after[netdev])
    return findings, deltas


def _renamed(finding: Finding, incasted: Incasted, end: Endpoint) -> Finding:
    """A counters.* finding of the NIC's netdev -> the incast's id, the NIC as subject, its role said."""
    netdev = finding.subject
    check = FROM_COUNTERS.get(finding.check, finding.check)
    actual = f"{finding.actual} ({netdev}, {incasted.role(end)}, {incasted.label})"
    hint = finding.hint
    tag = FIXING_TAG.get(check)
    if finding.status is Status.FAIL and tag is not None:
        hint = f"{hint}; on this host: `{_playbook(end.host, tag)}`"
        port, switch = incasted.incast.port_of(end), incasted.incast.switch
        if port is not None and switch is not None:
            hint += f"; its switch port {switch}:{port}: `{_playbook(switch, tag)}`"
    return dataclasses.replace(finding, check=check, subject=end.nic, actual=actual, hint=hint)


def _playbook(node: str, tag: str) -> str:
    return shlex.join(["ansible-playbook", "site.yml", "--limit", node, "--tags", tag])


def _row(incasted: Incasted, end: Endpoint, deltas: Mapping[str, int]) -> CounterRow:
    p = incasted.nics[end].ecn_priority
    values = {
        "prio_packets": deltas.get(f"rx_prio{p}_packets", 0) + deltas.get(f"tx_prio{p}_packets", 0),
        "pause": _pauses(deltas, p),
        "drops": sum(
            deltas.get(n, 0) for n in ("rx_discards_phy", "rx_out_of_buffer", f"rx_prio{p}_discards")
        ),
    }
    moved = tuple(values.get(name, deltas.get(name, 0)) for name in SHOWN)
    return CounterRow(
        incasted.label, incasted.role(end).split(" ")[0], end, incasted.netdevs[end] or "", moved
    )


def _pauses(deltas: Mapping[str, int], priority: int) -> int:
    return sum(deltas.get(f"{side}_prio{priority}_pause", 0) for side in ("rx", "tx"))


# -- the leaf -------------------------------------------------------------------------------------

UNJUDGEABLE = "the switch's output cannot be judged as shown"


@dataclass(frozen=True)
class _LeafPort:
    """One leaf port of an incast, as the leaf's judges see it."""

    desired: DesiredSwitch
    port: str
    label: str  # "leaf01 incast"

    @property
    def subject(self) -> str:
        return f"{self.desired.name}:{self.port}"

    @property
    def tc(self) -> int:
        return self.desired.lossless_traffic_class

    def unshown(self, check: str, kind: type, what: str) -> Finding | None:
        """A skip when the platform's incast probes do not read `kind` at all."""
        if reads(self.desired.platform, kind):
            return None
        return skipped(check, self.subject, f"{self.desired.platform}: the gate reads no {what} there yet")

    def fail(self, check: str, expected: str, actual: str, tag: str, what: str) -> Finding:
        hint = fix_hint(self.desired.name, tag, f"{self.subject}: {what}")
        return failed(check, self.subject, expected, f"{actual} ({self.label})", hint)


def _switch(incasted: Incasted, captured: Captured, verdicts: Verdicts) -> dict[str, PortPauseEcn]:
    """Findings of the incast's leaf ports; returns each port's pause and ECN deltas where read."""
    desired = incasted.switch
    assert desired is not None
    name = desired.name
    before, after = captured.switches_before.get(name), captured.switches_after.get(name)
    if not isinstance(before, Collected) or not isinstance(after, Collected):
        why = next((c for c in (before, after) if not isinstance(c, Collected)), None) or "not read"
        expected = f"counters of {name} around the {incasted.label}"
        hint = "the switch must answer its read-only show commands over ssh; rerun the stage"
        for check in (SWITCH_DROPS, SWITCH_ECN, WATCHDOG):
            verdicts.on_switch(name, errored(check, name, expected, f"not read: {why}", hint))
        return {}
    incast = incasted.incast
    moved: dict[str, PortPauseEcn] = {}
    for end in incast.ends:
        port = incast.port_of(end)
        if port is None:
            continue
        leaf = _LeafPort(desired, port, incasted.label)
        verdicts.on_switch(name, _switch_drops(leaf, before, after))
        pause_ecn = _pause_ecn(before, after, port)
        if pause_ecn is not None:
            moved[port] = pause_ecn
        if end == incast.victim:
            verdicts.on_switch(name, _switch_ecn(leaf, incast.victim, pause_ecn))
        verdicts.on_switch(name, _watchdog(leaf, after))
    return moved


def _missing(check: str, leaf: _LeafPort, expected: str, collected: Collected, kind: type) -> Finding:
    failure = collected.failure((kind,), leaf.port)
    shown = f"the switch showed no {kind.__name__} for {leaf.port}"
    why = f"`{failure.command}`: {failure.reason}" if failure else shown
    return errored(check, leaf.subject, expected, f"not read: {why}", UNJUDGEABLE)


def _switch_drops(leaf: _LeafPort, before: Collected, after: Collected) -> Finding:
    expected = f"no drop on lossless traffic class {leaf.tc} during the {leaf.label}"
    unshown = leaf.unshown(SWITCH_DROPS, QueueDrops, "queue drop counters")
    if unshown is not None:
        return unshown
    if not leaf.desired.pfc_priorities:
        return skipped(
            SWITCH_DROPS, leaf.subject, "the intent runs no PFC: nothing is lossless on the switch"
        )
    old, new = before.get(QueueDrops, leaf.port), after.get(QueueDrops, leaf.port)
    if not isinstance(old, QueueDrops) or not isinstance(new, QueueDrops):
        unread = before if not isinstance(old, QueueDrops) else after
        return _missing(SWITCH_DROPS, leaf, expected, unread, QueueDrops)
    delta = new.minus(old)
    dropped = dict(delta.by_queue).get(leaf.tc, delta.roce_class)
    if dropped is None:
        why = f"no drop counter for traffic class {leaf.tc}"
        return errored(SWITCH_DROPS, leaf.subject, expected, why, UNJUDGEABLE)
    if dropped == 0:
        return passed(SWITCH_DROPS, leaf.subject, expected, "0 dropped")
    what = f"the lossless queue dropped {dropped} packets under incast, so PFC does not hold it"
    return leaf.fail(SWITCH_DROPS, expected, f"{dropped} packets dropped", "pfc", what)


def _pause_ecn(before: Collected, after: Collected, port: str) -> PortPauseEcn | None:
    old, new = before.get(PortPauseEcn, port), after.get(PortPauseEcn, port)
    if isinstance(old, PortPauseEcn) and isinstance(new, PortPauseEcn):
        return new.minus(old)
    return None


def _switch_ecn(leaf: _LeafPort, victim: Endpoint, moved: PortPauseEcn | None) -> Finding:
    queue = leaf.desired.queue(leaf.tc)
    if queue is None or not queue.ecn:
        return skipped(SWITCH_ECN, leaf.subject, f"the intent marks no ECN on traffic class {leaf.tc}")
    expected = f"ECN marks on the queue of traffic class {leaf.tc} toward the victim {victim}"
    unshown = leaf.unshown(SWITCH_ECN, PortPauseEcn, "ECN mark counters")
    if unshown is not None:
        return unshown
    if moved is None:
        return errored(SWITCH_ECN, leaf.subject, expected, "not read in both captures", UNJUDGEABLE)
    if moved.ecn_marked > 0:
        return passed(SWITCH_ECN, leaf.subject, expected, f"{moved.ecn_marked} packets marked")
    what = f"no packet marked on traffic class {leaf.tc} under incast"
    return leaf.fail(SWITCH_ECN, expected, "0 marked", "ecn", what)


def _watchdog(leaf: _LeafPort, after: Collected) -> Finding:
    expected = f"no PFC watchdog storm on traffic class {leaf.tc} after the {leaf.label}"
    unshown = leaf.unshown(WATCHDOG, WatchdogStatus, "PFC watchdog state")
    if unshown is not None:
        return unshown
    if not leaf.desired.watchdog.enabled:
        return skipped(WATCHDOG, leaf.subject, "the intent runs no PFC watchdog")
    status = after.get(WatchdogStatus, leaf.port)
    if not isinstance(status, WatchdogStatus):
        return _missing(WATCHDOG, leaf, expected, after, WatchdogStatus)
    if leaf.tc not in status.stormed:
        stormed = ",".join(map(str, status.stormed)) or "none"
        return passed(WATCHDOG, leaf.subject, expected, f"stormed: {stormed}")
    what = (
        f"the watchdog found a pause storm on traffic class {leaf.tc}: a device on this port sends PFC "
        "without end (a stuck receive path); its settings"
    )
    return leaf.fail(WATCHDOG, expected, f"stormed on {leaf.tc}", "watchdog", what)


# -- the whole incast -----------------------------------------------------------------------------


def _pfc_engaged(
    incasted: Incasted, moved: Mapping[Endpoint, Mapping[str, int]], switch_moved: Mapping[str, PortPauseEcn]
) -> Finding:
    """Pause frames somewhere on the incast's path (NICs and leaf ports), or DCQCN holding the queue."""
    victim = incasted.nics[incasted.incast.victim]
    subject = incasted.label
    if not victim.pfc_priorities:
        return skipped(PFC_ENGAGED, subject, "the intent runs no PFC")
    p = victim.ecn_priority
    expected = f"pause frames on priority {p} under the incast, or DCQCN keeping the queue below PFC"
    if len(moved) < len(incasted.incast.ends):
        unread = [str(end) for end in incasted.incast.ends if end not in moved]
        return errored(
            PFC_ENGAGED,
            subject,
            expected,
            f"counters not read on {', '.join(unread)}",
            "see the incast.counters errors",
        )
    on_nics = sum(_pauses(deltas, p) for deltas in moved.values())
    on_switch = sum(c.pause_rx + c.pause_tx for c in switch_moved.values())
    if on_nics + on_switch:
        where = f"{on_nics} on the NICs" + (
            f", {on_switch} on {incasted.incast.switch}" if switch_moved else ""
        )
        return passed(PFC_ENGAGED, subject, expected, f"{on_nics + on_switch} pause frames ({where})")
    marked = sum(deltas.get(n, 0) for deltas in moved.values() for n in ECN_COUNTERS)
    marked += sum(c.ecn_marked for c in switch_moved.values())
    if marked:
        return passed(
            PFC_ENGAGED, subject, expected, f"no pause frame; DCQCN engaged ({marked} ECN marks and CNPs)"
        )
    return failed(
        PFC_ENGAGED,
        subject,
        expected,
        "no pause frame and no ECN mark anywhere on the path",
        "the incast did not congest the victim's port, or neither PFC nor ECN is signalled: check PFC on "
        f"the NICs (role {HOST_QOS_ROLE}, tag pfc) and on the leaf (role {SWITCH_QOS_ROLE}, tag pfc)",
    )
