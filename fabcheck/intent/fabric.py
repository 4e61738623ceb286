"""The physical fabric from the inventory: switches (platform, address, ports) and the cabling map.

Switches are inventory hosts of group `switches_<platform>` (or with a `switch_platform` variable),
for a platform of fabcheck.intent.platforms, whose record says how that platform names its ports.
The cabling map is per GPU host, `fabric_links: {mlx5_0: leaf01:swp1}`: which switch port each NIC
plugs into; a switch's own `fabric_links: {swp33: spine-01:swp1}` cables one of its `switch_uplinks` to
another switch's (issue 39: leaf-spine, spine-core), the lower tier (`switch_tier`) at end `a`. The
gate judges both ends of every link against each other from it, and the switch roles configure exactly
the ports it names, so every problem in it is an error naming the file, line and variable, never a
silent default.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fabcheck.errors import IntentError
from fabcheck.intent.ib_fabric import (
    DESCRIPTION_VAR,
    HOSTNAME_VAR,
    PORT_COUNT_VAR,
    IbPlan,
    carries_ib_links,
    is_ib_switch,
    read_ib_plan,
)
from fabcheck.intent.model import NIC_NAME_PATTERN, FabricIntent, is_safe_nic_name
from fabcheck.intent.nvlink import NVLINK_ADDRESS_VAR, GroupTree, NvlinkPlan, group_tree, read_nvlink_plan
from fabcheck.intent.platforms import PLATFORM_GROUP_PREFIX, PLATFORMS, Platform

GPU_HOSTS = "gpu_hosts"
SUBNET_MANAGERS = "subnet_managers"
INTENT_VAR = "fabric_intent"
LINKS_VAR = "fabric_links"
TIER_VAR = "switch_tier"
SWITCH_TIERS = ("leaf", "spine", "core")  # lowest first: a switch-to-switch cable's `a` end is the lower

DEFAULT_SSH_PORT = 22

# The inventory's Ethernet switch and cabling variables: (variable, set on, default, meaning);
# docs/intent.md's table is generated from these (scripts/gen_docs, block switch-inventory).
INVENTORY_VARIABLES = (
    (
        f"group `{PLATFORM_GROUP_PREFIX}<platform>`",
        "Ethernet switch",
        "required (or switch_platform)",
        f"its platform ({', '.join(PLATFORMS)}); under group switches, which the switch play logs in to",
    ),
    ("switch_address", "Ethernet switch", "required", "the address the switch stage and roles log in to"),
    ("switch_port", "Ethernet switch", str(DEFAULT_SSH_PORT), "its SSH port"),
    ("switch_username", "Ethernet switch", "required", "the login user"),
    ("switch_password", "Ethernet switch", "none", "from ansible-vault or a lookup; plain text is refused"),
    (
        "switch_ports",
        "Ethernet switch",
        "required on a leaf",
        "the host-facing ports in the platform's names (`swp1`, `swp1s0`, `Ethernet0`, `Ethernet1/1`); "
        "a spine or core with switch_uplinks may have none",
    ),
    ("switch_uplinks", "Ethernet switch", "none", "every port facing another switch, up or down"),
    (
        "switch_port_speeds",
        "Ethernet switch",
        "host ports: link.speed_gbps",
        "`{port: Gb/s}` of host ports or uplinks",
    ),
    (
        TIER_VAR,
        "Ethernet switch",
        SWITCH_TIERS[0],
        f"{', '.join(SWITCH_TIERS)}: a switch-to-switch cable joins a lower tier (end `a`) to a higher one",
    ),
    (
        LINKS_VAR,
        "Ethernet switch",
        "none",
        "uplink -> `switch:port` (an uplink of a switch of another tier); each cable once at either end, or "
        "at both when they agree",
    ),
    (LINKS_VAR, "GPU host", "none", "NIC -> `switch:port` (one of that switch's switch_ports)"),
)

Where = Callable[[Any], str]  # a loaded value -> "file:line: " (or "" when unknown)


@dataclass(frozen=True)
class Switch:
    """One managed switch: how to reach it and which of its ports face GPU hosts or other switches."""

    name: str
    platform: str
    device_type: str
    address: str
    ssh_port: int
    username: str
    host_ports: tuple[str, ...]
    uplinks: tuple[str, ...]
    port_speed_pairs: tuple[tuple[str, int], ...]  # explicit per-port speeds (Gb/s); others: the intent's
    tier: str = "leaf"  # SWITCH_TIERS; a spine or core may have no host ports, only uplinks

    @property
    def port_speeds(self) -> dict[str, int]:
        return dict(self.port_speed_pairs)


@dataclass(frozen=True)
class Link:
    """One cable: a host NIC at one end, a switch port at the other."""

    host: str
    nic: str
    switch: str
    port: str

    @property
    def switch_end(self) -> str:
        return f"{self.switch}:{self.port}"


@dataclass(frozen=True)
class SwitchLink:
    """One cable between two Ethernet switches (issue 39), from a switch's `fabric_links: {swp33:
    spine-01:swp1}`: `a` the lower tier's end (a leaf's uplink), `b` the upper tier's (`switch_tier`:
    leaf, spine, core; default leaf). Both ports are among their switch's switch_uplinks."""

    a_switch: str
    a_port: str
    b_switch: str
    b_port: str

    @property
    def label(self) -> str:
        return f"{self.a_switch}:{self.a_port} -- {self.b_switch}:{self.b_port}"


@dataclass(frozen=True)
class Fabric:
    switches: tuple[Switch, ...]
    links: tuple[Link, ...]
    ib: IbPlan = field(default_factory=IbPlan)  # InfiniBand switches and cables (intent.ib_fabric)
    nvlink: NvlinkPlan = field(default_factory=NvlinkPlan)  # NVLink domains (intent.nvlink)
    switch_links: tuple[SwitchLink, ...] = ()  # Ethernet switch-to-switch cables (leaf-spine, spine-core)

    def switch(self, name: str) -> Switch:
        for switch in self.switches:
            if switch.name == name:
                return switch
        raise KeyError(name)

    def links_of_switch(self, name: str) -> tuple[Link, ...]:
        return tuple(link for link in self.links if link.switch == name)


@dataclass(frozen=True)
class InventoryNode:
    """What this module needs of an inventory host: its name, groups, raw variables and rail NICs."""

    name: str
    groups: tuple[str, ...]
    variables: Mapping[str, Any]
    rails: Mapping[int, str]
    intent: FabricIntent | None = None  # the host's validated intent, when the caller has it


def read_fabric(
    nodes: Sequence[InventoryNode],
    where: Where,
    *,
    secrets_checked: bool = True,
    groups: GroupTree | None = None,
) -> Fabric:
    """Switches and cabling of an inventory; IntentError listing every problem at once.

    `secrets_checked=False` for variables that are already templated (a vaulted value is plain text
    by then), where the plain-text-password rule cannot be told apart from a decrypted secret.
    `groups`: the inventory's group hierarchy, where the NVLink domains are read from (None: not read)."""
    problems: list[str] = []
    switches = [
        s
        for s in (_switch(n, where, problems, secrets_checked) for n in nodes if _is_switch(n))
        if s is not None
    ]
    by_name = {s.name: s for s in switches}
    # An ib host's fabric_links cable its HCAs to IB switches (`mlx5_0: leaf01/1`): the IB plan reads them.
    ethernet = [node for node in nodes if GPU_HOSTS in node.groups and not carries_ib_links(node)]
    links: list[Link] = []
    for node in ethernet:
        links += _links(node, by_name, where, problems)
    problems += _cabled_twice(links, nodes, where)
    if switches:
        problems += _uncabled_rails(ethernet, links, where)
    switch_links = _switch_links(nodes, by_name, where, problems)
    ib, ib_problems = read_ib_plan(nodes, where)
    problems += ib_problems
    nvlink, nvlink_problems = read_nvlink_plan(nodes, where, groups)
    problems += nvlink_problems
    problems += _subnet_manager_problems(nodes, where)
    if problems:
        raise IntentError(problems)
    ordered = tuple(sorted(switches, key=lambda s: s.name))
    return Fabric(ordered, tuple(links), ib, nvlink, switch_links)


def _is_switch(node: InventoryNode) -> bool:
    """An Ethernet switch the switch stage logs in to (an IB switch is never one: read_ib_plan refuses
    a node that claims both)."""
    if is_ib_switch(node):
        return False
    return "switch_platform" in node.variables or any(
        g.startswith(PLATFORM_GROUP_PREFIX) for g in node.groups
    )


def _switch(node: InventoryNode, where: Where, problems: list[str], secrets_checked: bool) -> Switch | None:
    found: list[str] = []

    def bad(var: str, value: Any, message: str, *, secret: bool = False) -> None:
        shown = "<redacted>" if secret else _shown(value)  # never echo a secret
        found.append(f"{where(value)}{node.name}: {var} = {shown}: {message}")

    variables = node.variables
    platform = _platform(node, bad)
    record = PLATFORMS.get(platform or "")
    device_type = record.device_type if record is not None else ""
    given_type = variables.get("netmiko_device_type")
    if platform and given_type is not None and str(given_type) != device_type:
        bad("netmiko_device_type", given_type, f"platform {platform} is driven as {device_type}")
    address = _text(variables, "switch_address", bad)
    username = _text(variables, "switch_username", bad)
    ssh_port = _ssh_port(variables.get("switch_port", DEFAULT_SSH_PORT), bad)
    if secrets_checked:
        _password_kept_secret(variables.get("switch_password"), bad)
    tier = _tier(variables.get(TIER_VAR, SWITCH_TIERS[0]), bad)
    uplinks = _ports(variables, "switch_uplinks", record, bad, required=False)
    # A spine or core faces only switches: its host ports may be absent when it has uplinks.
    spine_only = tier != SWITCH_TIERS[0] and bool(uplinks)
    host_ports = _ports(variables, "switch_ports", record, bad, required=not spine_only)
    both = sorted(set(host_ports) & set(uplinks))
    if both:
        bad("switch_uplinks", variables.get("switch_uplinks"), f"{both} are also host-facing switch_ports")
    speeds = _speeds(variables.get("switch_port_speeds", {}), set(host_ports) | set(uplinks), bad)
    problems += found
    if platform is None:
        return None
    # A switch with other problems is still returned: its links are judged too (no cascaded
    # "unknown switch" errors), and read_fabric raises with everything found.
    return Switch(
        name=node.name,
        platform=platform,
        device_type=device_type,
        address=address,
        ssh_port=ssh_port,
        username=username,
        host_ports=host_ports,
        uplinks=uplinks,
        port_speed_pairs=tuple(sorted(speeds.items())),
        tier=tier,
    )


def _tier(value: Any, bad: Callable[[str, Any, str], None]) -> str:
    if value not in SWITCH_TIERS:
        bad(TIER_VAR, value, f"expected one of {', '.join(SWITCH_TIERS)}")
        return SWITCH_TIERS[0]
    return str(value)


def _platform(node: InventoryNode, bad: Callable[[str, Any, str], None]) -> str | None:
    allowed = ", ".join(sorted(PLATFORMS))
    from_groups = sorted(
        g.removeprefix(PLATFORM_GROUP_PREFIX) for g in node.groups if g.startswith(PLATFORM_GROUP_PREFIX)
    )
    declared = node.variables.get("switch_platform")
    if declared is not None:
        name = str(declared)
        if name not in PLATFORMS:
            bad("switch_platform", declared, f"no templates or driver for this platform; allowed: {allowed}")
            return None
        if from_groups and from_groups != [name]:
            groups = ", ".join(PLATFORM_GROUP_PREFIX + g for g in from_groups)
            bad("switch_platform", declared, f"contradicts its group(s) {groups}")
            return None
        return name
    if len(from_groups) != 1 or from_groups[0] not in PLATFORMS:
        groups = ", ".join(PLATFORM_GROUP_PREFIX + g for g in from_groups)
        bad(
            "groups",
            groups,
            f"a switch needs exactly one platform group of {PLATFORM_GROUP_PREFIX}{{{allowed}}} "
            "(or switch_platform)",
        )
        return None
    return from_groups[0]


def _text(variables: Mapping[str, Any], var: str, bad: Callable[[str, Any, str], None]) -> str:
    value = variables.get(var)
    if value is None or not isinstance(value, str) or not value.strip():
        bad(var, value, "required: a non-empty string")
        return ""
    return str(value)


def _ssh_port(value: Any, bad: Callable[[str, Any, str], None]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= int(value) <= 65535:
        bad("switch_port", value, "expected a TCP port 1..65535")
        return DEFAULT_SSH_PORT
    return int(value)


def _password_kept_secret(value: Any, bad: Callable[..., None]) -> None:
    """A switch password comes from ansible-vault or a lookup (environment, file), never plain text."""
    if value is None:
        return
    from ansible.parsing.vault import EncryptedString

    if isinstance(value, EncryptedString) or (isinstance(value, str) and "{{" in value):
        return
    bad(
        "switch_password",
        value,
        "a password in plain text in the inventory: encrypt it with ansible-vault "
        "or read it with lookup('ansible.builtin.env', ...)",
        secret=True,
    )


def _ports(
    variables: Mapping[str, Any],
    var: str,
    record: Platform | None,
    bad: Callable[[str, Any, str], None],
    *,
    required: bool,
) -> tuple[str, ...]:
    value = variables.get(var)
    if value is None and not required:
        return ()
    if not isinstance(value, (list, tuple)) or (required and not value):
        bad(
            var,
            value,
            "expected a list of port names"
            + (
                " (the ports facing GPU hosts; a spine or core may give switch_uplinks instead)"
                if required
                else ""
            ),
        )
        return ()
    ports = [str(p) for p in value]
    if record is not None:
        wrong = [p for p in ports if not record.port_name.fullmatch(p)]
        if wrong:
            bad(var, value, f"{wrong} are not {record.name} port names (like {record.port_example})")
    twice = sorted({p for p in ports if ports.count(p) > 1})
    if twice:
        bad(var, value, f"{twice} listed more than once")
    return tuple(ports)


def _speeds(value: Any, known: set[str], bad: Callable[[str, Any, str], None]) -> dict[str, int]:
    if not isinstance(value, Mapping):
        bad("switch_port_speeds", value, "expected a mapping port -> Gb/s")
        return {}
    speeds: dict[str, int] = {}
    for port, speed in value.items():
        if str(port) not in known:
            bad("switch_port_speeds", port, "not one of switch_ports or switch_uplinks")
        elif isinstance(speed, bool) or not isinstance(speed, int) or speed < 1:
            bad(f"switch_port_speeds.{port}", speed, "expected a speed in Gb/s (a positive integer)")
        else:
            speeds[str(port)] = int(speed)
    return speeds


def _links(
    node: InventoryNode, switches: Mapping[str, Switch], where: Where, problems: list[str]
) -> list[Link]:
    raw = node.variables.get(LINKS_VAR)
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        problems.append(f"{where(raw)}{node.name}: {LINKS_VAR}: expected a mapping NIC -> 'switch:port'")
        return []
    links = []
    for nic, end in raw.items():
        var = f"{LINKS_VAR}.{nic}"
        if not isinstance(nic, str) or not is_safe_nic_name(nic):
            problems.append(
                f"{where(nic)}{node.name}: {var}: {_shown(nic)} is not a usable NIC name "
                f"(allowed {NIC_NAME_PATTERN})"
            )
            continue
        switch_name, sep, port = str(end).rpartition(":")
        if not sep or not switch_name or not port:
            problems.append(f"{where(end)}{node.name}: {var} = {_shown(end)}: expected 'switch:port'")
            continue
        switch = switches.get(switch_name)
        if switch is None:
            known = ", ".join(sorted(switches)) or "none"
            problems.append(
                f"{where(end)}{node.name}: {var} = {_shown(end)}: unknown switch {switch_name!r} "
                f"(switches: {known})"
            )
            continue
        if port not in switch.host_ports:
            problems.append(
                f"{where(end)}{node.name}: {var} = {_shown(end)}: {port} is not one of "
                f"{switch_name}'s switch_ports ({', '.join(switch.host_ports)})"
            )
            continue
        links.append(Link(node.name, str(nic), switch_name, port))
    return links


def _cabled_twice(links: Iterable[Link], nodes: Sequence[InventoryNode], where: Where) -> list[str]:
    ends: dict[str, list[Link]] = {}
    for link in links:
        ends.setdefault(link.switch_end, []).append(link)
    variables = {node.name: node.variables for node in nodes}
    problems = []
    for end, cabled in sorted(ends.items()):
        if len(cabled) > 1:
            first = variables[cabled[1].host][LINKS_VAR][cabled[1].nic]
            nics = ", ".join(f"{lk.host}:{lk.nic}" for lk in cabled)
            problems.append(f"{where(first)}switch port {end} is cabled to {len(cabled)} NICs: {nics}")
    return problems


def _uncabled_rails(nodes: Sequence[InventoryNode], links: Iterable[Link], where: Where) -> list[str]:
    cabled = {(link.host, link.nic) for link in links}
    problems = []
    for node in nodes:
        if GPU_HOSTS not in node.groups:
            continue
        missing = sorted({nic for nic in node.rails.values() if (node.name, nic) not in cabled})
        if missing:
            raw = node.variables.get(LINKS_VAR)
            problems.append(
                f"{where(raw) if raw is not None else ''}{node.name}: {LINKS_VAR}: rail NIC(s) "
                f"{', '.join(missing)} have no switch port (add e.g. {missing[0]}: leaf01:swp1)"
            )
    return problems


@dataclass(frozen=True)
class _Uplink:
    """One switch-to-switch cable as one switch's fabric_links entry declares it."""

    end: tuple[str, str]  # (switch, port) of the declaring switch
    peer: tuple[str, str]
    origin: str  # "leaf-01: fabric_links.swp33 = 'spine-01:swp1'"
    where: str


def _switch_links(
    nodes: Sequence[InventoryNode], switches: Mapping[str, Switch], where: Where, problems: list[str]
) -> tuple[SwitchLink, ...]:
    """The Ethernet switch-to-switch cables of the switches' `fabric_links: {uplink: 'switch:port'}`.

    Each cable is declared at either end, or at both when they agree; both ports must be among their
    switch's switch_uplinks, and the ends of different tiers (the lower one becomes `a`)."""
    declared: list[_Uplink] = []
    for node in nodes:
        own = switches.get(node.name)
        raw = node.variables.get(LINKS_VAR)
        if own is None or raw is None:
            continue
        if not isinstance(raw, Mapping):
            problems.append(
                f"{where(raw)}{node.name}: {LINKS_VAR}: expected a mapping uplink port -> 'switch:port' "
                "(e.g. swp33: spine-01:swp1)"
            )
            continue
        for key, value in raw.items():
            origin = f"{node.name}: {LINKS_VAR}.{_plain_text(key)} = {_shown(value)}"
            at = where(value) or where(key)
            peer = _uplink_peer(own, str(key), value, switches)
            if isinstance(peer, str):
                problems.append(f"{at}{origin}: {peer}")
            else:
                declared.append(_Uplink((own.name, str(key)), peer, origin, at))
    return _one_cable_per_port(declared, switches, problems)


def _uplink_peer(own: Switch, port: str, value: Any, switches: Mapping[str, Switch]) -> tuple[str, str] | str:
    """The (switch, port) one fabric_links entry names, or what is wrong with it."""
    if port not in own.uplinks:
        listed = ", ".join(own.uplinks) or "none"
        return f"{port} is not one of {own.name}'s switch_uplinks ({listed})"
    name, sep, peer_port = (value if isinstance(value, str) else "").rpartition(":")
    if not sep or not name or not peer_port:
        return "expected 'switch:port' (another switch's uplink port)"
    peer = switches.get(name)
    if peer is None:
        return f"unknown switch {name!r} (switches: {', '.join(sorted(switches)) or 'none'})"
    if peer.name == own.name:
        return "a cable from a switch to itself"
    if peer_port not in peer.uplinks:
        listed = ", ".join(peer.uplinks) or "none"
        return f"{peer_port} is not one of {name}'s switch_uplinks ({listed})"
    return (peer.name, peer_port)


def _one_cable_per_port(
    declared: Sequence[_Uplink], switches: Mapping[str, Switch], problems: list[str]
) -> tuple[SwitchLink, ...]:
    peers: dict[tuple[str, str], dict[tuple[str, str], list[_Uplink]]] = {}
    for entry in declared:
        peers.setdefault(entry.end, {}).setdefault(entry.peer, []).append(entry)
        peers.setdefault(entry.peer, {}).setdefault(entry.end, []).append(entry)
    twice = {end for end, seen in peers.items() if len(seen) > 1}
    for end in sorted(twice, key=_end_order):
        entries = [e for listed in peers[end].values() for e in listed]
        shown = "; ".join(f"{e.where}{e.origin}" for e in entries)
        problems.append(
            f"{entries[-1].where}switch port {end[0]}:{end[1]} is cabled to {len(peers[end])} ports: {shown}"
        )
    rank = {tier: index for index, tier in enumerate(SWITCH_TIERS)}
    cables: dict[tuple[tuple[str, str], tuple[str, str]], SwitchLink] = {}
    for entry in declared:
        if entry.end in twice or entry.peer in twice:
            continue
        low, high = sorted((entry.end, entry.peer), key=lambda e: (rank[switches[e[0]].tier], _end_order(e)))
        if rank[switches[low[0]].tier] == rank[switches[high[0]].tier]:
            tier = switches[low[0]].tier
            problems.append(
                f"{entry.where}{entry.origin}: a cable between two {tier} switches: a switch-to-switch "
                f"cable joins a lower tier (a) to a higher one (b) ({TIER_VAR}: {', '.join(SWITCH_TIERS)})"
            )
            continue
        cables[(low, high)] = SwitchLink(low[0], low[1], high[0], high[1])
    return tuple(cables[key] for key in sorted(cables, key=lambda k: (_end_order(k[0]), _end_order(k[1]))))


def _end_order(end: tuple[str, str]) -> tuple[tuple[int | str, ...], ...]:
    """swp2 before swp10, leaf-2 before leaf-10: the order a person reads a cabling map in."""
    return tuple(
        tuple(int(part) if part.isdigit() else part for part in re.split(r"([0-9]+)", text)) for text in end
    )


def _subnet_manager_problems(nodes: Sequence[InventoryNode], where: Where) -> list[str]:
    """sm_priorities names SM nodes of the inventory, and exactly one of them is the intended master.

    The intent alone cannot tell: an SM node it does not list runs at OpenSM's default priority 0."""
    intent = next((node.intent for node in nodes if node.intent is not None), None)
    if intent is None:
        return []  # already-templated variables (the roles' filters): `intent check` ran on these
    priorities = intent.subnet_manager.sm_priorities
    managers = [node.name for node in nodes if SUBNET_MANAGERS in node.groups]
    key = f"{INTENT_VAR}.subnet_manager.sm_priorities"
    problems = []
    for name in priorities:
        if name not in managers:
            origin = _priorities_origin(nodes, where, name)
            hosts = ", ".join(managers) or "none"
            problems.append(
                f"{origin}{key}.{name}: {name!r} is not a host of group {SUBNET_MANAGERS} "
                f"(its hosts: {hosts})"
            )
    if intent.kind != "ib" or len(managers) < 2:
        return problems
    effective = {name: priorities.get(name, 0) for name in managers}
    top = max(effective.values())
    tied = [name for name, priority in effective.items() if priority == top]
    unlisted = [name for name in tied if name not in priorities]
    if len(tied) > 1 and unlisted:  # ties among listed nodes alone are the intent model's error
        problems.append(
            f"{_priorities_origin(nodes, where, None)}{key}: {', '.join(tied)} share the top priority "
            f"{top} ({', '.join(unlisted)} not listed: OpenSM's default 0); exactly one SM must be "
            "the intended master: give every subnet manager its priority"
        )
    return problems


def _priorities_origin(nodes: Sequence[InventoryNode], where: Where, name: str | None) -> str:
    """file:line of an sm_priorities key (or of the mapping), rendering a templated intent if needed."""
    raw = next((node.variables.get(INTENT_VAR) for node in nodes if INTENT_VAR in node.variables), None)
    if raw is not None and not isinstance(raw, Mapping):
        from ansible.parsing.dataloader import DataLoader
        from ansible.template import Templar

        variables = next(node.variables for node in nodes if INTENT_VAR in node.variables)
        try:
            raw = Templar(loader=DataLoader(), variables=dict(variables)).template(raw)
        except Exception:  # the loader rendered it once already; without it the message has no line
            return where(raw)
    manager = raw.get("subnet_manager") if isinstance(raw, Mapping) else None
    mapping = manager.get("sm_priorities") if isinstance(manager, Mapping) else None
    if not isinstance(mapping, Mapping):
        return where(raw)
    for key in mapping:
        if key == name:
            return where(key) or where(mapping[key]) or where(mapping)
    return where(mapping) or where(raw)


def _shown(value: Any) -> str:
    return repr(_plain_text(value))


def _plain_text(value: Any) -> Any:
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


# Switch variables that may be templates in the inventory (lookups, group vars); the password is left
# as it is, so that the plain-text rule sees what the inventory holds and the secret is never resolved.
TEMPLATED_VARS = (
    "switch_address",
    "switch_port",
    "switch_username",
    "switch_platform",
    "netmiko_device_type",
    "switch_ports",
    "switch_uplinks",
    "switch_port_speeds",
    LINKS_VAR,
    DESCRIPTION_VAR,
    PORT_COUNT_VAR,
    HOSTNAME_VAR,
    NVLINK_ADDRESS_VAR,
    "ansible_host",  # read as the IMEX address when nvlink_address is not set: a template is resolved first
)


def inventory_nodes(entries: Iterable[Any]) -> list[InventoryNode]:
    """InventoryNodes from the loader's HostEntry records (raw variables; templates resolved here)."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    loader = DataLoader()
    nodes = []
    for entry in entries:
        variables = dict(entry.variables)
        templar = Templar(loader=loader, variables=variables)
        for var in TEMPLATED_VARS:
            if var in variables:
                try:
                    variables[var] = templar.template(variables[var])
                except Exception as err:  # ansible raises many types for a broken template
                    raise IntentError([f"{entry.name}: {var}: cannot resolve value: {err}"]) from None
        nodes.append(
            InventoryNode(entry.name, tuple(entry.groups), variables, dict(entry.intent.rails), entry.intent)
        )
    return nodes


def fabric_of(inventory: Any) -> Fabric:
    """The switches and cabling of a loaded inventory (fabcheck.intent.loader.Inventory), checked;
    errors name the file and line of the offending value."""
    from fabcheck.intent.loader import where_of  # the loader imports this module

    manager = getattr(inventory, "manager", None)
    groups = group_tree(manager) if manager is not None else None
    return read_fabric(inventory_nodes(inventory.hosts), where_of, groups=groups)
