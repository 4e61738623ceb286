"""Arista EOS show outputs -> switch records (pure).

`show running-config` (the DSCP -> traffic-class map over EOS's default map, the PFC watchdog
settings and, per port, the tx-queues with guaranteed bandwidth the watchdog watches, read with
fabcheck.parsers.eos_config, the driver's reader too),
`show priority-flow-control | json` (per port: PFC priorities, watchdog),
`show qos interfaces | json` (per port: trust, tx-queue scheduling and ECN), `show interfaces | json`
(per port: MTU), `show interfaces counters queue detail | json` (per port: unicast egress queue
drops) and `show priority-flow-control counters watchdog | json` (per port: tx queues the PFC
watchdog holds stuck).
"""

from __future__ import annotations

import re
from typing import Any

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.eos_config import effective_dscp_map, parse_config, queue_guarantees, watchdog_settings
from fabcheck.parsers.switch_records import (
    DscpMap,
    EcnQueues,
    Mtu,
    PfcPriorities,
    Placed,
    PortSpeed,
    QueueDrops,
    QueueEcn,
    QueueGuarantees,
    QueueScheduler,
    Schedulers,
    Trust,
    WatchdogConfig,
    WatchdogSettings,
    WatchdogStatus,
    class_number,
    entries,
    field,
    load_json,
    number,
    obj,
)

TRUST_WORDS = {"dscp": "dscp", "cos": "pcp"}
# ECN threshold units EOS prints that convert to bytes; segments and milliseconds do not.
BYTES_PER_UNIT = {"bytes": 1, "kbytes": 1024, "mbytes": 1024 * 1024}
MAX_MTU = 65535
MAX_BANDWIDTH_BPS = 1_600_000_000_000  # 1.6 Tb/s: the fastest Ethernet port a switch has
# Queue detail keys: one class or drop precedence ("TC3", "DP0"), or a range EOS folds into one counter.
_TC_KEY = re.compile(r"TC([0-7])(?:-([0-7]))?", re.ASCII)
_DP_KEY = re.compile(r"DP([0-9])(?:-([0-9]))?", re.ASCII)


