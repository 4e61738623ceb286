"""The InfiniBand fabric of the inventory (issue 37): its switches and every planned cable, host to leaf
and switch to switch.

InfiniBand switches are inventory hosts of group `ib_switches`, each in exactly one tier group:
`ib_leaves`, `ib_spines` or `ib_cores`. fabcheck never logs in to one: the `ib` stage finds them
in-band, by node description, from one fabric node. Their variables:

- `ib_node_description`: the NodeDescription the switch shows (NVIDIA switches: `MF0;<hostname>:<model>/U1`);
  default: the inventory name;
- `ib_port_count`: its number of external ports (default 64, a Quantum-2 QM9700), ports are 1..count;
- `fabric_links`: its cables to switches of other tiers, port -> `node/port` (`17: spine02/5`).

A GPU host (or an SM node) of an `ib` intent cables its HCAs with `fabric_links: {mlx5_0: leaf01/1}`
(the HCA's port 1). Every cable is declared once, at either end (both ends may declare it when they
agree). Every problem is an IntentError naming the file, line and variable.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fabcheck.intent.model import NIC_NAME_PATTERN, is_safe_nic_name
from fabcheck.intent.platforms import PLATFORM_GROUP_PREFIX

if TYPE_CHECKING:  # fabric.py imports this module to hold the plan
    from fabcheck.intent.fabric import InventoryNode, Where

IB_SWITCHES = "ib_switches"
ETHERNET_SWITCHES = "switches"  # the group the switch play and stage log in to
# Tier group -> tier, lowest first: a cable's `a` end is its lower tier (a host is below every switch).
TIER_GROUPS = {"ib_leaves": "leaf", "ib_spines": "spine", "ib_cores": "core"}
TIERS = ("leaf", "spine", "core")
DESCRIPTION_VAR = "ib_node_description"
PORT_COUNT_VAR = "ib_port_count"
HOSTNAME_VAR = "ib_hostname"  # a host's name in its HCAs' node descriptions (%h), default its inventory name
DEFAULT_PORT_COUNT = 64  # NVIDIA Quantum-2 QM9700/QM9790: 64 NDR ports
# NumPorts is an 8-bit field and NodeDesc 64 bytes of the NodeInfo/NodeDescription MADs (rdma-core
# libibmad/fields.c@691953d8d502f54088f776c5ba2aeed0a5ac945d, "NumPorts", "NodeDesc").
MAX_PORT_COUNT = 255
NODE_DESCRIPTION_BYTES = 64
HCA_PORT = 1  # a host's `fabric_links: {mlx5_0: ...}` cables port 1 of that HCA

# The inventory's IB variables: (variable, set on, default, meaning); docs/intent.md's table is generated
# from these (scripts/gen_docs, block ib-inventory).
INVENTORY_VARIABLES = (
    (
        f"group {IB_SWITCHES}",
        "IB switch",
        "required",
        f"with exactly one tier group as child group: {', '.join(TIER_GROUPS)}; never also a GPU host, SM "
        f"node or Ethernet switch (group {ETHERNET_SWITCHES}); never logged in to (no address needed)",
    ),
    (
        DESCRIPTION_VAR,
        "IB switch",
        "the inventory name",
        f"the NodeDescription it shows (NVIDIA switches: `MF0;<hostname>:<model>/U1`), printable, "
        f"1..{NODE_DESCRIPTION_BYTES} bytes, unique in the fabric",
    ),
    (
        PORT_COUNT_VAR,
        "IB switch",
        str(DEFAULT_PORT_COUNT),
        f"its ports are 1..count (at most {MAX_PORT_COUNT})",
    ),
    (
        "fabric_links",
        "IB switch",
        "none",
        "port -> `switch/port` (a switch of another tier) or `host/HCA` (port 1 of a host's HCA)",
    ),
    ("fabric_links", "GPU host, SM node", "none", "HCA -> `switch/port`: port 1 of that HCA (kind ib)"),
    (
        HOSTNAME_VAR,
        "GPU host, SM node",
        "the inventory name",
        "the host name its HCAs' node descriptions show (`%h` of `ib_fabric.host_description`)",
    ),
)


@dataclass(frozen=True)
class IbSwitchNode:
    """One IB switch of the inventory."""

    name: str
    tier: str  # TIERS
    description: str
    port_count: int


@dataclass(frozen=True)
class IbEnd:
    """One end of a planned cable: a switch port (`nic` None) or a host HCA's port."""

    node: str
    port: int
    nic: str | None = None

    @property
    def label(self) -> str:
        return end_label(self.node, self.port, self.nic)


