"""Parsers for ``ibstat`` (infiniband-diags) and the ``ibstatus`` script (sysfs reader).

``ibstat``: a block starts at ``CA 'name'`` (or ``Switch``/``Router``), then six header lines and one
``Port N:`` block of nine lines per port, all in the tool's fixed order. ``ibstat CA PORT`` prints
``CA: 'name'`` and one unindented port block. Any missing or reordered line inside a block is a
ParseError naming that line; a CA that shows some but not all of its ports is truncated. ``ibstat -s``
(header only, no ports) reads as a CA with no ports.

``ibstatus``: a block starts at ``Infiniband device 'X' port N status:`` and holds indented
``key: value`` lines (any subset: captures are often filtered with grep). ``unknown`` reads as None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.numbers import is_int_token

PORT_STATES = ("???", "Down", "Initializing", "Armed", "Active")
PHYSICAL_STATES = (
    "No state change",
    "Sleep",
    "Polling",
    "Disabled",
    "PortConfigurationTraining",
    "LinkUp",
    "LinkErrorRecovery",
    "PhyTest",
    "???",
)
_HEADER_KEYS = (
    "type",
    "Number of ports",
    "Firmware version",
    "Hardware version",
    "Node GUID",
    "System image GUID",
)
_PORT_KEYS = (
    "State",
    "Physical state",
    "Rate",
    "Base lid",
    "LMC",
    "SM lid",
    "Capability mask",
    "Port GUID",
    "Link layer",
)
_CA_LINE = re.compile(r"(CA|Switch|Router|iWARP RNIC|\?\?\?) '(.+)'")
_SINGLE_PORT_CA_LINE = re.compile(r"(CA|Switch|Router|iWARP RNIC|\?\?\?): '(.+)'")
# Every number is ASCII and bounded ({1,20} digits hold any 64-bit value), so int() cannot fail.
_PORT_LINE = re.compile(r"Port ([0-9]{1,20}):", re.ASCII)
_RATE = re.compile(r"([0-9]{1,20})( \(FDR10\))?|2\.5", re.ASCII)
_GUID = re.compile(r"0x[0-9a-f]{16}")
_CAPABILITY_MASK = re.compile(r"0x[0-9a-f]{8}")

_IBSTATUS_HEADER = re.compile(r"Infiniband device '(.+)' port ([0-9]{1,20}) status:", re.ASCII)
_IBSTATUS_KEYS = ("default gid", "base lid", "sm lid", "state", "phys state", "rate", "link_layer")
_IBSTATUS_LINE = re.compile(r"(default gid|base lid|sm lid|state|phys state|rate|link_layer):\s*(.*)")
_IBSTATUS_STATE = re.compile(r"([0-9]{1,20}): (\S.*)", re.ASCII)
_IBSTATUS_RATE = re.compile(r"([0-9]{1,20}(?:\.[0-9]{1,20})?) Gb/sec(?: \(.+\))?", re.ASCII)
_HEX_LID = re.compile(r"0x[0-9a-fA-F]{1,16}", re.ASCII)
UNKNOWN = "unknown"


@dataclass(frozen=True)
class IbstatPort:
    """One ``Port N:`` block. ``rate`` is Gb/s (2.5 for 1X SDR); ``fdr10`` marks a ``(FDR10)`` rate."""

    number: int
    state: str
    physical_state: str
    rate: int | float
    base_lid: int
    lmc: int
    sm_lid: int
    capability_mask: int
    port_guid: str
    link_layer: str
    fdr10: bool = False


@dataclass(frozen=True)
class IbstatCa:
    """One ``CA 'name'`` block. GUIDs are as printed (``0x`` + 16 hex digits).

    ``ibstat CA PORT`` shows no CA header: its record has None in every header field.
    """

    name: str
    ca_type: str | None
    num_ports: int | None
    fw_version: str | None
    hw_version: str | None
    node_guid: str | None
    sys_image_guid: str | None
    ports: tuple[IbstatPort, ...]
    node_type: str = "CA"


@dataclass(frozen=True)
class IbstatusPort:
    """One ``ibstatus`` port block. Lines the capture does not show (or that read ``unknown``) are None.

    ``state``/``phys_state`` are the sysfs names (``ACTIVE``, ``LinkUp``) with their codes alongside;
    ``rate_text`` is the sysfs rate as printed (``400 Gb/sec (4X NDR)``).
    """

    device: str
    port: int
    default_gid: str | None = None
    base_lid: int | None = None
    sm_lid: int | None = None
    state: str | None = None
    state_code: int | None = None
    phys_state: str | None = None
    phys_state_code: int | None = None
    rate_text: str | None = None
    link_layer: str | None = None

    @property
    def rate_gbps(self) -> float | None:
        """The rate in Gb/s from ``rate_text``."""
        if self.rate_text is None:
            return None
        return float(self.rate_text.split()[0])


def parse_ibstat(text: str, source: str = "<text>") -> tuple[IbstatCa, ...]:
    """Every CA block of an ``ibstat`` capture, in printed order. Raises ParseError when there is none."""
    lines = split_checked_lines(text, source, "ibstat")
    cas: list[IbstatCa] = []
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        full = _CA_LINE.fullmatch(stripped)
        single = _SINGLE_PORT_CA_LINE.fullmatch(stripped)
        if full is not None:
            ca, index = _read_ca(lines, index, source, full.group(1), full.group(2))
            cas.append(ca)
        elif single is not None:
            port, index = _read_port(lines, index + 1, source, single.group(2))
            cas.append(_single_port_ca(single.group(1), single.group(2), port))
        else:
            index += 1
    if not cas:
        raise ParseError("no ibstat output (no \"CA 'name'\" line)", source=source)
    return tuple(cas)


def _single_port_ca(node_type: str, name: str, port: IbstatPort) -> IbstatCa:
    """``ibstat CA PORT`` shows no CA header: only the name and the port are known."""
    return IbstatCa(name, None, None, None, None, None, None, (port,), node_type=node_type)


def _expect(lines: list[str], index: int, key: str, source: str, ca: str) -> str:
    """The value of ``key: value`` at ``index``; ParseError when the line is missing or another one."""
    if index >= len(lines):
        raise ParseError(f"{ca}: output ends before its {key!r} line", source=source, line=len(lines))
    stripped = lines[index].strip()
    if not stripped.startswith(key + ":"):
        raise ParseError(f"{ca}: expected {key!r}, got {stripped!r}", source=source, line=index + 1)
    return stripped[len(key) + 1 :].strip()


def _read_ca(lines: list[str], index: int, source: str, node_type: str, name: str) -> tuple[IbstatCa, int]:
    values = []
    for offset, key in enumerate(_HEADER_KEYS, start=1):
        label = f"{node_type} type" if key == "type" else key
        values.append(_expect(lines, index + offset, label, source, name))
    ca_type, num_ports, fw_version, hw_version, node_guid, sys_image_guid = values
    header_end = index + len(_HEADER_KEYS)
    if not is_int_token(num_ports):
        raise ParseError(f"{name}: bad number of ports {num_ports!r}", source=source, line=index + 3)
    for offset, guid in ((5, node_guid), (6, sys_image_guid)):
        if _GUID.fullmatch(guid) is None:
            raise ParseError(f"{name}: bad GUID {guid!r}", source=source, line=index + offset + 1)
    ports: list[IbstatPort] = []
    index = header_end + 1
    while index < len(lines) and _PORT_LINE.fullmatch(lines[index].strip()):
        port, index = _read_port(lines, index, source, name)
        ports.append(port)
    # A switch also lists its management port 0.
    expected = int(num_ports) + (1 if node_type == "Switch" else 0)
    if ports and len(ports) != expected:
        message = f"{name}: shows {len(ports)} of its {expected} ports (truncated?)"
        raise ParseError(message, source=source, line=index)
    header = (ca_type, int(num_ports), fw_version, hw_version, node_guid, sys_image_guid)
    return IbstatCa(name, *header, ports=tuple(ports), node_type=node_type), index


def _read_port(lines: list[str], index: int, source: str, ca: str) -> tuple[IbstatPort, int]:
    if index >= len(lines) or _PORT_LINE.fullmatch(lines[index].strip()) is None:
        got = lines[index].strip() if index < len(lines) else "end of text"
        raise ParseError(
            f"{ca}: expected 'Port N:', got {got!r}", source=source, line=min(index, len(lines)) + 1
        )
    number = int(lines[index].strip()[5:-1])
    values = [
        _expect(lines, index + offset, key, source, ca) for offset, key in enumerate(_PORT_KEYS, start=1)
    ]
    state, physical, rate_text, base_lid, lmc, sm_lid, capability_mask, port_guid, link_layer = values

    def bad(key: str, value: str) -> ParseError:
        line = index + 1 + _PORT_KEYS.index(key) + 1
        return ParseError(f"{ca} port {number}: bad {key} {value!r}", source=source, line=line)

    if state not in PORT_STATES:
        raise bad("State", state)
    if physical not in PHYSICAL_STATES:
        raise bad("Physical state", physical)
    rate = _RATE.fullmatch(rate_text)
    if rate is None:
        raise bad("Rate", rate_text)
    for key, value in (("Base lid", base_lid), ("LMC", lmc), ("SM lid", sm_lid)):
        if not is_int_token(value):
            raise bad(key, value)
    if _CAPABILITY_MASK.fullmatch(capability_mask) is None:
        raise bad("Capability mask", capability_mask)
    if _GUID.fullmatch(port_guid) is None:
        raise bad("Port GUID", port_guid)
    if not link_layer:
        raise bad("Link layer", link_layer)
    port = IbstatPort(
        number=number,
        state=state,
        physical_state=physical,
        rate=2.5 if rate.group(1) is None else int(rate.group(1)),
        base_lid=int(base_lid),
        lmc=int(lmc),
        sm_lid=int(sm_lid),
        capability_mask=int(capability_mask, 16),
        port_guid=port_guid,
        link_layer=link_layer,
        fdr10=rate.group(2) is not None,
    )
    return port, index + 1 + len(_PORT_KEYS)


def parse_ibstatus(text: str, source: str = "<text>") -> tuple[IbstatusPort, ...]:
    """Every port block of an ``ibstatus`` capture. Raises ParseError when there is none."""
    lines = split_checked_lines(text, source, "ibstatus")
    ports: list[IbstatusPort] = []
    index = 0
    while index < len(lines):
        header = _IBSTATUS_HEADER.fullmatch(lines[index].strip())
        index += 1
        if header is None:
            continue
        values: dict[str, str] = {}
        while index < len(lines) and lines[index][:1].isspace() and lines[index].strip():
            _read_ibstatus_line(lines[index].strip(), values, source, index)
            index += 1
        ports.append(_build_ibstatus_port(header.group(1), int(header.group(2)), values))
    if not ports:
        raise ParseError(
            "no ibstatus output (no \"Infiniband device '...' port N status:\" line)", source=source
        )
    return tuple(ports)


def _read_ibstatus_line(stripped: str, values: dict[str, str], source: str, index: int) -> None:
    match = _IBSTATUS_LINE.fullmatch(stripped)
    if match is None:
        raise ParseError(f"unexpected line in an ibstatus block: {stripped!r}", source=source, line=index + 1)
    key, value = match.group(1), match.group(2)
    if key in values:
        raise ParseError(f"ibstatus {key!r} appears twice", source=source, line=index + 1)
    if value != UNKNOWN and not _ibstatus_value_ok(key, value):
        raise ParseError(f"bad ibstatus {key} value {value!r}", source=source, line=index + 1)
    values[key] = value


def _ibstatus_value_ok(key: str, value: str) -> bool:
    if key in ("base lid", "sm lid"):
        return _HEX_LID.fullmatch(value) is not None
    if key in ("state", "phys state"):
        return _IBSTATUS_STATE.fullmatch(value) is not None
    if key == "rate":
        return _IBSTATUS_RATE.fullmatch(value) is not None
    return bool(value)


def _build_ibstatus_port(device: str, port: int, values: dict[str, str]) -> IbstatusPort:
    known = {key: value for key, value in values.items() if value != UNKNOWN}

    def lid(key: str) -> int | None:
        return int(known[key], 16) if key in known else None

    def state(key: str) -> tuple[str | None, int | None]:
        if key not in known:
            return None, None
        code, name = known[key].split(": ", 1)
        return name, int(code)

    state_name, state_code = state("state")
    phys_name, phys_code = state("phys state")
    return IbstatusPort(
        device=device,
        port=port,
        default_gid=known.get("default gid"),
        base_lid=lid("base lid"),
        sm_lid=lid("sm lid"),
        state=state_name,
        state_code=state_code,
        phys_state=phys_name,
        phys_state_code=phys_code,
        rate_text=known.get("rate"),
        link_layer=known.get("link_layer"),
    )
