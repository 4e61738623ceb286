"""Community SONiC outputs -> switch records (pure).

`show runningconfiguration all` (the running CONFIG_DB as JSON: per port the bound DSCP map, PFC
priorities, queue schedulers and WRED/ECN profiles, PFC watchdog, buffer profiles, MTU), `show queue
counters --json` (per port and unicast queue: dropped packets) and `show pfcwd stats` (a table; a queue
whose STATUS is `stormed` is in a PFC storm).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fabcheck.desired.switch import SONIC_MIN_RELEASE
from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.switch_records import (
    BufferBinding,
    BufferProfiles,
    DscpMap,
    EcnQueues,
    Mtu,
    PfcPriorities,
    Placed,
    PortSpeed,
    QueueDrops,
    QueueEcn,
    QueueMaps,
    QueueScheduler,
    Schedulers,
    Trust,
    WatchdogConfig,
    WatchdogSettings,
    WatchdogStatus,
    class_number,
    dscp_number,
    id_list,
    load_json,
    number,
    obj,
)

MAX_MTU = 65535
MAX_QUEUE_INDEX = 255  # no switch has more egress queues or priority groups a port
MAX_SPEED_MBPS = 1_600_000  # 1.6 Tb/s: the fastest Ethernet port a switch has
SCHEDULER_TYPES = {"DWRR": "dwrr", "WRR": "dwrr", "STRICT": "strict"}
_QUEUE_KEY = re.compile(r"(?P<port>[^|]+)\|(?P<first>[0-9])(?:-(?P<last>[0-9]))?", re.ASCII)
# `show queue counters --json` (sonic-utilities scripts/queuestat): per port, each queue as its type and
# index (UC unicast, MC multicast, ALL, VOQ on a VOQ chassis) beside the reading's "time", and
# "cached_time" where a build prints the `sonic-clear queuecounters` snapshot's time.
_QUEUE_NAME = re.compile(r"(?P<type>UC|MC|ALL|VOQ)(?P<queue>[0-9]{1,3})", re.ASCII)
_READING_KEYS = frozenset(("time", "cached_time"))
# After `sonic-clear queuecounters` queuestat prints each counter as its difference from the saved
# snapshot through utilities_common/netstat.py ns_diff, '{:,}'.format(...): "1,234".
_GROUPED_DIGITS = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+", re.ASCII)
# Rows `Ethernet0:3  stormed ...`; multi-ASIC switches list backplane ports (`Ethernet-BP0:12`) and
# queues 0..15, and a queue whose watchdog state is not in COUNTERS_DB shows `N/A` (sonic-utilities
# tests/pfcwd_input/pfcwd_test_vectors.py: real `show pfcwd stats` output over mock tables).
_PFCWD_ROW = re.compile(
    r"(?P<port>Ethernet(?:-[A-Za-z]+)?[0-9]{1,4}):(?P<queue>[0-9]{1,2})\s+(?P<status>\S+)(?:\s|$)", re.ASCII
)
# sonic-wred-profile.yang's ecn modes: which colours are ECN-marked.
ECN_MODES = frozenset(
    (
        "ecn_none",
        "ecn_green",
        "ecn_yellow",
        "ecn_red",
        "ecn_green_yellow",
        "ecn_green_red",
        "ecn_yellow_red",
        "ecn_all",
    )
)
PFCWD_STATUSES = ("operational", "stormed", "N/A")
WATCHDOG_SETTINGS = (
    "action",
    "detection_time",
    "restoration_time",
)  # PFC_WD|<port>, as `config pfcwd` writes


# Beside the CONFIG_DB tables `show runningconfiguration all` prints FRR's config as the string "bgpraw"
# (sonic-utilities show/main.py): not a table.
FRR_CONFIG_KEY = "bgpraw"
# Before 202111 CONFIG_DB wrote a reference to another table's entry in ABNF form, `[BUFFER_PROFILE|name]`;
# db_migrator rewrites them to plain names on upgrade (sonic-utilities scripts/db_migrator.py,
# migrate_qos_fieldval_reference_format, first in the 202111 branch).
_OLD_REFERENCE = re.compile(r"\[(?P<table>[A-Z_]+)\|(?P<name>[^\]|]+)\]")


def _refuse_old_reference(value: Any, source: str, where: str) -> None:
    """A reference in the pre-202111 `[TABLE|name]` form is not a missing entry: the switch runs a
    release older than the driver's minimum, whose CONFIG_DB fabcheck neither reads nor writes."""
    if not isinstance(value, str) or _OLD_REFERENCE.fullmatch(value.strip()) is None:
        return
    minimum = f"{SONIC_MIN_RELEASE[0]}{SONIC_MIN_RELEASE[1]:02d}"
    raise ParseError(
        f"{where}: {value[:60]!r} is the old reference syntax [TABLE|name] (SONiC before 202111): "
        f"the switch runs a release below the minimum fabcheck supports, {minimum}; upgrade it",
        source=source,
    )


