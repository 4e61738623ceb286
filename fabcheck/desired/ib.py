"""Desired state of the InfiniBand fabric (issue 37), derived ONCE per run from the intent's `ib_fabric`
and the inventory's IB plan (fabcheck.intent.ib_fabric): every planned link by the node descriptions and
port numbers the fabric tools print, the width and speed each must run at, the node the `ib` stage reads
the fabric from, the error limits and the switch firmware pins. The ib checks read only this.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


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
        """`leaf03/17`, `gpu01/mlx5_0` (port 1 of an HCA), `gpu01/mlx5_0/2`."""
        if self.nic is None:
            return f"{self.node}/{self.port}"
        return f"{self.node}/{self.nic}" + ("" if self.port == 1 else f"/{self.port}")


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
