"""Records of the PCIe bus between a GPU and its rail NIC (docs/checks/bus.md).

`lspci -D -vvv` (every function, with its link capability and status, its ACS and ATS control and, for
a bridge, the bus range behind it) becomes a `PcieTree`; the AER counters of sysfs
(`/sys/bus/pci/devices/<BDF>/aer_dev_{correctable,nonfatal,fatal}`) become `AerCounts` per function.
The tree is rebuilt from the bridges' secondary..subordinate bus ranges, so the path from a GPU to its
NIC (every bridge it crosses) is known without `lspci -t`.

A BDF is always the full lower-case `dddd:bb:dd.f` (lspci -D); `bdf_of` normalises what other tools
print (nvidia-smi's `00000000:18:00.0`, a kernel log's `PCI:0000:18:00`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

AerSeverity = Literal["correctable", "nonfatal", "fatal"]
AER_SEVERITIES: tuple[AerSeverity, ...] = ("correctable", "nonfatal", "fatal")

_BDF = re.compile(
    r"^(?:(?P<domain>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})\.(?P<fn>[0-7])$"
)


def bdf_of(text: str) -> str | None:
    """'0000:1a:00.0' for any spelling of one PCI function ('00000000:1A:00.0', '1a:00.0' (domain 0),
    'PCI:0000:1a:00.0'); None when the text is not a BDF."""
    found = _BDF.match(text.strip().removeprefix("PCI:"))
    if found is None:
        return None
    domain = int(found["domain"] or "0", 16)
    return f"{domain:04x}:{found['bus'].lower()}:{found['dev'].lower()}.{found['fn']}"


@dataclass(frozen=True)
class PcieLink:
    """A link's speed (GT/s: 2.5 Gen1, 5 Gen2, 8 Gen3, 16 Gen4, 32 Gen5, 64 Gen6) and width (lanes);
    None where the device printed none it could decode (lspci `Speed unknown`)."""

    speed_gts: float | None
    width: int | None

    @property
    def generation(self) -> int | None:
        return GENERATION_OF_SPEED.get(self.speed_gts) if self.speed_gts is not None else None

    def __str__(self) -> str:
        speed = "speed unknown" if self.speed_gts is None else f"{self.speed_gts:g} GT/s"
        gen = f" (Gen{self.generation})" if self.generation else ""
        width = "width unknown" if self.width is None else f"x{self.width}"
        return f"{speed}{gen} {width}"


GENERATION_OF_SPEED: Mapping[float, int] = MappingProxyType(
    {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6, 128.0: 7}
)

# ACS control bits lspci prints in ACSCtl (pciutils ls-ecaps.c). The redirect bits are the ones that send
# peer-to-peer requests and completions up to the root complex instead of across the switch.
ACS_REDIRECT_BITS = ("ReqRedir", "CmpltRedir")


@dataclass(frozen=True)
class PcieFunction:
    """One PCI function as `lspci -D -vvv` shows it (what could not be read, e.g. without root, is None)."""

    bdf: str
    description: str  # the class and name after the BDF ("Ethernet controller: Mellanox ... [ConnectX-7]")
    bridge: bool  # a PCI bridge (root port, switch upstream or downstream port)
    port_type: str | None = None  # the Express capability's type: "Root Port", "Upstream Port",
    #                               "Downstream Port", "Endpoint", "Legacy Endpoint", ...
    secondary_bus: int | None = None  # a bridge's bus range: the buses behind it (`Bus: primary=..,`)
    subordinate_bus: int | None = None
    link_capability: PcieLink | None = None  # LnkCap
    link_status: PcieLink | None = None  # LnkSta
    # ACSCtl flag -> set, e.g. {"SrcValid": True, "ReqRedir": True, ...}; None: no ACS capability shown
    acs_control: Mapping[str, bool] | None = None
    ats_enabled: bool | None = None  # ATSCtl Enable+/-; None: no ATS capability shown
    driver: str | None = None  # `Kernel driver in use:`
    access_denied: bool = False  # lspci printed `Capabilities: <access denied>` (not run as root)

    @property
    def domain(self) -> str:
        return self.bdf.split(":")[0]

    @property
    def bus(self) -> int:
        return int(self.bdf.split(":")[1], 16)

    @property
    def acs_redirect(self) -> tuple[str, ...]:
        """The ACS redirect bits this bridge has enabled (empty: peer-to-peer may cross it)."""
        control = self.acs_control or {}
        return tuple(bit for bit in ACS_REDIRECT_BITS if control.get(bit))


@dataclass(frozen=True)
class PcieTree:
    """Every function one host showed, keyed by BDF; the tree follows from the bridges' bus ranges."""

    functions: Mapping[str, PcieFunction]

    def parent(self, bdf: str) -> PcieFunction | None:
        """The bridge whose secondary bus the function sits on (None: on a root bus)."""
        function = self.functions.get(bdf)
        if function is None:
            return None
        for candidate in self.functions.values():
            if (
                candidate.bridge
                and candidate.domain == function.domain
                and candidate.secondary_bus == function.bus
                and candidate.bdf != bdf
            ):
                return candidate
        return None

    def upstream(self, bdf: str) -> tuple[PcieFunction, ...]:
        """The bridges above the function, nearest first, up to its root port."""
        chain: list[PcieFunction] = []
        seen = {bdf}
        parent = self.parent(bdf)
        while parent is not None and parent.bdf not in seen:
            chain.append(parent)
            seen.add(parent.bdf)
            parent = self.parent(parent.bdf)
        return tuple(chain)

    def path(self, a: str, b: str) -> tuple[PcieFunction, ...]:
        """The bridges peer-to-peer traffic from `a` to `b` crosses below the root complex: up from `a` to
        the lowest bridge above both, then down to `b` (that shared bridge included). Empty when they
        share no bridge (the traffic goes through the root complex: host bridges, not judged here)."""
        above_a, above_b = self.upstream(a), self.upstream(b)
        shared = {bridge.bdf for bridge in above_b}
        for index, bridge in enumerate(above_a):
            if bridge.bdf in shared:
                down = next(i for i, other in enumerate(above_b) if other.bdf == bridge.bdf)
                return (*above_a[: index + 1], *reversed(above_b[:down]))
        return ()


@dataclass(frozen=True)
class AerCounts:
    """One function's AER counters (cumulative since boot): severity -> error name -> count, and the
    device's own TOTAL_ERR_* lines (which may differ from the sum: one message can carry several)."""

    bdf: str
    counts: Mapping[AerSeverity, Mapping[str, int]] = field(default_factory=dict)
    totals: Mapping[AerSeverity, int] = field(default_factory=dict)

    def total(self, severity: AerSeverity) -> int | None:
        """The TOTAL_ERR_* line, else the sum of the named counters; None: the severity was not shown."""
        if severity in self.totals:
            return self.totals[severity]
        named = self.counts.get(severity)
        return None if named is None else sum(named.values())
