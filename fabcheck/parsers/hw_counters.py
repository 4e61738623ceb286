"""RDMA hardware counters (`/sys/class/infiniband/DEV/ports/N/hw_counters/`) -> {"DEV/N": {name: n}}.

Three captures are read, each line by line:

* `grep -r -H '' /sys/class/infiniband/DEV/ports/N/hw_counters` (what the host probe and the incast
  capture run): `/sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence:0`;
* `rdma statistic show [link DEV/N]` (iproute2): `link mlx5_0/1 rx_write_requests 0 out_of_sequence 0 ...`;
* MLNX_OFED `show_counters DEV`: a `Port N hw counters:` line, then `name: value` lines (the device
  from the `show_counters DEV` command line when it was captured, else `?`).

Values are unsigned integers; anything else on a counter line is a ParseError, never a skipped line.
"""

from __future__ import annotations

import re

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.numbers import read_int

_SYSFS = re.compile(
    r"/sys/class/infiniband/(?P<dev>[^/\s]{1,64})/ports/(?P<port>[0-9]{1,3})/hw_counters/(?P<name>[A-Za-z0-9_]{1,64})"
    r":(?P<value>\S*)\s*$",
    re.ASCII,
)
_RDMA_STAT = re.compile(r"^\s*link\s+(?P<dev>[^/\s]{1,64})/(?P<port>[0-9]{1,3})\s+(?P<rest>.*)$", re.ASCII)
_SHOW_COUNTERS_CMD = re.compile(r"(?:^|[\s$#>])show_counters\s+(?P<dev>[A-Za-z0-9_.-]{1,64})\b", re.ASCII)
_PORT_HEADER = re.compile(r"^\s*Port\s+(?P<port>[0-9]{1,3})\s+hw counters:\s*$", re.ASCII)
_NAME_VALUE = re.compile(r"^\s*(?P<name>[A-Za-z][A-Za-z0-9_]{0,63}):\s*(?P<value>\S+)\s*$", re.ASCII)

# The counters the incast stage and `analyze counters` judge (mlx5 names, as the kernel exposes them).
RETRANSMIT_COUNTERS = ("out_of_sequence", "packet_seq_err", "local_ack_timeout_err")
CONGESTION_COUNTERS = ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled")

HwCounters = dict[str, dict[str, int]]


def parse_hw_counters(text: str, source: str = "<text>") -> HwCounters:
    """Every port's counters. ParseError: no counter line of any of the three forms, a value that is not
    a whole number, or one counter twice for one port."""
    ports: HwCounters = {}
    device: str | None = None
    block: dict[str, int] | None = None
    current_port = ""

    def put(number: int, port: str, name: str, value: str) -> None:
        counters = ports.setdefault(port, {})
        if name in counters:
            raise ParseError(f"counter {name} of {port} appears twice", source=source, line=number)
        counters[name] = read_int(value, source=source, line=number, what=f"counter {name}")

    for number, line in enumerate(split_checked_lines(text, source, "hw_counters"), start=1):
        if (found := _SYSFS.search(line)) is not None:
            put(number, f"{found['dev']}/{found['port']}", found["name"], found["value"])
            block = None
        elif (found := _RDMA_STAT.match(line)) is not None:
            words = found["rest"].split()
            if len(words) % 2:
                raise ParseError("expected `name value` pairs after `link DEV/N`", source=source, line=number)
            for name, value in zip(words[::2], words[1::2], strict=True):
                put(number, f"{found['dev']}/{found['port']}", name, value)
            block = None
        elif (found := _SHOW_COUNTERS_CMD.search(line)) is not None:
            device, block = found["dev"], None
        elif (found := _PORT_HEADER.match(line)) is not None:
            port = f"{device or '?'}/{found['port']}"
            block = ports.setdefault(port, {})
            current_port = port
        elif block is not None and (found := _NAME_VALUE.match(line)) is not None:
            put(number, current_port, found["name"], found["value"])
        else:
            block = None
    if not ports:
        raise ParseError(
            "no RDMA hw_counters (expected `grep -H '' .../hw_counters/*`, `rdma statistic show` or "
            "`show_counters DEV` output)",
            source=source,
        )
    return ports


def parse_port_hw_counters(text: str, source: str = "<text>") -> dict[str, int]:
    """The host probe's one port (`grep -r -H '' .../ports/N/hw_counters`): its counters."""
    ports = parse_hw_counters(text, source)
    if len(ports) != 1:
        raise ParseError(f"expected the counters of one port, got {', '.join(sorted(ports))}", source=source)
    return next(iter(ports.values()))
