"""NVLink domains in the inventory: group `nvlink_domains`, whose child groups are the domains (a rack's
trays); a GPU host in none is a domain of its own (an HGX server). Each member's IMEX address is its
host var `nvlink_address`, else `ansible_host`, else its name (docs/checks/nvlink.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # fabric.py imports this module to hold the plan
    from fabcheck.intent.fabric import InventoryNode, Where

NVLINK_DOMAINS_GROUP = "nvlink_domains"
NVLINK_ADDRESS_VAR = "nvlink_address"
NVLINK_HOST_VAR = "fabric_nvlink"  # a host's own nvlink intent (fabcheck.intent.loader.NVLINK_VAR)

# The inventory's NVLink variables: (variable, set on, default, meaning); docs/intent.md's table is
# generated from these (scripts/gen_docs, block nvlink-inventory).
INVENTORY_VARIABLES = (
    (
        f"group {NVLINK_DOMAINS_GROUP}",
        "GPU hosts, through its child groups",
        "none: each GPU host is a domain of its own",
        "each child group is one NVLink domain (a rack's trays); a host is in at most one, every member is a "
        "GPU host (gpu_hosts), a child group has hosts, and the group itself holds none",
    ),
    (
        NVLINK_ADDRESS_VAR,
        "GPU host of a domain",
        "`ansible_host`, else the inventory name",
        "its IMEX address: the domain's node list (`/etc/nvidia-imex/nodes_config.cfg`, role nvlink) lists "
        "its members' addresses, one a line, member order; one word, unique in the domain",
    ),
)


@dataclass(frozen=True)
class NvlinkDomain:
    name: str
    hosts: tuple[str, ...]  # inventory order
    addresses: tuple[str, ...]  # IMEX node addresses, host order
    declared: bool = True  # False: a lone server, no group names it


@dataclass(frozen=True)
class NvlinkPlan:
    """Every declared NVLink domain (empty: each GPU host is its own)."""

    domains: tuple[NvlinkDomain, ...] = ()

    def domain_of(self, host: str) -> NvlinkDomain:
        for domain in self.domains:
            if host in domain.hosts:
                return domain
        return NvlinkDomain(host, (host,), (), declared=False)


@dataclass(frozen=True)
class GroupTree:
    """The inventory's groups as ansible-core's InventoryManager holds them: each group's direct parents.
    The names keep their origin (file:line) where the inventory plugin tags them (ansible-core >= 2.19)."""

    parents: Mapping[str, tuple[str, ...]]

    def children(self, group: str) -> tuple[str, ...]:
        return tuple(name for name, parents in self.parents.items() if group in parents)


def group_tree(manager: Any) -> GroupTree:
    """The GroupTree of a loaded InventoryManager."""
    groups = manager.groups.values()
    return GroupTree({group.name: tuple(parent.name for parent in group.parent_groups) for group in groups})


def read_nvlink_plan(
    nodes: Sequence[InventoryNode], where: Where, groups: GroupTree | None
) -> tuple[NvlinkPlan, list[str]]:
    """The inventory's NVLink domains and every problem in them (file:line, group or variable).

    `groups` None: the group hierarchy is not known (a templated partial view, as the switch play's
    filter builds); the domains were judged whole by `fabcheck intent check` in the preflight play."""
    from fabcheck.intent.fabric import GPU_HOSTS

    if groups is None:
        return NvlinkPlan(), []
    problems: list[str] = []
    declared = groups.children(NVLINK_DOMAINS_GROUP)
    members: dict[str, list[InventoryNode]] = {name: [] for name in declared}
    for node in nodes:
        domains = [group for group in node.groups if group in members]
        if len(domains) > 1:
            shown = ", ".join(f"{where(group)}{group}" for group in domains)
            problems.append(
                f"{where(domains[1])}{node.name}: groups: a host is in at most one NVLink domain (child "
                f"group of {NVLINK_DOMAINS_GROUP}); it is in {shown}"
            )
        elif not domains and NVLINK_DOMAINS_GROUP in node.groups:
            problems.append(
                f"{_host_where(node, where)}{node.name}: group {NVLINK_DOMAINS_GROUP}: its hosts belong in "
                f"its child groups, one per NVLink domain (e.g. nvl_rack1), never in the group itself"
            )
        for domain in domains[:1]:
            members[domain].append(node)
    plan_domains = []
    for name in declared:
        hosts = members[name]
        if not hosts:
            problems.append(
                f"{where(name)}group {name}: an NVLink domain (child group of {NVLINK_DOMAINS_GROUP}) with "
                f"no host: give it its trays or remove it"
            )
            continue
        for node in hosts:
            if GPU_HOSTS not in node.groups:
                problems.append(
                    f"{_host_where(node, where)}{node.name}: group {name}: a member of an NVLink domain is a "
                    f"GPU host (group {GPU_HOSTS})"
                )
        addresses = tuple(_address(node, where, problems) for node in hosts)
        problems += _shared_addresses(name, hosts, addresses, where)
        problems += _one_intent_per_domain(str(name), hosts, where)
        plan_domains.append(NvlinkDomain(str(name), tuple(str(node.name) for node in hosts), addresses))
    plan = NvlinkPlan(tuple(plan_domains))
    problems += _lone_imex_hosts(nodes, plan, where)
    return plan, problems


def _address(node: InventoryNode, where: Where, problems: list[str]) -> str:
    """The member's IMEX address: nvlink_address, else ansible_host, else its name."""
    for var in (NVLINK_ADDRESS_VAR, "ansible_host"):
        value = node.variables.get(var)
        if value is None:
            continue
        if not isinstance(value, str) or not _ADDRESS.match(value):
            problems.append(
                f"{where(value)}{node.name}: {var} = {_shown(value)}: expected the address its IMEX daemon "
                f"listens on (an IP address or a host name, one word)"
            )
            return node.name
        return str(value)
    return node.name


