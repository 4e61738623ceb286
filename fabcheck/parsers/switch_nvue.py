"""Cumulus Linux NVUE outputs -> switch records (pure).

NVUE reads what is verified. Everything fabcheck owns comes from the applied configuration tree,
`nv config show -o json` (`[{"header": ...}, {"set": {...}}]`, the document the gate already reads for
switch.startup_config): trust, DSCP -> switch priority (default-global and each port's own mapping
profile), switch priority -> traffic class, PFC priorities with tx / rx and cable length, ECN, egress
scheduling, the PFC watchdog's state and timers, the traffic pools and MTU. The tree holds what was
set; what it leaves out runs at the factory values below, each from a public NVIDIA source.

Operational views only for what a configuration cannot show, read in the table layout of a real
sample (tests/data/real/nvue/INDEX.tsv): `nv show interface P qos pfc-watchdog` (per traffic class OK
or DEADLOCK), `nv show interface P qos roce counters` (the RoCE class's tx discards, nested
`tx-stats` -> `tx-roce-stats` -> `unicast-no-buffer-discard` as NVIDIA's CL 5.16 sample prints it) and
`nv show interface P link` (the speed the link trained at, NVIDIA's command-reference table).
`nv show interface P qos roce status` is not read: its sub-nodes are documented only under the RoCE
preset, which fabcheck does not enable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fabcheck.errors import ParseError
from fabcheck.parsers.numbers import read_int
from fabcheck.parsers.switch_records import (
    MAX_DSCP,
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
    id_list,
    load_json,
    number,
    obj,
)

# -- factory values the applied tree leaves out ----------------------------------------------------
# API_DUMP: NVIDIA's root GET of a factory CL 5.5.0 switch (VX), defaults filled in,
#   CumulusNetworks/docs:content/guides/Data-Center-Network-Automation-Ansible-Deployment-Guide/
#   Running-the-Playbooks.md@0bfc00271590a97c591a9b5d3e84fc16d386ba9b
#   (its qos object: tests/data/real/nvue/nvue-api-cl55-factory-qos.json)
# QOS_GUIDE: CumulusNetworks/docs:content/cumulus-linux-516/Layer-1-and-Switch-Ports/Quality-of-Service/
#   _index.md@057503ed2ca114f8dee8876a1fe01cf3b97f641e
# PORT_GUIDE: CumulusNetworks/docs:content/cumulus-linux-516/Layer-1-and-Switch-Ports/
#   Interface-Configuration-and-Management/Switch-Port-Attributes.md@7ab50b0a13a9b94789b3de1113037b95df786fc6
FACTORY_TRUST = "l2"  # API_DUMP: qos mapping default-global trust l2
FACTORY_DSCP_TO_SP = tuple((dscp, dscp >> 3) for dscp in range(MAX_DSCP + 1))  # QOS_GUIDE "Trust DSCP" table
FACTORY_SP_TO_TC = tuple((sp, sp) for sp in PRIORITIES)  # API_DUMP: egress-queue-mapping sp n -> tc n
# API_DUMP: egress-scheduler default-global dwrr, bw-percent 12 on even classes, 13 on odd ones
FACTORY_SCHEDULER = {tc: ("dwrr", 12 if tc % 2 == 0 else 13) for tc in PRIORITIES}
# API_DUMP: congestion-control default-global traffic-class 0 (QOS_GUIDE says the same in words). A
# class the tree adds takes these values for what it does not set (an assumption: unverified).
FACTORY_ECN_CLASS = {"ecn": "enable", "min-threshold": 150000, "max-threshold": 1500000, "probability": 100}
FACTORY_ECN = {0: FACTORY_ECN_CLASS}
FACTORY_POOLS = {"default-lossy": 100}  # API_DUMP; QOS_GUIDE "Flow Control Buffers": 100 % lossy
# QOS_GUIDE "Port Groups / PFC": a PFC profile sends and honours pause frames (tx, rx enable) and sizes
# its headroom for 10 m cables unless set. API_DUMP: `pfc {}`, no profile at the factory: no PFC.
PFC_PROFILE_DEFAULTS = {"tx": "enable", "rx": "enable", "cable-length": 10}
# QOS_GUIDE "PFC Watchdog": polling every 100 ms, 3 polls.
FACTORY_WATCHDOG = {"polling-interval": 100, "robustness": 3}
FACTORY_MTU = 9216  # PORT_GUIDE "MTU": the default on every interface
# The words a setting's state takes. NVUE's command reference spells them `enable|disable` (`nv set
# interface P qos pfc-watchdog state`, default disable; `nv set qos pfc <profile> tx|rx`), QOS_GUIDE
# (CL 5.16) types `state disabled`, and the show tables print `enabled|disabled`: all are read.
ON_WORDS = frozenset({"enable", "enabled", "on"})
OFF_WORDS = frozenset({"disable", "disabled", "off"})
# NVUE's mapping trust words -> the intent's terms ("both": PCP for tagged L2, DSCP for IP).
TRUST_WORDS = {"l3": "dscp", "l2": "pcp", "both": "pcp,dscp", "port": "port"}
MAX_MTU = 65535
WATCHDOG_SETTINGS = ("polling-interval", "robustness")
_NVUE_SPEED = re.compile(r"(?P<rate>[0-9]{1,4})(?P<unit>[MG])", re.ASCII)  # 10M .. 1600G
APPLIED = "nv config show -o json"


# -- the applied configuration ----------------------------------------------------------------------


def applied_tree(text: str, source: str, what: str = APPLIED) -> Mapping[str, Any]:
    """The `set` document of `nv config show -o json` ({} when nothing is set)."""
    documents = load_json(text, source, what)
    found: Mapping[str, Any] = {}
    for document in documents if isinstance(documents, list) else [documents]:
        if isinstance(document, Mapping) and "set" in document:
            found = obj(document["set"] or {}, source, f"{what} set")
    return found


def _node(tree: Mapping[str, Any], source: str, what: str, *path: str) -> Mapping[str, Any]:
    """The object at `path` ({} when absent: nothing set there); a scalar where an object belongs
    is refused."""
    node: Mapping[str, Any] = tree
    for key in path:
        value = node.get(key)
        if value is None:
            return {}
        node = obj(value, source, f"{what} {' '.join(path)}")
    return node


def _ids(key: Any, source: str, what: str, high: int = PRIORITIES[-1]) -> tuple[int, ...]:
    found = id_list(str(key), source, what, high=high)
    if not found:
        raise ParseError(f"{what}: {str(key)[:40]!r} names no id", source=source)
    return found


def _state(value: Any, source: str, what: str) -> bool:
    if value in ON_WORDS:
        return True
    if value in OFF_WORDS:
        return False
    raise ParseError(f"{what}: {str(value)[:40]!r} is not enable(d) or disable(d)", source=source)


@dataclass
class _Mapping:
    trust: str = FACTORY_TRUST
    dscp: dict[int, int] = field(default_factory=lambda: dict(FACTORY_DSCP_TO_SP))

    def overlay(self, node: Mapping[str, Any], source: str, what: str) -> _Mapping:
        if "trust" in node:
            if node["trust"] not in TRUST_WORDS:
                raise ParseError(
                    f"{what} trust: {str(node['trust'])[:40]!r} is not one of {sorted(TRUST_WORDS)}",
                    source=source,
                )
            self.trust = node["trust"]
        for key, entry in _node(node, source, what, "dscp").items():
            where = f"{what} dscp {str(key)[:20]}"
            entry = obj(entry, source, where)
            if "switch-priority" in entry:
                priority = number(entry["switch-priority"], source, f"{where} switch-priority", high=7)
                for dscp in _ids(key, source, where, high=MAX_DSCP):
                    self.dscp[dscp] = priority
        return self

    def records(self) -> list[Trust | DscpMap]:
        return [Trust(TRUST_WORDS[self.trust]), DscpMap("switch-priority", tuple(sorted(self.dscp.items())))]


def _pfc(profile: Mapping[str, Any], source: str, what: str) -> PfcPriorities:
    settings = {**PFC_PROFILE_DEFAULTS, **profile}
    priorities: set[int] = set()
    for key in _node(profile, source, what, "switch-priority"):
        priorities.update(_ids(key, source, f"{what} switch-priority"))
    cable = number(settings["cable-length"], source, f"{what} cable-length", low=1, high=100_000)
    return PfcPriorities(
        tuple(sorted(priorities)),
        tx=_state(settings["tx"], source, f"{what} tx"),
        rx=_state(settings["rx"], source, f"{what} rx"),
        cable_length_m=cable,
    )


def _ecn(classes: Mapping[int, Mapping[str, Any]], source: str, what: str) -> EcnQueues:
    queues = []
    for tc in PRIORITIES:
        cfg = classes.get(tc)
        if cfg is None or not _state(cfg["ecn"], source, f"{what} traffic-class {tc} ecn"):
            queues.append(QueueEcn(tc, False, None, None, None))
            continue
        where = f"{what} traffic-class {tc}"
        queues.append(
            QueueEcn(
                tc,
                True,
                number(cfg["min-threshold"], source, f"{where} min-threshold"),
                number(cfg["max-threshold"], source, f"{where} max-threshold"),
                number(cfg["probability"], source, f"{where} probability", high=100),
            )
        )
    return EcnQueues(tuple(queues))


def _ecn_classes(
    node: Mapping[str, Any], start: Mapping[int, Mapping[str, Any]], source: str, what: str
) -> dict[int, dict[str, Any]]:
    classes = {tc: dict(cfg) for tc, cfg in start.items()}
    for key, entry in _node(node, source, what, "traffic-class").items():
        where = f"{what} traffic-class {str(key)[:20]}"
        for tc in _ids(key, source, where):
            classes[tc] = {**classes.get(tc, FACTORY_ECN_CLASS), **obj(entry, source, where)}
    return classes


def _scheduler(
    node: Mapping[str, Any], start: Mapping[int, tuple[str, int]], source: str, what: str
) -> Schedulers:
    classes: dict[int, tuple[str, int | None]] = dict(start)
    for key, entry in _node(node, source, what, "traffic-class").items():
        where = f"{what} traffic-class {str(key)[:20]}"
        entry = obj(entry, source, where)
        for tc in _ids(key, source, where):
            mode, share = classes.get(tc, ("dwrr", None))
            mode = entry.get("mode", mode)
            if mode not in ("strict", "dwrr"):
                raise ParseError(f"{where}: mode {str(mode)[:40]!r} is not strict or dwrr", source=source)
            if "bw-percent" in entry:
                share = number(entry["bw-percent"], source, f"{where} bw-percent", low=1, high=100)
            classes[tc] = (mode, share)
    return Schedulers(
        tuple(
            QueueScheduler(tc, mode, share if mode == "dwrr" else None)
            for tc, (mode, share) in sorted(classes.items())
        )
    )


def _profile(
    qos: Mapping[str, Any], feature: str, name: Any, source: str, what: str
) -> Mapping[str, Any] | None:
    """The profile a port binds for `feature`; None when it names none or default-global."""
    if name is None or name == "default-global":
        return None
    if not isinstance(name, str) or not name:
        raise ParseError(f"{what}: profile {str(name)[:40]!r} is not a profile name", source=source)
    profiles = _node(qos, source, f"{what} qos", feature)
    if name not in profiles:
        # `nv config apply` refuses a binding to a profile that does not exist: not an applied tree
        raise ParseError(f"{what}: profile {name[:40]!r} is bound but not defined", source=source)
    return obj(profiles[name] or {}, source, f"{what} qos {feature} {name[:40]}")


def parse_applied_config(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """Every setting fabcheck owns, from the applied configuration tree: switch-wide (default-global,
    the pools, the watchdog timers, and the factory values a port with no entry of its own runs), and
    per interface the tree names: its trust, PFC, ECN, watchdog state and MTU, its DSCP map when it
    binds a mapping profile of its own, its scheduling when it binds an egress-scheduler profile."""
    what = APPLIED
    tree = applied_tree(text, source, what)
    qos = _node(tree, source, what, "qos")
    roce = _node(qos, source, what, "roce")
    if roce and roce.get("enable", roce.get("state", "on")) in ON_WORDS:
        # `nv set qos roce` writes its own classification, ETS, ECN and PFC (NVIDIA's RoCE page), none of
        # it in this tree; fabcheck never enables the preset and does not model it.
        raise ParseError(
            f"{what}: the RoCE preset (`qos roce`) is enabled; what it sets is not in the configuration "
            "tree, so the switch's QoS cannot be read from it (`nv unset qos roce` and push)",
            source=source,
        )
    default_mapping = _Mapping().overlay(
        _node(qos, source, what, "mapping", "default-global"), source, f"{what} qos mapping default-global"
    )
    sp_to_tc = dict(FACTORY_SP_TO_TC)
    for key, entry in _node(
        qos, source, what, "egress-queue-mapping", "default-global", "switch-priority"
    ).items():
        where = f"{what} egress-queue-mapping switch-priority {str(key)[:20]}"
        entry = obj(entry, source, where)
        if "traffic-class" in entry:
            tc = number(entry["traffic-class"], source, f"{where} traffic-class", high=7)
            for sp in _ids(key, source, where):
                sp_to_tc[sp] = tc
    pfc_profiles = _node(qos, source, what, "pfc")
    default_pfc = (
        _pfc(
            obj(pfc_profiles["default-global"] or {}, source, what), source, f"{what} qos pfc default-global"
        )
        if "default-global" in pfc_profiles
        else PfcPriorities(())
    )
    ecn_what = f"{what} qos congestion-control default-global"
    default_ecn_classes = _ecn_classes(
        _node(qos, source, what, "congestion-control", "default-global"), FACTORY_ECN, source, ecn_what
    )
    scheduler = _scheduler(
        _node(qos, source, what, "egress-scheduler", "default-global"),
        FACTORY_SCHEDULER,
        source,
        f"{what} qos egress-scheduler default-global",
    )
    watchdog = {**FACTORY_WATCHDOG, **_node(qos, source, what, "pfc-watchdog")}
    settings = tuple(
        (key, str(number(watchdog[key], source, f"{what} pfc-watchdog {key}", low=1, high=1_000_000)))
        for key in WATCHDOG_SETTINGS
    )
    placed: list[Placed] = [
        *((None, record) for record in default_mapping.records()),
        (None, PriorityMap(tuple(sorted(sp_to_tc.items())))),
        (None, scheduler),
        (None, WatchdogSettings(settings)),
        (None, _traffic_pools(_node(qos, source, what, "traffic-pool"), source, what)),
        (None, default_pfc),
        (None, _ecn(default_ecn_classes, source, ecn_what)),
        # a port the tree names nothing for runs the factory watchdog state and MTU
        (None, WatchdogConfig(False)),
        (None, Mtu(FACTORY_MTU)),
    ]
    for name, interface in _node(tree, source, what, "interface").items():
        interface = obj(interface or {}, source, f"{what} interface")
        placed += _port_records(qos, default_mapping, str(name), interface, source)
    return placed


def _port_records(
    qos: Mapping[str, Any], default_mapping: _Mapping, port: str, interface: Mapping[str, Any], source: str
) -> list[Placed]:
    what = f"{APPLIED} interface {port[:40]}"
    port_qos = _node(interface, source, what, "qos")

    def bound(feature: str) -> Mapping[str, Any] | None:
        name = _node(port_qos, source, what, feature).get("profile")
        return _profile(qos, feature, name, source, f"{what} qos {feature}")

    placed: list[Placed] = []
    mapping_profile = bound("mapping")
    if mapping_profile is None:
        placed.append((port, default_mapping.records()[0]))
    else:  # a profile of its own starts from NVUE's mapping defaults, not from default-global
        own = _Mapping().overlay(mapping_profile, source, f"{what} qos mapping profile")
        placed += [(port, record) for record in own.records()]
    pfc_name = _node(port_qos, source, what, "pfc").get("profile") or "default-global"
    pfc_profiles = _node(qos, source, what, "pfc")
    if pfc_name == "default-global" and pfc_name not in pfc_profiles:
        placed.append((port, PfcPriorities(())))
    else:
        if pfc_name not in pfc_profiles:
            raise ParseError(
                f"{what}: PFC profile {str(pfc_name)[:40]!r} is bound but not defined", source=source
            )
        profile = obj(pfc_profiles[pfc_name] or {}, source, f"{what} qos pfc")
        placed.append((port, _pfc(profile, source, f"{APPLIED} qos pfc {str(pfc_name)[:40]}")))
    congestion = bound("congestion-control")
    ecn_what = f"{what} qos congestion-control"
    if congestion is None:
        classes = _ecn_classes(
            _node(qos, source, what, "congestion-control", "default-global"), FACTORY_ECN, source, ecn_what
        )
    else:  # a profile of its own marks on the classes it lists only
        classes = _ecn_classes(congestion, {}, source, ecn_what)
    placed.append((port, _ecn(classes, source, ecn_what)))
    scheduler = bound("egress-scheduler")
    if scheduler is not None:  # QOS_GUIDE "Port Groups": classes a profile does not list are not scheduled
        placed.append((port, _scheduler(scheduler, {}, source, f"{what} qos egress-scheduler")))
    placed.append((port, WatchdogConfig(_watchdog_state(port_qos, source, what))))
    link = _node(interface, source, what, "link")
    mtu = number(link.get("mtu", FACTORY_MTU), source, f"{what} link mtu", low=1, high=MAX_MTU)
    placed.append((port, Mtu(mtu)))
    return placed


def _watchdog_state(port_qos: Mapping[str, Any], source: str, what: str) -> bool:
    """The port's PFC watchdog: off unless the tree has its node (`nv set interface P qos pfc-watchdog`
    turns it on, QOS_GUIDE), then its `state` word (default enable once the node exists)."""
    if "pfc-watchdog" not in port_qos:
        return False
    node = _node(port_qos, source, what, "pfc-watchdog")
    return _state(node.get("state", "enable"), source, f"{what} qos pfc-watchdog state")


def _traffic_pools(pools: Mapping[str, Any], source: str, what: str) -> TrafficPools:
    """The buffer split: the factory default-lossy 100 %, overlaid by each pool's memory-percent the
    tree sets (`nv set qos traffic-pool <pool> memory-percent`). A pool set without a share is left
    out: its share is not known, so the check names it unset."""
    shares = dict(FACTORY_POOLS)
    for name, entry in pools.items():
        where = f"{what} qos traffic-pool {str(name)[:40]}"
        entry = obj(entry or {}, source, where)
        if "memory-percent" in entry:
            shares[str(name)] = number(entry["memory-percent"], source, f"{where} memory-percent", high=100)
    return TrafficPools(tuple(sorted(shares.items())))


# -- operational tables ---------------------------------------------------------------------------


def _columns(rule: str) -> list[int]:
    """Where each column of a dashed rule starts ("---  ----" -> [0, 5])."""
    return [found.start() for found in re.finditer(r"-+", rule)]


def _cell(line: str, starts: list[int], index: int) -> str:
    end = starts[index + 1] if index + 1 < len(starts) else len(line)
    return line[starts[index] : end].strip()


def attribute_tree(text: str, source: str, what: str) -> dict[str, Any]:
    """An NVUE attribute table (`operational  applied  description` over an unnamed, indented key
    column) as nested dicts of the operational column: a row whose children are indented two more
    is a group. Stops at the first blank line or section title; a table without its rule is refused."""
    lines = text.replace("\r", "").splitlines()
    rule = next((i for i, line in enumerate(lines) if line.strip().startswith("-")), None)
    if rule is None or rule == 0 or "operational" not in lines[rule - 1]:
        raise ParseError(f"{what}: no `operational` attribute table", source=source)
    starts = _columns(lines[rule])
    if len(starts) < 2 or starts[0] != 0:
        raise ParseError(f"{what}: the table's rule has no key column", source=source)
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for number_, line in enumerate(lines[rule + 1 :], rule + 2):
        if not line.strip() or (number_ < len(lines) and lines[number_].startswith("=")):
            break
        key_cell = line[: starts[1]]
        key = key_cell.strip()
        if not key:
            raise ParseError(f"{what}: line {number_} has no attribute name", source=source)
        depth = len(key_cell) - len(key_cell.lstrip(" "))
        while stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1]
        value = _cell(line, starts, 1)
        following = lines[number_] if number_ < len(lines) else ""
        child_depth = len(following) - len(following.lstrip(" "))
        if not value and following.strip() and child_depth > depth and following[: starts[1]].strip():
            group: dict[str, Any] = {}
            parent[key] = group
            stack.append((depth, group))
        else:
            parent[key] = value
    return root


def section_rows(text: str, title: str, source: str, what: str) -> list[list[str]]:
    """The rows of a titled sub-table (`PFC WD Status` / `=====` / indented header and rule), each
    split by the rule's columns; [] when the output has no such section."""
    lines = text.replace("\r", "").splitlines()
    heads = [i for i, line in enumerate(lines) if line.strip() == title]
    if not heads:
        return []
    body = lines[heads[0] + 1 :]
    if not body or not body[0].strip().startswith("="):
        raise ParseError(f"{what}: section {title!r} is not underlined", source=source)
    rule = next((i for i, line in enumerate(body) if line.strip().startswith("-")), None)
    if rule is None:
        raise ParseError(f"{what}: section {title!r} has no table rule", source=source)
    starts = _columns(body[rule])
    rows: list[list[str]] = []
    for line in body[rule + 1 :]:
        if not line.strip():
            if rows:
                break
            continue  # NVIDIA's sample leaves a blank line under the rule
        rows.append([_cell(line, starts, index) for index in range(len(starts))])
    return rows


