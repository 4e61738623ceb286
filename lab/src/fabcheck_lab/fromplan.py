"""A lab built from a fabric plan (`fabcheck lab up --plan FILE`, issue 39): the plan's nodes as lab hosts,
its RoCE switches as mock switches of their model's platform with the planned port names, every planned
cable as LLDP hears it (hosts AND switch-to-switch uplinks, at both ends), or, on InfiniBand, the lab's IB
fabric model with the planned switch names, port counts and cables.

The plan is kept whole in the lab state (LabState.plan, the `fabcheck plan --json` document), so inject,
heal and the inventory read the same plan `up` built from. What the lab cannot build is refused with one
line naming what it has: 8-GPU hosts with 8 NICs at 400 Gb/s (roce: the rail8 profile, ib: the ib profile),
at most MAX_HOST_NODES hosts and MAX_SWITCHES switches.

Lab additions the plan does not hold: the ib profile's two subnet-manager nodes (sm01, sm02) plug their
HCA into the first free port of the first leaves (a plan leaves none free: refused).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from fabcheck.fabricplan.inventory import host_fabric_links, switch_variables
from fabcheck.fabricplan.model import TIERS, FabricPlan, PlannedSwitch, SwitchModel
from fabcheck.fabricplan.planfile import plan_from_json, plan_to_json, read_plan_file
from fabcheck.fabricplan.ports import model_port_names
from fabcheck_lab import ib_fabric
from fabcheck_lab.mockhost.profiles import GPU_BUSES, LINE_RATE_GBPS, nics_for
from fabcheck_lab.mockswitch.sonic_db import factory_alias
from fabcheck_lab.mockswitch.spec import SWITCH_PLATFORMS
from fabcheck_lab.state import (
    HOST_PORT,
    MAX_HOST_NODES,
    MAX_SWITCHES,
    LabError,
    LabState,
    NodeRecord,
)

# Plan fabric -> the lab host profile its nodes get; each has GPUS_PER_HOST GPUs and as many NICs.
HOST_PROFILES = {"roce": "rail8", "ib": "ib"}
GPUS_PER_HOST = len(GPU_BUSES)
SM_NODES = ("sm01", "sm02")  # the ib profile's subnet-manager nodes (fabcheck_lab.nodes.plan_nodes)


def load_plan(path: Path) -> dict[str, Any]:
    """The plan file as the lab keeps it, refused (LabError, one line) when the lab cannot build it."""
    plan = read_plan_file(path)
    check_fits(plan, str(path))
    document: dict[str, Any] = json.loads(json.dumps(plan_to_json(plan)))  # as the state file keeps it
    return document


def plan_of(state: LabState) -> FabricPlan | None:
    return None if state.plan is None else plan_from_json(state.plan, "the lab state's plan")


def check_fits(plan: FabricPlan, source: str) -> None:
    request = plan.input
    profile = HOST_PROFILES[request.fabric]
    nics = len(nics_for(profile, 0))
    if (request.gpus_per_node, request.nics_per_node) != (GPUS_PER_HOST, nics):
        raise LabError(
            f"{source}: {request.gpus_per_node} GPUs and {request.nics_per_node} NICs per node: the lab's "
            f"{request.fabric} hosts ({profile}) have {GPUS_PER_HOST} GPUs and {nics} NICs "
            f"(plan with --gpus-per-node {GPUS_PER_HOST} --nics-per-node {nics})"
        )
    if request.nic_gbps != LINE_RATE_GBPS:
        raise LabError(f"{source}: NICs at {request.nic_gbps} Gb/s: the lab's run at {LINE_RATE_GBPS} Gb/s")
    extra = len(SM_NODES) if request.fabric == "ib" else 0
    if len(plan.nodes) + extra > MAX_HOST_NODES:
        raise LabError(f"{source}: {len(plan.nodes)} nodes: the lab holds at most {MAX_HOST_NODES - extra}")
    if len(plan.switches) > MAX_SWITCHES:
        raise LabError(f"{source}: {len(plan.switches)} switches: the lab holds at most {MAX_SWITCHES}")
    if request.fabric == "roce":
        for switch in plan.switches:
            platform = model_of(plan, switch).platform
            if platform not in SWITCH_PLATFORMS:
                raise LabError(
                    f"{source}: switch {switch.name} ({model_of(plan, switch).title}) has platform "
                    f"{platform}: the lab mocks {', '.join(SWITCH_PLATFORMS)} (plan with --platform)"
                )


def model_of(plan: FabricPlan, switch: PlannedSwitch) -> SwitchModel:
    return plan.input.leaf_model if switch.tier == "leaf" else plan.input.spine_model


def port_names(plan: FabricPlan, switch: PlannedSwitch) -> tuple[str, ...]:
    """The switch's ports 1..n as its platform names them (fabcheck.fabricplan.ports; IB: the number)."""
    names = model_port_names(model_of(plan, switch), plan.input.nic_gbps)
    return names[: switch.ports]


