"""Desired state of the InfiniBand fabric (issue 37), derived ONCE per run from the intent's `ib_fabric`
and the inventory's IB plan (fabcheck.intent.ib_fabric): every planned link by the node descriptions and
port numbers the fabric tools print, the width and speed each must run at, the node the `ib` stage reads
the fabric from, the error limits and the switch firmware pins. The ib checks read only this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from fabcheck.intent.ib_fabric import IbEnd, IbPlan, end_label, node_description
from fabcheck.intent.model import FabricIntent


@dataclass(frozen=True)
class DesiredIbEnd:
    """One planned end as the fabric shows it: the inventory node, its node description, the port number
    the tools print (a switch port, or the HCA's port) and, for a host, the HCA (`mlx5_0`)."""

    node: str
    description: str
    port: int
    kind: str  # "SW" or "CA" (ibnetdiscover -p's node types)
    nic: str | None = None

    @property
    def label(self) -> str:
        return end_label(self.node, self.port, self.nic)


@dataclass(frozen=True)
class DesiredIbLink:
    """A planned cable and how it must run: `a` the lower tier (host, leaf, spine), `b` the upper."""

    a: DesiredIbEnd
    b: DesiredIbEnd
    width: str
    speed: str

    @property
    def label(self) -> str:
        return f"{self.a.label} ↔ {self.b.label}"


@dataclass(frozen=True)
class DesiredIbSwitch:
    name: str
    tier: str  # leaf, spine, core
    description: str
    port_count: int


@dataclass(frozen=True)
class DesiredIbFabric:
    """The whole planned IB fabric and how the ib stage reads and judges it."""

    reader: str  # the inventory node the stage runs infiniband-diags on
    read_port: tuple[str, int] | None  # (CA, port) for -C/-P; None: the tools' own choice
    width: str
    speed: str
    switches: tuple[DesiredIbSwitch, ...]
    links: tuple[DesiredIbLink, ...]
    # Every planned HCA's node description -> (host, NIC): what ib.guids expects each CA to show.
    host_descriptions: Mapping[str, tuple[str, str]] = field(default_factory=lambda: MappingProxyType({}))
    max_errors: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))  # absent: 0
    firmware: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}))  # device id -> version
    counter_window_s: int = 0


def desired_ib_fabric(
    intent: FabricIntent,
    plan: IbPlan,
    *,
    subnet_managers: Sequence[str] = (),
    gpu_hosts: Sequence[str] = (),
    counter_window_s: int = 0,
) -> DesiredIbFabric | None:
    """Pure: the planned IB fabric and how the ib stage reads and judges it; None without IB switches.

    The reader is `ib_fabric.read_from`, else the intended SM master, else the first node of
    subnet_managers, else the first GPU host (inventory order); read_ib_plan refused an inventory with
    none of them."""
    if not plan.switches:
        return None
    settings = intent.ib_fabric
    reader = (
        settings.read_from
        or intent.subnet_manager.intended_master
        or next(iter(subnet_managers), None)
        or next(iter(gpu_hosts), None)
    )
    if reader is None:
        raise ValueError("no node to read the IB fabric from: read_ib_plan lets no such inventory through")
    switches = {s.name: s for s in plan.switches}

    def end(planned: IbEnd) -> DesiredIbEnd:
        if planned.nic is None:
            return DesiredIbEnd(planned.node, switches[planned.node].description, planned.port, "SW")
        description = node_description(settings.host_description, plan.hostname(planned.node), planned.nic)
        return DesiredIbEnd(planned.node, description, planned.port, "CA", planned.nic)

    links = tuple(
        DesiredIbLink(end(cable.a), end(cable.b), settings.width, settings.speed) for cable in plan.cables
    )
    hcas: dict[str, tuple[str, str]] = {}
    for link in links:
        if link.a.nic is not None:
            hcas[link.a.description] = (link.a.node, link.a.nic)
    read_port = None
    if settings.read_port is not None:
        ca, port = settings.read_port.split("/")
        read_port = (ca, int(port))
    return DesiredIbFabric(
        reader=reader,
        read_port=read_port,
        width=settings.width,
        speed=settings.speed,
        switches=tuple(DesiredIbSwitch(s.name, s.tier, s.description, s.port_count) for s in plan.switches),
        links=links,
        host_descriptions=MappingProxyType(hcas),
        max_errors=MappingProxyType({str(name): limit for name, limit in settings.max_errors.items()}),
        firmware=MappingProxyType({pin.device_id: pin.version for pin in settings.firmware}),
        counter_window_s=counter_window_s,
    )