def end_label(node: str, port: int, nic: str | None) -> str:
    """`leaf03/17`, or `gpu01/mlx5_0` for port 1 of a host's HCA (`gpu01/mlx5_0/2` for another): how
    every check, report and message names a cable's end."""
    if nic is None:
        return f"{node}/{port}"
    return f"{node}/{nic}" + ("" if port == HCA_PORT else f"/{port}")


@dataclass(frozen=True)
class IbCable:
    """A planned cable: `a` the lower tier (the host, else the leaf, else the spine), `b` the upper."""

    a: IbEnd
    b: IbEnd

    @property
    def label(self) -> str:
        return f"{self.a.label} ↔ {self.b.label}"


@dataclass(frozen=True)
class IbPlan:
    """The inventory's IB switches and cables (empty: no InfiniBand fabric planned)."""

    switches: tuple[IbSwitchNode, ...] = ()
    cables: tuple[IbCable, ...] = ()
    hostnames: tuple[tuple[str, str], ...] = ()  # (host, ib_hostname) where a host sets ib_hostname

    def switch(self, name: str) -> IbSwitchNode:
        for switch in self.switches:
            if switch.name == name:
                return switch
        raise KeyError(name)

    def hostname(self, node: str) -> str:
        """The name a host's HCAs show for %h: its ib_hostname, else its inventory name."""
        return self._hostname_of.get(node, node)

    @functools.cached_property
    def _hostname_of(self) -> dict[str, str]:  # once per plan: a fleet asks for every HCA
        return dict(self.hostnames)


def node_description(template: str, hostname: str, device: str) -> str:
    """What rdma-ndd writes to an HCA's node_desc from its format (rdma-core
    rdma-ndd/rdma-ndd.c@691953d8d502f54088f776c5ba2aeed0a5ac945d build_node_desc): `%h` the host name up to
    its first dot, `%d` the device; any other `%x` writes nothing; at most 63 characters (a 64-byte
    buffer, NUL included)."""
    out: list[str] = []
    index = 0
    while index < len(template):
        char = template[index]
        if char != "%":
            out.append(char)
            index += 1
            continue
        field = template[index + 1 : index + 2]
        if field == "h":
            out.append(hostname.split(".", 1)[0])
        elif field == "d":
            out.append(device)
        index += 2
    return "".join(out)[: NODE_DESCRIPTION_BYTES - 1]


_TIER_RANK = {tier: rank for rank, tier in enumerate(TIERS, start=1)}  # a host's HCA: rank 0
_PORT_TEXT = re.compile(r"^[0-9]{1,3}$")
_PRINTABLE = re.compile(r"^[\x20-\x7e]+$")  # the fabric tools print NodeDesc between quotes, one line


def carries_ib_links(node: InventoryNode) -> bool:
    """Whether a host's `fabric_links` cable InfiniBand HCAs (`mlx5_0: leaf01/1`) rather than Ethernet
    NICs (`mlx5_0: leaf01:swp1`): its intent's kind says so; without an intent (already-templated
    variables), the `node/port` spelling does."""
    if node.intent is not None:
        return node.intent.kind == "ib"
    raw = node.variables.get("fabric_links")
    return (
        isinstance(raw, Mapping)
        and bool(raw)
        and all(isinstance(v, str) and ":" not in v and "/" in v for v in raw.values())
    )


def is_ib_switch(node: InventoryNode) -> bool:
    """In group ib_switches or one of its tier groups (never an Ethernet switch nor a GPU host)."""
    return IB_SWITCHES in node.groups or any(group in TIER_GROUPS for group in node.groups)


@dataclass(frozen=True)
class _Declared:
    """One cable as one node's fabric_links entry declares it."""

    end: IbEnd  # the declaring node's end
    peer: IbEnd
    origin: str  # "leaf01: fabric_links.33 = 'spine01/1'"
    where: str


