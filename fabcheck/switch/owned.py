"""What a push writes, as field keys: the raw material of the owned-field invariant (pure).

A push writes the rendered configuration plus what its driver takes back (NVUE `nv unset` of stale
entries and foreign per-port profiles, EOS `no` lines inside the blocks it renders, SONiC patch
removals of the entries it owns). Each platform module turns its own config text into settings
(`settings` of fabcheck.switch.platforms.<name>) and their `WrittenField`s: one key per setting, in the
platform's own words, with every id the setting is keyed by replaced by a placeholder (a managed
port by `<port>`, a DSCP by `<d>`, a traffic class by `<tc>` ...), so one key stands for the setting
on every port and every class. A port the push does not manage keeps its name: a key that names it
is never one the push writes.

fabcheck.checks.switch maps each key to the gate check that judges it (one declaration per key)
and derives its owned-field table from the renders of REFERENCE_INTENTS and PORT_VARIANTS on every
platform (`reference_fields`); tests/invariant/test_written_fields.py holds the push and the gate's
managed views (switch.startup_config) to those keys.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabcheck.desired.switch import DesiredSwitch, desired_switch
from fabcheck.intent.fabric import InventoryNode, read_fabric
from fabcheck.intent.model import FabricIntent
from fabcheck.switch.render import render_switch

PORT = "<port>"


@dataclass(frozen=True, order=True)
class WrittenField:
    """One setting a push writes: its key (ids as placeholders) and the managed port it is written
    for (None: switch-wide)."""

    field: str
    port: str | None = None

    @property
    def scope(self) -> str:
        return "port" if PORT in self.field else "switch"


def _placeholders(words: Sequence[str], keyed: Mapping[str, str]) -> tuple[list[str | None], bool]:
    """For each word, the placeholder it becomes (None: a word of the key itself), and whether the
    word after the last would be an id. A word after a keyword of `keyed` is an id, unless the
    keyword itself follows an id (then it names an attribute: NVUE's `dscp 26 switch-priority 3`
    maps DSCP 26 to priority 3, its `pfc default-global switch-priority 3` lists priority 3)."""
    found: list[str | None] = []
    pending: str | None = None
    for word in words:
        if pending is not None:
            found.append(pending)
            pending = None
            continue
        found.append(None)
        after_id = len(found) >= 2 and found[-2] is not None
        pending = None if after_id else keyed.get(word)
    return found, pending is not None


def ends_with_id(words: Sequence[str], keyed: Mapping[str, str]) -> bool:
    """Whether the last of `words` is an id (`... switch-priority 3`), not a value."""
    return bool(words) and _placeholders(words[:-1], keyed)[1]


def normalise(words: Sequence[str], keyed: Mapping[str, str], ports: Collection[str]) -> list[WrittenField]:
    """The keys of a path of words (see `_placeholders`). An id list of ports (`swp1,swp2`) gives one
    key per port; a port not in `ports` keeps its name."""
    placeholders, _ = _placeholders(words, keyed)
    key = [placeholder or word for word, placeholder in zip(words, placeholders, strict=True)]
    at = next((index for index, placeholder in enumerate(placeholders) if placeholder == PORT), None)
    if at is None:
        return [WrittenField(" ".join(key))]
    fields = []
    for port in words[at].split(","):
        managed = port in ports
        key[at] = PORT if managed else port
        fields.append(WrittenField(" ".join(key), port if managed else None))
    return fields


# A setting as a config holds it: its key, and the setting with its value in the platform's words.
Setting = tuple[WrittenField, str]


def settings_of(platform: str) -> Callable[[str, Collection[str]], set[Setting]]:
    """The platform module's `settings(text, ports)`: its config text (a render, or the running or
    startup configuration the gate reads) -> each setting with its key."""
    module = importlib.import_module(f"fabcheck.switch.platforms.{platform}")
    found: Callable[[str, Collection[str]], set[Setting]] = module.settings
    return found


def written_fields(platform: str, text: str, ports: Collection[str]) -> set[WrittenField]:
    """The keys of the settings `text` holds."""
    return {field for field, _setting in settings_of(platform)(text, ports)}


# -- the reference renders: what the owned-field table is derived from ------------------------------

# Ports of the reference switch of each platform: three host ports (the first cabled) and an uplink.
REFERENCE_PORTS: Mapping[str, tuple[str, ...]] = {
    "nvue": ("swp1", "swp2", "swp3", "swp4"),
    "sonic": ("Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"),
    "eos": ("Ethernet1", "Ethernet2", "Ethernet3", "Ethernet4"),
}
# The default intent and intents that change every value a template spells: other classes and DSCPs,
# PCP trust, ECN off and other ECN thresholds, PFC (and with it the watchdog and the lossless
# buffer) off, another MTU.
REFERENCE_INTENTS: Mapping[str, Mapping[str, Any]] = {
    "default": {},
    "non-default": {
        "lossless": {"dscp": [24, 28], "priority": 4},
        "cnp": {"dscp": 46, "priority": 5},
        "roce_tos": 98,
        "ecn": {"min_bytes": 200000, "max_bytes": 2000000, "probability": 50},
        "mtu": {"switch": 9100},
    },
    "pfc-only": {"congestion_control": "pfc_only", "ecn": {"enabled": False}},
    "ecn-only": {"congestion_control": "ecn_only", "lossless": {"pfc": False}},
    "pcp-trust": {"trust": "pcp"},
}


def _second_port_lossy(switch: DesiredSwitch) -> DesiredSwitch:
    """One port without PFC and its watchdog, one with another MTU (what per-port lines look like)."""
    ports = list(switch.ports)
    ports[1] = dataclasses.replace(ports[1], pfc_priorities=(), pfc_watchdog=False)
    ports[2] = dataclasses.replace(ports[2], mtu=1500)
    return dataclasses.replace(switch, ports=tuple(ports))


def _watchdog_off_on_one_port(switch: DesiredSwitch) -> DesiredSwitch:
    ports = list(switch.ports)
    ports[1] = dataclasses.replace(ports[1], pfc_watchdog=False)
    return dataclasses.replace(switch, ports=tuple(ports))


def _one_port_trusts_pcp(switch: DesiredSwitch) -> DesiredSwitch:
    """A port classifying by PCP while the others use DSCP (EOS: its own class lines, watchdog too)."""
    ports = list(switch.ports)
    ports[1] = dataclasses.replace(ports[1], trust="pcp")
    return dataclasses.replace(switch, ports=tuple(ports))


# Per-port variants of the default intent, by the platforms that can render them (NVUE keeps PFC
# priorities switch-wide: a port without PFC is a render error there, by design).
PORT_VARIANTS: Mapping[str, tuple[Callable[[DesiredSwitch], DesiredSwitch], tuple[str, ...]]] = {
    "one port lossy": (_second_port_lossy, ("sonic", "eos")),
    "watchdog off on one port": (_watchdog_off_on_one_port, ("nvue", "sonic", "eos")),
    "one port trusts PCP": (_one_port_trusts_pcp, ("eos",)),
}


def reference_switch(platform: str, intent: Mapping[str, Any] | None = None) -> DesiredSwitch:
    """The desired state of the reference switch of `platform` under `intent` (an intent mapping)."""
    ports = REFERENCE_PORTS[platform]
    name = f"ref-{platform}"
    switch = InventoryNode(
        name,
        (f"switches_{platform}",),
        {
            "switch_address": "192.0.2.1",
            "switch_username": "admin",
            "switch_password": "{{ lookup('ansible.builtin.env', 'P') }}",
            "switch_ports": list(ports[:3]),
            "switch_uplinks": list(ports[3:]),
        },
        {},
    )
    gpu = InventoryNode(
        "gpu01", ("gpu_hosts",), {"fabric_links": {"mlx5_0": f"{name}:{ports[0]}"}}, {0: "mlx5_0"}
    )
    fabric = read_fabric([switch, gpu], lambda _value: "")
    return desired_switch(FabricIntent.model_validate(dict(intent or {})), fabric, name)


def reference_switches(platform: str) -> dict[str, DesiredSwitch]:
    """Every reference desired state of `platform`, by name."""
    found = {name: reference_switch(platform, intent) for name, intent in REFERENCE_INTENTS.items()}
    for name, (variant, platforms) in PORT_VARIANTS.items():
        if platform in platforms:
            found[name] = variant(found["default"])
    return found


def managed_port_names(switch: DesiredSwitch) -> tuple[str, ...]:
    return tuple(port.port for port in switch.ports)


def rendered_fields(switch: DesiredSwitch) -> set[WrittenField]:
    """The keys the render of `switch` writes."""
    return written_fields(switch.platform, render_switch(switch).text, managed_port_names(switch))


@functools.cache
def reference_fields(platform: str) -> frozenset[str]:
    """The keys the reference renders of `platform` write, and the keys its driver owns beyond any
    render (`DRIVER_OWNED` of the platform module: NVUE's per-port profile bindings it unbinds)."""
    keys = {
        field.field for switch in reference_switches(platform).values() for field in rendered_fields(switch)
    }
    module = importlib.import_module(f"fabcheck.switch.platforms.{platform}")
    return frozenset(keys | set(getattr(module, "DRIVER_OWNED", ())))