def _count(tree: Mapping[str, Any], path: tuple[str, ...], source: str, what: str) -> int:
    node: Any = tree
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            raise ParseError(f"{what}: no {' -> '.join(path)}", source=source)
        node = node[key]
    if not isinstance(node, str):
        raise ParseError(f"{what}: {' -> '.join(path)} is a group, not a count", source=source)
    return read_int(node, source=source, what=f"{what} {' -> '.join(path)}")


ROCE_DISCARDS = ("tx-stats", "tx-roce-stats", "unicast-no-buffer-discard")
ROCE_PAUSES_RX = ("rx-stats", "rx-pfc-stats", "pause-packets")
ROCE_PAUSES_TX = ("tx-stats", "tx-pfc-stats", "pause-packets")
ROCE_ECN_MARKED = ("tx-stats", "tx-ecn-stats", "ecn-marked-packets")


def roce_counters(text: str, port: str | None, source: str, paths: tuple[tuple[str, ...], ...]) -> list[int]:
    """The counts at `paths` of `nv show interface P qos roce counters` (NVIDIA's CL 5.16 table)."""
    what = f"nv show interface {port} qos roce counters"
    tree = attribute_tree(text, source, what)
    return [_count(tree, path, source, what) for path in paths]


def parse_roce_counters(text: str, port: str | None, source: str = "<text>") -> list[Placed]:
    """The RoCE class's transmit discards for lack of buffer (`tx-roce-stats`; the second copy under
    `tx-cnp-stats` counts CNPs)."""
    [drops] = roce_counters(text, port, source, (ROCE_DISCARDS,))
    return [(port, QueueDrops(roce_class=drops))]