def read_ib_plan(nodes: Sequence[InventoryNode], where: Where) -> tuple[IbPlan, list[str]]:
    """The inventory's IB switches and cables, and every problem found in them (file:line, variable)."""
    from fabcheck.intent.fabric import GPU_HOSTS, LINKS_VAR, SUBNET_MANAGERS

    problems: list[str] = []
    switches = {
        s.name: s for s in (_ib_switch(n, where, problems) for n in nodes if is_ib_switch(n)) if s is not None
    }
    if not switches and all(node.intent is None for node in nodes):
        # A templated partial view (the switch play's filter: GPU hosts and Ethernet switches only): the
        # IB plan was judged whole by `fabcheck intent check` in the preflight play.
        return IbPlan(), problems
    problems += _switch_descriptions_shared(nodes, switches, where)
    hosts = {
        n.name: n
        for n in nodes
        if (GPU_HOSTS in n.groups or SUBNET_MANAGERS in n.groups) and not is_ib_switch(n)
    }
    declared: list[_Declared] = []
    for node in nodes:
        raw = node.variables.get(LINKS_VAR)
        if raw is None:
            continue
        if node.name in switches:
            declared += _switch_links(node, raw, switches, hosts, where, problems)
        elif node.name in hosts and carries_ib_links(node):
            declared += _host_links(node, raw, switches, where, problems)
    cables = _cables(declared, switches, problems)
    hostnames = tuple(sorted(_hostnames(hosts.values(), where, problems).items()))
    ordered = sorted(switches.values(), key=lambda s: (_TIER_RANK.get(s.tier, 0), s.name))
    plan = IbPlan(tuple(ordered), cables, hostnames)
    if switches:
        problems += _intent_problems(nodes, hosts, plan, where)
    return plan, problems


def _ib_switch(node: InventoryNode, where: Where, problems: list[str]) -> IbSwitchNode | None:
    from fabcheck.intent.fabric import GPU_HOSTS, SUBNET_MANAGERS

    variables = node.variables
    at = _node_where(node, where)
    tier_groups = sorted(g for g in node.groups if g in TIER_GROUPS)
    if IB_SWITCHES not in node.groups:
        problems.append(
            f"{at}{node.name}: groups {', '.join(tier_groups)}: an IB tier group must be a child of group "
            f"{IB_SWITCHES}"
        )
    if len(tier_groups) != 1:
        shown = ", ".join(tier_groups) or "none"
        problems.append(
            f"{at}{node.name}: groups: an IB switch is in exactly one tier group of "
            f"{', '.join(TIER_GROUPS)} (it is in: {shown})"
        )
    # playbooks/switches.yml logs in to every host of group `switches`: an IB switch is never one.
    other = sorted(
        g
        for g in node.groups
        if g in (GPU_HOSTS, SUBNET_MANAGERS, ETHERNET_SWITCHES) or g.startswith(PLATFORM_GROUP_PREFIX)
    )
    if other or "switch_platform" in variables:
        roles = ", ".join(other) or "switch_platform"
        problems.append(
            f"{at}{node.name}: groups: an IB switch of group {IB_SWITCHES} is read in-band, never logged in "
            f"to: it cannot also be a GPU host, SM node or Ethernet switch ({roles})"
        )
    description = variables.get(DESCRIPTION_VAR, node.name)
    text = str(description) if isinstance(description, str) else ""
    if not _PRINTABLE.match(text) or len(text.encode()) > NODE_DESCRIPTION_BYTES:
        problems.append(
            f"{where(description)}{node.name}: {DESCRIPTION_VAR} = {_shown(description)}: expected the node "
            f"description the switch shows: printable text of 1..{NODE_DESCRIPTION_BYTES} bytes"
        )
    count = variables.get(PORT_COUNT_VAR, DEFAULT_PORT_COUNT)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= int(count) <= MAX_PORT_COUNT:
        problems.append(
            f"{where(count)}{node.name}: {PORT_COUNT_VAR} = {_shown(count)}: expected its number of "
            f"ports, an integer 1..{MAX_PORT_COUNT}"
        )
        count = DEFAULT_PORT_COUNT
    tier = TIER_GROUPS[tier_groups[0]] if tier_groups else TIERS[0]
    return IbSwitchNode(node.name, tier, text or node.name, int(count))