# --- nodes ---------------------------------------------------------------------------------------


def plan_nodes(plan: FabricPlan) -> list[NodeRecord]:
    """The lab's nodes: the planned hosts (+ the SM nodes on InfiniBand), the RoCE switches."""
    from fabcheck_lab.nodes import host_address, switch_record

    profile = HOST_PROFILES[plan.input.fabric]
    named = [(name, profile, "gpu_hosts") for name in plan.nodes]
    if plan.input.fabric == "ib":
        named += [(name, "sm", "subnet_managers") for name in SM_NODES]
    records = [
        NodeRecord(name, "host", prof, group, i, host_address(i), HOST_PORT)
        for i, (name, prof, group) in enumerate(named)
    ]
    if plan.input.fabric == "ib":
        return records  # IB switches are entries of the lab's fabric model (ib_fabric_of), not nodes
    for j, switch in enumerate(_in_tier_order(plan.switches)):
        platform = str(model_of(plan, switch).platform)
        records.append(switch_record(switch.name, platform, j, port_names(plan, switch)))
    return records


def _in_tier_order(switches: tuple[PlannedSwitch, ...]) -> list[PlannedSwitch]:
    return sorted(switches, key=lambda s: TIERS.index(s.tier))  # stable: the plan's order within a tier


# --- RoCE cabling --------------------------------------------------------------------------------


def _names(plan: FabricPlan) -> dict[str, tuple[str, ...]]:
    return {switch.name: port_names(plan, switch) for switch in plan.switches}


def _port(names: Mapping[str, tuple[str, ...]], device: str, number: str) -> str:
    return names[device][int(number) - 1]


def host_links(state: LabState) -> dict[str, dict[str, str]]:
    """host -> {NIC: 'switch:port'}: each planned host cable (RoCE), the port by its platform name."""
    plan = plan_of(state)
    if plan is None or plan.input.fabric != "roce":
        return {}
    return host_fabric_links(plan)  # as `fabcheck plan --inventory` writes them


def switch_cabling(state: LabState) -> dict[str, dict[str, Any]]:
    """switch -> its cabling variables as `fabcheck plan --inventory` writes them (RoCE: switch_tier,
    switch_ports, switch_uplinks, fabric_links; IB: ib_port_count, fabric_links); {} without a plan."""
    plan = plan_of(state)
    return {} if plan is None else switch_variables(plan)


def switch_links(state: LabState) -> list[tuple[str, str, str, str]]:
    """(lower switch, its port, upper switch, its port): every planned switch-to-switch cable (RoCE)."""
    plan = plan_of(state)
    if plan is None or plan.input.fabric != "roce":
        return []
    names = _names(plan)
    return [
        (c.a.device, _port(names, c.a.device, c.a.port), c.b.device, _port(names, c.b.device, c.b.port))
        for c in plan.cables
        if c.tier != "host"
    ]


def up_ports(state: LabState) -> dict[str, tuple[str, ...]]:
    """switch -> its ports facing the tier above (what the uplink-swap fault swaps)."""
    found: dict[str, list[str]] = {}
    for lower, port, _upper, _their in switch_links(state):
        found.setdefault(lower, []).append(port)
    return {switch: tuple(ports) for switch, ports in found.items()}


