"""Cumulus Linux NVUE `nv show ... -o json` outputs -> switch records (pure).

Switch-wide: `nv show qos mapping default-global` (trust, DSCP -> switch priority),
`nv show qos egress-queue-mapping default-global` (switch priority -> traffic class),
`nv show qos egress-scheduler default-global` (per traffic class), `nv show qos pfc-watchdog`
(polling-interval, robustness), `nv show qos traffic-pool` (the buffer split). Per port:
`nv show interface P qos egress-scheduler` (the port's own egress-scheduler profile, when one is
bound), `nv show interface P qos roce status` (PFC priorities, ECN as the ASIC programmed it: thresholds in
whole buffer cells, so 150 000 B reads 150 528 B or more), `... qos pfc-watchdog` (state and per-class
OK/DEADLOCK), `... link` (MTU), `... qos roce counters` (RoCE drops).
"""

from __future__ import annotations

import re
from typing import Any

from fabcheck.errors import ParseError
from fabcheck.parsers.switch_records import (
    PRIORITIES,
    DscpMap,
    EcnQueues,
    Mtu,
    PfcPriorities,
    Placed,
    PortSpeed,
    PriorityMap,
    QueueDrops,
    QueueEcn,
    QueueScheduler,
    Schedulers,
    TrafficPools,
    Trust,
    WatchdogConfig,
    WatchdogSettings,
    WatchdogStatus,
    class_number,
    dscp_number,
    entries,
    field,
    id_list,
    load_json,
    number,
    obj,
)

# NVUE's mapping trust words -> the intent's terms ("both": PCP for tagged L2, DSCP for IP).
TRUST_WORDS = {"l3": "dscp", "l2": "pcp", "both": "pcp,dscp", "port": "port"}
# The port's roce status names its effective trust (its own mapping profile or default-global) as
# `trust-mode`: a real CL 5.x capture shows `pcp,dscp` under the RoCE preset.
PORT_TRUST_WORDS = {"dscp": "dscp", "pcp": "pcp", "pcp,dscp": "pcp,dscp", "port": "port"}
MAX_MTU = 65535
_NVUE_SPEED = re.compile(r"(?P<rate>[0-9]{1,4})(?P<unit>[MG])", re.ASCII)  # 10M .. 1600G


