"""The read-only show commands the gate sends to each switch platform, one table per platform.

Each platform's record (fabcheck.intent.platforms) names its table here; `PROBES` is keyed by the
records, so a record that names no table here fails at import. A record type a platform's table
does not provide is one the platform does not report (EOS has no separate switch-priority map); a
check that needs it is skipped there with that reason. Every command is a `show`: nothing here
changes a switch: each is a show, `nv config show`, or a `cat` of the file a reboot loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from fabcheck.collect.probes import Probe, ReleaseRead
from fabcheck.intent.platforms import PLATFORMS, Platform, UnknownPlatform, resolve
from fabcheck.parsers import (
    switch_eos,
    switch_eos_wire,
    switch_lldp,
    switch_nvue,
    switch_nvue_wire,
    switch_sonic,
    switch_sonic_wire,
)
from fabcheck.parsers.switch_records import (
    BufferProfiles,
    DscpMap,
    EcnQueues,
    LldpNeighbor,
    Mtu,
    PfcPriorities,
    PortSpeed,
    PriorityMap,
    QueueDrops,
    QueueGuarantees,
    QueueMaps,
    RunningConfigText,
    Schedulers,
    StartupConfigText,
    TrafficPools,
    Trust,
    WatchdogConfig,
    WatchdogSettings,
    WatchdogStatus,
    parse_startup_text,
    with_running_text,
)
from fabcheck.parsers.wire_records import LinkDelta, ModuleOptics
from fabcheck.switch.platforms import eos, nvue, sonic

# The wire (fabcheck.parsers.switch_nvue_wire): error, discard and carrier counters, the PHY's post-FEC
# errors and raw BER (`link phy-detail` on CL 5.10-5.14, renamed `link phy health` from CL 5.15: each
# probe is sent only to the releases that have its name, from the release `nv show system` names; before
# CL 5.10 there is neither and the post-FEC counters are simply not read), and the module's DOM with its
# own thresholds (`platform transceiver <id>`, CL >= 5.11: before it switch.optics is a skip naming the
# release, not an error). The counter probes yield readings (LinkCounters) that collect merges per port
# and turns into what grew over the counter window (LinkDelta).
NVUE_WIRE_PROBES = (
    Probe(
        "nvue.counters",
        "switch-port",
        "nv show interface {port} counters",
        switch_nvue_wire.parse_counters,
        (LinkDelta,),
        counter=True,
    ),
    Probe(
        "nvue.phy_detail",
        "switch-port",
        "nv show interface {port} link phy-detail",
        switch_nvue_wire.parse_phy_detail,
        (LinkDelta,),
        counter=True,
        releases=((5, 10), (5, 15)),
    ),
    Probe(
        "nvue.phy_health",
        "switch-port",
        "nv show interface {port} link phy health",
        switch_nvue_wire.parse_phy_health,
        (LinkDelta,),
        counter=True,
        releases=((5, 15), None),
    ),
    Probe(
        "nvue.transceiver",
        "switch-port",
        "nv show platform transceiver {port}",
        switch_nvue_wire.parse_transceiver,
        (ModuleOptics,),
        releases=((5, 11), None),
    ),
)

# NVUE reads what is verified: everything fabcheck owns from the applied configuration tree (read once,
# also kept whole for switch.startup_config), and per port only what a configuration cannot show, in the
# table layouts of NVIDIA's real samples (fabcheck.parsers.switch_nvue).
NVUE_PROBES = (
    Probe(
        "nvue.applied_config",
        "switch",
        nvue.STARTUP_LAG_PROBES[0],
        with_running_text(switch_nvue.parse_applied_config),
        (
            Trust,
            DscpMap,
            PriorityMap,
            Schedulers,
            WatchdogSettings,
            TrafficPools,
            PfcPriorities,
            EcnQueues,
            WatchdogConfig,
            Mtu,
            RunningConfigText,
        ),
    ),
    Probe(
        "nvue.startup_config", "switch", nvue.STARTUP_LAG_PROBES[1], parse_startup_text, (StartupConfigText,)
    ),
    Probe(
        "nvue.watchdog",
        "switch-port",
        "nv show interface {port} qos pfc-watchdog",
        switch_nvue.parse_port_watchdog,
        (WatchdogStatus,),
    ),
    Probe(
        "nvue.link",
        "switch-port",
        "nv show interface {port} link",
        switch_nvue.parse_port_link,
        (PortSpeed,),
    ),
    Probe(
        "nvue.roce_counters",
        "switch-port",
        "nv show interface {port} qos roce counters",
        switch_nvue.parse_roce_counters,
        (QueueDrops,),
        counter=True,
    ),
    Probe("nvue.lldp", "switch", "nv show interface lldp", switch_lldp.parse_nvue_lldp, (LldpNeighbor,)),
    *NVUE_WIRE_PROBES,
)

EOS_PROBES = (
    Probe(
        "eos.running_config",
        "switch",
        eos.STARTUP_LAG_PROBES[0],
        with_running_text(switch_eos.parse_running_config),
        (DscpMap, WatchdogSettings, QueueGuarantees, RunningConfigText),
    ),
    Probe(
        "eos.startup_config", "switch", eos.STARTUP_LAG_PROBES[1], parse_startup_text, (StartupConfigText,)
    ),
    Probe(
        "eos.pfc",
        "switch",
        "show priority-flow-control | json",
        switch_eos.parse_pfc_status,
        (PfcPriorities, WatchdogConfig),
    ),
    Probe(
        "eos.qos_interfaces",
        "switch",
        "show qos interfaces | json",
        switch_eos.parse_qos_interfaces,
        (Trust, EcnQueues, Schedulers),
    ),
    # Read at the start and the end of the counter window: the MTU and speed from the later reading, the
    # discards and link status changes of each port as readings (LinkCounters) that collect merges with
    # the port's other counter views and turns into what grew between the two (LinkDelta).
    Probe(
        "eos.interfaces",
        "switch",
        "show interfaces | json",
        switch_eos_wire.parse_interfaces_and_counters,
        (Mtu, PortSpeed, LinkDelta),
        counter=True,
    ),
    Probe(
        "eos.watchdog_counters",
        "switch",
        "show priority-flow-control counters watchdog | json",
        switch_eos.parse_watchdog_counters,
        (WatchdogStatus,),
    ),
    Probe(
        "eos.queue_drops",
        "switch",
        "show interfaces counters queue detail | json",
        switch_eos.parse_queue_drops,
        (QueueDrops,),
        counter=True,
    ),
    Probe(
        "eos.interface_errors",
        "switch",
        "show interfaces counters errors | json",
        switch_eos_wire.parse_error_counters,
        (LinkDelta,),
        counter=True,
    ),
    Probe(
        "eos.phy_detail",
        "switch",
        "show interfaces phy detail | json",
        switch_eos_wire.parse_phy_detail,
        (LinkDelta,),
        counter=True,
    ),
    Probe(
        "eos.transceiver_dom",
        "switch",
        "show interfaces transceiver dom thresholds | json",
        switch_eos_wire.parse_transceiver_dom,
        (ModuleOptics,),
    ),
    Probe("eos.lldp", "switch", "show lldp neighbors | json", switch_lldp.parse_eos_lldp, (LldpNeighbor,)),
)

SONIC_PROBES = (
    Probe(
        "sonic.config_db",
        "switch",
        sonic.STARTUP_LAG_PROBES[0],
        with_running_text(switch_sonic.parse_config_db),
        (
            BufferProfiles,
            Trust,
            DscpMap,
            QueueMaps,
            PfcPriorities,
            EcnQueues,
            Schedulers,
            WatchdogConfig,
            WatchdogSettings,
            Mtu,
            PortSpeed,
            RunningConfigText,
        ),
    ),
    Probe(
        "sonic.startup_config",
        "switch",
        sonic.STARTUP_LAG_PROBES[1],
        parse_startup_text,
        (StartupConfigText,),
    ),
    Probe(
        "sonic.pfcwd_stats", "switch", "show pfcwd stats", switch_sonic.parse_pfcwd_stats, (WatchdogStatus,)
    ),
    Probe(
        "sonic.queue_counters",
        "switch",
        "show queue counters --json",
        switch_sonic.parse_queue_counters,
        (QueueDrops,),
        counter=True,
    ),
    Probe("sonic.lldp", "switch", "show lldp table", switch_lldp.parse_sonic_lldp, (LldpNeighbor,)),
    # The wire (fabcheck.parsers.switch_sonic_wire): three counter views of every port, each read at both
    # ends of the counter window and merged per port into what grew over it (LinkDelta), and the
    # modules' DOM with their thresholds.
    Probe(
        "sonic.wire_errors",
        "switch",
        switch_sonic_wire.ERRORS_COMMAND,
        switch_sonic_wire.parse_errors,
        (LinkDelta,),
        counter=True,
    ),
    Probe(
        "sonic.wire_fec",
        "switch",
        switch_sonic_wire.FEC_COMMAND,
        switch_sonic_wire.parse_fec_stats,
        (LinkDelta,),
        counter=True,
    ),
    Probe(
        "sonic.wire_flaps",
        "switch",
        switch_sonic_wire.FLAP_COMMAND,
        switch_sonic_wire.parse_flaps,
        (LinkDelta,),
        counter=True,
    ),
    Probe(
        "sonic.transceiver_dom",
        "switch",
        switch_sonic_wire.DOM_COMMAND,
        switch_sonic_wire.parse_transceiver_dom,
        (ModuleOptics,),
    ),
)


def _table(record: Platform) -> tuple[Probe, ...]:
    table = resolve(record.probes)
    if not isinstance(table, tuple) or not table or not all(isinstance(p, Probe) for p in table):
        raise UnknownPlatform(f"platform {record.name}: {record.probes} is not a tuple of probes")
    return table


# The tables above are defined before this line, so a record naming one of them resolves here.
PROBES: Mapping[str, tuple[Probe, ...]] = MappingProxyType(
    {name: _table(record) for name, record in PLATFORMS.items()}
)


# How a session learns the release of a platform that has probes bound to releases (read once, first).
RELEASE_READS: Mapping[str, ReleaseRead] = MappingProxyType(
    {"nvue": ReleaseRead("nvue.release", switch_nvue_wire.SHOW_SYSTEM, switch_nvue_wire.parse_release)}
)


def provided(platform: str) -> frozenset[type]:
    """Every record type the platform's probes yield."""
    return frozenset(kind for probe in PROBES.get(platform, ()) for kind in probe.provides)