def parse_running_config(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    lines = split_checked_lines(text, source, "show running-config")
    if not any(line.startswith("hostname ") or line.startswith("! Command:") for line in lines):
        raise ParseError(
            "show running-config: no 'hostname' or '! Command:' line; not a running config", source=source
        )
    for number_, line in enumerate(lines, start=1):
        if line.startswith("qos map dscp") and not line.isascii():
            raise ParseError(
                "show running-config: non-ASCII characters in a qos map line", source=source, line=number_
            )
    tree = parse_config("\n".join(lines))
    try:
        mapping = effective_dscp_map(tree)
    except ValueError as err:
        raise ParseError(f"show running-config: unreadable qos map line ({err})", source=source) from None
    bad = sorted(d for d, tc in mapping.items() if not (0 <= d <= 63 and 0 <= tc <= 7))
    if bad:
        raise ParseError(f"show running-config: qos map dscp {bad[0]} out of range", source=source)
    settings = {key: _watchdog_value(key, value, source) for key, value in watchdog_settings(tree).items()}
    guarantees: list[Placed] = [
        (name, QueueGuarantees(tuple(sorted(queues.items()))))
        for name, queues in queue_guarantees(tree).items()
    ]
    return [
        (None, DscpMap("traffic-class", tuple(sorted(mapping.items())))),
        (None, WatchdogSettings(tuple(sorted(settings.items())))),
        *guarantees,
    ]


def _watchdog_value(key: str, value: str, source: str) -> str:
    """Seconds as `%g` (0.20 and 0.2 are one timeout); the action word as EOS prints it."""
    if key == "action":
        if not value.isascii() or len(value) > 20:
            raise ParseError(f"show running-config: watchdog action {value[:40]!r}", source=source)
        return value
    try:
        seconds = float(value)
    except ValueError:
        raise ParseError(
            f"show running-config: watchdog {key} {value[:40]!r} is not a number of seconds", source=source
        ) from None
    if not 0 <= seconds <= 3600:
        raise ParseError(f"show running-config: watchdog {key} {seconds} s is out of range", source=source)
    return f"{seconds:g}"


def parse_pfc_status(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    what = "show priority-flow-control | json"
    tree = obj(load_json(text, source, what), source, what)
    placed: list[Placed] = []
    for name, where, status in entries(tree, "interfaceStatuses", source, what):
        enabled = _flag(field(status, "enabled", source, where), source, f"{where} enabled")
        raw = field(status, "priorities", source, where)
        if not isinstance(raw, list):
            raise ParseError(f"{where}: priorities is not a list", source=source)
        priorities = tuple(sorted({class_number(p, source, f"{where} priority") for p in raw}))
        watchdog = _flag(field(status, "watchdogEnabled", source, where), source, f"{where} watchdogEnabled")
        placed += [(name, PfcPriorities(priorities if enabled else ())), (name, WatchdogConfig(watchdog))]
    return placed


def parse_qos_interfaces(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    what = "show qos interfaces | json"
    tree = obj(load_json(text, source, what), source, what)
    placed: list[Placed] = []
    for name, where, config in entries(tree, "intfQosConfig", source, what):
        trust = field(config, "trustMode", source, where)
        if trust not in TRUST_WORDS:
            raise ParseError(f"{where}: trustMode {str(trust)[:40]!r} is not dscp or cos", source=source)
        ecn, schedulers = [], []
        for key, queue in obj(field(config, "txQueues", source, where), source, where).items():
            tc = class_number(key, source, f"{where} txQueue key")
            ecn.append(
                _queue_ecn(tc, obj(queue, source, f"{where} txQueue {tc}"), source, f"{where} txQueue {tc}")
            )
            schedulers.append(_queue_scheduler(tc, queue, source, f"{where} txQueue {tc}"))
        placed += [
            (name, Trust(TRUST_WORDS[trust])),
            (name, EcnQueues(tuple(sorted(ecn, key=lambda q: q.traffic_class)))),
            (name, Schedulers(tuple(sorted(schedulers, key=lambda q: q.traffic_class)))),
        ]
    return placed


def _queue_ecn(tc: int, queue: Any, source: str, where: str) -> QueueEcn:
    ecn = queue.get("ecn")
    if ecn is None:
        return QueueEcn(tc, False, None, None, None)
    ecn = obj(ecn, source, f"{where} ecn")
    unit = field(ecn, "unit", source, f"{where} ecn")
    if not isinstance(unit, str) or len(unit) > 20:
        raise ParseError(f"{where}: ecn unit is not a unit name", source=source)
    low = number(field(ecn, "minThreshold", source, where), source, f"{where} minThreshold", high=256_000_000)
    high = number(
        field(ecn, "maxThreshold", source, where), source, f"{where} maxThreshold", high=256_000_000
    )
    probability = number(
        field(ecn, "maxMarkProbability", source, where), source, f"{where} probability", high=100
    )
    scale = BYTES_PER_UNIT.get(unit)
    if scale is None:
        return QueueEcn(tc, True, None, None, probability, unit)
    return QueueEcn(tc, True, low * scale, high * scale, probability)


def _queue_scheduler(tc: int, queue: Any, source: str, where: str) -> QueueScheduler:
    priority = field(queue, "priority", source, where)
    if priority == "strict":
        return QueueScheduler(tc, "strict", None)
    if priority != "roundRobin":
        raise ParseError(
            f"{where}: priority {str(priority)[:40]!r} is not strict or roundRobin", source=source
        )
    share = queue.get("bandwidthPercent")
    return QueueScheduler(
        tc, "dwrr", None if share is None else number(share, source, f"{where} bandwidth", high=100)
    )


def parse_interfaces(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    what = "show interfaces | json"
    tree = obj(load_json(text, source, what), source, what)
    placed: list[Placed] = []
    for name, where, entry in entries(tree, "interfaces", source, what):
        mtu = number(field(entry, "mtu", source, where), source, f"{where} mtu", high=MAX_MTU)
        if mtu:  # a Vxlan interface shows mtu 0 (real output, aristanetworks/anta tests): it has none
            placed.append((name, Mtu(mtu)))
        # `bandwidth` in bit/s (what ANTA's VerifyInterfacesSpeed reads) is the port's nominal rate: a
        # `notconnect` port whose line protocol is down still shows it (napalm's real EOS sample,
        # tests/data/real/eos/INDEX.tsv), so only a connected, up port runs at it; a down one trains
        # at no rate (0), which switch.port_speed fails as a link down.
        if "bandwidth" in entry:
            bps = number(entry["bandwidth"], source, f"{where} bandwidth", high=MAX_BANDWIDTH_BPS)
            if not _link_up(entry, source, where):
                placed.append((name, PortSpeed(0)))
            elif bps:  # 0 on an up port (a virtual one): no rate shown, so none read
                placed.append((name, PortSpeed(bps // 1_000_000)))
    return placed


def _link_up(entry: Any, source: str, where: str) -> bool:
    """`interfaceStatus` `connected` and `lineProtocolStatus` `up`; any other word (notconnect, disabled,
    errdisabled; down, lowerLayerDown, notPresent) is a link that carries nothing."""
    status = field(entry, "interfaceStatus", source, where)
    protocol = field(entry, "lineProtocolStatus", source, where)
    if not isinstance(status, str) or not isinstance(protocol, str):
        raise ParseError(f"{where}: interfaceStatus and lineProtocolStatus must be words", source=source)
    return status == "connected" and protocol == "up"


def _flag(value: Any, source: str, what: str) -> bool:
    if not isinstance(value, bool):
        raise ParseError(f"{what}: expected true or false", source=source)
    return value


def parse_queue_drops(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """Unicast egress queue drops per port and traffic class (RoCE is unicast; multicast queues are not
    read). `egressQueueCounters.interfaces.<port>.ucastQueues.trafficClasses.<TCn>.dropPrecedences.<DPn>
    .droppedPackets`; the drop precedences of a class are summed, and a range key (`TC0-2`), which the
    switch counts as one, gives its count to every class in it."""
    what = "show interfaces counters queue detail | json"
    tree = obj(load_json(text, source, what), source, what)
    counters = obj(field(tree, "egressQueueCounters", source, what), source, f"{what} egressQueueCounters")
    placed: list[Placed] = []
    for name, where, entry in entries(counters, "interfaces", source, what):
        unicast = obj(field(entry, "ucastQueues", source, where), source, f"{where} ucastQueues")
        classes = obj(field(unicast, "trafficClasses", source, where), source, f"{where} trafficClasses")
        drops: dict[int, int] = {}
        for key, detail in classes.items():
            first, last = _key_range(_TC_KEY, key, source, f"{where} traffic class")
            dropped = _dropped(obj(detail, source, f"{where} {key}"), source, f"{where} {key}")
            for tc in range(first, last + 1):
                drops[tc] = drops.get(tc, 0) + dropped
        placed.append((name, QueueDrops(by_queue=tuple(sorted(drops.items())))))
    return placed


def _dropped(detail: Any, source: str, where: str) -> int:
    precedences = obj(field(detail, "dropPrecedences", source, where), source, f"{where} dropPrecedences")
    total = 0
    for key, counters in precedences.items():
        _key_range(_DP_KEY, key, source, f"{where} drop precedence")
        fields = obj(counters, source, f"{where} {key}")
        total += number(field(fields, "droppedPackets", source, f"{where} {key}"), source, f"{where} {key}")
    return total


def _key_range(pattern: re.Pattern[str], key: str, source: str, what: str) -> tuple[int, int]:
    match = pattern.fullmatch(key)
    if match is None:
        raise ParseError(
            f"{what}: key {key[:40]!r} is not {pattern.pattern[:2]}<n> or a range", source=source
        )
    first, last = int(match[1]), int(match[2] or match[1])
    if last < first:
        raise ParseError(f"{what}: key {key[:40]!r} is a backwards range", source=source)
    return first, last


def parse_watchdog_counters(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """`interfaces.<port>.txQueues.<queue>.{stuckCount, recoveryCount}`. EOS lists a port only after its
    first watchdog event, so a port without an entry has no storm (the switch-wide record); a queue is
    stormed while the watchdog found it stuck more often than it saw it recover."""
    what = "show priority-flow-control counters watchdog | json"
    tree = obj(load_json(text, source, what), source, what)
    placed: list[Placed] = [(None, WatchdogStatus(()))]
    for name, where, entry in entries(tree, "interfaces", source, what):
        stormed = []
        for key, queue in obj(field(entry, "txQueues", source, where), source, f"{where} txQueues").items():
            tc = class_number(key, source, f"{where} txQueue key")
            counters = obj(queue, source, f"{where} txQueue {tc}")
            stuck = number(field(counters, "stuckCount", source, where), source, f"{where} stuckCount")
            recovered = number(
                field(counters, "recoveryCount", source, where), source, f"{where} recoveryCount"
            )
            if stuck > recovered:
                stormed.append(tc)
        placed.append((name, WatchdogStatus(tuple(sorted(stormed)))))
    return placed
