"""Desired state of the InfiniBand subnet managers (OpenSM) and of the IB hosts' IPoIB partitions.

Every value the opensm and ib_host roles write is computed here and nowhere else: the opensm.conf keys
of each SM node (its own sm_priority), the lines of partitions.conf in OpenSM's syntax, and which IPoIB
child interfaces a host needs. The roles' templates only print these records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fabcheck.intent.model import DEFAULT_PKEY, PKEY_FULL_MEMBER, FabricIntent, Partition

OPENSM_CONF_PATH = "/etc/opensm/opensm.conf"
PARTITIONS_CONF_PATH = "/etc/opensm/partitions.conf"
OPENSM_DEFAULT_PRIORITY = 0  # what OpenSM runs with when opensm.conf sets no sm_priority
# Without partitions.conf OpenSM makes every port a full member of the default partition. A file without
# a Default rule would make them limited members (only SELF full), so fabcheck writes this rule unless the
# intent states its own rule for pkey 0x7fff.
DEFAULT_PARTITION = Partition(name="Default", pkey="0x7fff", members="ALL=full", ipoib=True)
# IBTA MTU enumeration, as partitions.conf's mtu= flag takes it.
IBTA_MTU = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}


@dataclass(frozen=True)
class DesiredPartition:
    """One partitions.conf rule."""

    name: str
    pkey: int  # 15 bits, 0x0001..0x7fff
    ipoib: bool
    flag_pairs: tuple[tuple[str, int], ...]  # IPoIB broadcast-group flags (mtu=, sl=), in file order
    members: tuple[str, ...]

    @property
    def line(self) -> str:
        """`Name=0xPKEY[, ipoib][, flag=value...] : member, member ;` (OpenSM partition-config.txt)."""
        head = [f"{self.name}=0x{self.pkey:04x}"]
        if self.ipoib:
            head.append("ipoib")
        head += [f"{flag}={value}" for flag, value in self.flag_pairs]
        return f"{', '.join(head)} : {', '.join(self.members)} ;"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "pkey": f"0x{self.pkey:04x}",
            "ipoib": self.ipoib,
            "flags": dict(self.flag_pairs),
            "members": list(self.members),
            "line": self.line,
        }


@dataclass(frozen=True)
class DesiredSubnetManager:
    """What one SM node must hold: its opensm.conf settings and the fabric's partitions.conf."""

    node: str
    kind: str
    sm_priority: int
    intended_master: str | None  # the node the intent makes master (None: no priorities set)
    conf_pairs: tuple[tuple[str, str], ...]  # opensm.conf `key value` lines, in file order
    partitions: tuple[DesiredPartition, ...]
    opensm_conf_path: str = OPENSM_CONF_PATH
    partitions_conf_path: str = PARTITIONS_CONF_PATH

    @property
    def conf(self) -> dict[str, str]:
        return dict(self.conf_pairs)

    @property
    def partition_lines(self) -> tuple[str, ...]:
        return tuple(partition.line for partition in self.partitions)

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "kind": self.kind,
            "sm_priority": self.sm_priority,
            "intended_master": self.intended_master,
            "opensm_conf_path": self.opensm_conf_path,
            "opensm_conf": [list(pair) for pair in self.conf_pairs],
            "partitions_conf_path": self.partitions_conf_path,
            "partitions": [partition.to_json() for partition in self.partitions],
            "partition_lines": list(self.partition_lines),
        }


def desired_subnet_manager(intent: FabricIntent, node: str) -> DesiredSubnetManager:
    """Pure: the fabric intent -> what SM node `node` must run (an unlisted node: priority 0)."""
    manager = intent.subnet_manager
    priority = manager.sm_priorities.get(node, OPENSM_DEFAULT_PRIORITY)
    pairs: list[tuple[str, str]] = [
        ("sm_priority", str(priority)),
        ("routing_engine", manager.routing_engine),
        ("lmc", str(manager.lmc)),
        ("sweep_interval", str(manager.sweep_interval)),
        ("qos", _boolean(manager.qos)),
    ]
    pairs += [(key, _conf_value(value)) for key, value in manager.qos_settings.items()]
    pairs.append(("partition_config_file", PARTITIONS_CONF_PATH))
    stated = list(manager.partitions)
    if all(p.pkey_value != DEFAULT_PKEY for p in stated):
        stated.insert(0, DEFAULT_PARTITION)
    return DesiredSubnetManager(
        node=node,
        kind=intent.kind,
        sm_priority=priority,
        intended_master=manager.intended_master,
        conf_pairs=tuple(pairs),
        partitions=tuple(_partition(p) for p in stated),
    )


def _boolean(value: bool) -> str:
    return "TRUE" if value else "FALSE"  # OpenSM prints and reads booleans this way


def _conf_value(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(item) for item in value)  # qos_sl2vl: one VL per SL, comma separated
    return str(value)


def _partition(partition: Partition) -> DesiredPartition:
    flags: list[tuple[str, int]] = []
    if partition.mtu is not None:
        flags.append(("mtu", IBTA_MTU[partition.mtu]))
    if partition.sl is not None:
        flags.append(("sl", partition.sl))
    return DesiredPartition(
        name=partition.name,
        pkey=partition.pkey_value,
        ipoib=partition.ipoib,
        flag_pairs=tuple(flags),
        members=tuple(member.strip() for member in partition.members.split(",")),
    )


@dataclass(frozen=True)
class DesiredIpoibChild:
    """An IPoIB child interface: `ip link add link PARENT name NAME type ipoib pkey 0xPKEY`."""

    parent: str
    name: str
    pkey: int  # with the full-member bit, as the kernel's create_child sets it
    partition: str

    def to_json(self) -> dict[str, Any]:
        return {
            "parent": self.parent,
            "name": self.name,
            "pkey": f"0x{self.pkey:04x}",
            "partition": self.partition,
        }


@dataclass(frozen=True)
class DesiredIbHost:
    """The IB host side of the partitions: which IPoIB child interfaces the host must have."""

    host: str
    kind: str
    ipoib_children: tuple[DesiredIpoibChild, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "kind": self.kind,
            "ipoib_children": [c.to_json() for c in self.ipoib_children],
        }


def desired_ib_host(intent: FabricIntent, host: str) -> DesiredIbHost:
    """Pure: the fabric intent -> the IPoIB children of an IB host, named PARENT.PKEY like the kernel
    names the children it creates (`ib0.8001`: 4 hex digits, full-member bit set)."""
    children = []
    for partition in intent.subnet_manager.partitions:
        if not partition.ipoib:
            continue
        pkey = partition.pkey_value | PKEY_FULL_MEMBER
        for parent in partition.ipoib_parents:
            children.append(DesiredIpoibChild(parent, f"{parent}.{pkey:04x}", pkey, partition.name))
    return DesiredIbHost(host=host, kind=intent.kind, ipoib_children=tuple(children))