WATCHDOG_STATUS = ("OK", "DEADLOCK")


def parse_port_watchdog(text: str, port: str | None, source: str = "<text>") -> list[Placed]:
    """`nv show interface P qos pfc-watchdog` (QOS_GUIDE's sample): the operational `state` (the
    table prints `enabled|disabled`) and, per traffic class, OK or DEADLOCK. Whether the watchdog is
    configured on is the applied tree's (parse_applied_config); this view gives what it found."""
    what = f"nv show interface {port} qos pfc-watchdog"
    state = attribute_tree(text, source, what).get("state")
    if state not in ("enabled", "disabled"):
        raise ParseError(f"{what}: state {str(state)[:40]!r} is not enabled or disabled", source=source)
    stormed = []
    for row in section_rows(text, "PFC WD Status", source, what):
        if len(row) < 2:
            raise ParseError(f"{what}: a PFC WD Status row without its status: {row!r}", source=source)
        tc = number(row[0], source, f"{what} traffic-class", high=PRIORITIES[-1])
        if row[1] not in WATCHDOG_STATUS:
            raise ParseError(f"{what}: status {row[1][:40]!r} is not OK or DEADLOCK", source=source)
        if row[1] != "OK":
            stormed.append(tc)
    return [(port, WatchdogStatus(tuple(sorted(stormed))))]


def parse_port_link(text: str, port: str | None, source: str = "<text>") -> list[Placed]:
    """The speed the link trained at, the operational `speed` of `nv show interface P link` (NVIDIA's
    command reference table: `1G` operational under `auto` applied), in Mb/s; `auto` or an empty cell
    (nothing trained) is no speed. A speed NVUE does not spell is refused. The MTU is the applied
    tree's."""
    what = f"nv show interface {port} link"
    tree = attribute_tree(text, source, what)
    if "speed" not in tree:
        raise ParseError(f"{what}: no speed row", source=source)
    if tree["speed"] in ("", "auto"):  # a link that has not trained shows no rate
        return []
    return [(port, PortSpeed(_nvue_speed(tree["speed"], source, f"{what} speed")))]


def _nvue_speed(value: Any, source: str, what: str) -> int:
    match = _NVUE_SPEED.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ParseError(f"{what}: {str(value)[:20]!r} is not a link speed such as 400G", source=source)
    return int(match["rate"]) * (1000 if match["unit"] == "G" else 1)