def _switch_links(
    node: InventoryNode,
    raw: Any,
    switches: Mapping[str, IbSwitchNode],
    hosts: Mapping[str, InventoryNode],
    where: Where,
    problems: list[str],
) -> list[_Declared]:
    """A switch's `fabric_links: {port: node/port}`: cables to switches of other tiers (or to hosts)."""
    own = switches[node.name]
    if not isinstance(raw, Mapping):
        problems.append(
            f"{where(raw)}{node.name}: fabric_links: expected a mapping port -> 'node/port' "
            f"(e.g. 33: spine01/1)"
        )
        return []
    found = []
    for key, value in raw.items():
        var = f"fabric_links.{_plain(key)}"
        port = _port_number(key)
        if port is None or not 1 <= port <= own.port_count:
            problems.append(
                f"{where(key) or where(value)}{node.name}: {var}: {_shown(key)} is not a port of "
                f"{node.name} (1..{own.port_count}, {PORT_COUNT_VAR})"
            )
            continue
        origin = f"{node.name}: {var} = {_shown(value)}"
        peer = _peer(value, switches, hosts, allow_hosts=True, error=_problem(origin, where(value), problems))
        if peer is not None:
            found.append(_Declared(IbEnd(node.name, port), peer, origin, where(value)))
    return found


def _host_links(
    node: InventoryNode, raw: Any, switches: Mapping[str, IbSwitchNode], where: Where, problems: list[str]
) -> list[_Declared]:
    """A host's `fabric_links: {mlx5_0: leaf01/1}`: port 1 of that HCA to that switch port."""
    if not isinstance(raw, Mapping):
        problems.append(
            f"{where(raw)}{node.name}: fabric_links: expected a mapping HCA -> 'switch/port' (e.g. "
            f"mlx5_0: leaf01/1)"
        )
        return []
    found = []
    for nic, value in raw.items():
        var = f"fabric_links.{_plain(nic)}"
        if not isinstance(nic, str) or not is_safe_nic_name(nic):
            problems.append(
                f"{where(nic) or where(value)}{node.name}: {var}: {_shown(nic)} is not a usable HCA name "
                f"(allowed {NIC_NAME_PATTERN})"
            )
            continue
        origin = f"{node.name}: {var} = {_shown(value)}"
        peer = _peer(value, switches, {}, allow_hosts=False, error=_problem(origin, where(value), problems))
        if peer is not None:
            found.append(_Declared(IbEnd(node.name, HCA_PORT, str(nic)), peer, origin, where(value)))
    return found


def _problem(origin: str, at: str, problems: list[str]) -> Callable[[str], None]:
    def report(message: str) -> None:
        problems.append(f"{at}{origin}: {message}")

    return report


def _peer(
    value: Any,
    switches: Mapping[str, IbSwitchNode],
    hosts: Mapping[str, InventoryNode],
    *,
    allow_hosts: bool,
    error: Callable[[str], None],
) -> IbEnd | None:
    """The end a fabric_links value names: `spine01/5` (a switch port), or `gpu01/mlx5_0` (port 1 of a
    host's HCA) where a switch declares its cable to a host."""
    expected = "'switch/port' or 'host/HCA'" if allow_hosts else "'switch/port' (an IB switch's port number)"
    name, sep, rest = (value if isinstance(value, str) else "").partition("/")
    if not sep or not name or not rest:
        error(f"expected {expected}")
        return None
    switch = switches.get(name)
    if switch is not None:
        port = _port_number(rest)
        if port is None or not 1 <= port <= switch.port_count:
            error(f"{rest!r} is not a port of {name} (1..{switch.port_count}, {PORT_COUNT_VAR})")
            return None
        return IbEnd(name, port)
    if allow_hosts and name in hosts:
        if not is_safe_nic_name(rest):
            error(f"{rest!r} is not a usable HCA name of {name} (allowed {NIC_NAME_PATTERN})")
            return None
        return IbEnd(name, HCA_PORT, rest)
    known = ", ".join(sorted(switches)) or "none"
    where_to = "IB switch or host" if allow_hosts else "IB switch"
    error(f"unknown {where_to} {name!r} (IB switches: {known})")
    return None