def parse_mapping(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    what = "nv show qos mapping default-global -o json"
    tree = obj(load_json(text, source, what), source, what)
    word = field(tree, "trust", source, what)
    if word not in TRUST_WORDS:
        raise ParseError(
            f"{what}: trust {str(word)[:40]!r} is not one of {sorted(TRUST_WORDS)}", source=source
        )
    pairs = [
        (
            dscp_number(key, source, f"{what} dscp key"),
            class_number(field(entry, "switch-priority", source, where), source, f"{where} switch-priority"),
        )
        for key, where, entry in entries(tree, "dscp", source, what)
    ]
    return [(None, Trust(TRUST_WORDS[word])), (None, DscpMap("switch-priority", tuple(sorted(pairs))))]


def parse_egress_queue_mapping(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    what = "nv show qos egress-queue-mapping default-global -o json"
    tree = obj(load_json(text, source, what), source, what)
    pairs = [
        (
            class_number(key, source, f"{what} switch-priority key"),
            class_number(field(entry, "traffic-class", source, where), source, f"{where} traffic-class"),
        )
        for key, where, entry in entries(tree, "switch-priority", source, what)
    ]
    return [(None, PriorityMap(tuple(sorted(pairs))))]


def _scheduler_classes(tree: Any, source: str, what: str) -> Schedulers:
    queues = []
    for key, where, cfg in entries(tree, "traffic-class", source, what):
        tc = class_number(key, source, f"{what} traffic-class key")
        mode = field(cfg, "mode", source, where)
        if mode not in ("strict", "dwrr"):
            raise ParseError(f"{where}: mode {str(mode)[:40]!r} is not strict or dwrr", source=source)
        weight = (
            number(cfg["bw-percent"], source, f"{where} bw-percent", high=100)
            if "bw-percent" in cfg
            else None
        )
        queues.append(QueueScheduler(tc, mode, weight if mode == "dwrr" else None))
    return Schedulers(tuple(sorted(queues, key=lambda q: q.traffic_class)))


def parse_scheduler(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    what = "nv show qos egress-scheduler default-global -o json"
    tree = obj(load_json(text, source, what), source, what)
    return [(None, _scheduler_classes(tree, source, what))]


def parse_port_scheduler(text: str, port: str | None, source: str = "<text>") -> list[Placed]:
    """The egress scheduler one port runs when a profile of its own is bound to it
    (`nv set interface P qos egress-scheduler profile NAME`): its classes, judged on that port.
    No profile bound (an empty node) or default-global named: nothing of the port's own, so the port
    is judged by default-global's scheduler (parse_scheduler). A profile named without its classes
    is refused: the port's scheduling is then unknown, not default-global's."""
    what = f"nv show interface {port} qos egress-scheduler -o json"
    tree = obj(load_json(text, source, what), source, what)
    name = tree.get("profile")
    if name is None or name == "default-global":
        return []
    if not isinstance(name, str) or not name:
        raise ParseError(f"{what}: profile {str(name)[:40]!r} is not a profile name", source=source)
    if "traffic-class" not in tree:
        raise ParseError(
            f"{what}: profile {name[:40]!r} is bound but its traffic classes are not shown", source=source
        )
    return [(port, _scheduler_classes(tree, source, f"{what} (profile {name[:40]})"))]


def parse_roce_status(text: str, port: str | None, source: str = "<text>") -> list[Placed]:
    """PFC priorities, ECN and trust of one port, as the port runs them (its own mapping and
    congestion-control profiles, else default-global). The view shows ONE congestion-control setting for the
    port's `enabled-tc` list (a real CL 5.x capture: `enabled-tc 0,3`, one min/max/probability), so
    each enabled class carries those thresholds; reading them as the RoCE class's only would leave the
    lossless class without thresholds whenever trust moves the RoCE row to another class."""
    what = f"nv show interface {port} qos roce status -o json"
    tree = obj(load_json(text, source, what), source, what)
    pfc = obj(field(tree, "pfc", source, what), source, f"{what} pfc")
    priorities = id_list(field(pfc, "pfc-priority", source, f"{what} pfc"), source, f"{what} pfc-priority")
    if priorities and pfc.get("rx-enabled") == "no" and pfc.get("tx-enabled") == "no":
        priorities = ()  # listed but neither sent nor honoured: PFC is off on the port
    ecn = obj(field(tree, "congestion-control", source, what), source, f"{what} congestion-control")
    enabled = set(id_list(field(ecn, "enabled-tc", source, what), source, f"{what} enabled-tc"))
    _roce_traffic_class(tree, source, what)  # the view must name the RoCE row (a real view does)
    thresholds = tuple(
        _optional(ecn.get(k), source, f"{what} {k}") for k in ("min-threshold", "max-threshold")
    )
    probability = _optional(ecn.get("probability"), source, f"{what} probability", high=100)
    queues = [
        QueueEcn(tc, True, thresholds[0], thresholds[1], probability)
        if tc in enabled
        else QueueEcn(tc, False, None, None, None)
        for tc in PRIORITIES
    ]
    trust = obj(field(tree, "trust", source, what), source, f"{what} trust")
    mode = field(trust, "trust-mode", source, f"{what} trust")
    if mode not in PORT_TRUST_WORDS:
        raise ParseError(
            f"{what}: trust-mode {str(mode)[:40]!r} is not one of {sorted(PORT_TRUST_WORDS)}", source=source
        )
    return [
        (port, PfcPriorities(priorities)),
        (port, EcnQueues(tuple(queues))),
        (port, Trust(PORT_TRUST_WORDS[mode])),
    ]


def _roce_traffic_class(tree: dict[str, Any] | Any, source: str, what: str) -> int:
    sp_tc = obj(field(tree, "sp-tc-map", source, what), source, f"{what} sp-tc-map")
    roce = obj(field(sp_tc, "roce", source, f"{what} sp-tc-map"), source, f"{what} sp-tc-map roce")
    return class_number(field(roce, "traffic-class", source, what), source, f"{what} roce traffic-class")


def _optional(value: Any, source: str, what: str, *, high: int = 2**40) -> int | None:
    if value is None or value == "-":
        return None
    return number(value, source, what, high=high)


def parse_port_watchdog(text: str, port: str | None, source: str = "<text>") -> list[Placed]:
    what = f"nv show interface {port} qos pfc-watchdog -o json"
    tree = obj(load_json(text, source, what), source, what)
    state = field(tree, "state", source, what)
    if state not in ("enabled", "disabled"):
        raise ParseError(f"{what}: state {str(state)[:40]!r} is not enabled or disabled", source=source)
    stormed = []
    for key, entry in obj(tree.get("status", {}), source, f"{what} status").items():
        tc = class_number(key, source, f"{what} status key")
        status = field(obj(entry, source, f"{what} status {tc}"), "status", source, f"{what} status {tc}")
        if status not in ("OK", "DEADLOCK"):
            raise ParseError(f"{what}: status {str(status)[:40]!r} is not OK or DEADLOCK", source=source)
        if status != "OK":
            stormed.append(tc)
    return [(port, WatchdogConfig(state == "enabled")), (port, WatchdogStatus(tuple(sorted(stormed))))]


WATCHDOG_SETTINGS = ("polling-interval", "robustness")


def parse_watchdog_global(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """The switch-wide PFC watchdog timers: `{"polling-interval": 100, "robustness": 3}` (ms, polls)."""
    what = "nv show qos pfc-watchdog -o json"
    tree = obj(load_json(text, source, what), source, what)
    settings = tuple(
        (key, str(number(tree[key], source, f"{what} {key}", low=1, high=1_000_000)))
        for key in WATCHDOG_SETTINGS
        if key in tree
    )
    return [(None, WatchdogSettings(settings))]


def parse_traffic_pools(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """The shared buffer split: `{"default-lossy": {"memory-percent": 50, ...}, ...}` (NVUE command
    reference, `nv set qos traffic-pool <id> memory-percent`; the JSON shape is unverified). A pool
    shown without its memory-percent is refused: its share is unknown, not zero."""
    what = "nv show qos traffic-pool -o json"
    tree = obj(load_json(text, source, what), source, what)
    pools = []
    for name, entry in sorted(tree.items()):
        where = f"{what} {name[:40]}"
        share = field(obj(entry, source, where), "memory-percent", source, where)
        pools.append((name, number(share, source, f"{where} memory-percent", low=0, high=100)))
    return [(None, TrafficPools(tuple(pools)))]


def parse_port_link(text: str, port: str | None, source: str = "<text>") -> list[Placed]:
    """MTU and, where the link shows one, its speed (`400G`, `100G`, `10M`; NVUE's `link speed`
    values) in Mb/s; `auto` (nothing trained) is no speed. A speed NVUE does not spell is refused."""
    what = f"nv show interface {port} link -o json"
    tree = obj(load_json(text, source, what), source, what)
    mtu = number(field(tree, "mtu", source, what), source, f"{what} mtu", low=1, high=MAX_MTU)
    placed: list[Placed] = [(port, Mtu(mtu))]
    if tree.get("speed", "auto") != "auto":  # `auto`: a link that has not trained shows no rate
        placed.append((port, PortSpeed(_nvue_speed(tree["speed"], source, f"{what} speed"))))
    return placed


def _nvue_speed(value: Any, source: str, what: str) -> int:
    match = _NVUE_SPEED.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ParseError(f"{what}: {str(value)[:20]!r} is not a link speed such as 400G", source=source)
    return int(match["rate"]) * (1000 if match["unit"] == "G" else 1)


def parse_roce_counters(text: str, port: str | None, source: str = "<text>") -> list[Placed]:
    what = f"nv show interface {port} qos roce counters -o json"
    tree = obj(load_json(text, source, what), source, what)
    tx = obj(field(tree, "tx-stats", source, what), source, f"{what} tx-stats")
    drops = number(
        field(tx, "unicast-no-buffer-discard", source, f"{what} tx-stats"), source, f"{what} discards"
    )
    return [(port, QueueDrops(roce_class=drops))]
