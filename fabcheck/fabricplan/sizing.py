"""Size a fabric: every switch and every cable of a one-, two- or three-tier (folded Clos) fabric for
N GPUs, and the bill of materials counted from them.

The rules (README "Fabric plan", docs/plan.md) in short: every link runs at the NIC speed S; a switch
has P = cages x (cage_gbps / S) logical ports. One tier when all host links fit one switch. Else leaves
with D = floor(P x X / (X + 1)) host ports (X the oversubscription) and ceil(used / X) uplinks each,
rail-optimised (leaf-JJ-rK carries NIC k of group J's nodes) unless asked otherwise. Two tiers when
every leaf can reach every spine (leaves <= P_spine); three tiers up to P_spine pods: pods of
floor(P_spine / 2) leaves, a spine's down ports at most floor(P_spine / 2) and as many uplinks as down
links (spine-core non-blocking), core plane j (the j-th spine of every pod) with ceil(its spines' uplinks /
P_spine) cores. With full pods and an even P_spine that is ceil(pods x P_spine / 2 / P_spine) cores a
plane, NVIDIA's DGX SuperPOD count; a partial pod's spines get fewer uplinks and so fewer cores.
Uplinks are dealt round-robin, each switch starting where the previous one stopped. Pure: a PlanInput
in, a FabricPlan out, PlanError for a plan that cannot be made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import ceil

from fabcheck.fabricplan.model import (
    HOST_NIC_PREFIX,
    Bom,
    FabricPlan,
    PlanError,
    PlanInput,
    PlannedCable,
    PlannedSwitch,
    PortEnd,
    SwitchModel,
)


@dataclass
class _Switch:
    """A switch while the plan is built: its record and the next free logical port."""

    record: PlannedSwitch
    lanes: int
    next_port: int = 1
    down: int = 0  # ports cabled to the tier below (hosts for a leaf)
    up: int = 0  # ports cabled to the tier above
    used: list[int] = field(default_factory=list)

    def take(self) -> str:
        if self.next_port > self.record.ports:
            raise AssertionError(f"{self.record.name}: no port left (bug: sizing over-filled it)")
        port = self.next_port
        self.next_port += 1
        self.used.append(port)
        return str(port)

    @property
    def name(self) -> str:
        return self.record.name


def plan_fabric(request: PlanInput) -> FabricPlan:
    """The plan for `request`; PlanError (naming the option) when it cannot be made."""
    _validate(request)
    speed = request.nic_gbps
    leaf_ports = request.leaf_model.ports(speed)
    spine_ports = request.spine_model.ports(speed)
    rails = request.nics_per_node
    host_links = request.host_links
    cables: list[PlannedCable] = []

    if host_links <= leaf_ports:
        nodes = _node_names(request.nodes)
        switch = _Switch(
            PlannedSwitch("leaf-01", "leaf", request.leaf_model.name, leaf_ports), _lanes(request, 0)
        )
        for node in nodes:
            for rail in range(rails):
                cables.append(_host_cable(node, rail, switch))
        return _finish(request, 1, nodes, [switch], cables)

    ratio = Fraction(request.oversubscription).limit_denominator(1000)
    down_max = (leaf_ports * ratio.numerator) // (ratio.numerator + ratio.denominator)
    if down_max < 1:
        raise PlanError(
            f"{_model_option(request.leaf_model, '--switch')}: {request.leaf_model.title} has {leaf_ports} "
            f"port(s) at {speed}G, too few for {request.host_links} host links on one switch or for a leaf "
            "with uplinks"
        )
    _refuse_beyond_three_tiers(request, down_max, spine_ports)  # before building a single leaf
    nodes = _node_names(request.nodes)
    leaves = _leaves(request, nodes, down_max, cables)
    for leaf in leaves:
        leaf.up = ceil(Fraction(leaf.down) / ratio)

    spine_model = request.spine_model.name
    if len(leaves) <= spine_ports:
        total_up = sum(leaf.up for leaf in leaves)
        count = ceil(total_up / spine_ports)
        width = _width(count)
        spines = [
            _Switch(
                PlannedSwitch(f"spine-{j:0{width}d}", "spine", spine_model, spine_ports), _lanes(request, 1)
            )
            for j in range(1, count + 1)
        ]
        _deal(leaves, spines, "leaf_spine", cables)
        for spine in spines:
            spine.down = len(spine.used)
        return _finish(request, 2, nodes, [*leaves, *spines], cables)

    spine_down = spine_ports // 2
    pods = _pods(len(leaves), spine_ports)
    pod_spines: list[list[_Switch]] = []
    pod_width = _width(pods)
    for pod in range(pods):
        members = leaves[pod * spine_down : (pod + 1) * spine_down]
        count = ceil(sum(leaf.up for leaf in members) / spine_down)
        width = _width(count)
        spines = [
            _Switch(
                PlannedSwitch(
                    f"spine-{pod + 1:0{pod_width}d}-{j:0{width}d}",
                    "spine",
                    spine_model,
                    spine_ports,
                    group=pod + 1,
                ),
                _lanes(request, 1),
            )
            for j in range(1, count + 1)
        ]
        _deal(members, spines, "leaf_spine", cables)
        for spine in spines:
            spine.down = len(spine.used)
            spine.up = spine.down  # non-blocking, and no uplink that carries nothing
        pod_spines.append(spines)

    planes = max(len(spines) for spines in pod_spines)
    plane_members = [[spines[j] for spines in pod_spines if j < len(spines)] for j in range(planes)]
    core_counts = [ceil(sum(spine.up for spine in members) / spine_ports) for members in plane_members]
    width = _width(sum(core_counts))
    cores: list[_Switch] = []
    for plane, (members, count) in enumerate(zip(plane_members, core_counts, strict=True)):
        plane_cores = [
            _Switch(
                PlannedSwitch(
                    f"core-{len(cores) + j:0{width}d}", "core", spine_model, spine_ports, group=plane + 1
                ),
                _lanes(request, 1),
            )
            for j in range(1, count + 1)
        ]
        _deal(members, plane_cores, "spine_core", cables)
        cores.extend(plane_cores)
    spines_all = [spine for spines in pod_spines for spine in spines]
    return _finish(request, 3, nodes, [*leaves, *spines_all, *cores], cables)


def _leaf_count(request: PlanInput, down_max: int) -> int:
    """How many leaves _leaves builds, by arithmetic."""
    if request.rail_optimised:
        return ceil(Fraction(request.nodes, down_max)) * request.nics_per_node
    return ceil(Fraction(request.host_links, down_max))


def _pods(leaves: int, spine_ports: int) -> int:
    spine_down = spine_ports // 2
    return ceil(Fraction(leaves, spine_down)) if spine_down else spine_ports + 1


def _refuse_beyond_three_tiers(request: PlanInput, down_max: int, spine_ports: int) -> None:
    """PlanError when the leaves need more pods than three tiers hold, counted by arithmetic so that a
    huge --gpus is refused at once instead of building millions of switches and cables first."""
    leaves = _leaf_count(request, down_max)
    if leaves <= spine_ports:
        return
    pods = _pods(leaves, spine_ports)
    if pods > spine_ports:
        spine_down = spine_ports // 2
        raise PlanError(
            f"--gpus: {request.gpus} GPUs need {pods} pods of {spine_down} leaves, more than the "
            f"{spine_ports} a three-tier fabric of {spine_ports}-port spines holds; at most "
            f"{_max_gpus(request, down_max, spine_ports, spine_down)} GPUs with these switches"
        )


def _validate(request: PlanInput) -> None:
    for option, value in (
        ("--gpus", request.gpus),
        ("--gpus-per-node", request.gpus_per_node),
        ("--nics-per-node", request.nics_per_node),
        ("--nic-gbps", request.nic_gbps),
    ):
        if value < 1:
            raise PlanError(f"{option}: expected a whole number >= 1, got {value}")
    if request.gpus % request.gpus_per_node:
        raise PlanError(
            f"--gpus: {request.gpus} GPUs do not divide into nodes of {request.gpus_per_node} GPUs"
            " (--gpus-per-node)"
        )
    if not request.oversubscription >= 1:
        raise PlanError(f"--oversubscription: expected a number >= 1, got {request.oversubscription}")
    for option, model in (("--switch", request.leaf_model), ("--spine-switch", request.spine_model)):
        if model.fabric not in (request.fabric, "any"):
            raise PlanError(
                f"{option}: {model.title} is {FABRIC_NAMES[model.fabric]} switch; this plan is "
                f"--fabric {request.fabric}"
            )
        if not model.lanes(request.nic_gbps):
            speeds = ", ".join(f"{s}G" for s in model.link_gbps)
            raise PlanError(
                f"--nic-gbps: {model.title} ({option}) cannot break its {model.cage_gbps}G cages out to "
                f"{request.nic_gbps}G links (it runs {speeds})"
            )


FABRIC_NAMES = {"ib": "an InfiniBand", "roce": "an Ethernet (RoCE)"}


def _model_option(model: SwitchModel, option: str) -> str:
    """The option that chose `model`: --switch-ports for the generic model, else `option`."""
    return "--switch-ports" if model.name == "generic" else option


def _lanes(request: PlanInput, tier: int) -> int:
    model = request.leaf_model if tier == 0 else request.spine_model
    return model.lanes(request.nic_gbps)


def _width(count: int) -> int:
    return max(2, len(str(count)))


def _node_names(count: int) -> tuple[str, ...]:
    width = _width(count)
    return tuple(f"gpu{i:0{width}d}" for i in range(1, count + 1))


def _host_cable(node: str, rail: int, leaf: _Switch) -> PlannedCable:
    leaf.down += 1
    return PlannedCable(PortEnd(node, f"{HOST_NIC_PREFIX}{rail}"), PortEnd(leaf.name, leaf.take()), "host")


def _leaves(
    request: PlanInput, nodes: tuple[str, ...], down_max: int, cables: list[PlannedCable]
) -> list[_Switch]:
    """The leaves with their host cables, in the order pods take them (group by group)."""
    model = request.leaf_model.name
    ports = request.leaf_model.ports(request.nic_gbps)
    lanes = _lanes(request, 0)
    rails = request.nics_per_node
    leaves: list[_Switch] = []
    if request.rail_optimised:
        groups = ceil(len(nodes) / down_max)
        width = _width(groups)
        for group in range(groups):
            for rail in range(rails):
                name = f"leaf-{group + 1:0{width}d}-r{rail}"
                leaf = _Switch(PlannedSwitch(name, "leaf", model, ports, rail=rail, group=group + 1), lanes)
                leaves.append(leaf)
        # Host cables node by node (the cabling map a technician follows one server at a time).
        for index, node in enumerate(nodes):
            group = index // down_max
            for rail in range(rails):
                cables.append(_host_cable(node, rail, leaves[group * rails + rail]))
        return leaves
    count = ceil(request.host_links / down_max)
    width = _width(count)
    for j in range(count):
        record = PlannedSwitch(f"leaf-{j + 1:0{width}d}", "leaf", model, ports, group=j + 1)
        leaves.append(_Switch(record, lanes))
    for index, node in enumerate(nodes):
        for rail in range(rails):
            cables.append(_host_cable(node, rail, leaves[(index * rails + rail) // down_max]))
    return leaves


def _deal(lower: list[_Switch], upper: list[_Switch], tier: str, cables: list[PlannedCable]) -> None:
    """Each lower switch's uplinks dealt over the upper switches round-robin, continuing where the
    previous switch stopped (a rotating offset), so every upper switch gets at most
    ceil(total / len(upper)) and a switch with at least len(upper) uplinks reaches every one."""
    turn = 0
    for switch in lower:
        for _ in range(switch.up):
            target = upper[turn % len(upper)]
            cables.append(
                PlannedCable(PortEnd(switch.name, switch.take()), PortEnd(target.name, target.take()), tier)
            )
            turn += 1


def _max_gpus(request: PlanInput, down_max: int, spine_ports: int, spine_down: int) -> int:
    """The most GPUs these switches hold: three tiers of spine_ports pods of spine_down leaves, or one
    switch where that is more (a radix too small for leaves of several rails). Every count up to it plans."""
    leaves = spine_ports * spine_down
    rails = request.nics_per_node
    # Rail-optimised, a group of nodes takes `rails` whole leaves; otherwise NICs fill every leaf port.
    nodes = (leaves // rails) * down_max if request.rail_optimised else leaves * down_max // rails
    one_switch = request.leaf_model.ports(request.nic_gbps) // rails
    return max(nodes, one_switch) * request.gpus_per_node


def _finish(
    request: PlanInput,
    tiers: int,
    nodes: tuple[str, ...],
    switches: list[_Switch],
    cables: list[PlannedCable],
) -> FabricPlan:
    return FabricPlan(
        input=request,
        tiers=tiers,
        nodes=nodes,
        switches=tuple(switch.record for switch in switches),
        cables=tuple(cables),
        bom=_bom(switches, cables, request.host_links),
    )


def _bom(switches: list[_Switch], cables: list[PlannedCable], host_links: int) -> Bom:
    """Counted from the cables and the cages they use: one module per used cage, one per NIC end."""
    per_tier = {tier: sum(1 for s in switches if s.record.tier == tier) for tier in ("leaf", "spine", "core")}
    links = {tier: sum(1 for c in cables if c.tier == tier) for tier in ("host", "leaf_spine", "spine_core")}
    switch_modules = sum(len({(port - 1) // s.lanes for port in s.used}) for s in switches)
    return Bom(
        switches={**per_tier, "total": sum(per_tier.values())},
        links={**links, "total": sum(links.values())},
        transceivers={"nic": host_links, "switch": switch_modules, "total": host_links + switch_modules},
        cables=len(cables),
    )
