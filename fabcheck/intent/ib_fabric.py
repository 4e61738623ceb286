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

from dataclasses import dataclass

IB_SWITCHES = "ib_switches"
# Tier group -> tier, lowest first: a cable's `a` end is its lower tier (a host is below every switch).
TIER_GROUPS = {"ib_leaves": "leaf", "ib_spines": "spine", "ib_cores": "core"}
TIERS = ("leaf", "spine", "core")
DESCRIPTION_VAR = "ib_node_description"
PORT_COUNT_VAR = "ib_port_count"
HOSTNAME_VAR = "ib_hostname"  # a host's name in its HCAs' node descriptions (%h), default its inventory name
DEFAULT_PORT_COUNT = 64  # NVIDIA Quantum-2 QM9700/QM9790: 64 NDR ports
HCA_PORT = 1  # a host's `fabric_links: {mlx5_0: ...}` cables port 1 of that HCA


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
        """`leaf03/17`, or `gpu01/mlx5_0` for port 1 of a host's HCA (`gpu01/mlx5_0/2` for another)."""
        if self.nic is None:
            return f"{self.node}/{self.port}"
        return f"{self.node}/{self.nic}" + ("" if self.port == HCA_PORT else f"/{self.port}")


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

    def switch(self, name: str) -> IbSwitchNode:
        for switch in self.switches:
            if switch.name == name:
                return switch
        raise KeyError(name)
