"""A fabric plan written as the inventory the roles and the gate read (`fabcheck plan --inventory DIR`).

The plan's switches and every cable become inventory variables exactly as fabcheck.intent reads them
(docs/intent.md), so a planned fabric is configured and gated with no hand-typed cabling:

- RoCE: each switch a host of group `switches_<platform>` (under `switches`) with `switch_tier`,
  `switch_ports` (its host-facing ports; empty on a spine or core), `switch_uplinks` (every port facing
  another switch, up or down) and, at a cable's lower end, `fabric_links: {uplink: 'switch:port'}`;
  each GPU host `fabric_links: {mlx5_k: 'leaf:port'}`. Port names are the platform's
  (fabcheck.fabricplan.ports).
- InfiniBand: each switch a host of its tier group (`ib_leaves`, `ib_spines`, `ib_cores` under
  `ib_switches`) with `ib_port_count` and, at a cable's lower end, `fabric_links: {port: 'switch/port'}`;
  each GPU host `fabric_links: {mlx5_k: 'leaf/port'}` (what fabcheck.intent.ib_fabric reads).

`group_vars/all.yml` holds a skeleton `fabric_intent` (kind, rails, link speed) that the user completes.
What a plan cannot know is left out, and the loader refuses the inventory until it is set: an Ethernet
switch's `switch_address` and `switch_username` (and its password, from ansible-vault or a lookup). The
roles do not configure breakouts: a planned switch's cages must be broken out before they run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from fabcheck.fabricplan.model import HOST_NIC_PREFIX, FabricPlan, PlanError, PlannedSwitch, SwitchModel
from fabcheck.fabricplan.ports import port_name
from fabcheck.fabricplan.safewrite import refuse_unsafe, write_safely

HOSTS_FILE = "hosts.yml"
GROUP_VARS_FILE = "group_vars/all.yml"
IB_TIER_GROUPS = {"leaf": "ib_leaves", "spine": "ib_spines", "core": "ib_cores"}  # fabcheck.intent.ib_fabric

_HOSTS_HEADER = """\
# Written by `fabcheck plan --inventory` from a {fabric} plan: {nodes} GPU host(s), {switches} switch(es)
# in {tiers} tier(s), {cables} cable(s). The cabling map (fabric_links) is the plan's: change the plan, not
# this file. {todo}
"""
_ETHERNET_TODO = """Before `fabcheck intent check` passes, set for every switch `switch_address`
# and `switch_username` (and `switch_password` from ansible-vault or a lookup), e.g. in
# host_vars/<switch>.yml and group_vars/switches.yml; GPU hosts: `ansible_host` where the name does
# not resolve.
# The switch roles do not configure breakouts: break each planned switch's cages out to {speed}G links
# (NVUE `link breakout`, SONiC `config interface breakout`, EOS `speed`) before running them."""
_IB_TODO = """IB switches are never logged in to; set `ib_node_description` where a switch shows
# another description than its inventory name (NVIDIA: `MF0;<hostname>:<model>/U1`)."""
_GROUP_VARS_HEADER = """\
# Written by `fabcheck plan --inventory`: a skeleton intent (kind, rails, link speed) for the planned
# fabric. Complete it (docs/intent.md: lossless classes, ECN, MTU, NCCL{ib}) before configuring.
"""


def host_fabric_links(plan: FabricPlan) -> dict[str, dict[str, str]]:
    """GPU host -> {NIC: its leaf end}: `leaf-01-r0:swp1s0` (Ethernet) or `leaf-01-r0/1` (InfiniBand)."""
    name = _namer(plan)
    separator = "/" if plan.input.fabric == "ib" else ":"
    links: dict[str, dict[str, str]] = {node: {} for node in plan.nodes}
    for cable in plan.cables:
        if cable.tier == "host":
            nics = links.setdefault(cable.a.device, {})
            nics[cable.a.port] = f"{cable.b.device}{separator}{name(cable.b.device, cable.b.port)}"
    return {
        node: dict(sorted(nics.items(), key=lambda item: _nic_rank(item[0]))) for node, nics in links.items()
    }


def switch_variables(plan: FabricPlan) -> dict[str, dict[str, Any]]:
    """Switch -> the inventory variables of its cabling, in plan order: Ethernet `switch_tier`,
    `switch_ports`, `switch_uplinks`, `fabric_links` (at a cable's lower end); InfiniBand `ib_port_count`
    and `fabric_links` (port numbers as integers). No address, credentials or platform group."""
    name = _namer(plan)
    ib = plan.input.fabric == "ib"
    host_ports: dict[str, list[int]] = {s.name: [] for s in plan.switches}
    uplinks: dict[str, list[int]] = {s.name: [] for s in plan.switches}
    links: dict[str, dict[int, str]] = {s.name: {} for s in plan.switches}
    for cable in plan.cables:
        if cable.tier == "host":
            host_ports[cable.b.device].append(int(cable.b.port))
            continue
        low, high = int(cable.a.port), int(cable.b.port)
        uplinks[cable.a.device].append(low)
        uplinks[cable.b.device].append(high)
        peer = f"{cable.b.device}/{high}" if ib else f"{cable.b.device}:{name(cable.b.device, cable.b.port)}"
        links[cable.a.device][low] = peer
    variables: dict[str, dict[str, Any]] = {}
    for switch in plan.switches:
        declared = sorted(links[switch.name].items())
        if ib:
            entry: dict[str, Any] = {"ib_port_count": switch.ports}
            if declared:
                entry["fabric_links"] = dict(declared)
        else:
            entry = {
                "switch_tier": switch.tier,
                "switch_ports": [name(switch.name, str(p)) for p in sorted(host_ports[switch.name])],
                "switch_uplinks": [name(switch.name, str(p)) for p in sorted(uplinks[switch.name])],
            }
            if declared:
                entry["fabric_links"] = {name(switch.name, str(port)): peer for port, peer in declared}
        variables[switch.name] = entry
    return variables


