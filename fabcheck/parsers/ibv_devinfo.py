"""Parser for ``ibv_devinfo`` (rdma-core), plain and ``-v``/``-vv`` layouts.

A device block starts at an unindented ``hca_id:`` line and runs over the indented lines after it
(blank lines included: ``-v`` prints some inside a device and one after every port); the first other
unindented line ends it. Device-level ``-v`` capability lists are skipped. Inside a port every line must
be ``key: value``; enum values (``PORT_ACTIVE (4)``, ``4096 (5)``, ``2X (16)``) must agree with their
code, and a value the old tool could not name (``invalid speed (128)``) is read from its code.
``No IB devices found`` is a valid, empty reading.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.numbers import is_int_token, read_hex, read_int

NO_DEVICES = "No IB devices found"

TRANSPORT_CODES = {"InfiniBand": 0, "iWARP": 1, "usNIC": 2, "usNIC UDP": 3}
PORT_STATE_CODES = {"PORT_DOWN": 1, "PORT_INIT": 2, "PORT_ARMED": 3, "PORT_ACTIVE": 4, "PORT_ACTIVE_DEFER": 5}
MTU_CODES = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
WIDTH_CODES = {"1X": 1, "4X": 2, "8X": 4, "12X": 8, "2X": 16}
# Per-lane speed; code 8 (FDR10) prints as 10.0 Gbps too, so 10.0 stands for code 4 (QDR).
SPEED_CODES = {
    "2.5 Gbps": 1,
    "5.0 Gbps": 2,
    "10.0 Gbps": 4,
    "14.0 Gbps": 16,
    "25.0 Gbps": 32,
    "50.0 Gbps": 64,
    "100.0 Gbps": 128,
    "200.0 Gbps": 256,
}
PHYS_STATE_CODES = {
    "SLEEP": 1,
    "POLLING": 2,
    "DISABLED": 3,
    "PORT_CONFIGURATION TRAINNING": 4,  # sic, as rdma-core spells it
    "LINK_UP": 5,
    "LINK_ERROR_RECOVERY": 6,
    "PHY TEST": 7,
}

_HCA_LINE = re.compile(r"hca_id:\s+(\S+)")
_KEY_VALUE = re.compile(r"([A-Za-z_][A-Za-z0-9_ ]*?):\s*(.*)")
_GID_LINE = re.compile(r"GID\[\s*([0-9]+)\]:\s+([0-9A-Fa-f:.]+)(?:,\s*(.+))?", re.ASCII)
_ENUM_VALUE = re.compile(r"(.+?) \(([0-9]+)\)", re.ASCII)
_GUID = re.compile(r"[0-9a-f]{4}(?::[0-9a-f]{4}){3}")
_DEVICE_KEYS = (
    "transport",
    "fw_ver",
    "node_guid",
    "sys_image_guid",
    "vendor_id",
    "vendor_part_id",
    "hw_ver",
    "board_id",
    "phys_port_cnt",
)
_REQUIRED_DEVICE_KEYS = ("transport", "node_guid", "sys_image_guid", "vendor_id", "vendor_part_id")
_FDR10_SPEED_CODE = 8
_Values = dict[str, tuple[str, int]]  # key -> (value, line index)
_REQUIRED_PORT_KEYS = ("state", "max_mtu", "active_mtu", "sm_lid", "port_lid", "port_lmc", "link_layer")


@dataclass(frozen=True)
class IbvGid:
    """One GID table entry (``-v``): the address as printed and its type (``RoCE v2``), if printed."""

    gid: str
    kind: str | None = None

    @property
    def address(self) -> ipaddress.IPv6Address:
        return ipaddress.IPv6Address(self.gid)

    @property
    def ipv4(self) -> str | None:
        """The IPv4 address of an IPv4-mapped GID (``::ffff:a.b.c.d``), else None."""
        mapped = self.address.ipv4_mapped
        return None if mapped is None else str(mapped)


@dataclass(frozen=True)
class IbvPort:
    """One port. ``active_width``/``active_speed``/``phys_state``/``gids`` come from ``-v`` only.

    ``active_speed`` is the per-lane speed as printed (``50.0 Gbps``); ``link_rate_gbps`` multiplies it
    by the lane count.
    """

    number: int
    state: str
    max_mtu: int
    active_mtu: int
    sm_lid: int
    port_lid: int
    port_lmc: int
    link_layer: str
    gid_tbl_len: int | None = None
    active_width: str | None = None
    active_speed: str | None = None
    phys_state: str | None = None
    gids: Mapping[int, IbvGid] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "gids", MappingProxyType(dict(self.gids)))

    @property
    def link_rate_gbps(self) -> float | None:
        if self.active_width is None or self.active_speed is None:
            return None
        return int(self.active_width[:-1]) * float(self.active_speed.split()[0])


@dataclass(frozen=True)
class IbvDevice:
    """One ``hca_id`` block. ``vendor_id`` is an int (0x02c9 for Mellanox/NVIDIA)."""

    hca_id: str
    transport: str
    fw_ver: str | None
    node_guid: str
    sys_image_guid: str
    vendor_id: int
    vendor_part_id: int
    hw_ver: str | None
    board_id: str | None
    phys_port_cnt: int
    ports: tuple[IbvPort, ...]


def parse_ibv_devinfo(text: str, source: str = "<text>") -> tuple[IbvDevice, ...]:
    """Every device in an ``ibv_devinfo`` capture; ``()`` for ``No IB devices found``."""
    lines = split_checked_lines(text, source, "ibv_devinfo")
    devices: list[IbvDevice] = []
    index = 0
    while index < len(lines):
        match = _HCA_LINE.fullmatch(lines[index].rstrip())
        if match is None:
            index += 1
            continue
        reader = _DeviceReader(lines, source, match.group(1), index)
        index = reader.consume(index + 1)
        devices.append(reader.build())
    if not devices and not any(line.strip() == NO_DEVICES for line in lines):
        raise ParseError("no ibv_devinfo output (no 'hca_id:' line)", source=source)
    names = [device.hca_id for device in devices]
    if len(set(names)) != len(names):
        raise ParseError("the same hca_id appears twice", source=source)
    return tuple(devices)


class _DeviceReader:
    def __init__(self, lines: list[str], source: str, hca_id: str, start: int) -> None:
        self.lines = lines
        self.source = source
        self.hca_id = hca_id
        self.start = start
        self.device: _Values = {}
        self.ports: list[_Values] = []
        self.port_lines: list[int] = []
        self.gids: list[dict[int, IbvGid]] = []
        self.last_index = start

    def error(self, message: str, index: int) -> ParseError:
        return ParseError(f"{self.hca_id}: {message}", source=self.source, line=index + 1)

    def number(self, token: str, index: int, what: str) -> int:
        return read_int(token, source=self.source, line=index + 1, what=f"{self.hca_id}: {what}")

    def consume(self, index: int) -> int:
        while index < len(self.lines):
            raw = self.lines[index]
            if raw.strip() and not raw[0].isspace():
                break
            if raw.strip():
                self.read_line(raw.strip(), index)
                self.last_index = index
            index += 1
        return index

    def read_line(self, stripped: str, index: int) -> None:
        gid = _GID_LINE.fullmatch(stripped)
        if gid is not None:
            self.read_gid(gid, index)
            return
        pair = _KEY_VALUE.fullmatch(stripped)
        if pair is None:
            if self.ports:
                raise self.error(f"unexpected line inside a port block: {stripped!r}", index)
            return  # -v capability lists and notes ("tag matching not supported") carry no verdict
        key, value = pair.group(1), pair.group(2)
        if key == "port":
            self.ports.append({})
            self.port_lines.append(index)
            self.gids.append({})
            key = "number"
        if not self.ports:
            if key in _DEVICE_KEYS:
                self.store(self.device, key, value, index)
            return
        if key in _DEVICE_KEYS:
            raise self.error(f"device line {stripped!r} inside a port block", index)
        self.store(self.ports[-1], key, value, index)

    def store(self, target: _Values, key: str, value: str, index: int) -> None:
        if key in target:
            raise self.error(f"{key!r} appears twice", index)
        target[key] = (value, index)

    def read_gid(self, match: re.Match[str], index: int) -> None:
        if not self.ports:
            raise self.error("GID line outside a port block", index)
        number = self.number(match.group(1), index, "GID index")
        try:
            ipaddress.IPv6Address(match.group(2))
        except ValueError:
            raise self.error(f"bad GID {match.group(2)!r}", index) from None
        if number in self.gids[-1]:
            raise self.error(f"GID index {number} appears twice", index)
        self.gids[-1][number] = IbvGid(match.group(2), match.group(3))

    def build(self) -> IbvDevice:
        for key in _REQUIRED_DEVICE_KEYS:
            if key not in self.device:
                raise self.error(f"device block has no {key!r} line", self.last_index)
        if not self.ports:
            raise self.error("device block ends before its first port", self.last_index)
        ports = tuple(self.build_port(i) for i in range(len(self.ports)))
        count = self.int_value(self.device, "phys_port_cnt", self.last_index)
        numbers = [port.number for port in ports]
        if len(set(numbers)) != len(numbers) or max(numbers) > count or min(numbers) < 1:
            raise self.error(f"port numbers {numbers} do not fit phys_port_cnt {count}", self.last_index)
        for key in ("node_guid", "sys_image_guid"):
            value, where = self.device[key]
            if _GUID.fullmatch(value) is None:
                raise self.error(f"bad {key} {value!r}", where)
        return IbvDevice(
            hca_id=self.hca_id,
            transport=self.enum(self.device, "transport", TRANSPORT_CODES),
            fw_ver=self.text(self.device, "fw_ver"),
            node_guid=self.device["node_guid"][0],
            sys_image_guid=self.device["sys_image_guid"][0],
            vendor_id=self.int_value(self.device, "vendor_id", self.last_index, base=16),
            vendor_part_id=self.int_value(self.device, "vendor_part_id", self.last_index),
            hw_ver=self.text(self.device, "hw_ver"),
            board_id=self.text(self.device, "board_id"),
            phys_port_cnt=count,
            ports=ports,
        )

    def build_port(self, position: int) -> IbvPort:
        values = self.ports[position]
        end = self.port_lines[position + 1] - 1 if position + 1 < len(self.ports) else self.last_index
        for key in _REQUIRED_PORT_KEYS:
            if key not in values:
                raise self.error(f"port block has no {key!r} line (truncated?)", end)
        verbose = "max_msg_sz" in values
        for key in ("active_width", "active_speed"):
            if verbose and key not in values:
                raise self.error(f"-v port block has no {key!r} line (truncated?)", end)
        return IbvPort(
            number=self.int_value(values, "number", end),
            state=self.enum(values, "state", PORT_STATE_CODES),
            max_mtu=self.mtu(values, "max_mtu"),
            active_mtu=self.mtu(values, "active_mtu"),
            sm_lid=self.int_value(values, "sm_lid", end),
            port_lid=self.int_value(values, "port_lid", end),
            port_lmc=self.int_value(values, "port_lmc", end, base=16),
            link_layer=values["link_layer"][0],
            gid_tbl_len=self.optional_int(values, "gid_tbl_len", end),
            active_width=self.optional_enum(values, "active_width", WIDTH_CODES),
            active_speed=self.optional_enum(values, "active_speed", SPEED_CODES),
            phys_state=self.optional_enum(values, "phys_state", PHYS_STATE_CODES),
            gids=self.gids[position],
        )

    @staticmethod
    def text(values: _Values, key: str) -> str | None:
        return values[key][0] if key in values else None

    def int_value(self, values: _Values, key: str, fallback: int, base: int = 10) -> int:
        if key not in values:
            raise self.error(f"no {key!r} line", fallback)
        text, where = values[key]
        pattern = r"0x[0-9a-fA-F]+" if base == 16 else r"[0-9]+"
        if re.fullmatch(pattern, text, re.ASCII) is None:
            raise self.error(f"bad {key} value {text!r}", where)
        if base == 16:
            return read_hex(text, source=self.source, line=where + 1, what=f"{self.hca_id}: {key}")
        return self.number(text, where, key)

    def optional_int(self, values: _Values, key: str, fallback: int) -> int | None:
        return self.int_value(values, key, fallback) if key in values else None

    def mtu(self, values: _Values, key: str) -> int:
        text, where = values[key]
        match = _ENUM_VALUE.fullmatch(text)
        if match is None or not is_int_token(match.group(1)) or int(match.group(1)) not in MTU_CODES:
            raise self.error(f"bad {key} value {text!r}", where)
        if MTU_CODES[int(match.group(1))] != self.number(match.group(2), where, f"{key} code"):
            raise self.error(f"{key} {text!r}: value and code disagree", where)
        return int(match.group(1))

    def enum(self, values: _Values, key: str, codes: Mapping[str, int]) -> str:
        """``NAME (code)``: the name, checked against its code; ``invalid ...`` is read from the code."""
        text, where = values[key]
        match = _ENUM_VALUE.fullmatch(text)
        if match is None:
            raise self.error(f"bad {key} value {text!r}", where)
        name, code = match.group(1), self.number(match.group(2), where, f"{key} code")
        if name.startswith("invalid"):
            names = [known for known, known_code in codes.items() if known_code == code]
            if not names:
                raise self.error(f"{key} code {code} is unknown", where)
            return names[0]
        accepted = {codes.get(name), _FDR10_SPEED_CODE if name == "10.0 Gbps" else None} - {None}
        if code not in accepted:
            raise self.error(f"{key} {text!r}: name and code disagree", where)
        return name

    def optional_enum(self, values: _Values, key: str, codes: Mapping[str, int]) -> str | None:
        return self.enum(values, key, codes) if key in values else None
