"""Switch checks of the gate: what a switch shows (platform-neutral records) + its desired state -> findings.

Pure. Each check is declared once in SWITCH_CHECKS (fabcheck.checks.declare.Check): id, the switch_qos
tag that fixes it, the record types it needs, when it applies, its inputs, and a judge
(SwitchJudge). A record a port has is judged per port (subject
`leaf01:swp1`); a switch-wide record (NVUE's global profiles) is judged once for the switch. A record
that could not be read is an ERROR naming the probe; a check the platform cannot answer, or one the
intent makes moot, is a SKIP with the reason.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from fabcheck.checks.declare import NO_INPUTS, Check, Inputs
from fabcheck.checks.model import Finding, Status, Where, errored, skipped
from fabcheck.checks.roles import SWITCH_QOS_ROLE
from fabcheck.desired.switch import SONIC_DYNAMIC_LOSSLESS_PROFILE, DesiredSwitch, DesiredSwitchPort
from fabcheck.errors import FabcheckError
from fabcheck.intent.platforms import platform_named, resolve
from fabcheck.parsers.switch_records import (
    BufferBinding,
    BufferProfiles,
    DscpMap,
    EcnQueues,
    Mtu,
    PfcPriorities,
    PortSpeed,
    PriorityMap,
    QueueDrops,
    QueueEcn,
    QueueGuarantees,
    QueueMaps,
    Record,
    RunningConfigText,
    Schedulers,
    StartupConfigText,
    TrafficPools,
    Trust,
    WatchdogConfig,
    WatchdogSettings,
    WatchdogStatus,
)
from fabcheck.switch.render import render_switch


@dataclass(frozen=True)
class EcnInputs(Inputs):
    # Spectrum programs ECN thresholds in whole buffer cells and shows the programmed value on the port:
    # 150 000 B reads 153 KB or 156 KB (Spectrum-4/5). Up to 7 % above the intent is that rounding.
    rounding_above: float = 0.07


@dataclass(frozen=True)
class SwitchEvidence:
    """What the gate read from one switch: records by (type, port or None), and why any are missing."""

    switch: str
    platform: str
    records: Mapping[tuple[type, str | None], Record]
    provided: frozenset[type]  # record types this platform's probes yield at all
    missing: Sequence[tuple[tuple[type, ...], str | None, str]] = ()  # (types, port, reason)
    unreachable: str | None = None  # why nothing could be read (connection refused, timeout)

    def get(self, kind: type, port: str | None) -> tuple[Record | None, bool]:
        """(record, whether it is the port's own); a port falls back to the switch-wide record."""
        if port is not None and (kind, port) in self.records:
            return self.records[(kind, port)], True
        return self.records.get((kind, None)), port is None

    def why_missing(self, kinds: Sequence[type], port: str | None) -> tuple[str, bool]:
        """(reason, whether it concerns the whole switch: a switch-wide probe failed)."""
        for types, where, reason in self.missing:
            if where in (port, None) and set(types) & set(kinds):
                return reason, where is None
        names = ", ".join(k.__name__ for k in kinds)
        return f"the switch showed no {names} for port {port}", False


Verdict = tuple[Status, str]  # (PASS/FAIL/ERROR, actual)
# the record, its port (None: switch-wide), the desired switch and port, the further records, the inputs
Verdicts = Callable[
    [Record, str | None, DesiredSwitch, DesiredSwitchPort | None, Mapping[type, Record], Inputs], Verdict
]


@dataclass(frozen=True)
class SwitchJudge:
    """How a switch check judges: the record type it needs, what it expects and the verdict on a record,
    which ports it concerns, and why a platform that shows no such record cannot answer it."""

    needs: type  # the record judged
    expected: Callable[[DesiredSwitch, DesiredSwitchPort | None, Inputs], str]
    verdict: Verdicts
    also: tuple[type, ...] = ()  # further records the verdict reads when the platform provides them
    ports: Callable[[DesiredSwitchPort], bool] = lambda _port: True  # which ports it concerns
    not_shown: str = ""  # why a platform whose probes lack the record cannot answer it
    # Who sets what it judges when no fabcheck role does (the check's role is then None): the hint.
    owner: str = ""


SwitchCheck = Check[SwitchJudge]
SCOPE = "port (switch-wide where the platform keeps one)"


def fix_hint(switch: str, tag: str, what: str) -> str:
    command = shlex.join(["ansible-playbook", "site.yml", "--limit", switch, "--tags", tag])
    return f"{what}; role {SWITCH_QOS_ROLE} (tag {tag}) sets it; on this switch: `{command}`"


# -- expectations and judges, one pair per check ----------------------------------------------------


def _pairs(mapping: Mapping[int, int]) -> str:
    return ", ".join(f"{key}->{value}" for key, value in sorted(mapping.items())) or "none"


def _ids(values: Sequence[int]) -> str:
    return ",".join(map(str, values)) if values else "none"


def _want_trust(d: DesiredSwitch, p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return p.trust if p else d.trust


def _judge_trust(
    r: Record, port: str | None, d: DesiredSwitch, p: DesiredSwitchPort | None, _more: object, _inputs: Inputs
) -> Verdict:
    assert isinstance(r, Trust)
    return (Status.PASS if r.mode == _want_trust(d, p, NO_INPUTS) else Status.FAIL), r.mode


def _wanted_dscp(d: DesiredSwitch, r: DscpMap) -> dict[int, int]:
    return d.dscp_to_switch_priority if r.target == "switch-priority" else d.dscp_to_traffic_class


def _want_dscp(d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return (
        f"DSCP->switch priority {_pairs(d.dscp_to_switch_priority)} "
        f"(DSCP->traffic class {_pairs(d.dscp_to_traffic_class)})"
    )


def _judge_dscp(
    r: Record,
    port: str | None,
    d: DesiredSwitch,
    p: DesiredSwitchPort | None,
    more: Mapping[type, Record],
    _inputs: Inputs,
) -> Verdict:
    assert isinstance(r, DscpMap)
    trust = more.get(Trust)
    if port is not None and isinstance(trust, Trust) and "dscp" not in trust.mode.split(","):
        return Status.SKIP, f"{port} trusts {trust.mode}: its DSCP map is not in use ({TRUST} fails it)"
    have = r.mapping
    wanted = _wanted_dscp(d, r)
    shown = ", ".join(f"{dscp}->{have.get(dscp, 'unmapped')}" for dscp in sorted(wanted))
    ok = all(have.get(dscp) == value for dscp, value in wanted.items())
    return (Status.PASS if ok else Status.FAIL), f"DSCP->{r.target} {shown}"


def _want_priority_map(d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return _pairs(dict(enumerate(d.switch_priority_to_traffic_class)))


def _judge_priority_map(
    r: Record, port: str | None, d: DesiredSwitch, p: DesiredSwitchPort | None, _more: object, _inputs: Inputs
) -> Verdict:
    assert isinstance(r, PriorityMap)
    wanted = dict(enumerate(d.switch_priority_to_traffic_class))
    have = r.mapping
    ok = all(have.get(prio) == tc for prio, tc in wanted.items())
    return (Status.PASS if ok else Status.FAIL), _pairs(have)


def _want_pfc(d: DesiredSwitch, p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    wanted = p.pfc_priorities if p else d.pfc_priorities
    if not wanted:
        return "PFC on priorities none"
    # Only NVUE's PFC profile carries a cable length (it sizes the headroom from it).
    cable = f", cable-length {d.pfc_cable_length_m} m" if d.platform == "nvue" else ""
    return f"PFC on priorities {_ids(wanted)}, pause frames sent (tx) and honoured (rx){cable}"


def _judge_pfc(
    r: Record,
    port: str | None,
    d: DesiredSwitch,
    p: DesiredSwitchPort | None,
    more: Mapping[type, Record],
    _inputs: Inputs,
) -> Verdict:
    """The PFC priorities; where the switch keeps them apart (NVUE's PFC profile), a lossless
    priority also needs both directions on (PFC with tx or rx off drops) and the headroom sized for
    the intent's cable length."""
    assert isinstance(r, PfcPriorities)
    wanted = p.pfc_priorities if p else d.pfc_priorities
    shown = [f"PFC on priorities {_ids(r.priorities)}"]
    ok = set(r.priorities) == set(wanted)
    if wanted and r.priorities and r.directions_off:
        shown.append(f"{' and '.join(r.directions_off)} disabled")
        ok = False
    if wanted and r.cable_length_m is not None and r.cable_length_m != d.pfc_cable_length_m:
        shown.append(f"cable-length {r.cable_length_m} m")
        ok = False
    maps = more.get(QueueMaps)
    if isinstance(maps, QueueMaps):  # SONiC: which queue a pause stops, which group's headroom sends it
        off = _map_drift(
            "MAP_PFC_PRIORITY_TO_QUEUE",
            "priority",
            "queue",
            d.pfc_priority_to_queue,
            maps.pfc_priority_to_queue,
        ) + _map_drift(
            "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
            "priority",
            "priority group",
            d.pfc_priority_to_priority_group,
            maps.pfc_priority_to_priority_group,
        )
        if off:
            return Status.FAIL, f"{', '.join(shown)}; {'; '.join(off)}"
    return (Status.PASS if ok else Status.FAIL), ", ".join(shown)


def _map_drift(
    table: str, source: str, target: str, wanted: Mapping[int, int], have: Sequence[tuple[int, int]] | None
) -> list[str]:
    """How a SONiC map bound to the port differs from the intent's, entry by entry ([] = the same)."""
    if have is None:
        return [f"the port binds no {table}"]
    shown = dict(have)
    return [
        f"{table}: {source} {key} -> {target} {shown.get(key, 'unmapped')} (not {value})"
        for key, value in sorted(wanted.items())
        if shown.get(key) != value
    ]


def _want_queue_map(d: DesiredSwitch, p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    wanted = (
        f"traffic class->queue {_pairs(d.traffic_class_to_queue)}; "
        f"traffic class->priority group {_pairs(d.traffic_class_to_priority_group)}"
    )
    if (p.trust if p else d.trust) != "dscp":
        wanted += f"; PCP->traffic class {_pairs(d.pcp_to_traffic_class)}"
    return wanted


def _judge_queue_map(
    r: Record, port: str | None, d: DesiredSwitch, p: DesiredSwitchPort | None, _more: object, _inputs: Inputs
) -> Verdict:
    """SONiC: the class -> queue and class -> ingress group maps the port binds (the other checks judge
    queue n as class n's: a class that leaves by another queue gets another queue's ECN, scheduler and
    buffer), and on a port that trusts PCP its PCP -> class map."""
    assert isinstance(r, QueueMaps)
    off = _map_drift("TC_TO_QUEUE_MAP", "class", "queue", d.traffic_class_to_queue, r.tc_to_queue)
    off += _map_drift(
        "TC_TO_PRIORITY_GROUP_MAP",
        "class",
        "priority group",
        d.traffic_class_to_priority_group,
        r.tc_to_priority_group,
    )
    if (p.trust if p else d.trust) != "dscp":
        off += _map_drift("DOT1P_TO_TC_MAP", "PCP", "class", d.pcp_to_traffic_class, r.pcp_to_tc)
    if off:
        return Status.FAIL, "; ".join(off)
    return Status.PASS, (
        f"traffic class->queue {_pairs(dict(r.tc_to_queue or ()))}; "
        f"traffic class->priority group {_pairs(dict(r.tc_to_priority_group or ()))}"
    )


def _want_ecn(d: DesiredSwitch, _p: DesiredSwitchPort | None, inputs: Inputs) -> str:
    assert isinstance(inputs, EcnInputs)
    queue = d.queue(d.lossless_traffic_class)
    tc = d.lossless_traffic_class
    if queue is None or not queue.ecn:
        return f"ECN off on traffic class {tc}"
    return (
        f"ECN on traffic class {tc}: min {queue.ecn_min_bytes} B, max {queue.ecn_max_bytes} B "
        f"(up to {inputs.rounding_above:.0%} more for hardware rounding), "
        f"probability {queue.ecn_probability} %"
    )


def _shown_ecn(q: QueueEcn) -> str:
    if not q.enabled:
        return f"ECN off on traffic class {q.traffic_class}"
    unit = "B" if q.unit == "bytes" else q.unit
    return (
        f"ECN on traffic class {q.traffic_class}: min {_or_unknown(q.min_bytes)} {unit}, "
        f"max {_or_unknown(q.max_bytes)} {unit}, probability {_or_unknown(q.probability)} %"
    )


def _or_unknown(value: int | None) -> str:
    return "unknown" if value is None else str(value)


def _rounded_from(actual: int, wanted: int, rounding_above: float) -> bool:
    return wanted <= actual <= wanted * (1 + rounding_above)


def _judge_ecn(
    r: Record, port: str | None, d: DesiredSwitch, p: DesiredSwitchPort | None, _more: object, inputs: Inputs
) -> Verdict:
    assert isinstance(inputs, EcnInputs)
    assert isinstance(r, EcnQueues)
    tc = d.lossless_traffic_class
    queue = d.queue(tc)
    have = r.queue(tc) or QueueEcn(tc, False, None, None, None)
    if queue is None or not queue.ecn:
        return (Status.FAIL if have.enabled else Status.PASS), _shown_ecn(have)
    if not have.enabled:
        return Status.FAIL, _shown_ecn(have)
    if have.unit != "bytes":
        return Status.ERROR, _shown_ecn(have) + f" (thresholds in {have.unit} cannot be compared with bytes)"
    if have.min_bytes is None or have.max_bytes is None:
        return Status.ERROR, _shown_ecn(have) + " (the switch did not show its thresholds)"
    assert queue.ecn_min_bytes is not None and queue.ecn_max_bytes is not None
    ok = (
        _rounded_from(have.min_bytes, queue.ecn_min_bytes, inputs.rounding_above)
        and _rounded_from(have.max_bytes, queue.ecn_max_bytes, inputs.rounding_above)
        and (have.probability is None or have.probability == queue.ecn_probability)
    )
    # Colours a platform keeps apart (SONiC's WRED yellow and red) carry the same curve as green.
    wanted = (True, queue.ecn_min_bytes, queue.ecn_max_bytes, queue.ecn_probability)
    off = [
        _shown_colour(colour, on, low, high, chance)
        for colour, on, low, high, chance in have.colours
        if (on, low, high, chance) != wanted
    ]
    shown = _shown_ecn(have) + (f"; {'; '.join(off)}" if off else "")
    return (Status.PASS if ok and not off else Status.FAIL), shown


def _shown_colour(colour: str, on: bool, low: int | None, high: int | None, chance: int | None) -> str:
    if not on:
        return f"{colour} not marked"
    return (
        f"{colour} min {_or_unknown(low)} B, max {_or_unknown(high)} B, probability {_or_unknown(chance)} %"
    )


def _want_scheduler(d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return "; ".join(_scheduled_text(c.traffic_class, c.mode, c.share) for c in d.egress_schedule)


def _scheduled_text(traffic_class: int, mode: str, share: int | None) -> str:
    return f"TC{traffic_class} {mode}" + (f" {_or_unknown(share)} %" if mode == "dwrr" else "")


def _judge_scheduler(
    r: Record, port: str | None, d: DesiredSwitch, p: DesiredSwitchPort | None, _more: object, _inputs: Inputs
) -> Verdict:
    """Every class the push writes (DesiredSwitch.egress_schedule: on NVUE all eight classes of
    default-global, the unplanned ones at their small share), mode and DWRR share as shown."""
    assert isinstance(r, Schedulers)
    shown, ok = [], True
    for wanted in d.egress_schedule:
        have = r.queue(wanted.traffic_class)
        if have is None:
            shown.append(f"TC{wanted.traffic_class} not scheduled")
            ok = False
            continue
        shown.append(_scheduled_text(have.traffic_class, have.mode, have.weight_percent))
        same_weight = wanted.mode != "dwrr" or have.weight_percent == wanted.share
        ok = ok and have.mode == wanted.mode and same_weight
    return (Status.PASS if ok else Status.FAIL), "; ".join(shown)


def _guarantees_text(guarantees: Mapping[int, str]) -> str:
    return ", ".join(f"tx-queue {tc} guaranteed {rate}" for tc, rate in sorted(guarantees.items()))


def _wanted_guarantees(d: DesiredSwitch) -> dict[int, str]:
    return {tc: f"percent {percent}" for tc, percent in d.watchdog_guarantees.items()}


def _want_watchdog(d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    watched = _guarantees_text(_wanted_guarantees(d))
    return "PFC watchdog enabled, no class stormed" + (f", watching {watched}" if watched else "")


def _judge_watchdog(
    r: Record,
    port: str | None,
    d: DesiredSwitch,
    p: DesiredSwitchPort | None,
    more: Mapping[type, Record],
    _inputs: Inputs,
) -> Verdict:
    assert isinstance(r, WatchdogConfig)
    status = more.get(WatchdogStatus)
    state = "enabled" if r.enabled else "disabled"
    guaranteed = more.get(QueueGuarantees)
    wanted = _wanted_guarantees(d)
    if r.enabled and wanted and isinstance(guaranteed, QueueGuarantees):
        # EOS watches only PFC queues with guaranteed bandwidth: one without it is never watched.
        have = dict(guaranteed.by_queue)
        shown = {tc: have.get(tc, "nothing") for tc in wanted}
        if shown != wanted:
            unwatched = _guarantees_text(shown)
            return Status.FAIL, f"PFC watchdog {state}, but {unwatched}: EOS watches no such queue"
    if status is None:
        return (Status.PASS if r.enabled else Status.FAIL), f"PFC watchdog {state} (storm state not shown)"
    assert isinstance(status, WatchdogStatus)
    if status.stormed:
        return Status.FAIL, f"PFC watchdog {state}, stormed: {_ids(status.stormed)}"
    return (Status.PASS if r.enabled else Status.FAIL), f"PFC watchdog {state}, no class stormed"


def _settings_text(settings: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{key} {value}" for key, value in settings) or "none set"


def _want_watchdog_settings(d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return f"PFC watchdog {_settings_text(d.watchdog.settings(d.platform))}"


def _judge_watchdog_settings(
    r: Record,
    port: str | None,
    d: DesiredSwitch,
    p: DesiredSwitchPort | None,
    more: Mapping[type, Record],
    _inputs: Inputs,
) -> Verdict:
    assert isinstance(r, WatchdogSettings)
    config = more.get(WatchdogConfig)
    if port is not None and isinstance(config, WatchdogConfig) and not config.enabled:
        return Status.SKIP, f"the PFC watchdog is off on {port} ({WATCHDOG} fails it); its settings are moot"
    wanted = d.watchdog.settings(d.platform)
    have = r.mapping
    shown = [(key, have.get(key, "unset")) for key, _value in wanted]
    return (
        Status.PASS if dict(shown) == dict(wanted) else Status.FAIL
    ), f"PFC watchdog {_settings_text(shown)}"


def _want_mtu(d: DesiredSwitch, p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return f"MTU {p.mtu if p else d.mtu}"


def _judge_mtu(
    r: Record, port: str | None, d: DesiredSwitch, p: DesiredSwitchPort | None, _more: object, _inputs: Inputs
) -> Verdict:
    assert isinstance(r, Mtu)
    return (Status.PASS if r.mtu == (p.mtu if p else d.mtu) else Status.FAIL), f"MTU {r.mtu}"


def _buffers_text(groups: Sequence[tuple[str, str]], queues: Sequence[tuple[str, str]]) -> str:
    shown = [f"PG {span} {profile}" for span, profile in groups] or ["no lossless PG"]
    shown += [f"queue {span} {profile}" for span, profile in queues] or ["no lossless queue bound"]
    return ", ".join(shown)


def _want_buffers(d: DesiredSwitch, p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    groups = [(str(group), profile) for group, profile in d.priority_group_buffers(p)] if p else []
    queues = [(str(queue), profile) for queue, profile in d.queue_buffers(p)] if p else []
    return _buffers_text(groups, queues)


def _judge_buffers(
    r: Record, port: str | None, d: DesiredSwitch, p: DesiredSwitchPort | None, _more: object, _inputs: Inputs
) -> Verdict:
    """What a push binds on a port with PFC, and nothing else: its lossless priority groups (a group
    bound to the dynamic lossless profile, or one the intent makes lossless, whatever it holds) and
    the binding of each lossless egress queue (the range holding it, e.g. stock 3-4). The lossy
    queues' bindings (q_lossy_profile on the dynamic model) are the switch's own and not judged."""
    assert isinstance(r, BufferProfiles)
    if p is None:
        return Status.ERROR, "buffer profiles shown for the switch, not for a port"
    wanted = {str(group): profile for group, profile in d.priority_group_buffers(p)}
    lossless = {group for group, _profile in d.priority_group_buffers(p)}

    def owned(binding: BufferBinding) -> bool:
        return binding.profile == SONIC_DYNAMIC_LOSSLESS_PROFILE or bool(lossless & set(binding.members))

    groups = [(b.span, b.profile) for b in r.priority_groups if owned(b)]
    ok = dict(groups) == wanted
    queues: list[tuple[str, str]] = []
    for queue, profile in d.queue_buffers(p):
        holders = [b for b in r.queues if queue in b.members]
        queues += [(b.span, b.profile) for b in holders if (b.span, b.profile) not in queues]
        ok = ok and [b.profile for b in holders] == [profile]
    if not queues and d.queue_buffers(p):
        queues = [(str(queue), "unbound") for queue, _profile in d.queue_buffers(p)]
    return (Status.PASS if ok else Status.FAIL), _buffers_text(groups, queues)


def _want_pools(d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return ", ".join(f"{pool} {share} %" for pool, share in d.traffic_pools.items())


def _judge_pools(
    r: Record, _port: str | None, d: DesiredSwitch, _p: DesiredSwitchPort | None, _more: object, _i: Inputs
) -> Verdict:
    assert isinstance(r, TrafficPools)
    have = r.mapping
    shown = {pool: have.get(pool) for pool in d.traffic_pools}
    text = ", ".join(f"{pool} {'unset' if share is None else f'{share} %'}" for pool, share in shown.items())
    return (Status.PASS if shown == d.traffic_pools else Status.FAIL), text


def _want_speed(_d: DesiredSwitch, p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return f"{p.speed_gbps if p else '?'}G (switch_port_speeds, else link.speed_gbps)"


def _judge_speed(
    r: Record, port: str | None, d: DesiredSwitch, p: DesiredSwitchPort | None, _more: object, _i: Inputs
) -> Verdict:
    assert isinstance(r, PortSpeed)
    if p is None or p.speed_gbps is None:
        return Status.ERROR, "a port speed shown for the switch, not for a port"
    if r.mbps == 0:  # a link that is down (EOS notconnect): its nominal rate is not a trained one
        return Status.FAIL, "link down: not trained at any rate"
    shown = f"{r.mbps // 1000}G" if r.mbps % 1000 == 0 else f"{r.mbps}M"
    return (Status.PASS if r.mbps == p.speed_gbps * 1000 else Status.FAIL), shown


def _want_drops(d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return f"no drops on lossless traffic class {d.lossless_traffic_class} while the gate ran"


def _judge_drops(
    r: Record, port: str | None, d: DesiredSwitch, p: DesiredSwitchPort | None, _more: object, _inputs: Inputs
) -> Verdict:
    assert isinstance(r, QueueDrops)
    drops = dict(r.by_queue).get(d.lossless_traffic_class, r.roce_class)
    if drops is None:
        return Status.ERROR, f"no drop counter for traffic class {d.lossless_traffic_class}"
    return (Status.PASS if drops == 0 else Status.FAIL), f"{drops} packets dropped while the gate ran"


def _needs_pfc(d: DesiredSwitch) -> str | None:
    return None if d.pfc_priorities else "the intent runs no PFC (lossless.pfc false): nothing is lossless"


# A reboot loads the startup config: at most this many of the owned lines it would revert are named.
STARTUP_LAG_SHOWN = 6


def _want_startup(_d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return "the startup config holds what runs (a reboot reverts nothing fabcheck owns)"


def _judge_startup(
    r: Record,
    _port: str | None,
    d: DesiredSwitch,
    _p: DesiredSwitchPort | None,
    more: Mapping[type, Record],
    _inputs: Inputs,
) -> Verdict:
    assert isinstance(r, StartupConfigText)
    running = more.get(RunningConfigText)
    if not isinstance(running, RunningConfigText):
        return Status.ERROR, "the running configuration was not read, so startup has nothing to match"
    try:
        compare = resolve(platform_named(d.platform).startup_lag)
        assert callable(compare)
        # Only what a push of the desired state owns counts: what no push writes, no push saves.
        lines: list[str] = compare(running.text, r.text, render_switch(d).text)
    except FabcheckError as err:  # a reader refused an output, no reader is named, or no render
        return Status.ERROR, f"running and startup cannot be compared: {err}"
    if not lines:
        return Status.PASS, "startup matches running on every owned setting"
    shown = "; ".join(lines[:STARTUP_LAG_SHOWN])
    more_lines = f" (+{len(lines) - STARTUP_LAG_SHOWN} more)" if len(lines) > STARTUP_LAG_SHOWN else ""
    return Status.FAIL, f"{len(lines)} owned line(s) differ, a reboot reverts them: {shown}{more_lines}"


def _needs_watchdog(d: DesiredSwitch) -> str | None:
    return None if d.watchdog.enabled else "the intent runs no PFC: no PFC watchdog is expected"


TRUST = "switch.trust"
DSCP_MAP = "switch.dscp_map"
PRIORITY_MAP = "switch.priority_map"
QUEUE_MAP = "switch.queue_map"
PFC = "switch.pfc"
ECN = "switch.ecn"
SCHEDULER = "switch.scheduler"
WATCHDOG = "switch.watchdog"
WATCHDOG_SETTINGS = "switch.watchdog_settings"
MTU = "switch.mtu"
LOSSLESS_DROPS = "switch.lossless_drops"
STARTUP_CONFIG = "switch.startup_config"
BUFFERS = "switch.buffers"
LOSSLESS_POOL = "switch.lossless_pool"
PORT_SPEED = "switch.port_speed"


def _switch_check(
    check_id: str,
    tag: str,
    summary: str,
    judge: SwitchJudge,
    inputs: Inputs = NO_INPUTS,
    applies: Callable[[DesiredSwitch], str | None] | None = None,
) -> SwitchCheck:
    """A switch check: role switch_qos fixes it, it reads the records its judge needs."""
    return SwitchCheck(
        check_id,
        "switch",
        SCOPE,
        (judge.needs.__name__, *(kind.__name__ for kind in judge.also)),
        summary,
        SWITCH_QOS_ROLE,
        tag,
        judge,
        inputs,
        applies=applies or (lambda _desired: None),
    )


SWITCH_CHECKS: tuple[SwitchCheck, ...] = (
    _switch_check(
        TRUST, "dscp", "classification trust (dscp)", SwitchJudge(Trust, _want_trust, _judge_trust)
    ),
    _switch_check(
        DSCP_MAP,
        "dscp",
        "DSCP -> switch priority / traffic class",
        SwitchJudge(DscpMap, _want_dscp, _judge_dscp, also=(Trust,)),
    ),
    _switch_check(
        PRIORITY_MAP,
        "dscp",
        "switch priority -> traffic class",
        SwitchJudge(
            PriorityMap,
            _want_priority_map,
            _judge_priority_map,
            not_shown="DSCP maps straight to traffic classes; there is no switch-priority stage to check",
        ),
    ),
    _switch_check(
        QUEUE_MAP,
        "dscp",
        "traffic class -> egress queue and ingress priority group",
        SwitchJudge(
            QueueMaps,
            _want_queue_map,
            _judge_queue_map,
            not_shown="a traffic class leaves by the queue of its number; there is no class -> queue map",
        ),
    ),
    _switch_check(
        PFC,
        "pfc",
        "PFC priorities per port (SONiC: and the queue and priority group each priority maps to)",
        SwitchJudge(PfcPriorities, _want_pfc, _judge_pfc, also=(QueueMaps,)),
    ),
    _switch_check(
        ECN,
        "ecn",
        "ECN marking on the lossless queue",
        SwitchJudge(EcnQueues, _want_ecn, _judge_ecn),
        EcnInputs(),
    ),
    _switch_check(
        SCHEDULER,
        "scheduler",
        "egress scheduling",
        SwitchJudge(Schedulers, _want_scheduler, _judge_scheduler),
    ),
    _switch_check(
        WATCHDOG,
        "watchdog",
        "PFC watchdog enabled and not stormed",
        SwitchJudge(
            WatchdogConfig,
            _want_watchdog,
            _judge_watchdog,
            also=(WatchdogStatus, QueueGuarantees),
            ports=lambda port: port.pfc_watchdog,
        ),
        applies=_needs_watchdog,
    ),
    _switch_check(
        WATCHDOG_SETTINGS,
        "watchdog",
        "PFC watchdog timers and storm action",
        SwitchJudge(
            WatchdogSettings,
            _want_watchdog_settings,
            _judge_watchdog_settings,
            also=(WatchdogConfig,),
            ports=lambda port: port.pfc_watchdog,
            not_shown="the gate reads no PFC watchdog settings there",
        ),
        applies=_needs_watchdog,
    ),
    _switch_check(MTU, "mtu", "port MTU", SwitchJudge(Mtu, _want_mtu, _judge_mtu)),
    _switch_check(
        BUFFERS,
        "buffers",
        "buffer profiles of the lossless priority groups and egress queues of the ports with PFC",
        SwitchJudge(
            BufferProfiles,
            _want_buffers,
            _judge_buffers,
            ports=lambda port: bool(port.pfc_priorities),  # a port without PFC keeps its buffers
            not_shown="fabcheck binds no per-port buffer profiles on this platform",
        ),
    ),
    SwitchCheck(
        PORT_SPEED,
        "switch",
        SCOPE,
        (PortSpeed.__name__,),
        "port speed as the inventory cables it",
        None,
        None,
        SwitchJudge(
            PortSpeed,
            _want_speed,
            _judge_speed,
            ports=lambda port: port.speed_gbps is not None,
            owner=(
                "the switch operator or its port profile (SONiC `config interface speed PORT MBPS`, NVUE "
                "`nv set interface PORT link speed 400G`, EOS `speed 400g-8`) and the optics; fabcheck "
                "pushes no port speed"
            ),
        ),
    ),
    _switch_check(
        LOSSLESS_POOL,
        "buffers",
        "the shared buffer's lossless pool PFC needs",
        SwitchJudge(
            TrafficPools,
            _want_pools,
            _judge_pools,
            not_shown="fabcheck splits no shared buffer into pools on this platform",
        ),
        applies=_needs_pfc,
    ),
    _switch_check(
        LOSSLESS_DROPS,
        "pfc",
        "no drops on the lossless queue during the run",
        SwitchJudge(
            QueueDrops,
            _want_drops,
            _judge_drops,
            ports=lambda port: bool(port.pfc_priorities),
            not_shown="queue drop counters are not read on this platform yet",
        ),
        applies=_needs_pfc,
    ),
    _switch_check(
        STARTUP_CONFIG,
        "switch",
        "startup config holds what runs (a push cut off before its save)",
        SwitchJudge(StartupConfigText, _want_startup, _judge_startup, also=(RunningConfigText,)),
    ),
)
SWITCH_CHECK_IDS = tuple(check.id for check in SWITCH_CHECKS)


# -- the fields the switch role owns, and the check that judges each ---------------------------------


@dataclass(frozen=True)
class FieldCheck:
    """The one declaration of an owned-field key (fabcheck.switch.owned): the gate check that judges
    the setting, and the checks a binding carries with it (`also`: they fail with it). check None: no
    gate check reads it yet, and `why` names who is adding one."""

    platform: str
    field: str
    check: str | None
    also: tuple[str, ...] = ()
    why: str = ""


@dataclass(frozen=True)
class OwnedField:
    """One setting role switch_qos pushes, in the platform's own terms, and the check that judges it
    (None: no gate check reads it yet; `why` says so). `scope` port: the field is per port and the
    check fails on that port only; switch: it fails once for the switch or on every port it feeds."""

    platform: str
    field: str
    scope: Literal["port", "switch"]
    check: str | None
    why: str = ""
    also: tuple[str, ...] = ()  # a binding carries other checks' settings: they fail with it


_PROFILE = "qos profile FABCHECK-ROCE:"
_NVUE_ECN = "qos congestion-control default-global traffic-class <tc>"
_NVUE_SCHED = "qos egress-scheduler default-global traffic-class <tc>"
_WRED = "WRED_PROFILE|FABCHECK_ECN_TC<tc>"
_PROFILE_CHECKS = (PFC, WATCHDOG, ECN, SCHEDULER)  # the class settings a service-profile binds

# One declaration per key a push writes (derived from the renders: fabcheck.switch.owned), in the
# README's order. tests/invariant/test_written_fields.py fails on a written key without one.
FIELD_CHECKS: tuple[FieldCheck, ...] = (
    FieldCheck("nvue", "qos mapping default-global trust", TRUST),
    FieldCheck("nvue", "qos mapping default-global dscp <d> switch-priority", DSCP_MAP),
    FieldCheck(
        "nvue", "qos egress-queue-mapping default-global switch-priority <p> traffic-class", PRIORITY_MAP
    ),
    FieldCheck("nvue", "qos pfc default-global switch-priority <p>", PFC),
    # PFC with either direction off is not lossless; a cable length off the intent's mis-sizes headroom
    FieldCheck("nvue", "qos pfc default-global tx", PFC),
    FieldCheck("nvue", "qos pfc default-global rx", PFC),
    FieldCheck("nvue", "qos pfc default-global cable-length", PFC),
    FieldCheck("nvue", "interface <port> qos pfc profile", PFC),
    FieldCheck("nvue", "interface <port> qos mapping profile", TRUST),
    FieldCheck("nvue", "interface <port> qos congestion-control profile", ECN),
    FieldCheck("nvue", "interface <port> qos egress-scheduler profile", SCHEDULER),
    FieldCheck("nvue", f"{_NVUE_ECN} min-threshold", ECN),
    FieldCheck("nvue", f"{_NVUE_ECN} max-threshold", ECN),
    FieldCheck("nvue", f"{_NVUE_ECN} probability", ECN),
    FieldCheck("nvue", f"{_NVUE_ECN} ecn", ECN),
    FieldCheck("nvue", f"{_NVUE_SCHED} bw-percent", SCHEDULER),
    FieldCheck("nvue", f"{_NVUE_SCHED} mode", SCHEDULER),
    FieldCheck("nvue", "interface <port> qos pfc-watchdog state", WATCHDOG),
    FieldCheck("nvue", "qos pfc-watchdog polling-interval", WATCHDOG_SETTINGS),
    FieldCheck("nvue", "qos pfc-watchdog robustness", WATCHDOG_SETTINGS),
    FieldCheck("nvue", "interface <port> link mtu", MTU),
    FieldCheck("nvue", "qos traffic-pool <pool> memory-percent", LOSSLESS_POOL),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> pfc_enable", PFC),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> pfcwd_sw_enable", WATCHDOG),
    FieldCheck("sonic", "DSCP_TO_TC_MAP|FABCHECK <d>", DSCP_MAP),
    FieldCheck("sonic", "DOT1P_TO_TC_MAP|FABCHECK <pcp>", QUEUE_MAP),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> dscp_to_tc_map", DSCP_MAP),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> dot1p_to_tc_map", TRUST),
    FieldCheck("sonic", "TC_TO_QUEUE_MAP|FABCHECK <tc>", QUEUE_MAP),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> tc_to_queue_map", QUEUE_MAP),
    FieldCheck("sonic", "TC_TO_PRIORITY_GROUP_MAP|FABCHECK <tc>", QUEUE_MAP),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> tc_to_pg_map", QUEUE_MAP),
    FieldCheck("sonic", "MAP_PFC_PRIORITY_TO_QUEUE|FABCHECK <p>", PFC),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> pfc_to_queue_map", PFC),
    FieldCheck("sonic", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP|FABCHECK <p>", PFC),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> pfc_to_pg_map", PFC),
    FieldCheck("sonic", "QUEUE|<port>|<tc> wred_profile", ECN),
    FieldCheck("sonic", f"{_WRED} ecn", ECN),
    *(
        FieldCheck("sonic", f"{_WRED} {field}", ECN)
        for colour in ("green", "yellow", "red")
        for field in (
            f"wred_{colour}_enable",
            f"{colour}_min_threshold",
            f"{colour}_max_threshold",
            f"{colour}_drop_probability",
        )
    ),
    FieldCheck("sonic", "QUEUE|<port>|<tc> scheduler", SCHEDULER),
    FieldCheck("sonic", "SCHEDULER|FABCHECK_TC<tc> type", SCHEDULER),
    FieldCheck("sonic", "SCHEDULER|FABCHECK_TC<tc> weight", SCHEDULER),
    FieldCheck("sonic", "PFC_WD|<port> action", WATCHDOG_SETTINGS),
    FieldCheck("sonic", "PFC_WD|<port> detection_time", WATCHDOG_SETTINGS),
    FieldCheck("sonic", "PFC_WD|<port> restoration_time", WATCHDOG_SETTINGS),
    FieldCheck("sonic", "PORT|<port> mtu", MTU),
    FieldCheck("sonic", "BUFFER_PG|<port>|<pg> profile", BUFFERS),
    FieldCheck("sonic", "BUFFER_QUEUE|<port>|<queues> profile", BUFFERS),
    FieldCheck("eos", "qos map dscp <d> to traffic-class <tc>", DSCP_MAP),
    *(
        FieldCheck("eos", f"{block} {field}", check, also)
        for block in (_PROFILE, "interface <port>:")
        for field, check, also in (
            ("qos trust", TRUST, ()),
            ("priority-flow-control", PFC, ()),
            ("priority-flow-control priority <p>", PFC, ()),
            ("priority-flow-control pause watchdog", WATCHDOG, ()),
            ("uc-tx-queue <tc> random-detect ecn", ECN, ()),
            ("uc-tx-queue <tc> bandwidth percent", SCHEDULER, ()),
            ("uc-tx-queue <tc> priority", SCHEDULER, ()),
            # the watched lossless queue's DWRR share, written as the guarantee the watchdog needs
            ("uc-tx-queue <tc> bandwidth guaranteed", WATCHDOG, (SCHEDULER,)),
        )
    ),
    FieldCheck("eos", "priority-flow-control pause watchdog default timeout", WATCHDOG_SETTINGS),
    FieldCheck("eos", "priority-flow-control pause watchdog default recovery-time", WATCHDOG_SETTINGS),
    FieldCheck("eos", "priority-flow-control pause watchdog action", WATCHDOG_SETTINGS),
    FieldCheck("eos", "interface <port>: mtu", MTU),
    FieldCheck("eos", "interface <port>: service-profile", TRUST, also=_PROFILE_CHECKS),
)
NOT_DECLARED = "written by a push, but FIELD_CHECKS names no check for it"


@functools.cache
def owned_fields() -> tuple[OwnedField, ...]:
    """The owned-field table, derived: every key the reference renders and the drivers write
    (fabcheck.switch.owned.reference_fields), with its check from FIELD_CHECKS (none: NOT_DECLARED),
    in FIELD_CHECKS order, the undeclared last."""
    from fabcheck.switch.owned import reference_fields

    declared = {(entry.platform, entry.field): entry for entry in FIELD_CHECKS}
    order = {key: index for index, key in enumerate(declared)}
    rows: list[OwnedField] = []
    for platform in ("nvue", "sonic", "eos"):
        for field in reference_fields(platform):
            entry = declared.get((platform, field)) or FieldCheck(platform, field, None, why=NOT_DECLARED)
            scope: Literal["port", "switch"] = "port" if "<port>" in field else "switch"
            rows.append(OwnedField(platform, field, scope, entry.check, entry.why, entry.also))
    last = len(order)
    return tuple(
        sorted(rows, key=lambda row: (order.get((row.platform, row.field), last), row.platform, row.field))
    )


def __getattr__(name: str) -> object:
    # OWNED_FIELDS is derived from renders on first use, not at import (the gate never needs it).
    if name == "OWNED_FIELDS":
        return owned_fields()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def owned_fields_markdown(tests: Mapping[tuple[str, str], str]) -> str:
    """README's owned-field table: each field, its concern tag, its check and the test that drifts it
    (`tests` maps (platform, field) to a test id)."""
    tags = {check.id: check.tag for check in SWITCH_CHECKS}
    rows = ["| platform | field | scope | concern tag | check | test |", "|---|---|---|---|---|---|"]
    for owned in owned_fields():
        check = (
            ", ".join(f"`{name}`" for name in (owned.check, *owned.also))
            if owned.check
            else f"none: {owned.why}"
        )
        tag = f"`{tags[owned.check]}`" if owned.check else "-"
        test = tests.get((owned.platform, owned.field), "none")
        rows.append(f"| {owned.platform} | `{owned.field}` | {owned.scope} | {tag} | {check} | {test} |")
    return "\n".join(rows)


# -- running the declarations -----------------------------------------------------------------------


def check_switch(evidence: SwitchEvidence, desired: DesiredSwitch) -> list[Finding]:
    """Every declared check on one switch."""
    findings: list[Finding] = []
    for check in SWITCH_CHECKS:
        findings += run_check(check, evidence, desired)
    return findings


def run_check(check: SwitchCheck, evidence: SwitchEvidence, desired: DesiredSwitch) -> list[Finding]:
    assert check.judge is not None  # every switch check is judged here
    judge, inputs, name = check.judge, check.inputs, evidence.switch
    if evidence.unreachable is not None:
        return [
            errored(check.id, name, judge.expected(desired, None, inputs), "not read", evidence.unreachable)
        ]
    if judge.needs not in evidence.provided:
        not_shown = judge.not_shown or f"the gate reads no {judge.needs.__name__} there"
        reason = f"{evidence.platform}: {not_shown}"
        return [skipped(check.id, name, reason)]
    not_applicable = check.applies(desired)
    if not_applicable is not None:
        return [skipped(check.id, name, not_applicable)]
    findings: list[Finding] = []
    judged_switch_wide = False
    ports = [port for port in desired.ports if judge.ports(port)]
    if not ports:
        return [skipped(check.id, name, "no port of this switch is concerned")]
    for port in ports:
        record, own = evidence.get(judge.needs, port.port)
        if record is None:
            reason, switch_wide = evidence.why_missing((judge.needs,), port.port)
            if not (switch_wide and judged_switch_wide):
                subject = name if switch_wide else f"{name}:{port.port}"
                wanted = judge.expected(desired, None if switch_wide else port, inputs)
                unread = errored(check.id, subject, wanted, "not read", reason)
                findings.append(replace(unread, where=_where(name, None if switch_wide else port)))
            judged_switch_wide = judged_switch_wide or switch_wide
            continue
        if not own and judged_switch_wide:
            continue
        subject = f"{name}:{port.port}" if own else name
        wanted = judge.expected(desired, port if own else None, inputs)
        judged_switch_wide = judged_switch_wide or not own
        more = _also(judge, evidence, port.port)
        at = port if own else None
        status, actual = judge.verdict(record, port.port if own else None, desired, at, more, inputs)
        found = _finding(check, status, subject, wanted, actual, name)
        findings.append(replace(found, where=_where(name, at)))
    return findings


def _where(switch: str, port: DesiredSwitchPort | None) -> Where:
    """The switch, the port a per-port finding judges, and the host NIC the cabling map puts there."""
    if port is None:
        return Where(switch)
    return Where(switch, port.port, port.peer or "")


def _also(judge: SwitchJudge, evidence: SwitchEvidence, port: str) -> dict[type, Record]:
    found: dict[type, Record] = {}
    for kind in judge.also:
        record, _own = evidence.get(kind, port)
        if record is not None:
            found[kind] = record
    return found


def _finding(
    check: SwitchCheck, status: Status, subject: str, expected: str, actual: str, switch: str
) -> Finding:
    if status is Status.PASS:
        return Finding(check.id, status, subject, expected, actual)
    if status is Status.SKIP:
        return skipped(check.id, subject, actual)
    if status is Status.ERROR:
        return Finding(
            check.id, status, subject, expected, actual, "the switch's output cannot be judged as shown"
        )
    what = f"{subject}: {check.summary}"
    hint = (
        fix_hint(switch, check.tag or "", what)
        if check.role
        else f"{what}; no fabcheck role sets it: {check.judge.owner if check.judge else 'unknown'}"
    )
    return Finding(check.id, status, subject, expected, actual, hint)
