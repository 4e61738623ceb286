"""Small host readings of the gate's collection: sysfs values, `lsmod`, `rdma link`, the RDMA-CM
defaults (`cma_roce_tos`, `cma_roce_mode`), a `grep -r -H ''` listing of a sysfs folder and
`ethtool -i`. Pure: text in, a typed value out, ParseError (naming the source) for anything else.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.numbers import read_int
from fabcheck.parsers.rdma_link import RdmaLink, parse_rdma_link

TOS_MAX = 255
# What `cma_roce_mode` (and configfs default_roce_mode) prints for the two RDMA-CM modes.
ROCE_MODES = ("IB/RoCE v1", "RoCE v2")


def sysfs_int(text: str, source: str) -> int:
    """A sysfs attribute that holds one decimal integer ("%d\\n"): ASCII digits, at most 20."""
    return read_int(text.strip(), source=source, what="sysfs value", signed=True)


def traffic_class(text: str, source: str) -> int:
    """tc/<port>/traffic_class: "106" (upstream style) or "Global tclass=106" (MLNX_OFED)."""
    value = text.strip().removeprefix("Global tclass=").strip()
    return _tos(sysfs_int(value, source), source, "traffic class")


def rdma_cm_tos(text: str, source: str) -> int:
    """`cma_roce_tos -d DEV -p PORT` without -t: the RDMA-CM default ToS byte, one line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        raise ParseError(f"expected one line with the ToS byte, got {len(lines)} lines", source=source)
    return _tos(sysfs_int(lines[0], source), source, "RDMA-CM ToS")


def rdma_cm_mode(text: str, source: str) -> str:
    """`cma_roce_mode -d DEV -p PORT` without -m: "RoCE v2" or "IB/RoCE v1"."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) != 1 or lines[0] not in ROCE_MODES:
        shown = lines[0][:80] if lines else "nothing"
        raise ParseError(f"expected one of {', '.join(ROCE_MODES)}, got {shown!r}", source=source)
    return lines[0]


def _tos(number: int, source: str, what: str) -> int:
    if not 0 <= number <= TOS_MAX:
        raise ParseError(f"{what} {number} is not 0..{TOS_MAX}", source=source)
    return number


def loaded_modules(text: str, source: str) -> frozenset[str]:
    """Module names from `lsmod` (first column after the 'Module  Size  Used by' header)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or lines[0].split()[:2] != ["Module", "Size"]:
        raise ParseError("no 'Module  Size  Used by' header", source=source, line=1)
    return frozenset(line.split()[0] for line in lines[1:])


def rdma_links(text: str, source: str) -> tuple[RdmaLink, ...]:
    """`rdma link`; it prints nothing at all on a host without RDMA devices: an empty, valid listing."""
    return () if not text.strip() else parse_rdma_link(text, source)


def sysfs_listing(text: str, source: str, folder: str) -> dict[str, int]:
    """`grep -r -H '' DIR` over a sysfs folder of integer attributes: {path below `folder`: value}.

    `folder` is the last part of DIR ("roce_rp"): "…/ecn/roce_rp/rpg_gd:11" -> {"rpg_gd": 11}, and
    "…/roce_rp/enable/3:1" -> {"enable/3": 1}. A line of another shape, a value that is not an
    integer or a name seen twice is a ParseError: a listing is read whole or not at all."""
    marker = f"/{folder}/"
    values: dict[str, int] = {}
    for number, line in enumerate(split_checked_lines(text, source, "grep"), start=1):
        if not line.strip():
            continue
        path, colon, value = line.partition(":")
        name = path.partition(marker)[2]
        if not colon or marker not in path or not name:
            raise ParseError(f"not a '<path>/{folder}/<name>:<value>' line", source=source, line=number)
        if name in values:
            raise ParseError(f"{name} listed twice", source=source, line=number)
        values[name] = read_int(value.strip(), source=source, line=number, what=name, signed=True)
    return values


@dataclass(frozen=True)
class DriverInfo:
    """`ethtool -i NETDEV`: the kernel driver of a netdev, its version and the NIC firmware."""

    driver: str
    version: str
    firmware: str
    bus_info: str = ""  # `bus-info:` the PCI function of the netdev (0000:1a:00.0), "" when not shown


def ethtool_driver(text: str, source: str) -> DriverInfo:
    """`ethtool -i`: "key: value" lines; driver and version are required, firmware-version may be empty."""
    fields: dict[str, str] = {}
    for line in split_checked_lines(text, source, "ethtool"):
        key, colon, value = line.partition(":")
        if colon:
            fields[key.strip()] = value.strip()
    missing = [key for key in ("driver", "version") if not fields.get(key)]
    if missing:
        raise ParseError(f"no {' or '.join(missing)} line", source=source)
    return DriverInfo(
        fields["driver"], fields["version"], fields.get("firmware-version", ""), fields.get("bus-info", "")
    )
