"""A hand-built InfiniBand fabric for the ib check tests: 2 leaves, 2 spines, 4 hosts (one HCA each),
its plan (DesiredIbFabric) and what infiniband-diags would show of it as records (the parsers' output),
each fault one edit of the cables, counters, SA records or firmware."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType

from fabcheck.checks.ib import IbEvidence
from fabcheck.desired.ib import DesiredIbEnd, DesiredIbFabric, DesiredIbLink, DesiredIbSwitch
from fabcheck.parsers.ib_records import (
    IbCounterDelta,
    IbErrorSweep,
    IbNodeRecord,
    IbPortEnd,
    IbPortSeen,
    IbSwitchFirmware,
    IbTopology,
)

SWITCHES = {"leaf01": "leaf", "leaf02": "leaf", "spine01": "spine", "spine02": "spine"}
HOSTS = ("gpu01", "gpu02", "gpu03", "gpu04")
QM9700 = 0xD2F2  # Quantum-2 device id (54002)
FIRMWARE = "31.2012.1024"
# (lower end, upper end): a host HCA is (host, "mlx5_0"), a switch port (switch, port)
HOST_CABLES = ((("gpu01", "mlx5_0"), ("leaf01", 1)), (("gpu02", "mlx5_0"), ("leaf01", 2)))
HOST_CABLES += ((("gpu03", "mlx5_0"), ("leaf02", 1)), (("gpu04", "mlx5_0"), ("leaf02", 2)))
UPLINKS = (
    (("leaf01", 3), ("spine01", 1)),
    (("leaf01", 4), ("spine02", 1)),
    (("leaf02", 3), ("spine01", 2)),
    (("leaf02", 4), ("spine02", 2)),
)

Port = tuple[str, int | str]


def _lid(node: str) -> int:
    names = [*SWITCHES, *HOSTS]
    return names.index(node) + 1


def _guid(node: str) -> str:
    return f"0x{0x7CFE900300000000 + _lid(node):016x}"


def description(node: str) -> str:
    return node if node in SWITCHES else f"{node} mlx5_0"


def end(port: Port) -> IbPortEnd:
    node, where = port
    if node in SWITCHES:
        assert isinstance(where, int)
        return IbPortEnd("SW", _lid(node), where, _guid(node), description(node))
    return IbPortEnd("CA", _lid(node), 1, _guid(node), description(node))


def planned_end(port: Port) -> DesiredIbEnd:
    node, where = port
    if node in SWITCHES:
        assert isinstance(where, int)
        return DesiredIbEnd(node, node, where, "SW")
    return DesiredIbEnd(node, description(node), 1, "CA", str(where))


def desired(**changes: object) -> DesiredIbFabric:
    links = tuple(
        DesiredIbLink(planned_end(a), planned_end(b), "4x", "NDR") for a, b in (*HOST_CABLES, *UPLINKS)
    )
    fabric = DesiredIbFabric(
        reader="gpu01",
        read_port=("mlx5_0", 1),
        width="4x",
        speed="NDR",
        switches=tuple(DesiredIbSwitch(name, tier, name, 64) for name, tier in SWITCHES.items()),
        links=links,
        host_descriptions=MappingProxyType({description(h): (h, "mlx5_0") for h in HOSTS}),
        counter_window_s=10,
    )
    return replace(fabric, **changes)  # type: ignore[arg-type]


@dataclass
class Shown:
    """What the reader's tools show, editable: cables with each end's (width, speed), counter deltas by
    (node, port), SA records, firmware by LID."""

    cables: dict[tuple[Port, Port], tuple[tuple[str | None, str | None], tuple[str | None, str | None]]] = (
        field(
            default_factory=lambda: {
                (a, b): (("4x", "NDR"), ("4x", "NDR")) for a, b in (*HOST_CABLES, *UPLINKS)
            }
        )
    )
    deltas: dict[Port, dict[str, int]] = field(default_factory=dict)
    reset: dict[Port, tuple[str, ...]] = field(default_factory=dict)
    saturated: dict[Port, tuple[str, ...]] = field(default_factory=dict)
    records: list[IbNodeRecord] = field(default_factory=list)
    firmware: dict[int, IbSwitchFirmware] = field(default_factory=dict)
    down: list[Port] = field(default_factory=list)  # ports ibnetdiscover -p prints without a peer
    complete: bool = True
    window_s: int = 10

    def __post_init__(self) -> None:
        if not self.records:
            self.records = [record(node) for node in (*SWITCHES, *HOSTS)]
        if not self.firmware:
            self.firmware = {
                _lid(s): IbSwitchFirmware(_lid(s), FIRMWARE, QM9700, 0, "MT_0000000681") for s in SWITCHES
            }

    def topology(self) -> IbTopology:
        lines = []
        for (a, b), (runs_a, runs_b) in self.cables.items():
            lines.append(IbPortSeen(end(a), runs_a[0], runs_a[1], end(b)))
            lines.append(IbPortSeen(end(b), runs_b[0], runs_b[1], end(a)))
        lines += [IbPortSeen(end(port), "4x", "SDR") for port in self.down]  # libibmad's defaults
        return IbTopology(tuple(lines))

    def evidence(self) -> IbEvidence:
        sweep = IbErrorSweep(MappingProxyType({}), 8, 20, 0 if self.complete else 2, self.complete)
        deltas = tuple(
            IbCounterDelta(
                end(port).guid,
                end(port).port,
                description(port[0]),
                counts,
                self.reset.get(port, ()),
                self.saturated.get(port, ()),
            )
            for port, counts in self.deltas.items()
        )
        return IbEvidence(
            self.topology(), tuple(self.records), sweep, sweep, deltas, dict(self.firmware), self.window_s
        )

    def swap_at_upper(self, first: tuple[Port, Port], second: tuple[Port, Port]) -> None:
        """Two cables' upper plugs swapped (at a spine)."""
        runs = self.cables.pop(first)
        self.cables.pop(second)
        self.cables[(first[0], second[1])] = runs
        self.cables[(second[0], first[1])] = runs


def record(node: str, **changes: object) -> IbNodeRecord:
    switch = node in SWITCHES
    made = IbNodeRecord(
        lid=_lid(node),
        node_type="Switch" if switch else "Channel Adapter",
        num_ports=65 if switch else 1,
        node_guid=_guid(node),
        port_guid=_guid(node),
        port_num=0 if switch else 1,
        vendor_id=0x2C9,
        device_id=QM9700 if switch else 0x1021,
        system_image_guid=_guid(node),
        description=description(node),
    )
    return replace(made, **changes)  # type: ignore[arg-type]


def lid(node: str) -> int:
    return _lid(node)


def guid(node: str) -> str:
    return _guid(node)
