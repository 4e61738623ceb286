"""The properties every fabric plan keeps (issue 39), checked on a FabricPlan; shared by the grid and the
reference-design tests."""

from __future__ import annotations

from collections import Counter
from math import ceil

from fabcheck.fabricplan.model import HOST_NIC_PREFIX, FabricPlan, PlannedSwitch


def assert_plan_invariants(plan: FabricPlan) -> None:
    request = plan.input
    speed = request.nic_gbps
    switches = {switch.name: switch for switch in plan.switches}
    assert len(switches) == len(plan.switches), "switch names are unique"
    tier_of = {name: switch.tier for name, switch in switches.items()}

    # Every NIC cabled exactly once, to a leaf.
    host = [c for c in plan.cables if c.tier == "host"]
    nics = Counter((c.a.device, c.a.port) for c in host)
    wanted = {(node, f"{HOST_NIC_PREFIX}{k}") for node in plan.nodes for k in range(request.nics_per_node)}
    assert set(nics) == wanted and set(nics.values()) == {1}
    assert all(tier_of[c.b.device] == "leaf" for c in host)
    assert len(plan.nodes) == request.gpus // request.gpus_per_node

    # No switch port used twice or beyond the switch's ports; cable ends in the right tiers.
    ends = Counter(end for c in plan.cables for end in (c.a, c.b) if end.device in switches)
    assert set(ends.values()) <= {1}, [e for e, n in ends.items() if n > 1][:3]
    for end in ends:
        assert 1 <= int(end.port) <= switches[end.device].ports, end
    lower_upper = {"host": (None, "leaf"), "leaf_spine": ("leaf", "spine"), "spine_core": ("spine", "core")}
    for cable in plan.cables:
        lower, upper = lower_upper[cable.tier]
        assert tier_of.get(cable.a.device) == lower and tier_of[cable.b.device] == upper, cable

    down = Counter(c.b.device for c in plan.cables)
    uplinks_of: dict[str, set[str]] = {s.name: set() for s in plan.switches}
    for cable in plan.cables:
        if cable.a.device in uplinks_of:
            uplinks_of[cable.a.device].add(cable.b.device)
    up = Counter(c.a.device for c in plan.cables if c.a.device in switches)
    leaves = [s for s in plan.switches if s.tier == "leaf"]
    spines = [s for s in plan.switches if s.tier == "spine"]
    cores = [s for s in plan.switches if s.tier == "core"]
    x = request.oversubscription
    # Every leaf's uplink capacity >= its downlink capacity / X; spines non-blocking to the cores.
    if plan.tiers > 1:
        for leaf in leaves:
            assert up[leaf.name] * x >= down[leaf.name], leaf.name
            assert down[leaf.name] >= 1
    if plan.tiers == 3:
        for spine in spines:
            assert up[spine.name] >= down[spine.name], spine.name
    for switch in plan.switches:
        assert down[switch.name] + up[switch.name] <= switch.ports
    # Rail-optimised: a leaf carries one rail only.
    if request.rail_optimised and plan.tiers > 1:
        for cable in host:
            assert cable.a.port == f"{HOST_NIC_PREFIX}{switches[cable.b.device].rail}"

    # Tiers minimal: one tier when the host links fit one switch; two when the leaves fit a spine's ports.
    leaf_ports = request.leaf_model.ports(speed)
    spine_ports = request.spine_model.ports(speed)
    assert (plan.tiers == 1) == (request.host_links <= leaf_ports)
    if plan.tiers > 1:
        assert (plan.tiers == 2) == (len(leaves) <= spine_ports)
    assert bool(spines) == (plan.tiers >= 2) and bool(cores) == (plan.tiers == 3)
    # Fewest upper switches: one fewer could not take the uplinks.
    if plan.tiers == 2:
        total = sum(up[leaf.name] for leaf in leaves)
        assert len(spines) == ceil(total / spine_ports)
        assert max(down[s.name] for s in spines) <= ceil(total / len(spines))
        for leaf in leaves:
            assert len(uplinks_of[leaf.name]) == min(up[leaf.name], len(spines)), leaf.name

    if plan.tiers == 3:
        # A leaf reaches every spine of its pod, a spine every core of its plane, as far as its uplinks go.
        group_of = {s.name: s.group for s in plan.switches}
        plane_of = {
            s.name: j + 1
            for pod in {s.group for s in spines}
            for j, s in enumerate([x for x in spines if x.group == pod])
        }
        for lower in [*leaves, *spines]:
            reached = uplinks_of[lower.name]
            if lower.tier == "leaf":
                pod = group_of[next(iter(reached))]
                uppers = {s.name for s in spines if s.group == pod}
            else:
                uppers = {c.name for c in cores if c.group == plane_of[lower.name]}
            assert reached <= uppers and len(reached) == min(up[lower.name], len(uppers)), lower.name

    _assert_bom(plan, switches, ends)


def _assert_bom(plan: FabricPlan, switches: dict[str, PlannedSwitch], ends: Counter) -> None:  # type: ignore[type-arg]
    bom = plan.bom
    by_tier = Counter(s.tier for s in plan.switches)
    assert bom.switches == {
        "leaf": by_tier["leaf"],
        "spine": by_tier["spine"],
        "core": by_tier["core"],
        "total": len(plan.switches),
    }
    links = Counter(c.tier for c in plan.cables)
    assert bom.links == {
        "host": links["host"],
        "leaf_spine": links["leaf_spine"],
        "spine_core": links["spine_core"],
        "total": len(plan.cables),
    }
    assert bom.cables == len(plan.cables)
    request = plan.input
    lanes = {
        name: (request.leaf_model if s.tier == "leaf" else request.spine_model).lanes(request.nic_gbps)
        for name, s in switches.items()
    }
    cages = {(end.device, (int(end.port) - 1) // lanes[end.device]) for end in ends}
    assert bom.transceivers == {
        "nic": request.host_links,
        "switch": len(cages),
        "total": request.host_links + len(cages),
    }
