"""The records of a fabric plan (issue 39): what the planner is asked, the switch models it knows, and
the plan it returns (every switch, every cable) with its bill of materials.

Pure data. `fabcheck.fabricplan.sizing` turns a PlanInput into a FabricPlan; `inventory` writes the plan
as the inventory the roles and the gate read; `render` prints it. Every link of a plan runs at the NIC
speed: a switch cage of `cage_gbps` carries `cage_gbps // nic_gbps` links through one breakout module
(a 2x400G module in an 800G OSFP cage), and a switch's logical port number n (1-based) lives in cage
(n - 1) // lanes + 1, lane (n - 1) % lanes (the numbering an NDR Quantum-2 switch shows: 64 ports in 32
cages). How a platform names port n (swp1s0, Ethernet0, Ethernet1/1, 1) is the inventory writer's.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabcheck.errors import UsageError

FABRICS = ("roce", "ib")
TIERS = ("leaf", "spine", "core")
CABLE_TIERS = ("host", "leaf_spine", "spine_core")  # a cable's tier: its lower end's tier
HOST_NIC_PREFIX = "mlx5_"  # rail k of a planned node is NIC mlx5_k (as the inventory's fabric_rails)


class PlanError(UsageError):
    """A plan that cannot be made (more GPUs than three tiers of that radix hold, a NIC speed the switch
    cannot break out to, zero GPUs), or a plan file that cannot be read: one line naming the option or
    key, exit 2."""


@dataclass(frozen=True)
class SwitchModel:
    """One switch model of the catalog (fabcheck.fabricplan.catalog), or the generic one the command
    line describes with --switch-ports/--switch-port-gbps."""

    name: str  # catalog key, as --switch takes it: qm9700; "generic" for --switch-ports
    title: str  # "NVIDIA Quantum-2 QM9700"
    fabric: str  # "ib", "roce"; "any" for the generic model (builds either)
    cages: int  # front-panel cages (OSFP)
    cage_gbps: int  # what one cage carries: 800 for a QM9700 cage (2 x 400G NDR)
    link_gbps: tuple[int, ...]  # the link speeds a cage breaks out to, fastest first
    platform: str | None  # the inventory platform of an Ethernet model (nvue, sonic, eos); None: IB
    source: str  # the datasheet it rests on (https URL); "" for the generic model

    def lanes(self, nic_gbps: int) -> int:
        """Links of nic_gbps one cage carries; 0 when the cage cannot break out to that speed."""
        if nic_gbps not in self.link_gbps or self.cage_gbps % nic_gbps:
            return 0
        return self.cage_gbps // nic_gbps

    def ports(self, nic_gbps: int) -> int:
        """Logical ports at nic_gbps (cages x lanes)."""
        return self.cages * self.lanes(nic_gbps)


@dataclass(frozen=True)
class PlanInput:
    """The planner's question, validated by the command line (PlanError names the option)."""

    fabric: str  # one of FABRICS
    gpus: int
    gpus_per_node: int
    nics_per_node: int  # rails; default gpus_per_node
    nic_gbps: int
    leaf_model: SwitchModel
    spine_model: SwitchModel  # spines and cores; default the leaf model
    oversubscription: float = 1.0  # leaf downlink : uplink capacity; 1 = non-blocking
    rail_optimised: bool = True

    @property
    def nodes(self) -> int:
        return self.gpus // self.gpus_per_node

    @property
    def host_links(self) -> int:
        return self.nodes * self.nics_per_node


@dataclass(frozen=True)
class PlannedSwitch:
    name: str  # leaf-01-r0 (rail-optimised: group 01, rail 0), leaf-01, spine-01, core-01
    tier: str  # one of TIERS
    model: str  # SwitchModel.name
    ports: int  # logical ports at the plan's link speed
    rail: int | None = None  # the rail a rail-optimised leaf carries
    group: int = 1  # scalable unit (leaf: its group of nodes) or pod (spine), 1-based


@dataclass(frozen=True)
class PortEnd:
    """One end of a planned cable: a host NIC (`port` the NIC name, mlx5_0) or a switch's logical
    port (`port` its number as text, "1")."""

    device: str
    port: str


@dataclass(frozen=True)
class PlannedCable:
    """One cable; `a` is the lower tier (the host, else the leaf, else the spine), `b` the upper."""

    a: PortEnd
    b: PortEnd
    tier: str  # one of CABLE_TIERS


@dataclass(frozen=True)
class Bom:
    """The bill of materials. Transceivers: one module per NIC end; one module per used switch cage
    (a breakout module carries all of its cage's links). Cables: one per link."""

    switches: dict[str, int]  # leaf, spine, core, total
    links: dict[str, int]  # host, leaf_spine, spine_core, total
    transceivers: dict[str, int]  # nic, switch, total
    cables: int


@dataclass(frozen=True)
class FabricPlan:
    """The whole plan: inputs, tiers (1, 2 or 3), nodes, switches and cables; bom() counts it."""

    input: PlanInput
    tiers: int
    nodes: tuple[str, ...]  # gpu01, gpu02, ... (zero-padded to the widest number, at least 2 digits)
    switches: tuple[PlannedSwitch, ...]
    cables: tuple[PlannedCable, ...]
    bom: Bom
