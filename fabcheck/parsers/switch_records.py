"""Platform-neutral records of what a switch shows, and the readers the three switch parsers share.

Each switch parser (`switch_nvue`, `switch_eos`, `switch_sonic`) turns one show command's output into
records of these types, each placed at the switch (port None) or at one of its ports. The switch
checks judge the records against the desired switch state without knowing the platform.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from fabcheck.errors import ParseError
from fabcheck.parsers._text import MAX_LINE_CHARS, strip_ansi
from fabcheck.parsers.numbers import read_int
from fabcheck.parsers.wire_records import LinkCounters, LinkDelta, ModuleOptics

PRIORITIES = range(8)  # switch priorities and traffic classes 0..7 on every platform here
MAX_DSCP = 63
# No show command here prints more than a few hundred KiB, even on a 128-port switch.
MAX_OUTPUT_CHARS = 16 * 1024 * 1024


@dataclass(frozen=True)
class Trust:
    """How the port classifies: 'dscp', 'pcp', or both ('pcp,dscp': DSCP wins for IP traffic)."""

    mode: str


@dataclass(frozen=True)
class DscpMap:
    """DSCP -> switch priority (NVUE) or -> traffic class (EOS, SONiC), as the platform maps it."""

    target: Literal["switch-priority", "traffic-class"]
    pairs: tuple[tuple[int, int], ...]

    @property
    def mapping(self) -> dict[int, int]:
        return dict(self.pairs)


@dataclass(frozen=True)
class PriorityMap:
    """Switch priority -> traffic class (NVUE's egress-queue-mapping)."""

    pairs: tuple[tuple[int, int], ...]

    @property
    def mapping(self) -> dict[int, int]:
        return dict(self.pairs)


@dataclass(frozen=True)
class PfcPriorities:
    """The priorities PFC is configured on, and (where the platform keeps them apart, NVUE's PFC
    profile) whether the port sends pause frames (tx) and honours them (rx) and the cable length its
    headroom is sized for; a priority is lossless only with both directions on."""

    priorities: tuple[int, ...]
    tx: bool = True
    rx: bool = True
    cable_length_m: int | None = None  # None: the platform shows no cable length

    @property
    def directions_off(self) -> tuple[str, ...]:
        return tuple(name for name, on in (("tx", self.tx), ("rx", self.rx)) if not on)


@dataclass(frozen=True)
class QueueEcn:
    traffic_class: int
    enabled: bool
    min_bytes: int | None
    max_bytes: int | None
    probability: int | None
    unit: str = "bytes"  # thresholds in another unit (EOS segments, milliseconds) are not comparable
    # Further drop-precedence colours the platform keeps apart (SONiC WRED yellow, red), each as
    # (colour, enabled, min bytes, max bytes, probability); the fields above are the green one.
    colours: tuple[tuple[str, bool, int | None, int | None, int | None], ...] = ()


@dataclass(frozen=True)
class EcnQueues:
    queues: tuple[QueueEcn, ...]

    def queue(self, traffic_class: int) -> QueueEcn | None:
        return next((q for q in self.queues if q.traffic_class == traffic_class), None)


@dataclass(frozen=True)
class QueueScheduler:
    traffic_class: int
    mode: str  # "strict", "dwrr" (WRR and round-robin spelled as dwrr), or what the platform said
    weight_percent: int | None


@dataclass(frozen=True)
class Schedulers:
    queues: tuple[QueueScheduler, ...]

    def queue(self, traffic_class: int) -> QueueScheduler | None:
        return next((q for q in self.queues if q.traffic_class == traffic_class), None)


@dataclass(frozen=True)
class WatchdogConfig:
    enabled: bool


@dataclass(frozen=True)
class WatchdogSettings:
    """The PFC watchdog's settings in the platform's own names and units, as its show prints them:
    NVUE `polling-interval` / `robustness`, SONiC PFC_WD `action` / `detection_time` /
    `restoration_time`, EOS `action` / `timeout` / `recovery-time`; an unset one is absent."""

    settings: tuple[tuple[str, str], ...]

    @property
    def mapping(self) -> dict[str, str]:
        return dict(self.settings)


@dataclass(frozen=True)
class WatchdogStatus:
    """Classes (NVUE: traffic classes; SONiC: queues) the PFC watchdog found stormed or deadlocked."""

    stormed: tuple[int, ...]


@dataclass(frozen=True)
class QueueGuarantees:
    """EOS, per port: the tx-queues with guaranteed bandwidth (traffic class, `percent 50` as the line
    words it), its own tx-queue lines over its service-profile's. EOS's PFC watchdog watches only these."""

    by_queue: tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class Mtu:
    mtu: int


@dataclass(frozen=True)
class PortSpeed:
    """The rate a port runs at, in Mb/s (SONiC's unit; NVUE's `400G` and EOS's bit/s converted); 0 for a
    link that is down (trained at no rate)."""

    mbps: int


@dataclass(frozen=True)
class TrafficPools:
    """The switch's shared buffer split (NVUE traffic pools): (pool, memory percent) in pool order."""

    pools: tuple[tuple[str, int], ...]

    @property
    def mapping(self) -> dict[str, int]:
        return dict(self.pools)


@dataclass(frozen=True)
class BufferBinding:
    """One buffer profile bound to a priority group or a range of them (or of queues) on a port."""

    span: str  # as the switch keys it: "3" or "3-4"
    members: tuple[int, ...]  # the groups or queues the span covers
    profile: str


@dataclass(frozen=True)
class BufferProfiles:
    """The buffer profiles bound to one port: its ingress priority groups (SONiC BUFFER_PG) and its
    egress queues (BUFFER_QUEUE), in span order."""

    priority_groups: tuple[BufferBinding, ...]
    queues: tuple[BufferBinding, ...]


@dataclass(frozen=True)
class QueueMaps:
    """SONiC, per port: the maps its PORT_QOS_MAP entry binds beyond the DSCP map, each as the entries of
    the bound map ((from, to) pairs), or None where the port binds none. Traffic class -> egress queue
    (TC_TO_QUEUE_MAP, tc_to_queue_map) and -> ingress priority group (TC_TO_PRIORITY_GROUP_MAP,
    tc_to_pg_map); PFC priority -> the queue its pause frames stop (MAP_PFC_PRIORITY_TO_QUEUE,
    pfc_to_queue_map) and -> the priority group whose headroom triggers them
    (PFC_PRIORITY_TO_PRIORITY_GROUP_MAP, pfc_to_pg_map); PCP -> traffic class (DOT1P_TO_TC_MAP,
    dot1p_to_tc_map) where the port classifies by PCP."""

    tc_to_queue: tuple[tuple[int, int], ...] | None
    tc_to_priority_group: tuple[tuple[int, int], ...] | None
    pfc_priority_to_queue: tuple[tuple[int, int], ...] | None
    pfc_priority_to_priority_group: tuple[tuple[int, int], ...] | None
    pcp_to_tc: tuple[tuple[int, int], ...] | None = None


@dataclass(frozen=True)
class QueueDrops:
    """Dropped packets per egress queue, or (NVUE) for the RoCE class only; a counter reading."""

    by_queue: tuple[tuple[int, int], ...] = ()
    roce_class: int | None = None  # NVUE's `unicast-no-buffer-discard` of the RoCE traffic

    def minus(self, earlier: QueueDrops) -> QueueDrops:
        """The counts since `earlier` (a counter that went backwards was cleared: count from zero)."""
        before = dict(earlier.by_queue)
        by_queue = tuple((q, _since(n, before.get(q, 0))) for q, n in self.by_queue)
        roce = None
        if self.roce_class is not None:
            roce = _since(self.roce_class, earlier.roce_class or 0)
        return QueueDrops(by_queue, roce)


def _since(now: int, before: int) -> int:
    return now - before if now >= before else now


@dataclass(frozen=True)
class LldpNeighbor:
    """Who the port hears over LLDP: the neighbour's system name ("" where it sends none) and port id
    (an interface name, or a MAC where the neighbour's agent sends that). `others`: further
    (system, port) neighbours the same port hears (a hub, a miswired breakout, a management port on a
    shared segment): the port is ambiguous, and only that port."""

    system: str
    port: str
    others: tuple[tuple[str, str], ...] = ()

    @property
    def ambiguous(self) -> bool:
        return bool(self.others)


@dataclass(frozen=True)
class ConfigText:
    """A whole configuration as the switch printed it, kept for the one check that compares running
    with startup through the platform's own reader of both (fabcheck.switch.platforms.<p>)."""

    text: str


@dataclass(frozen=True)
class RunningConfigText(ConfigText):
    """What runs now (NVUE: the applied revision)."""


@dataclass(frozen=True)
class StartupConfigText(ConfigText):
    """What a reboot loads (EOS startup-config, SONiC /etc/sonic/config_db.json, NVUE's startup revision)."""


Record = (
    LldpNeighbor
    | Trust
    | DscpMap
    | PriorityMap
    | PfcPriorities
    | EcnQueues
    | Schedulers
    | WatchdogConfig
    | WatchdogSettings
    | WatchdogStatus
    | QueueGuarantees
    | Mtu
    | PortSpeed
    | TrafficPools
    | BufferProfiles
    | QueueDrops
    | QueueMaps
    | RunningConfigText
    | StartupConfigText
    | LinkCounters  # the wire (issue 35): one reading; a counter probe's pair becomes a LinkDelta
    | LinkDelta
    | ModuleOptics
)
Placed = tuple[str | None, Record]  # (port, record); port None: the record holds for the whole switch


def parse_startup_text(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    """The saved configuration, whole: judged only against the running one."""
    return [(None, StartupConfigText(_whole_config(text, source, "the startup configuration")))]


def parse_running_text(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
    return [(None, RunningConfigText(_whole_config(text, source, "the running configuration")))]


def with_running_text(
    parse: Callable[[str, str | None, str], list[Placed]],
) -> Callable[[str, str | None, str], list[Placed]]:
    """A parser of the running configuration that also keeps it whole, for switch.startup_config:
    the config is read once and judged both ways."""

    @functools.wraps(parse)
    def parse_and_keep(text: str, port: str | None = None, source: str = "<text>") -> list[Placed]:
        return [*parse(text, port, source), *parse_running_text(text, port, source)]

    return parse_and_keep


def _whole_config(text: str, source: str, what: str) -> str:
    if len(text) > MAX_OUTPUT_CHARS:
        raise ParseError(f"{what}: {len(text):,} characters, more than any switch prints", source=source)
    if not text.strip():
        raise ParseError(f"{what}: empty output", source=source)
    return text


# -- readers shared by the platform parsers ---------------------------------------------------------


def load_json(text: str, source: str, what: str) -> Any:
    """JSON output of a show command; ParseError (never ValueError) for anything else."""
    if len(text) > MAX_OUTPUT_CHARS:
        raise ParseError(f"{what}: {len(text):,} characters, more than any switch prints", source=source)
    body = strip_ansi(text).strip()
    if not body:
        raise ParseError(f"{what}: empty output; expected JSON", source=source)
    if "\x00" in body:
        raise ParseError(f"{what}: NUL bytes in the output; expected JSON text", source=source)
    try:
        return json.loads(body, parse_constant=_refuse_constant, parse_float=_refuse_float)
    except ParseError as err:
        raise ParseError(f"{what}: {err.message}", source=source) from None
    except (ValueError, RecursionError) as err:
        # json says e.g. "Expecting value: line 1 column 1 (char 0)"; the int limit says "Exceeds ...".
        line = getattr(err, "lineno", None)
        raise ParseError(f"{what}: not JSON ({str(err)[:120]})", source=source, line=line) from None


def _refuse_constant(name: str) -> Any:
    raise ParseError(f"{name} is not a number any switch prints")


def _refuse_float(token: str) -> Any:
    if len(token) > 40:
        raise ParseError(f"a {len(token)}-character number")
    return float(token)


def obj(value: Any, source: str, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ParseError(f"{what}: expected a JSON object, got {_kind(value)}", source=source)
    return value


def field(tree: Mapping[str, Any], key: str, source: str, what: str) -> Any:
    if key not in tree:
        raise ParseError(f"{what}: no {key!r} key", source=source)
    return tree[key]


def entries(
    tree: Mapping[str, Any], key: str, source: str, what: str
) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(name, where, object) for each entry of the object tree[key]: `{"Ethernet1": {...}, ...}`."""
    for name, entry in obj(field(tree, key, source, what), source, f"{what} {key}").items():
        where = f"{what} {key} {str(name)[:60]}"
        yield str(name), where, obj(entry, source, where)


def number(value: Any, source: str, what: str, *, low: int = 0, high: int = 2**64 - 1) -> int:
    """A JSON integer, or a string of ASCII digits (SONiC keeps every field a string)."""
    if isinstance(value, bool):
        raise ParseError(f"{what}: {value!r} is not a number", source=source)
    if isinstance(value, int):
        result = value
    elif isinstance(value, str):
        result = read_int(value.strip(), source=source, what=what)
    else:
        raise ParseError(f"{what}: expected an integer, got {_kind(value)}", source=source)
    if not low <= result <= high:
        raise ParseError(f"{what}: {result} is outside {low}..{high}", source=source)
    return result


def class_number(value: Any, source: str, what: str) -> int:
    return number(value, source, what, high=PRIORITIES[-1])


def dscp_number(value: Any, source: str, what: str) -> int:
    return number(value, source, what, high=MAX_DSCP)


_ID_RANGE = re.compile(r"([0-9]{1,2})(?:-([0-9]{1,2}))?", re.ASCII)


def id_list(text: Any, source: str, what: str, *, high: int = PRIORITIES[-1]) -> tuple[int, ...]:
    """'3', '0,3', '0-2,6', '' or '-' (none) -> sorted numbers; anything else is a ParseError."""
    if not isinstance(text, str):
        raise ParseError(f"{what}: expected a list like '0,3', got {_kind(text)}", source=source)
    body = text.strip()
    if body in ("", "-"):
        return ()
    if len(body) > MAX_LINE_CHARS:
        raise ParseError(f"{what}: a {len(body):,}-character list", source=source)
    found: set[int] = set()
    for part in body.split(","):
        match = _ID_RANGE.fullmatch(part.strip())
        if match is None:
            raise ParseError(f"{what}: {part.strip()[:40]!r} is not a number or range", source=source)
        first, last = int(match[1]), int(match[2] or match[1])
        if first > last or last > high:
            raise ParseError(f"{what}: {part.strip()!r} is not a range within 0..{high}", source=source)
        found.update(range(first, last + 1))
    return tuple(sorted(found))


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__