def parse_config_db(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    what = "show runningconfiguration all"
    db = obj(load_json(text, source, what), source, what)
    tables = {
        name: obj(table, source, f"{what} {name}") for name, table in db.items() if name != FRR_CONFIG_KEY
    }
    ports = tables.get("PORT")
    if ports is None:
        raise ParseError(f"{what}: no PORT table; not a CONFIG_DB dump", source=source)
    queues = _queue_entries(tables.get("QUEUE", {}), source, what)
    groups = _buffer_bindings(tables, "BUFFER_PG", source, what)
    queue_buffers = _buffer_bindings(tables, "BUFFER_QUEUE", source, what)
    placed: list[Placed] = []
    for name, fields in ports.items():
        where = f"{what} PORT|{name}"
        port_fields = obj(fields, source, where)
        qos = obj(tables.get("PORT_QOS_MAP", {}).get(name, {}), source, f"{what} PORT_QOS_MAP|{name}")
        placed += _port_records(name, qos, tables, queues.get(name, {}), source, what)
        buffers = BufferProfiles(tuple(groups.get(name, ())), tuple(queue_buffers.get(name, ())))
        placed.append((name, buffers))
        if "mtu" in port_fields:
            placed.append(
                (name, Mtu(number(port_fields["mtu"], source, f"{where} mtu", low=1, high=MAX_MTU)))
            )
        if "speed" in port_fields:  # Mb/s, as `config interface speed` writes it
            speed = number(port_fields["speed"], source, f"{where} speed", low=1, high=MAX_SPEED_MBPS)
            placed.append((name, PortSpeed(speed)))
    return placed


def _port_records(
    port: str,
    qos: Mapping[str, Any],
    tables: Mapping[str, Mapping[str, Any]],
    queues: Mapping[int, Mapping[str, Any]],
    source: str,
    what: str,
) -> list[Placed]:
    where = f"{what} PORT_QOS_MAP|{port}"
    placed: list[Placed] = []
    # A port without its own map classifies with the switch-wide one, PORT_QOS_MAP|global (SONiC
    # 202205 on), and with none at all every DSCP rides traffic class 0 (SAI's default).
    switch_wide = obj(tables.get("PORT_QOS_MAP", {}).get("global", {}), source, f"{what} PORT_QOS_MAP|global")
    if "dscp_to_tc_map" in qos:
        placed.append((port, Trust("dscp")))
        placed.append((port, _dscp_map(tables, qos["dscp_to_tc_map"], source, where)))
    elif "dot1p_to_tc_map" in qos:
        placed.append((port, Trust("pcp")))
        placed.append((port, DscpMap("traffic-class", ())))  # the port classifies by PCP: no DSCP map
    elif "dscp_to_tc_map" in switch_wide:
        placed.append((port, Trust("dscp")))
        placed.append(
            (port, _dscp_map(tables, switch_wide["dscp_to_tc_map"], source, f"{what} PORT_QOS_MAP|global"))
        )
    else:
        placed.append((port, Trust("none")))
        placed.append((port, DscpMap("traffic-class", tuple((dscp, 0) for dscp in range(64)))))
    placed.append((port, _queue_maps(qos, tables, source, where)))
    pfc = id_list(qos.get("pfc_enable", ""), source, f"{where} pfc_enable")
    watched = id_list(qos.get("pfcwd_sw_enable", ""), source, f"{where} pfcwd_sw_enable")
    watchdog = port in tables.get("PFC_WD", {}) and bool(watched)
    placed += [(port, PfcPriorities(pfc)), (port, WatchdogConfig(watchdog))]
    wd = obj(tables.get("PFC_WD", {}).get(port, {}), source, f"{what} PFC_WD|{port}")
    settings = tuple(
        (key, _setting(wd[key], source, f"{what} PFC_WD|{port} {key}"))
        for key in WATCHDOG_SETTINGS
        if key in wd
    )
    placed.append((port, WatchdogSettings(settings)))
    ecn, schedulers = [], []
    for tc, fields in sorted(queues.items()):
        ecn.append(
            _queue_ecn(tc, fields, tables.get("WRED_PROFILE", {}), source, f"{what} QUEUE|{port}|{tc}")
        )
        schedulers.append(
            _scheduler(tc, fields, tables.get("SCHEDULER", {}), source, f"{what} QUEUE|{port}|{tc}")
        )
    placed += [(port, EcnQueues(tuple(ecn))), (port, Schedulers(tuple(s for s in schedulers if s)))]
    return placed


def _setting(value: Any, source: str, what: str) -> str:
    if not isinstance(value, str) or not value.isascii() or not 0 < len(value) <= 20:
        raise ParseError(f"{what}: expected a short string, got {str(value)[:40]!r}", source=source)
    return value


def _dscp_map(tables: Mapping[str, Mapping[str, Any]], name: Any, source: str, what: str) -> DscpMap:
    maps = tables.get("DSCP_TO_TC_MAP", {})
    _refuse_old_reference(name, source, f"{what} dscp_to_tc_map")
    if not isinstance(name, str) or name not in maps:
        raise ParseError(
            f"{what}: DSCP_TO_TC_MAP {str(name)[:40]!r} is bound to a port but missing", source=source
        )
    table = "show runningconfiguration all DSCP_TO_TC_MAP"
    entries = obj(maps[name], source, f"{table}|{name}")
    pairs = [
        (
            dscp_number(d, source, f"{table}|{name} key"),
            class_number(tc, source, f"{table}|{name}|{d}"),
        )
        for d, tc in entries.items()
    ]
    return DscpMap("traffic-class", tuple(sorted(pairs)))


# PORT_QOS_MAP field -> the map table it names, for the maps QueueMaps holds (each 0..7 -> 0..7).
QUEUE_MAP_BINDINGS = {
    "tc_to_queue_map": "TC_TO_QUEUE_MAP",
    "tc_to_pg_map": "TC_TO_PRIORITY_GROUP_MAP",
    "pfc_to_queue_map": "MAP_PFC_PRIORITY_TO_QUEUE",
    "pfc_to_pg_map": "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
    "dot1p_to_tc_map": "DOT1P_TO_TC_MAP",
}


def _queue_maps(
    qos: Mapping[str, Any], tables: Mapping[str, Mapping[str, Any]], source: str, where: str
) -> QueueMaps:
    """The maps the port binds, read from the same CONFIG_DB dump (no further command)."""
    read: dict[str, tuple[tuple[int, int], ...] | None] = {}
    for binding, table in QUEUE_MAP_BINDINGS.items():
        name = qos.get(binding)
        if name is None:
            read[binding] = None
            continue
        _refuse_old_reference(name, source, f"{where} {binding}")
        maps = tables.get(table, {})
        if not isinstance(name, str) or name not in maps:
            raise ParseError(
                f"{where}: {binding} names {table} {str(name)[:40]!r}, which does not exist", source=source
            )
        entries = obj(maps[name], source, f"{where} {table}|{name}")
        read[binding] = tuple(
            sorted(
                (
                    class_number(key, source, f"{where} {table}|{name} key"),
                    # a queue or group index as the map holds it; the check judges its value
                    number(value, source, f"{where} {table}|{name}|{key}", high=MAX_QUEUE_INDEX),
                )
                for key, value in entries.items()
            )
        )
    return QueueMaps(
        read["tc_to_queue_map"],
        read["tc_to_pg_map"],
        read["pfc_to_queue_map"],
        read["pfc_to_pg_map"],
        read["dot1p_to_tc_map"],
    )


def _queue_entries(
    table: Mapping[str, Any], source: str, what: str
) -> dict[str, dict[int, Mapping[str, Any]]]:
    """QUEUE|Ethernet0|3 and QUEUE|Ethernet0|3-4 -> port -> queue -> fields."""
    found: dict[str, dict[int, Mapping[str, Any]]] = {}
    for key, fields in table.items():
        match = _QUEUE_KEY.fullmatch(key)
        if match is None:
            raise ParseError(f"{what}: QUEUE key {key[:60]!r} is not PORT|QUEUE", source=source)
        first, last = int(match["first"]), int(match["last"] or match["first"])
        for queue in range(first, last + 1):
            found.setdefault(match["port"], {})[queue] = obj(fields, source, f"{what} QUEUE|{key}")
    return found


def _buffer_bindings(
    tables: Mapping[str, Mapping[str, Any]], table: str, source: str, what: str
) -> dict[str, list[BufferBinding]]:
    """BUFFER_PG|Ethernet0|3 or BUFFER_QUEUE|Ethernet0|0-2 -> port -> its bindings in span order. A
    profile named as a reference, `[BUFFER_PROFILE|name]` (releases before 202111), is refused."""
    found: dict[str, list[BufferBinding]] = {}
    for key, fields in tables.get(table, {}).items():
        match = _QUEUE_KEY.fullmatch(key)
        if match is None:
            raise ParseError(f"{what}: {table} key {key[:60]!r} is not PORT|N or PORT|N-M", source=source)
        where = f"{what} {table}|{key}"
        profile = obj(fields, source, where).get("profile")
        if not isinstance(profile, str) or not profile:
            raise ParseError(f"{where}: profile {str(profile)[:40]!r} is not a profile name", source=source)
        _refuse_old_reference(profile, source, f"{where} profile")
        first, last = int(match["first"]), int(match["last"] or match["first"])
        span = key.partition("|")[2]
        found.setdefault(match["port"], []).append(
            BufferBinding(span, tuple(range(first, last + 1)), profile)
        )
    for bindings in found.values():
        bindings.sort(key=lambda binding: binding.members)
    return found


def _queue_ecn(
    tc: int, fields: Mapping[str, Any], profiles: Mapping[str, Any], source: str, where: str
) -> QueueEcn:
    name = fields.get("wred_profile")
    if name is None:
        return QueueEcn(tc, False, None, None, None)
    _refuse_old_reference(name, source, f"{where} wred_profile")
    if not isinstance(name, str) or name not in profiles:
        raise ParseError(f"{where}: wred_profile {str(name)[:40]!r} does not exist", source=source)
    profile = obj(profiles[name], source, f"{where} WRED_PROFILE|{name}")
    mode = profile.get("ecn", "ecn_none")
    if mode not in ECN_MODES:
        raise ParseError(f"{where}: ecn {str(mode)[:40]!r} is not one of {sorted(ECN_MODES)}", source=source)
    green = _colour(profile, "green", mode, source, where)
    if not green[1]:
        return QueueEcn(tc, False, None, None, None)
    others = tuple(_colour(profile, colour, mode, source, where) for colour in ("yellow", "red"))
    return QueueEcn(tc, True, green[2], green[3], green[4], colours=others)


def _colour(
    profile: Mapping[str, Any], colour: str, mode: str, source: str, where: str
) -> tuple[str, bool, int | None, int | None, int | None]:
    """One colour of a WRED profile: marked when the ecn mode names it (ecn_all names all three) and its
    WRED is on. Green too: orchagent sets SAI_WRED_ATTR_GREEN_ENABLE from wred_green_enable; a SAI that
    marks without it (NVIDIA's) refuses a green-marking profile with green WRED off
    (Mellanox/SAI-Implementation:mlnx_sai/src/mlnx_sai_wred.c@e15a18908f4546b9066522d0278bb57b4df1898a),
    so the profile never reaches the ASIC: either way the queue does not mark."""
    marked = mode == "ecn_all" or colour in mode.removeprefix("ecn_").split("_")
    marked = marked and profile.get(f"wred_{colour}_enable") == "true"
    low, high = (
        number(profile[key], source, f"{where} {key}", high=2**40) if key in profile else None
        for key in (f"{colour}_min_threshold", f"{colour}_max_threshold")
    )
    probability = profile.get(f"{colour}_drop_probability")
    chance = (
        None
        if probability is None
        else number(probability, source, f"{where} {colour} probability", high=100)
    )
    return colour, marked, low, high, chance


def _scheduler(
    tc: int, fields: Mapping[str, Any], schedulers: Mapping[str, Any], source: str, where: str
) -> QueueScheduler | None:
    name = fields.get("scheduler")
    if name is None:
        return None
    _refuse_old_reference(name, source, f"{where} scheduler")
    if not isinstance(name, str) or name not in schedulers:
        raise ParseError(f"{where}: scheduler {str(name)[:40]!r} does not exist", source=source)
    profile = obj(schedulers[name], source, f"{where} SCHEDULER|{name}")
    kind = profile.get("type", "WRR")  # sonic-scheduler.yang: WRR when unset
    if kind not in SCHEDULER_TYPES:
        raise ParseError(
            f"{where}: scheduler type {str(kind)[:40]!r} is not DWRR, WRR or STRICT", source=source
        )
    mode = SCHEDULER_TYPES[kind]
    weight = profile.get("weight")
    share = (
        None if mode == "strict" or weight is None else number(weight, source, f"{where} weight", high=100)
    )
    return QueueScheduler(tc, mode, share)


def parse_queue_counters(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """Dropped packets per unicast queue. A port that lists no unicast queue (a VOQ chassis's `VOQ0..`,
    or no queue at all) is refused: RoCE leaves by a unicast queue, and without one there is nothing
    to judge lossless drops on, so it must never read as a port without drops."""
    what = "show queue counters --json"
    tree = obj(load_json(text, source, what), source, what)
    placed: list[Placed] = []
    for name, entry in tree.items():
        drops = []
        listed: list[str] = []
        for queue_name, counters in obj(entry, source, f"{what} {name}").items():
            if queue_name in _READING_KEYS:
                continue  # when the counters were read (and last cleared): not a queue
            match = _QUEUE_NAME.fullmatch(queue_name)
            if match is None:
                raise ParseError(
                    f"{what} {name}: {queue_name[:40]!r} is not a queue (UC, MC, ALL or VOQ and its "
                    "index) nor time / cached_time",
                    source=source,
                )
            listed.append(queue_name)
            if match["type"] != "UC":
                continue  # multicast and VOQ queues carry no RoCE egress to judge
            where = f"{what} {name} {queue_name}"
            fields = obj(counters, source, where)
            if "droppacket" not in fields:
                raise ParseError(f"{where}: no droppacket counter", source=source)
            if fields["droppacket"] == "N/A":
                continue  # no counter for this queue in COUNTERS_DB: its drops are unknown, not 0
            drops.append((int(match["queue"]), _counter(fields["droppacket"], source, f"{where} droppacket")))
        if not any(queue.startswith("UC") for queue in listed):
            shown = (
                f"only {', '.join(listed[:3])}{' ...' if len(listed) > 3 else ''}" if listed else "no queue"
            )
            raise ParseError(
                f"{what} {name}: no unicast (UC) queue ({shown}): no UC queue to judge lossless drops on",
                source=source,
            )
        placed.append((name, QueueDrops(by_queue=tuple(sorted(drops)))))
    return placed


def _counter(value: Any, source: str, what: str) -> int:
    """A queuestat counter: plain digits, or grouped by thousands after a clear ("1,234")."""
    if isinstance(value, str) and _GROUPED_DIGITS.fullmatch(value.strip()):
        value = value.strip().replace(",", "")
    return number(value, source, what)


def parse_pfcwd_stats(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """Rows `Ethernet0:3  stormed ...`; ports without a row have no storm (the switch-wide record)."""
    lines = split_checked_lines(text, source, "show pfcwd stats")
    stormed: dict[str, set[int]] = {}
    header_seen = False
    for number_, line in enumerate(lines, start=1):
        body = line.strip()
        if not body or set(body) <= {"-", " "}:
            continue
        if body.startswith("QUEUE") and "STATUS" in body:
            header_seen = True
            continue
        match = _PFCWD_ROW.match(body)
        if match is None or not header_seen:
            raise ParseError(f"show pfcwd stats: unexpected line {body[:60]!r}", source=source, line=number_)
        if match["status"] not in PFCWD_STATUSES:
            raise ParseError(
                f"show pfcwd stats: status {match['status'][:40]!r} is not operational, stormed or N/A",
                source=source,
                line=number_,
            )
        queues = stormed.setdefault(match["port"], set())
        if match["status"] == "stormed":
            queues.add(int(match["queue"]))
    placed: list[Placed] = [(None, WatchdogStatus(()))]
    placed += [(name, WatchdogStatus(tuple(sorted(queues)))) for name, queues in sorted(stormed.items())]
    return placed
