"""`lspci -D -vvv` -> PcieTree (docs/checks/bus.md).

The layout is pciutils' (pciutils/pciutils:ls-caps.c and
ls-ecaps.c@0f5b941aa5cf8b1b126ff3e4176b1c32b2158289): a function starts at column 0 with its BDF
and description; its fields follow indented by tabs. Read:

    Bus: primary=01, secondary=02, subordinate=08, sec-latency=0      (a bridge: the buses behind it)
    Capabilities: [68] Express (v2) Downstream Port (Slot+), MSI 00   (the port type)
        LnkCap:  Port #8, Speed 5GT/s, Width x16, ASPM L1, ...
        LnkSta:  Speed 2.5GT/s (downgraded), Width x8 (downgraded), ...  ((ok)/(strange) before 3.8.0)
        ACSCtl:  SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
        ATSCtl:  Enable-, Smallest Translation Unit: 00
    Kernel driver in use: pcieport

`-xxx` hex dump lines (`00: b5 10 ...`) are skipped. Without root lspci prints
`Capabilities: <access denied>`: the function's link, ACS and ATS are None and `access_denied` says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.bus_records import PcieFunction, PcieLink, PcieTree, bdf_of

_HEADER = re.compile(r"^(?P<bdf>[0-9A-Fa-f]{2,8}:[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2})?\.[0-7]) (?P<desc>.+)$")
_HEX_DUMP = re.compile(r"^[0-9a-f]{2,3}: [0-9a-f]{2}( [0-9a-f]{2})*\s*$")
_BUS = re.compile(
    r"primary=(?P<primary>[0-9a-fA-F]+), secondary=(?P<sec>[0-9a-fA-F]+), subordinate=(?P<sub>[0-9a-fA-F]+)"
)
_EXPRESS = re.compile(
    r"^Capabilities: \[[0-9a-fA-F]+\] Express (?:\(v\d+\) )?(?P<type>[^,(]+?)(?: \(Slot[+-]\))?, "
)
_SPEED = re.compile(r"Speed (?:(?P<gts>[0-9.]+)GT/s|unknown)")
_WIDTH = re.compile(r"Width x(?P<width>\d+)")
_FLAG = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9_]*)(?P<set>[+-])")
ACCESS_DENIED = "<access denied>"


@dataclass
class _Building:
    bdf: str
    description: str
    line: int
    bus: tuple[int, int] | None = None
    port_type: str | None = None
    link_capability: PcieLink | None = None
    link_status: PcieLink | None = None
    acs_control: dict[str, bool] | None = None
    ats_enabled: bool | None = None
    driver: str | None = None
    access_denied: bool = False
    seen: set[str] = field(default_factory=set)

    def done(self) -> PcieFunction:
        return PcieFunction(
            bdf=self.bdf,
            description=self.description,
            bridge=self.bus is not None,
            port_type=self.port_type,
            secondary_bus=None if self.bus is None else self.bus[0],
            subordinate_bus=None if self.bus is None else self.bus[1],
            link_capability=self.link_capability,
            link_status=self.link_status,
            acs_control=self.acs_control,
            ats_enabled=self.ats_enabled,
            driver=self.driver,
            access_denied=self.access_denied,
        )


def parse_lspci(text: str, source: str = "<text>") -> PcieTree:
    """Every function `lspci -D -vvv` (or `-vv`, with or without -D, -xxx) printed, keyed by BDF."""
    functions: dict[str, PcieFunction] = {}
    current: _Building | None = None
    for number, raw in enumerate(split_checked_lines(text, source, "lspci"), start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if not line[0].isspace():
            if _HEX_DUMP.match(line):
                continue
            header = _HEADER.match(line)
            bdf = bdf_of(header["bdf"]) if header else None
            if header is None or bdf is None:
                raise ParseError(f"not a device line of lspci: {line[:80]!r}", source=source, line=number)
            if current is not None:
                _keep(functions, current, source)
            current = _Building(bdf, header["desc"].strip(), number)
            continue
        if current is None:
            raise ParseError("a detail line before any device line", source=source, line=number)
        _detail(current, line.strip(), source, number)
    if current is not None:
        _keep(functions, current, source)
    return PcieTree(functions)


def _keep(functions: dict[str, PcieFunction], building: _Building, source: str) -> None:
    if building.bdf in functions:
        raise ParseError(f"{building.bdf} is listed twice", source=source, line=building.line)
    functions[building.bdf] = building.done()


def _detail(function: _Building, line: str, source: str, number: int) -> None:
    key, _, value = line.partition(":")
    value = value.strip()
    if line.startswith("Capabilities:") and ACCESS_DENIED in line:
        function.access_denied = True
    elif key == "Bus":
        found = _BUS.search(value)
        if found is None:
            raise ParseError(f"a Bus line without its bus range: {line[:80]!r}", source=source, line=number)
        function.bus = (int(found["sec"], 16), int(found["sub"], 16))
    elif line.startswith("Capabilities:") and " Express " in line:
        express = _EXPRESS.match(line)
        if express is not None:
            function.port_type = express["type"].strip()
    elif key in ("LnkCap", "LnkSta"):
        if key in function.seen:
            return  # a second Express capability's link (rare) does not replace the first
        function.seen.add(key)
        link = _link(value, line, source, number)
        if key == "LnkCap":
            function.link_capability = link
        else:
            function.link_status = link
    elif key == "ACSCtl":
        function.acs_control = {m["name"]: m["set"] == "+" for m in _FLAG.finditer(value)}
    elif key == "ATSCtl":
        enable = re.match(r"Enable(?P<set>[+-])", value)
        if enable is None:
            raise ParseError(f"an ATSCtl line without Enable+/-: {line[:80]!r}", source=source, line=number)
        function.ats_enabled = enable["set"] == "+"
    elif line.startswith("Kernel driver in use:"):
        function.driver = line.partition(":")[2].strip() or None


def _link(value: str, line: str, source: str, number: int) -> PcieLink:
    speed = _SPEED.search(value)
    width = _WIDTH.search(value)
    if speed is None or width is None:
        raise ParseError(f"a link line without Speed and Width: {line[:80]!r}", source=source, line=number)
    gts = float(speed["gts"]) if speed["gts"] else None
    return PcieLink(gts, int(width["width"]))