def port_id(node: NodeRecord, port: str) -> str:
    """What a lab switch sends as LLDP port ID on a port: its name, a SONiC port's factory alias
    (mockswitch.sonic.SonicDevice.port_id: lldpmgrd sends the CONFIG_DB alias)."""
    return factory_alias(node.ports.index(port)) if node.profile == "sonic" else port


def switch_neighbors(state: LabState) -> dict[str, list[tuple[str, str, str]]]:
    """switch -> [(port, neighbour system, neighbour port ID)]: what LLDP hears on every planned cable,
    hosts (their name and interface, as lldpd sends them) and the switches at both ends of an uplink."""
    switches = {node.name: node for node in state.switch_nodes()}
    netdevs = {
        n.name: {nic["name"]: nic["netdev"] for nic in nics_for(n.profile, n.index)}
        for n in state.host_nodes()
    }
    heard: dict[str, list[tuple[str, str, str]]] = {}
    for host, nics in host_links(state).items():
        for nic, end in nics.items():
            switch, port = end.split(":", 1)
            heard.setdefault(switch, []).append((port, host, netdevs[host][nic]))
    for lower, port, upper, their in switch_links(state):
        heard.setdefault(lower, []).append((port, upper, port_id(switches[upper], their)))
        heard.setdefault(upper, []).append((their, lower, port_id(switches[lower], port)))
    return heard


# --- InfiniBand ----------------------------------------------------------------------------------


def ib_fabric_of(state: LabState) -> ib_fabric.Fabric:
    """The lab's IB fabric model from the plan: its switches (names, tiers, port counts), every planned
    cable, and the SM nodes' HCAs on the first free leaf ports."""
    plan = plan_of(state)
    if plan is None or plan.input.fabric != "ib":
        raise LabError("this lab was not started from an InfiniBand plan")
    hcas = ib_fabric.profile_hcas([(n.name, n.profile, n.index) for n in state.host_nodes()])
    first_lid = max((h.lid for h in hcas), default=0) + 1
    switches: list[ib_fabric.Switch] = []
    for tier in TIERS:
        mine = [s for s in plan.switches if s.tier == tier]
        for index, planned in enumerate(mine):
            entry = ib_fabric.switch_entry(planned.name, tier, index, first_lid + len(switches))
            switches.append(replace(entry, port_count=planned.ports))
    cables = [
        ib_fabric.Cable(
            ib_fabric.End(
                f"{c.a.device}/{c.a.port}" if c.tier == "host" else c.a.device, _ib_port(c.a.port, c.tier)
            ),
            ib_fabric.End(c.b.device, int(c.b.port)),
        )
        for c in plan.cables
    ]
    cables += _sm_cables(state, plan, switches, cables)
    return ib_fabric.Fabric(tuple(switches), tuple(hcas), tuple(cables))


def _ib_port(port: str, tier: str) -> int:
    return 1 if tier == "host" else int(port)  # an HCA is a one-port CA: its cable is on port 1


def _sm_cables(
    state: LabState, plan: FabricPlan, switches: list[ib_fabric.Switch], cables: list[ib_fabric.Cable]
) -> list[ib_fabric.Cable]:
    used = {(end.node, end.port) for cable in cables for end in (cable.a, cable.b)}
    leaves = [s for s in switches if s.tier == "leaf"]
    added: list[ib_fabric.Cable] = []
    sm_nodes = [n for n in state.host_nodes() if n.group == "subnet_managers"]
    for i, node in enumerate(sm_nodes):
        for leaf in leaves[i % len(leaves) :] + leaves[: i % len(leaves)]:
            free = next((p for p in range(1, leaf.port_count + 1) if (leaf.name, p) not in used), None)
            if free is not None:
                used.add((leaf.name, free))
                nic = nics_for(node.profile, node.index)[0]["name"]
                added.append(
                    ib_fabric.Cable(ib_fabric.End(f"{node.name}/{nic}", 1), ib_fabric.End(leaf.name, free))
                )
                break
        else:
            raise LabError(
                f"the plan leaves no free leaf port for the lab's subnet-manager node {node.name} "
                f"(the plan cables every port of every leaf)"
            )
    return added
