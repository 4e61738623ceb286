"""Desired state of a switch: the lossless class, its queues and every cabled port, from the intent.

One record per switch, platform-neutral: the templates of each platform render it, and the gate's
switch checks compare what a switch shows against it. Values the intent does not set (watchdog
timers, the default class's scheduler share) are the platforms' RoCE defaults, named here once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from fabcheck.desired.nic import counter_window
from fabcheck.intent.fabric import Fabric, Switch
from fabcheck.intent.model import FabricIntent, LinkHealth
from fabcheck.intent.platforms import platform_named

PRIORITY_COUNT = 8
DEFAULT_TRAFFIC_CLASS = 0
# PFC watchdog: detection and restoration 200 ms, drop on a storm (SONiC start_default, close to the
# Cumulus and EOS defaults); the intent enables it wherever PFC runs.
WATCHDOG_DETECTION_MS = 200
WATCHDOG_RESTORATION_MS = 200
WATCHDOG_ACTION = "drop"
# Lossless buffer where the platform makes it explicit (NVUE): PFC pauses nothing while 100 % of
# the buffer is in the lossy pool, so half moves to the lossless pool (NVIDIA's Flow Control Buffers
# example), and the PFC headroom is sized for 100 m cables (the value NVIDIA's RoCE preset uses).
LOSSLESS_POOL_PERCENT = 50
PFC_CABLE_LENGTH_M = 100
# SONiC's buffer bindings: a lossless ingress priority group holds BUFFER_PG profile "NULL" (the
# dynamic buffer model: buffermgrd sizes its headroom), and each lossless egress queue of a port with
# PFC holds the stock lossless queue profile. That is all a push binds: the lossy groups and queues
# keep whatever profile the switch gives them (on the dynamic model's Mellanox SKUs the lossy queues
# hold `q_lossy_profile`; `egress_lossy_profile` is the port-level profile of
# BUFFER_PORT_EGRESS_PROFILE_LIST: sonic-utilities tests/db_migrator_input/config_db/acs-msn4700-t1-
# version_3_0_3.json, cited in tests/data/real/sonic/INDEX.tsv), and so do the ports without PFC.
SONIC_LOSSY_PRIORITY_GROUP = 0
SONIC_DYNAMIC_LOSSLESS_PROFILE = "NULL"
# 202205: the first SONiC branch whose YANG takes the fragment fabcheck writes; the driver refuses older
# switches and the CONFIG_DB reader names it when it meets the pre-202111 reference syntax.
SONIC_MIN_RELEASE = (2022, 5)
SONIC_LOSSLESS_QUEUE_PROFILE = "egress_lossless_profile"
# NVUE's egress scheduler (NVIDIA's QoS guide, Egress Scheduler; CumulusNetworks/docs
# content/cumulus-linux-516/Layer-1-and-Switch-Ports/Quality-of-Service/_index.md): default-global
# holds all eight traffic classes, DWRR 12 % on 0,2,4,6 and 13 % on 1,3,5,7 from the factory (the
# same values in NVIDIA's published CL 5.5 NVUE API dump, tests/data/real/nvue/INDEX.tsv); a DWRR
# class takes bw-percent 1..100 and the shares of a profile must add up to at most 100.
NVUE_TRAFFIC_CLASSES = 8
NVUE_DWRR_TOTAL = 100
# What a traffic class no switch priority reaches gets: the smallest DWRR share NVUE takes (1 %).
# `nv unset` gives it back its factory 12-13 % (163 % in all with the RoCE classes' 50 + 50), and no
# NVUE value removes it from the schedule: the guide's range starts at 1, and in qos_features.conf,
# which NVUE writes, a 0 share means strict. Strict would let whatever lands there (no priority maps
# to it) starve the RoCE class; 1 % carries nothing and leaves the planned classes the rest.
NVUE_UNPLANNED_SHARE = 1


@dataclass(frozen=True)
class DesiredQueue:
    """One egress traffic class: scheduler share and ECN marking."""

    traffic_class: int
    scheduler: Literal["strict", "dwrr"]
    weight_percent: int | None  # dwrr only
    lossless: bool  # PFC protects it (and its ingress priority group)
    ecn: bool
    ecn_min_bytes: int | None
    ecn_max_bytes: int | None
    ecn_probability: int | None


# NVUE polls the PFC watchdog at a 100 ms step and detects (and restores) after `robustness` polls;
# EOS takes its timers in seconds and calls forwarding on a storm `no-drop`.
NVUE_WATCHDOG_POLL_MS = 100
EOS_WATCHDOG_ACTIONS = {"drop": "drop", "forward": "no-drop"}


@dataclass(frozen=True)
class PfcWatchdog:
    enabled: bool
    detection_ms: int
    restoration_ms: int
    action: str

    def settings(self, platform: str) -> tuple[tuple[str, str], ...]:
        """The watchdog settings in the platform's own names and units, as its show prints them and its
        templates write them (the gate's switch.watchdog_settings compares these; fabcheck.parsers.
        switch_* read them). Raises WatchdogUnrepresentable where the platform cannot express them."""
        if platform == "nvue":
            self._nvue_representable()
            robustness = self.detection_ms // NVUE_WATCHDOG_POLL_MS
            return (("polling-interval", str(NVUE_WATCHDOG_POLL_MS)), ("robustness", str(robustness)))
        if platform == "eos":
            if self.action not in EOS_WATCHDOG_ACTIONS:
                raise WatchdogUnrepresentable(
                    f"watchdog action {self.action}: EOS takes {', '.join(sorted(EOS_WATCHDOG_ACTIONS))}"
                )
            return (
                ("action", EOS_WATCHDOG_ACTIONS[self.action]),
                ("recovery-time", f"{self.restoration_ms / 1000:g}"),
                ("timeout", f"{self.detection_ms / 1000:g}"),
            )
        return (
            ("action", self.action),
            ("detection_time", str(self.detection_ms)),
            ("restoration_time", str(self.restoration_ms)),
        )

    def _nvue_representable(self) -> None:
        # NVUE detects after `robustness` polls, restores after as many clean ones, and only drops.
        if self.detection_ms < NVUE_WATCHDOG_POLL_MS or self.detection_ms % NVUE_WATCHDOG_POLL_MS:
            raise WatchdogUnrepresentable(
                f"watchdog detection_ms {self.detection_ms} is not a multiple of NVUE's "
                f"{NVUE_WATCHDOG_POLL_MS} ms polling step"
            )
        if self.restoration_ms != self.detection_ms:
            raise WatchdogUnrepresentable(
                f"watchdog restoration_ms {self.restoration_ms} differs from detection_ms "
                f"{self.detection_ms}; NVUE restores after as many polls as it detects"
            )
        if self.action != "drop":
            raise WatchdogUnrepresentable(f"watchdog action {self.action}: NVUE's PFC watchdog only drops")


class Unrepresentable(ValueError):
    """A desired value that has no form on the switch's platform (the render stops with it)."""


