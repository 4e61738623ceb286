"""Typed records of the InfiniBand fabric as infiniband-diags show it from one node (issue 37).

The parsers of `ibnetdiscover -p`, `iblinkinfo --line`, `ibqueryerrors`, `perfquery -x`, `saquery` and
`vendstat -N` turn text into these records; the ib checks (fabcheck.checks.ib) judge them against the
planned fabric (fabcheck.desired.ib). Every name and unit follows the tools' own (rdma-core
infiniband-diags; docs/checks/ib.md cites the sources):

- a GUID is kept as the tools print it, normalised to `0x` + 16 lowercase hex digits (`guid_text`);
- width is `1x 2x 4x 8x 12x` (ibnetdiscover's spelling; iblinkinfo's `4X` is normalised), speed is the
  generation name `SDR DDR QDR FDR10 FDR EDR HDR NDR XDR` (iblinkinfo's per-lane `106.25 Gbps` maps to NDR);
  an unknown code (`???`, `undefined (N)`) is None: "not known", never a default;
- a port is (node GUID or port-0 GUID of a switch, port number); every switch port of `ibnetdiscover -p`
  prints the switch's port-0 GUID, so (guid, port) names one switch port, and a CA's port GUID names its
  own port.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import get_args

from fabcheck.intent.model import IbErrorCounter, IbSpeed, IbWidth

# LinkWidthActive as ibnetdiscover prints it (rdma-core infiniband-diags/ibnetdiscover.c
# dump_linkwidth_compat), in increasing lane count; the intent names them the same way.
WIDTHS: tuple[str, ...] = get_args(IbWidth)
# Link speed generations in increasing per-lane rate (ibnetdiscover.c dump_linkspeed_compat,
# libibmad dump.c mad_dump_linkspeedext / mad_dump_linkspeedext2).
SPEEDS: tuple[str, ...] = get_args(IbSpeed)
# iblinkinfo / libibmad print the per-lane signalling rate: the generation each one names.
LANE_GBPS_TO_SPEED = {
    "2.5": "SDR",
    "5.0": "DDR",
    "10.0": "QDR",
    "14.0625": "FDR",
    "25.78125": "EDR",
    "53.125": "HDR",
    "106.25": "NDR",
    "212.5": "XDR",
}
# Nominal 4x data rate of each generation in Gb/s (4 x the lane name, rounded), for messages only.
NOMINAL_4X_GBPS = {
    "SDR": 10,
    "DDR": 20,
    "QDR": 40,
    "FDR10": 40,
    "FDR": 56,
    "EDR": 100,
    "HDR": 200,
    "NDR": 400,
    "XDR": 800,
}

NODE_TYPES = ("SW", "CA", "RT")  # ibnetdiscover -p: switch, channel adapter, router

# The error counters ib.errors judges as deltas over the counter window (the intent's names).
# PortXmitWait is congestion (ticks with data queued and nothing sent): reported, never an error.
ERROR_COUNTERS: tuple[str, ...] = get_args(IbErrorCounter)
CONGESTION_COUNTER = "PortXmitWait"
# Bit widths of the basic (not -x) counters: a narrow counter stops at all ones, so a value there is
# "saturated, at least this" (libibmad fields.c).
COUNTER_BITS = {
    "SymbolErrorCounter": 16,
    "LinkErrorRecoveryCounter": 8,
    "LinkDownedCounter": 8,
    "PortRcvErrors": 16,
    "PortRcvRemotePhysicalErrors": 16,
    "PortXmitDiscards": 16,
    "ExcessiveBufferOverrunErrors": 4,
    "LocalLinkIntegrityErrors": 4,
    "PortXmitWait": 32,
}

_GUID = re.compile(r"(?:0x)?([0-9a-fA-F]{1,16})")


def guid_text(text: str) -> str | None:
    """`0x` + 16 lowercase hex digits of a GUID as any tool prints it (`0x7cfe9003009ce5b0`,
    `7cfe9003009ce5b0`, `0x200002`); None for anything else."""
    found = _GUID.fullmatch(text.strip())
    return None if found is None else "0x" + found.group(1).lower().rjust(16, "0")


@dataclass(frozen=True)
class IbPortEnd:
    """One end of a link as the fabric shows it: node type, LID (a switch port shows the switch's LID),
    port number, GUID (a switch's port-0 GUID for every port of it) and node description."""

    kind: str  # NODE_TYPES
    lid: int
    port: int
    guid: str  # guid_text form
    description: str  # as printed, surrounding white space removed

    @property
    def key(self) -> tuple[str, int]:
        return (self.guid, self.port)


@dataclass(frozen=True)
class IbPortSeen:
    """One line of `ibnetdiscover -p` (or `iblinkinfo --line`): a port, the width and speed it runs at
    (None: not known, or the port has no peer) and its peer (None: the port is up with nothing
    discovered behind it)."""

    local: IbPortEnd
    width: str | None
    speed: str | None
    peer: IbPortEnd | None = None


@dataclass(frozen=True)
class IbLink:
    """A cable as discovered: its two ends in a stable order (the lower (guid, port) first), and the
    width and speed each end reported (the two agree on a healthy link)."""

    a: IbPortEnd
    b: IbPortEnd
    width_a: str | None
    speed_a: str | None
    width_b: str | None = None  # None also when only one end's line was seen
    speed_b: str | None = None


@dataclass(frozen=True)
class IbTopology:
    """Every port line of one discovery. `links` pairs the two lines of each cable (each link appears
    twice in ibnetdiscover -p, once from each end) into one IbLink."""

    ports: tuple[IbPortSeen, ...]
    source: str = ""

    def links(self) -> tuple[IbLink, ...]:
        seen: dict[tuple[tuple[str, int], tuple[str, int]], IbLink] = {}
        for line in self.ports:
            peer = line.peer
            if peer is None:
                continue
            local_key, peer_key = line.local.key, peer.key
            local_first = local_key <= peer_key
            first, second = (line.local, peer) if local_first else (peer, line.local)
            pair = (local_key, peer_key) if local_first else (peer_key, local_key)
            known = seen.get(pair)
            if known is None:
                seen[pair] = IbLink(
                    first,
                    second,
                    line.width if local_first else None,
                    line.speed if local_first else None,
                    None if local_first else line.width,
                    None if local_first else line.speed,
                )
            elif local_first:
                seen[pair] = IbLink(first, second, line.width, line.speed, known.width_b, known.speed_b)
            else:
                seen[pair] = IbLink(first, second, known.width_a, known.speed_a, line.width, line.speed)
        return tuple(seen[pair] for pair in sorted(seen))

    def ends(self) -> tuple[IbPortEnd, ...]:
        """Every distinct port seen, local or peer, in (guid, port) order."""
        found: dict[tuple[str, int], IbPortEnd] = {}
        for line in self.ports:
            found.setdefault(line.local.key, line.local)
            if line.peer is not None:
                found.setdefault(line.peer.key, line.peer)
        return tuple(found[key] for key in sorted(found))


@dataclass(frozen=True)
class IbNodeRecord:
    """One SA NodeRecord (`saquery`): one per (node, port) for a CA, one per switch (port 0)."""

    lid: int
    node_type: str  # "Channel Adapter", "Switch", "Router" as saquery prints it
    num_ports: int
    node_guid: str
    port_guid: str
    port_num: int
    vendor_id: int
    device_id: int
    system_image_guid: str | None
    description: str


@dataclass(frozen=True)
class IbPortCounters:
    """The counters of one port as one sweep showed them: name -> value. A counter the tool left out
    is absent, never 0 (ibqueryerrors prints only counters over their threshold: `IbErrorSweep.complete`
    says whether an absent one means 0)."""

    guid: str
    port: int
    description: str
    counts: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    wide: frozenset[str] = frozenset()  # counters shown as 64-bit extended ones (never saturate)


@dataclass(frozen=True)
class IbErrorSweep:
    """One fabric-wide counter reading (`ibqueryerrors` with every threshold 0, or `perfquery -x` per
    port): the ports it printed, and what its summary said it checked. `complete` is True only when the
    summary was read and no PMA query failed, so that a port it did not print counted nothing."""

    ports: Mapping[tuple[str, int], IbPortCounters]
    nodes_checked: int | None
    ports_checked: int | None
    pma_failures: int
    complete: bool
    source: str = ""


@dataclass(frozen=True)
class IbCounterDelta:
    """One port's counters over the window: later - earlier per counter; a counter that went down was
    cleared inside the window (by the SM, UFM or `-k`), named in `reset`, and its delta is unknown."""

    guid: str
    port: int
    description: str
    deltas: Mapping[str, int]
    reset: tuple[str, ...] = ()
    saturated: tuple[str, ...] = ()  # at all ones at the end: "at least" this many


@dataclass(frozen=True)
class IbSwitchFirmware:
    """One switch's firmware as `vendstat -N <lid>` shows it (rdma-core infiniband-diags/vendstat.c:
    hw_dev_rev, hw_dev_id, fw_version, fw_psid, ...)."""

    lid: int
    fw_version: str | None  # "31.2012.1024"; None: not shown
    device_id: int | None = None  # hw_dev_id
    hw_revision: int | None = None  # hw_dev_rev
    psid: str | None = None  # fw_psid