def switch_platform(plan: FabricPlan, switch: PlannedSwitch) -> str:
    """The inventory platform (nvue, sonic, eos) of a planned Ethernet switch: its model's."""
    model = _model_of(plan, switch)
    if model.platform is None:
        option = "--platform" if model.name == "generic" else "--switch/--spine-switch"
        raise PlanError(f"{option}: switch model {model.name} of {switch.name} names no Ethernet platform")
    return model.platform


def plan_inventory(plan: FabricPlan) -> dict[str, Any]:
    """The hosts.yml document of the plan."""
    hosts = {node: {"fabric_links": nics} for node, nics in host_fabric_links(plan).items()}
    variables = switch_variables(plan)
    children: dict[str, Any] = {"gpu_hosts": {"hosts": hosts}}
    if plan.input.fabric == "ib":
        tiers: dict[str, Any] = {}
        for switch in plan.switches:
            group = tiers.setdefault(IB_TIER_GROUPS[switch.tier], {"hosts": {}})
            group["hosts"][switch.name] = variables[switch.name]
        children["ib_switches"] = {"children": tiers}
    else:
        platforms: dict[str, Any] = {}
        for switch in plan.switches:
            group = platforms.setdefault(f"switches_{switch_platform(plan, switch)}", {"hosts": {}})
            group["hosts"][switch.name] = variables[switch.name]
        children["switches"] = {"children": platforms}
    return {"all": {"children": children}}


def plan_group_vars(plan: FabricPlan) -> dict[str, Any]:
    """The group_vars/all.yml document: the skeleton intent of the planned fabric."""
    request = plan.input
    intent: dict[str, Any] = {
        "kind": request.fabric,
        "rails": {rail: f"{HOST_NIC_PREFIX}{rail}" for rail in range(request.nics_per_node)},
        "link": {"speed_gbps": request.nic_gbps},
    }
    return {"fabric_intent": intent}


def write_plan_inventory(plan: FabricPlan, directory: Path, *, overwrite: bool = False) -> tuple[Path, ...]:
    """Write DIR/hosts.yml and DIR/group_vars/all.yml; PlanError naming the file when one exists and
    `overwrite` is not set, or is a symbolic link (nothing is written then; fabricplan.safewrite)."""
    hosts = directory / HOSTS_FILE
    group_vars = directory / GROUP_VARS_FILE
    hint = "(choose an empty directory)"
    if group_vars.parent.is_symlink():
        raise PlanError(f"--inventory: {group_vars.parent} is a symbolic link; not written through it")
    for path in (hosts, group_vars):  # all refusals before the first write
        refuse_unsafe(path, "--inventory", overwrite, hint)
    ethernet = plan.input.fabric != "ib"
    header = _HOSTS_HEADER.format(
        fabric="RoCE" if ethernet else "InfiniBand",
        nodes=len(plan.nodes),
        switches=len(plan.switches),
        tiers=plan.tiers,
        cables=len(plan.cables),
        todo=_ETHERNET_TODO.format(speed=plan.input.nic_gbps) if ethernet else _IB_TODO,
    )
    texts = {
        hosts: header + "---\n" + _yaml(plan_inventory(plan)),
        group_vars: _GROUP_VARS_HEADER.format(ib="" if ethernet else ", the subnet manager")
        + "---\n"
        + _yaml(plan_group_vars(plan)),
    }
    try:
        group_vars.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise PlanError(f"--inventory: cannot write {directory}: {error.strerror or error}") from None
    for path, text in texts.items():
        write_safely(path, text, "--inventory", overwrite, hint)
    return tuple(texts)


def _yaml(document: dict[str, Any]) -> str:
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False, width=1000)


def _model_of(plan: FabricPlan, switch: PlannedSwitch) -> SwitchModel:
    return plan.input.leaf_model if switch.tier == "leaf" else plan.input.spine_model


def _namer(plan: FabricPlan) -> Callable[[str, str], str]:
    """(switch, logical port number as text) -> the port's name on that switch's platform."""
    speed = plan.input.nic_gbps
    ib = plan.input.fabric == "ib"
    lanes: dict[str, tuple[str | None, int]] = {}
    for switch in plan.switches:
        model = _model_of(plan, switch)
        lanes[switch.name] = (None if ib else switch_platform(plan, switch), model.lanes(speed))

    def name(switch: str, port: str) -> str:
        platform, count = lanes[switch]
        return port_name(platform, int(port), count)

    return name


def _nic_rank(nic: str) -> tuple[int, str]:
    """mlx5_2 before mlx5_10."""
    suffix = nic.removeprefix(HOST_NIC_PREFIX)
    return (int(suffix), nic) if suffix.isdigit() else (1 << 30, nic)