class WatchdogUnrepresentable(Unrepresentable):
    """The watchdog's timers or action have no form on the switch's platform."""


class ScheduleUnfit(Unrepresentable):
    """Queue shares that do not fit the platform's egress scheduler (NVUE: 1..100 each, <= 100 in all)."""


@dataclass(frozen=True)
class ScheduledClass:
    """One traffic class of the egress scheduler as the switch is written and runs it."""

    traffic_class: int
    mode: Literal["strict", "dwrr"]
    share: int | None  # DWRR weight (NVUE bw-percent); None for strict
    planned: bool  # a queue of the record; False: no switch priority reaches it


def nvue_schedule(queues: tuple[DesiredQueue, ...]) -> tuple[ScheduledClass, ...]:
    """NVUE's default-global egress scheduler, all eight classes: the planned queues with their shares,
    every other class NVUE_UNPLANNED_SHARE. Planned DWRR shares that do not fit beside those are
    scaled down in proportion (DWRR divides the link by the ratio of the shares, which scaling keeps,
    rounded down); ScheduleUnfit when a share is outside 1..100 or one would round to 0."""
    planned = {q.traffic_class: q for q in queues}
    for queue in queues:
        where = f"queue {queue.traffic_class}"
        if not 0 <= queue.traffic_class < NVUE_TRAFFIC_CLASSES:
            raise ScheduleUnfit(f"{where} is not one of NVUE's traffic classes 0-{NVUE_TRAFFIC_CLASSES - 1}")
        if queue.scheduler not in ("dwrr", "strict"):
            raise ScheduleUnfit(f"{where} scheduler {queue.scheduler} is not dwrr or strict")
        if queue.scheduler == "dwrr":
            share = queue.weight_percent
            if share is None or not 1 <= share <= NVUE_DWRR_TOTAL:
                raise ScheduleUnfit(f"{where} weight_percent {share} is not 1..100 (NVUE bw-percent)")
    unplanned = [tc for tc in range(NVUE_TRAFFIC_CLASSES) if tc not in planned]
    room = NVUE_DWRR_TOTAL - NVUE_UNPLANNED_SHARE * len(unplanned)
    wanted = {tc: q.weight_percent or 0 for tc, q in planned.items() if q.scheduler == "dwrr"}
    total = sum(wanted.values())
    shares = dict(wanted)
    if total > room:
        shares = {tc: share * room // total for tc, share in wanted.items()}
        small = sorted(tc for tc, share in shares.items() if share < 1)
        if small:
            raise ScheduleUnfit(
                f"the DWRR shares {_shares_text(wanted)} do not fit NVUE's 100 % beside "
                f"{len(unplanned)} unplanned class(es) at {NVUE_UNPLANNED_SHARE} %: scaled to {room} %, "
                f"queue(s) {', '.join(map(str, small))} would get 0"
            )
    schedule = []
    for tc in range(NVUE_TRAFFIC_CLASSES):
        planned_queue = planned.get(tc)
        if planned_queue is None:
            schedule.append(ScheduledClass(tc, "dwrr", NVUE_UNPLANNED_SHARE, planned=False))
        elif planned_queue.scheduler == "strict":
            schedule.append(ScheduledClass(tc, "strict", None, planned=True))
        else:
            schedule.append(ScheduledClass(tc, "dwrr", shares[tc], planned=True))
    return tuple(schedule)


def _shares_text(shares: dict[int, int]) -> str:
    return ", ".join(f"TC{tc} {share} %" for tc, share in sorted(shares.items()))


@dataclass(frozen=True)
class DesiredSwitchPort:
    port: str
    role: Literal["host", "uplink"]
    peer: str | None  # "gpu01:mlx5_0" from the cabling map; None for an uncabled host port
    speed_gbps: int | None  # None: the inventory does not say (uplinks without switch_port_speeds)
    mtu: int
    trust: str
    pfc_priorities: tuple[int, ...]
    pfc_watchdog: bool


@dataclass(frozen=True)
class DesiredSwitch:
    name: str
    platform: str
    device_type: str
    trust: str
    dscp_to_switch_priority_pairs: tuple[tuple[int, int], ...]
    switch_priority_to_traffic_class: tuple[int, ...]  # index = switch priority 0..7
    pfc_priorities: tuple[int, ...]
    lossless_traffic_class: int
    cnp_traffic_class: int
    queues: tuple[DesiredQueue, ...]
    watchdog: PfcWatchdog
    mtu: int
    ports: tuple[DesiredSwitchPort, ...]
    lossless_pool_percent: int = LOSSLESS_POOL_PERCENT  # of the switch's shared buffer; 0 = no PFC
    pfc_cable_length_m: int = PFC_CABLE_LENGTH_M
    # The wire checks' limits (the intent's link_health) and the counter window they are judged over:
    # what the gate judges, never what the switch_qos role writes (to_json leaves them out).
    link_health: LinkHealth = field(default_factory=LinkHealth)
    counter_window_s: int = 0

    @property
    def watchdog_settings(self) -> dict[str, str]:
        """The watchdog's settings in this switch's platform names and units (templates write these)."""
        return dict(self.watchdog.settings(self.platform))

    @property
    def watchdog_guarantees(self) -> dict[int, int]:
        """EOS: traffic class -> the bandwidth percent its tx-queue is guaranteed, for every lossless DWRR
        queue while the watchdog runs. Arista's PFC watchdog watches only PFC queues that have guaranteed
        bandwidth (EOS User Manual, DCBX and Flow Control; a later release lifts it on 7050X/7060X per
        Arista's PFC TOIs), so each gets its DWRR share as its guarantee: no queue gets more than the
        intent gives it. Other platforms watch every PFC class: none."""
        if self.platform != "eos" or not self.watchdog.enabled:
            return {}
        return {
            q.traffic_class: q.weight_percent
            for q in self.queues
            if q.lossless and q.scheduler == "dwrr" and q.weight_percent is not None
        }

    @property
    def egress_schedule(self) -> tuple[ScheduledClass, ...]:
        """The egress scheduler as this switch is written: NVUE's default-global, all eight classes
        (nvue_schedule; ScheduleUnfit when the shares cannot fit); elsewhere the planned queues."""
        if self.platform == "nvue":
            return nvue_schedule(self.queues)
        return tuple(
            ScheduledClass(
                q.traffic_class, q.scheduler, q.weight_percent if q.scheduler == "dwrr" else None, True
            )
            for q in self.queues
        )

    @property
    def dscp_to_switch_priority(self) -> dict[int, int]:
        return dict(self.dscp_to_switch_priority_pairs)

    @property
    def dscp_to_traffic_class(self) -> dict[int, int]:
        """SONiC's DSCP_TO_TC_MAP and EOS's `qos map dscp ... to traffic-class` need it directly."""
        return {d: self.switch_priority_to_traffic_class[p] for d, p in self.dscp_to_switch_priority_pairs}

    @property
    def traffic_pools(self) -> dict[str, int]:
        """NVUE's shared-buffer split: the lossless pool's share, the lossy pool the rest."""
        lossless = self.lossless_pool_percent
        return {"default-lossless": lossless, "default-lossy": 100 - lossless}

    def queue_buffers(self, port: DesiredSwitchPort) -> tuple[tuple[int, str], ...]:
        """SONiC's BUFFER_QUEUE of one port, as far as a push binds it: (queue, profile) of each lossless
        queue when the port runs PFC; none otherwise. Every other queue keeps the switch's binding."""
        if not port.pfc_priorities:
            return ()
        return tuple((q.traffic_class, SONIC_LOSSLESS_QUEUE_PROFILE) for q in self.queues if q.lossless)

    def priority_group(self, traffic_class: int) -> int:
        """SONiC's ingress priority group of a traffic class: its own if lossless, else the lossy one."""
        lossless = any(q.lossless and q.traffic_class == traffic_class for q in self.queues)
        return traffic_class if lossless else SONIC_LOSSY_PRIORITY_GROUP

    @property
    def traffic_class_to_queue(self) -> dict[int, int]:
        """SONiC's TC_TO_QUEUE_MAP: every class leaves by the queue of its own number (the queue the
        QUEUE, BUFFER_QUEUE and WRED settings of that class name)."""
        return {tc: tc for tc in range(len(self.switch_priority_to_traffic_class))}

    @property
    def traffic_class_to_priority_group(self) -> dict[int, int]:
        """SONiC's TC_TO_PRIORITY_GROUP_MAP: a lossless class has its own ingress group, the rest share
        the lossy one."""
        return {tc: self.priority_group(tc) for tc in range(len(self.switch_priority_to_traffic_class))}

    @property
    def pfc_priority_to_queue(self) -> dict[int, int]:
        """SONiC's MAP_PFC_PRIORITY_TO_QUEUE: a pause for priority p stops the queue of p's class."""
        return {
            p: self.traffic_class_to_queue[tc] for p, tc in enumerate(self.switch_priority_to_traffic_class)
        }

    @property
    def pfc_priority_to_priority_group(self) -> dict[int, int]:
        """SONiC's PFC_PRIORITY_TO_PRIORITY_GROUP_MAP: priority p pauses from its class's ingress group."""
        return {p: self.priority_group(tc) for p, tc in enumerate(self.switch_priority_to_traffic_class)}

    @property
    def pcp_to_traffic_class(self) -> dict[int, int]:
        """SONiC's DOT1P_TO_TC_MAP on a port that trusts PCP: the PCP value is the switch priority."""
        return dict(enumerate(self.switch_priority_to_traffic_class))

    def priority_group_buffers(self, port: DesiredSwitchPort) -> tuple[tuple[int, str], ...]:
        """SONiC's BUFFER_PG of one port: (priority group, profile) of each group its PFC priorities use."""
        groups = {self.priority_group(self.switch_priority_to_traffic_class[p]) for p in port.pfc_priorities}
        return tuple((group, SONIC_DYNAMIC_LOSSLESS_PROFILE) for group in sorted(groups))

    def queue(self, traffic_class: int) -> DesiredQueue | None:
        return next((q for q in self.queues if q.traffic_class == traffic_class), None)

    def port(self, name: str) -> DesiredSwitchPort:
        for port in self.ports:
            if port.port == name:
                return port
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        judged_only = ("link_health", "counter_window_s")
        data: dict[str, Any] = {
            key: _json_ready(item) for key, item in asdict(self).items() if key not in judged_only
        }
        data["dscp_to_switch_priority"] = {str(d): p for d, p in data.pop("dscp_to_switch_priority_pairs")}
        return data


def _json_ready(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    return value


def desired_switch(
    intent: FabricIntent, fabric: Fabric, name: str, counter_window_s: int = 0
) -> DesiredSwitch:
    """Pure: the fabric intent + the inventory's switch and cabling -> what switch `name` must hold."""
    switch = fabric.switch(name)
    lossless, cnp = intent.lossless, intent.cnp
    # Switch priority = traffic class for the two RoCE classes; every other priority rides TC0.
    sp_to_tc = tuple(
        prio if prio in (lossless.priority, cnp.priority) else DEFAULT_TRAFFIC_CLASS
        for prio in range(PRIORITY_COUNT)
    )
    pfc = (lossless.priority,) if lossless.pfc else ()
    dscp_map = {dscp: lossless.priority for dscp in lossless.dscp} | {cnp.dscp: cnp.priority}
    # A platform that caps the MTU below the intent's (EOS: 9214) gets its cap (its record's max_mtu).
    mtu = min(intent.mtu.switch, platform_named(switch.platform).max_mtu)
    return DesiredSwitch(
        name=switch.name,
        platform=switch.platform,
        device_type=switch.device_type,
        trust=intent.trust,
        dscp_to_switch_priority_pairs=tuple(sorted(dscp_map.items())),
        switch_priority_to_traffic_class=sp_to_tc,
        pfc_priorities=pfc,
        lossless_traffic_class=sp_to_tc[lossless.priority],
        cnp_traffic_class=sp_to_tc[cnp.priority],
        queues=_queues(intent, sp_to_tc[lossless.priority], sp_to_tc[cnp.priority]),
        watchdog=PfcWatchdog(bool(pfc), WATCHDOG_DETECTION_MS, WATCHDOG_RESTORATION_MS, WATCHDOG_ACTION),
        mtu=mtu,
        ports=_ports(intent, fabric, switch, mtu, pfc),
        link_health=intent.link_health,
        counter_window_s=counter_window(counter_window_s),
    )


def _queues(intent: FabricIntent, roce_tc: int, cnp_tc: int) -> tuple[DesiredQueue, ...]:
    """ETS as the RoCE recipe has it: CNP strict, RoCE and the default class DWRR 50 % each."""
    ecn = intent.ecn
    roce = DesiredQueue(
        traffic_class=roce_tc,
        scheduler="dwrr",
        weight_percent=50 if roce_tc != DEFAULT_TRAFFIC_CLASS else 100,
        lossless=intent.lossless.pfc,
        ecn=ecn.enabled,
        ecn_min_bytes=ecn.min_bytes if ecn.enabled else None,
        ecn_max_bytes=ecn.max_bytes if ecn.enabled else None,
        ecn_probability=ecn.probability if ecn.enabled else None,
    )
    strict = DesiredQueue(cnp_tc, "strict", None, False, False, None, None, None)
    queues = [roce, strict]
    if DEFAULT_TRAFFIC_CLASS not in (roce_tc, cnp_tc):
        queues.append(DesiredQueue(DEFAULT_TRAFFIC_CLASS, "dwrr", 50, False, False, None, None, None))
    return tuple(sorted(queues, key=lambda q: q.traffic_class))


def _ports(
    intent: FabricIntent, fabric: Fabric, switch: Switch, mtu: int, pfc: tuple[int, ...]
) -> tuple[DesiredSwitchPort, ...]:
    peers = {link.port: f"{link.host}:{link.nic}" for link in fabric.links_of_switch(switch.name)}
    speeds = switch.port_speeds
    ports = [
        DesiredSwitchPort(
            port=port,
            role="host",
            peer=peers.get(port),
            speed_gbps=speeds.get(port, intent.link.speed_gbps),
            mtu=mtu,
            trust=intent.trust,
            pfc_priorities=pfc,
            pfc_watchdog=bool(pfc),
        )
        for port in switch.host_ports
    ]
    ports += [
        DesiredSwitchPort(port, "uplink", None, speeds.get(port), mtu, intent.trust, pfc, bool(pfc))
        for port in switch.uplinks
    ]
    return tuple(ports)