def _cables(
    declared: Sequence[_Declared], switches: Mapping[str, IbSwitchNode], problems: list[str]
) -> tuple[IbCable, ...]:
    """One cable per pair of ends; an end with two different peers (a port cabled twice, or two ends
    that declare different cables) is an error naming every declaration."""
    peers: dict[IbEnd, dict[IbEnd, list[_Declared]]] = {}
    for entry in declared:
        peers.setdefault(entry.end, {}).setdefault(entry.peer, []).append(entry)
        peers.setdefault(entry.peer, {}).setdefault(entry.end, []).append(entry)
    bad = {end for end, seen in peers.items() if len(seen) > 1}
    for end in sorted(bad, key=_end_key):
        entries = [e for listed in peers[end].values() for e in listed]
        own = [e for e in entries if e.end.node == end.node]
        why = (
            "its two ends declare different cables"
            if own and len(own) < len(entries)
            else f"cabled to {len(peers[end])} ports"
        )
        shown = "; ".join(f"{e.where}{e.origin}" for e in entries)
        problems.append(f"{entries[-1].where}IB port {end.label}: {why}: {shown}")
    cables: dict[tuple[IbEnd, IbEnd], IbCable] = {}
    for entry in declared:
        if entry.end in bad or entry.peer in bad:
            continue
        a, b = sorted((entry.end, entry.peer), key=lambda e: (_rank(e, switches), _end_key(e)))
        if a.nic is None and _rank(a, switches) == _rank(b, switches):
            tier = switches[a.node].tier
            problems.append(
                f"{entry.where}{entry.origin}: a cable between two {tier} switches ({a.label} ↔ {b.label}): "
                f"an IB cable joins a host to a switch or switches of different tiers"
            )
            continue
        cables.setdefault((a, b), IbCable(a, b))
    return tuple(sorted(cables.values(), key=lambda c: (_rank(c.a, switches), _end_key(c.a), _end_key(c.b))))


def _hostnames(hosts: Iterable[InventoryNode], where: Where, problems: list[str]) -> dict[str, str]:
    names = {}
    for node in hosts:
        value = node.variables.get(HOSTNAME_VAR)
        if value is None:
            continue
        if not isinstance(value, str) or not _PRINTABLE.match(value) or " " in value:
            problems.append(
                f"{where(value)}{node.name}: {HOSTNAME_VAR} = {_shown(value)}: expected the host name its "
                f"HCAs' node descriptions show (%h), one word"
            )
            continue
        names[node.name] = str(value)
    return names


def _intent_problems(
    nodes: Sequence[InventoryNode], hosts: Mapping[str, InventoryNode], plan: IbPlan, where: Where
) -> list[str]:
    """IB switches need an ib intent, a node the ib stage can read the fabric from, and one node
    description per planned node (the ib checks find every end by its description)."""
    intent = next((node.intent for node in nodes if node.intent is not None), None)
    if intent is None:
        return []  # already-templated variables: `intent check` ran on these
    raw = next(
        (node.variables.get("fabric_intent") for node in nodes if "fabric_intent" in node.variables), None
    )
    section = raw.get("ib_fabric") if isinstance(raw, Mapping) else None
    if intent.kind != "ib":
        kind = raw.get("kind") if isinstance(raw, Mapping) else raw
        return [
            f"{where(kind) or where(raw)}fabric_intent.kind = {intent.kind!r}: the inventory has IB switches "
            f"(group {IB_SWITCHES}): expected kind ib"
        ]
    problems = []
    read_from = intent.ib_fabric.read_from
    readable = [node.name for node in nodes if not is_ib_switch(node)]
    if read_from is not None and read_from not in readable:
        value = section.get("read_from") if isinstance(section, Mapping) else raw
        problems.append(
            f"{where(value) or where(raw)}fabric_intent.ib_fabric.read_from = {read_from!r}: not a node the "
            f"ib stage can log in to (hosts outside {IB_SWITCHES}: {', '.join(readable) or 'none'})"
        )
    if read_from is None and not hosts:
        problems.append(
            f"{where(raw)}fabric_intent.ib_fabric.read_from: no node to read the IB fabric from (no host "
            f"of gpu_hosts or subnet_managers): set read_from to a host with an HCA in the fabric"
        )
    problems += _shared_descriptions(plan, nodes, intent.ib_fabric.host_description, section, raw, where)
    pins = [pin.device_id for pin in intent.ib_fabric.firmware]
    twice = sorted({d for d in pins if pins.count(d) > 1})
    if twice:
        value = section.get("firmware") if isinstance(section, Mapping) else raw
        problems.append(
            f"{where(value) or where(raw)}fabric_intent.ib_fabric.firmware: device id(s) "
            f"{', '.join(str(d) for d in twice)} pinned more than once"
        )
    return problems


