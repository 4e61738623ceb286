"""One record per switch platform: every fact about a platform that more than one layer needs, once.

The record lives in the intent layer because the intent reads it first (which platforms exist, how
each names its ports, which netmiko device type drives it); everything above reads the same record.
It holds plain facts only, and names the code of the upper layers by dotted name (`module:attribute`):
its push driver (fabcheck.switch), its gate probe table (fabcheck.collect) and its lab mock
(fabcheck_lab.mockswitch). The layer that owns each object resolves the name (`resolve`) when it
needs it, so this module imports nothing above fabcheck.errors and the import layers hold.

Dotted names rather than registration: with registration, whether a platform has a driver or a
mock depends on which modules happen to have been imported, and the record could not say what a
platform consists of. Here the record alone lists it, each upper layer imports only the code of
the platforms it is asked about (the switch_qos module loads one driver), and
tests/switch/test_platform_files.py resolves every name and checks what it finds.

Adding a platform: one `Platform` below, `templates/<template_folder>/switch.j2`, the driver class,
its parser module and probe table, and the mock device (docs/switches/index.md, "Adding a switch platform").
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from fabcheck.errors import FabcheckError

# Inventory groups `switches_<platform>` make a host a switch of that platform.
PLATFORM_GROUP_PREFIX = "switches_"


@dataclass(frozen=True)
class Platform:
    """What fabcheck knows of one switch platform (the network OS, not the hardware)."""

    name: str  # as the inventory spells it: group switches_<name>, switch_platform: <name>
    device_type: str  # the netmiko device_type that drives it
    port_name: re.Pattern[str]  # a front-panel port name as the platform prints it (breakouts included)
    port_example: str  # a port name or two, for messages
    max_mtu: int  # the largest MTU the platform takes on a front-panel port
    needs_enable: bool  # the session must `enable` before the privileged shows the gate sends
    template_folder: str  # templates/<template_folder>/switch.j2 renders one whole switch
    driver: str  # "module:Class" of its fabcheck.switch.driver.SwitchDriver
    probes: str  # "module:TABLE" of its gate probes (a tuple of fabcheck.collect.probes.Probe)
    # "module:function" (running text, startup text, rendered text) -> the parts a push of the rendered
    # config owns that a reboot would revert, one line each; [] when startup holds what runs (the gate's
    # switch.startup_config).
    startup_lag: str
    # Names of the probes the incast reads of each leaf: the gate's own (read once per capture) or
    # the incast's own versions (fabcheck.incast.capture.INCAST_OWN_PROBES).
    incast_probes: tuple[str, ...]
    mock: str  # "module:Class" of its lab mock (a fabcheck_lab.mockswitch.device.SwitchDevice)


NVUE = Platform(
    name="nvue",
    device_type="cumulus_linux",
    port_name=re.compile(r"swp[0-9]+(s[0-9]+)?"),
    port_example="swp1, swp1s0",
    max_mtu=9216,
    needs_enable=False,
    template_folder="nvue",
    driver="fabcheck.switch.platforms.nvue:NvueDriver",
    probes="fabcheck.collect.switch_probes:NVUE_PROBES",
    startup_lag="fabcheck.switch.platforms.nvue:startup_lag_lines",
    # Only NVUE shows the RoCE class's pause and ECN-mark counters per port: the incast reads them too.
    incast_probes=("incast.nvue.roce_counters", "nvue.watchdog"),
    mock="fabcheck_lab.mockswitch.nvue:NvueDevice",
)

SONIC = Platform(
    name="sonic",
    device_type="linux",  # SONiC is driven through its Linux shell (`config`, `show`)
    port_name=re.compile(r"Ethernet[0-9]+"),
    port_example="Ethernet0",
    max_mtu=9216,
    needs_enable=False,
    template_folder="sonic",
    driver="fabcheck.switch.platforms.sonic:SonicDriver",
    probes="fabcheck.collect.switch_probes:SONIC_PROBES",
    startup_lag="fabcheck.switch.platforms.sonic:startup_lag_lines",
    incast_probes=("sonic.queue_counters", "sonic.pfcwd_stats"),
    mock="fabcheck_lab.mockswitch.sonic:SonicDevice",
)

EOS = Platform(
    name="eos",
    device_type="arista_eos",
    port_name=re.compile(r"Ethernet[0-9]+(/[0-9]+){0,2}"),
    port_example="Ethernet1/1",
    max_mtu=9214,  # EOS refuses an MTU above 9214 on routed ports
    needs_enable=True,  # `show running-config` is a privileged command
    template_folder="eos",
    driver="fabcheck.switch.platforms.eos:EosDriver",
    probes="fabcheck.collect.switch_probes:EOS_PROBES",
    startup_lag="fabcheck.switch.platforms.eos:startup_lag_lines",
    incast_probes=("eos.queue_drops", "eos.watchdog_counters"),
    mock="fabcheck_lab.mockswitch.eos:EosDevice",
)

PLATFORMS: Mapping[str, Platform] = MappingProxyType({p.name: p for p in (NVUE, SONIC, EOS)})
# Platform name -> netmiko device_type: the view the lab's inventory and logins take.
DEVICE_TYPES: Mapping[str, str] = MappingProxyType({p.name: p.device_type for p in PLATFORMS.values()})


class UnknownPlatform(FabcheckError):
    """A platform name no record has, or a record naming code that does not exist."""


def platform_named(name: str) -> Platform:
    """The record of platform `name`; an error listing the known platforms otherwise."""
    try:
        return PLATFORMS[name]
    except KeyError:
        raise UnknownPlatform(f"unknown switch platform {name!r}; known: {', '.join(PLATFORMS)}") from None


def resolve(dotted: str) -> object:
    """The object a record names as `module:attribute`, imported now.

    Called by the layer that owns the object (the switch layer for drivers, collect for probes, the
    lab for mocks), never by the intent layer itself."""
    module_name, sep, attribute = dotted.partition(":")
    if not sep or not module_name or not attribute:
        raise UnknownPlatform(f"{dotted!r}: expected 'module:attribute'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise UnknownPlatform(f"{dotted!r}: cannot import {module_name}: {err}") from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise UnknownPlatform(f"{dotted!r}: {module_name} has no {attribute}") from None