def _shared_addresses(
    domain: str, hosts: Sequence[InventoryNode], addresses: Sequence[str], where: Where
) -> list[str]:
    """Two members of one domain with one IMEX address: nodes_config.cfg would list one node for two."""
    first: dict[str, InventoryNode] = {}
    problems = []
    for node, address in zip(hosts, addresses, strict=True):
        other = first.setdefault(address, node)
        if other is node:
            continue
        problems.append(
            f"{_address_where(node, where)}{node.name}: {_address_var(node)} = {address!r}: {other.name} of "
            f"NVLink domain {domain} has it too; each member's IMEX address ({NVLINK_ADDRESS_VAR}, else "
            f"ansible_host, else its name) is its own"
        )
    return problems


def _lone_imex_hosts(nodes: Sequence[InventoryNode], plan: NvlinkPlan, where: Where) -> list[str]:
    """The rule for `nvlink.imex: true` and a GPU host in no domain: an error, never a warning. IMEX joins
    the trays of one multi-node NVLink domain; a host that should run it alone says so with a one-host
    child group of nvlink_domains (its node list: its own address). Reported where the host's imex is set:
    its own fabric_nvlink, else the fleet's fabric_intent.nvlink (one line for every such host)."""
    from fabcheck.intent.fabric import GPU_HOSTS

    lone = [
        node
        for node in nodes
        if GPU_HOSTS in node.groups
        and node.intent is not None
        and node.intent.nvlink.imex
        and not plan.domain_of(node.name).declared
    ]
    why = (
        f"in no NVLink domain (child group of {NVLINK_DOMAINS_GROUP}): IMEX needs the domain's node list; "
        "add it to its domain's group (a one-host group for a server on its own)"
    )
    problems = [
        f"{_nvlink_where(node, 'imex', where)}{node.name}: {NVLINK_HOST_VAR}.imex = True: {why}"
        for node in lone
        if NVLINK_HOST_VAR in node.variables
    ]
    fleet = [node for node in lone if NVLINK_HOST_VAR not in node.variables]
    if fleet:
        names = ", ".join(node.name for node in fleet)
        problems.append(
            f"{_nvlink_where(fleet[0], 'imex', where)}fabric_intent.nvlink.imex = True: GPU host(s) {names}: "
            f"{why}"
        )
    return problems


def _one_intent_per_domain(domain: str, hosts: Sequence[InventoryNode], where: Where) -> list[str]:
    """Every member of a domain resolves one nvlink intent (a host's fabric_nvlink may differ from the
    fleet's only for a domain of its own): the domain's trays are one NVLink system."""
    judged = [node for node in hosts if node.intent is not None]
    problems = []
    for node in judged[1:]:
        first = judged[0]
        assert node.intent is not None and first.intent is not None
        if node.intent.nvlink == first.intent.nvlink:
            continue
        differing = [
            key
            for key in type(first.intent.nvlink).model_fields
            if getattr(node.intent.nvlink, key) != getattr(first.intent.nvlink, key)
        ]
        shown = ", ".join(
            f"{key} {getattr(first.intent.nvlink, key)!r} and {getattr(node.intent.nvlink, key)!r}"
            for key in differing
        )
        here = node if NVLINK_HOST_VAR in node.variables else first
        problems.append(
            f"{_nvlink_where(here, differing[0], where)}{first.name} and {node.name} of NVLink domain "
            f"{domain} resolve different nvlink intents ({shown}); one domain has one intent "
            f"({NVLINK_HOST_VAR} overrides fabric_intent.nvlink for a host)"
        )
    return problems


def _nvlink_where(node: InventoryNode, key: str, where: Where) -> str:
    """file:line of a host's nvlink `key`: in its fabric_nvlink, else in fabric_intent.nvlink."""
    for var in (NVLINK_HOST_VAR, "fabric_intent"):
        raw = node.variables.get(var)
        if raw is None:
            continue
        section = raw if var == NVLINK_HOST_VAR else _nvlink_section(raw)
        # A boolean carries no origin; its key does (as the loader names a bool's line).
        found = next((k for k in section if k == key), None) if isinstance(section, Mapping) else None
        return next((where(v) for v in (found, section, raw) if v is not None and where(v)), "")
    return ""


def _nvlink_section(raw: Any) -> Any:
    return raw.get("nvlink") if isinstance(raw, Mapping) else None


_ADDRESS = re.compile(r"^[A-Za-z0-9_.:%\[\]-]{1,253}$")


def _address_var(node: InventoryNode) -> str:
    return next((var for var in (NVLINK_ADDRESS_VAR, "ansible_host") if var in node.variables), "name")


def _address_where(node: InventoryNode, where: Where) -> str:
    var = _address_var(node)
    return where(node.variables[var]) if var in node.variables else where(node.name)


def _host_where(node: InventoryNode, where: Where) -> str:
    """file:line of the host: its name where the inventory tags it, else one of its variables."""
    for value in (node.name, node.variables.get(NVLINK_ADDRESS_VAR), node.variables.get("ansible_host")):
        if value is not None and where(value):
            return where(value)
    return ""


def _shown(value: Any) -> str:
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return repr(kind(value))
    return repr(value)