def _switch_descriptions_shared(
    nodes: Sequence[InventoryNode], switches: Mapping[str, IbSwitchNode], where: Where
) -> list[str]:
    """Two switches showing one node description; reported at the one that sets it explicitly."""
    first: dict[str, InventoryNode] = {}
    problems = []
    for node in nodes:
        switch = switches.get(node.name)
        if switch is None:
            continue
        other = first.setdefault(switch.description, node)
        if other is node:
            continue
        here, there = (node, other) if DESCRIPTION_VAR in node.variables else (other, node)
        value = here.variables.get(DESCRIPTION_VAR)
        default = "" if DESCRIPTION_VAR in there.variables else " (its default: the inventory name)"
        problems.append(
            f"{where(value) or _node_where(here, where)}{here.name}: {DESCRIPTION_VAR} = "
            f"{switch.description!r}: {there.name} shows it too{default}; the ib checks find each switch by "
            "its node description"
        )
    return problems


def _shared_descriptions(
    plan: IbPlan, nodes: Sequence[InventoryNode], template: str, section: Any, raw: Any, where: Where
) -> list[str]:
    """An HCA's node description that another planned HCA or a switch shows too."""
    shown: dict[str, set[str]] = {}
    for switch in plan.switches:
        shown.setdefault(switch.description, set()).add(switch.name)
    hcas = set()
    for cable in plan.cables:
        if cable.a.nic is not None:
            description = node_description(template, plan.hostname(cable.a.node), cable.a.nic)
            shown.setdefault(description, set()).add(f"{cable.a.node}/{cable.a.nic}")
            hcas.add(description)
    problems = []
    value = section.get("host_description") if isinstance(section, Mapping) else None
    set_at = {n.name: where(n.variables[DESCRIPTION_VAR]) for n in nodes if DESCRIPTION_VAR in n.variables}
    for description, owners in sorted(shown.items()):
        if len(owners) > 1 and description in hcas:
            # A switch's explicit ib_node_description is the likelier fix than the hosts' format.
            at = next((set_at[o] for o in sorted(owners) if set_at.get(o)), "") or where(value) or where(raw)
            problems.append(
                f"{at}IB node description {description!r} is shown by {len(owners)} planned nodes "
                f"({', '.join(sorted(owners))}): each needs its own (ib_node_description, "
                f"fabric_intent.ib_fabric.host_description = {template!r}: %h host, %d device)"
            )
    return problems


def _rank(end: IbEnd, switches: Mapping[str, IbSwitchNode]) -> int:
    return 0 if end.nic is not None else _TIER_RANK.get(switches[end.node].tier, 0)


def _end_key(end: IbEnd) -> tuple[str, str, int]:
    return (end.node, end.nic or "", end.port)


def _port_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str) and _PORT_TEXT.match(value):
        return int(value)
    return None


def _node_where(node: InventoryNode, where: Where) -> str:
    """file:line of a node's own variables (its group membership carries no line)."""
    for var in (DESCRIPTION_VAR, PORT_COUNT_VAR, "fabric_links", "ansible_host"):
        if var in node.variables and where(node.variables[var]):
            return where(node.variables[var])
    return ""


def _plain(value: Any) -> Any:
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def _shown(value: Any) -> str:
    return repr(_plain(value))
