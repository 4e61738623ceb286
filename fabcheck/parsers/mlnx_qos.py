"""Parser for ``mlnx_qos -i IF`` (NVIDIA mlnx-tools): trust, dscp2prio, PFC, ETS, buffers.

The block is found inside larger captures (prompts, ``bash -x`` traces, helper scripts that print an
excerpt of it). It starts at any section header but ``tc:`` (``DCBX mode:`` in full output, a later
one in excerpts) and its sections always come in the tool's print order; a section that comes again
(or a second ``DCBX mode:``) starts the next block. Up to and including the PFC table every line must
belong to the layout, so a broken block is a ParseError naming the line; after the PFC table and the
``tc:`` blocks the first foreign line ends the block. A block without its PFC table is an error:
reporting "PFC off" for a table that was never shown would be a half-truth.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.numbers import is_int_token, read_float, read_int

PRIORITIES = tuple(range(8))
TRUST_STATES = ("pcp", "dscp", "none")
DSCP_PER_LINE = 8
LLDPAD_WARNING = "****** WARNING: lldpad service is running and may overwrite your settings ******"

DCBX_TEXT = {"os": "OS controlled", "fw": "Firmware controlled"}
_DCBX_MODE = {text: mode for mode, text in DCBX_TEXT.items()}

_DCBX_LINE = re.compile(r"DCBX mode: (.*)")
_TRUST_LINE = re.compile(r"Priority trust state: (.*)")
# ASCII digits only (re.ASCII and [0-9]); the numbers are read with parsers.numbers (bounded).
_DSCP_LINE = re.compile(r"prio:([0-9]+) dscp:([0-9,]*)", re.ASCII)
_DEFAULT_PRIO_LINE = re.compile(r"prio:([0-9]+)", re.ASCII)
_BUFFER_LINE = re.compile(
    r"Receive buffer size \(bytes\): ((?:[0-9]+,){8})(?:(?:max_buffer_size|total_size)=([0-9]+))?", re.ASCII
)
_CABLE_LINE = re.compile(r"Cable len: ([0-9]+)", re.ASCII)
_TC_LINE = re.compile(
    r"tc: ([0-9]+) ratelimit: (unlimited|[0-9]+\.[0-9]+ Gbps), tsa: "
    r"(?:(ets), bw: ([0-9]+)%|(strict|vendor|unknown))",
    re.ASCII,
)
_TC_PRIORITY_LINE = re.compile(r"priority:\s+([0-9]+)", re.ASCII)

# Section kinds in the order mlnx_qos prints them.
_DCBX, _TRUST, _DSCP, _DEFAULT, _BUFFER, _CABLE, _PFC, _TC = range(8)


@dataclass(frozen=True)
class TcConfig:
    """One traffic class as printed: scheduler, ETS share, rate limit and the priorities mapped to it."""

    tsa: str
    bw_percent: int | None
    ratelimit: str
    priorities: tuple[int, ...]


@dataclass(frozen=True)
class MlnxQos:
    """One ``mlnx_qos`` report. Fields the capture does not show are None (or empty for dscp2prio/tcs).

    ``dcbx_mode`` is ``"os"`` or ``"fw"`` (the ``-d`` option values). ``dscp2prio`` keeps the printed
    order; ``dscp2prio_shown`` tells an empty mapping that was printed from one the capture left out
    (likewise an empty ``tcs`` means the tc section was not shown). ``pfc_enabled`` lists the
    priorities whose PFC bit is 1; ``pfc_buffer`` and ``buffer_sizes`` are indexed by priority and by
    receive buffer. ``max_buffer_size`` is the ``max_buffer_size=`` (older
    builds: ``total_size=``) suffix of the buffer line.
    """

    dcbx_mode: str | None
    trust: str | None
    dscp2prio: Mapping[int, int]
    pfc_enabled: tuple[int, ...]
    pfc_buffer: tuple[int, ...] | None = None
    buffer_sizes: tuple[int, ...] | None = None
    max_buffer_size: int | None = None
    cable_len: int | None = None
    tcs: Mapping[int, TcConfig] = field(default_factory=dict)
    default_priorities: tuple[int, ...] = ()
    lldpad_warning: bool = False
    dscp2prio_shown: bool = False

    def __post_init__(self) -> None:
        if self.dscp2prio:
            object.__setattr__(self, "dscp2prio_shown", True)
        object.__setattr__(self, "dscp2prio", MappingProxyType(dict(self.dscp2prio)))
        object.__setattr__(self, "tcs", MappingProxyType(dict(self.tcs)))

    @property
    def prio2tc(self) -> Mapping[int, int]:
        """Priority -> traffic class, from the ``priority:`` lines under each ``tc:``."""
        return MappingProxyType({p: tc for tc, cfg in sorted(self.tcs.items()) for p in cfg.priorities})


def parse_mlnx_qos(text: str, source: str = "<text>") -> MlnxQos:
    """The last ``mlnx_qos`` report in ``text`` (the state after every command of a script)."""
    return parse_mlnx_qos_all(text, source)[-1]


def parse_mlnx_qos_all(text: str, source: str = "<text>") -> tuple[MlnxQos, ...]:
    """Every ``mlnx_qos`` report in ``text``, in order. Raises ParseError when there is none."""
    lines = split_checked_lines(text, source, "mlnx_qos")
    reports: list[MlnxQos] = []
    lldpad_seen = False
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        if stripped == LLDPAD_WARNING:
            lldpad_seen = True
        if _section_of(stripped) not in (None, _TC):
            builder = _BlockBuilder(lines, source, lldpad_seen)
            index = builder.consume(index)
            reports.append(builder.build())
            lldpad_seen = False
            continue
        index += 1
    if not reports:
        raise ParseError("no mlnx_qos output (no 'DCBX mode:' or 'PFC configuration:' line)", source=source)
    return tuple(reports)


def _section_of(stripped: str) -> int | None:
    """Which section header a stripped line is, None for any other line."""
    if stripped.startswith("DCBX mode:"):
        return _DCBX
    if stripped.startswith("Priority trust state:"):
        return _TRUST
    if stripped == "dscp2prio mapping:":
        return _DSCP
    if stripped == "default priority:":
        return _DEFAULT
    if stripped.startswith("Receive buffer size"):
        return _BUFFER
    if stripped.startswith("Cable len:"):
        return _CABLE
    if stripped == "PFC configuration:":
        return _PFC
    if stripped.startswith("tc:"):
        return _TC
    return None


class _BlockBuilder:
    """Reads one block line by line, keeping the section it is in."""

    def __init__(self, lines: list[str], source: str, lldpad_warning: bool) -> None:
        self.lines = lines
        self.source = source
        self.lldpad_warning = lldpad_warning
        self.section = -1
        self.dcbx_mode: str | None = None
        self.trust: str | None = None
        self.dscp2prio: dict[int, int] = {}
        self.dscp2prio_shown = False
        self.dscp_line_prio = -1
        self.dscp_line_full = False
        self.default_priorities: list[int] = []
        self.buffer_sizes: tuple[int, ...] | None = None
        self.max_buffer_size: int | None = None
        self.cable_len: int | None = None
        self.pfc_enabled: tuple[int, ...] | None = None
        self.pfc_buffer: tuple[int, ...] | None = None
        self.tcs: dict[int, TcConfig] = {}
        self.tc_priorities: dict[int, list[int]] = {}
        self.current_tc: int | None = None

    def error(self, message: str, index: int) -> ParseError:
        return ParseError(message, source=self.source, line=index + 1)

    def number(self, token: str, index: int, what: str) -> int:
        return read_int(token, source=self.source, line=index + 1, what=what)

    def consume(self, index: int) -> int:
        """Read from the block's first line; return the index of the first line after the block."""
        while index < len(self.lines):
            stripped = self.lines[index].strip()
            section = _section_of(stripped)
            if section is not None:
                if section < self.section or (section == self.section and section != _TC):
                    break  # the next report starts here
                index = self.read_section(section, index)
                continue
            if not self.read_inner(stripped, index):
                if self.pfc_enabled is None:
                    raise self.error(f"unexpected line inside mlnx_qos output: {stripped!r}", index)
                break
            index += 1
        if self.pfc_enabled is None:
            where = min(index, len(self.lines) - 1)
            raise self.error("mlnx_qos output stops before its 'PFC configuration:' table", where)
        return index

    def read_inner(self, stripped: str, index: int) -> bool:
        """A line inside the current section (dscp2prio entries, default priority, tc priorities)."""
        if self.section == _DSCP and stripped.startswith("prio:"):
            self.read_dscp_line(stripped, index)
            return True
        if self.section == _DEFAULT and stripped.startswith("prio:"):
            match = _DEFAULT_PRIO_LINE.fullmatch(stripped)
            if match is None or self.number(match.group(1), index, "default priority") > 7:
                raise self.error(f"bad default priority line: {stripped!r}", index)
            self.default_priorities.append(int(match.group(1)))
            return True
        if self.section == _TC and stripped.startswith("priority:"):
            self.read_tc_priority(stripped, index)
            return True
        return False

    def read_section(self, section: int, index: int) -> int:
        stripped = self.lines[index].strip()
        self.section = section
        if section == _DCBX:
            self.dcbx_mode = self.match_value(_DCBX_LINE, stripped, index, _DCBX_MODE, "DCBX mode")
        elif section == _TRUST:
            trust_map = {state: state for state in TRUST_STATES}
            self.trust = self.match_value(_TRUST_LINE, stripped, index, trust_map, "trust state")
        elif section == _DSCP:
            if self.trust not in (None, "dscp"):
                raise self.error(f"dscp2prio mapping shown while trust state is {self.trust!r}", index)
            self.dscp2prio_shown = True
        elif section == _BUFFER:
            self.read_buffer_line(stripped, index)
        elif section == _CABLE:
            match = self.must_match(_CABLE_LINE, stripped, index, "Cable len")
            self.cable_len = self.number(match.group(1), index, "cable length")
        elif section == _PFC:
            return self.read_pfc_table(index)
        elif section == _TC:
            self.read_tc_line(stripped, index)
        return index + 1

    def must_match(self, pattern: re.Pattern[str], stripped: str, index: int, what: str) -> re.Match[str]:
        match = pattern.fullmatch(stripped)
        if match is None:
            raise self.error(f"bad {what} line: {stripped!r}", index)
        return match

    def match_value(
        self, pattern: re.Pattern[str], stripped: str, index: int, allowed: Mapping[str, str], what: str
    ) -> str:
        value = self.must_match(pattern, stripped, index, what).group(1)
        if value not in allowed:
            raise self.error(f"unknown {what} {value!r}", index)
        return allowed[value]

    def read_dscp_line(self, stripped: str, index: int) -> None:
        match = self.must_match(_DSCP_LINE, stripped, index, "dscp2prio")
        prio = self.number(match.group(1), index, "dscp2prio priority")
        cells = match.group(2).split(",")
        if cells and cells[-1] == "":
            cells.pop()  # every value is printed with a trailing comma
        if prio > 7 or not cells or len(cells) > DSCP_PER_LINE or not all(map(is_int_token, cells)):
            raise self.error(f"bad dscp2prio line: {stripped!r}", index)
        if prio < self.dscp_line_prio or (prio == self.dscp_line_prio and not self.dscp_line_full):
            raise self.error(f"dscp2prio line for priority {prio} is out of order", index)
        for cell in cells:
            dscp = int(cell)
            if dscp > 63 or dscp in self.dscp2prio:
                raise self.error(f"bad or repeated DSCP value {cell!r} in dscp2prio mapping", index)
            self.dscp2prio[dscp] = prio
        self.dscp_line_prio = prio
        self.dscp_line_full = len(cells) == DSCP_PER_LINE

    def read_buffer_line(self, stripped: str, index: int) -> None:
        match = self.must_match(_BUFFER_LINE, stripped, index, "receive buffer size")
        sizes = match.group(1).rstrip(",").split(",")
        self.buffer_sizes = tuple(self.number(v, index, "receive buffer size") for v in sizes)
        total = match.group(2)
        self.max_buffer_size = None if total is None else self.number(total, index, "max buffer size")

    def read_pfc_table(self, index: int) -> int:
        header = self.table_row(index + 1, "priority")
        if header != PRIORITIES:
            raise self.error("PFC table header must list priorities 0 to 7", index + 1)
        enabled = self.table_row(index + 2, "enabled")
        if any(bit > 1 for bit in enabled):
            raise self.error("PFC 'enabled' row must hold 0 or 1 per priority", index + 2)
        self.pfc_enabled = tuple(p for p in PRIORITIES if enabled[p])
        following = index + 3
        if following < len(self.lines) and self.lines[following].strip().startswith("buffer"):
            self.pfc_buffer = self.table_row(following, "buffer")
            if any(buffer > 7 for buffer in self.pfc_buffer):
                raise self.error("PFC 'buffer' row holds a buffer number above 7", following)
            following += 1
        return following

    def table_row(self, index: int, label: str) -> tuple[int, ...]:
        if index >= len(self.lines):
            raise self.error(f"PFC table ends before its {label!r} row", len(self.lines) - 1)
        cells = self.lines[index].split()
        if len(cells) != 9 or cells[0] != label or not all(map(is_int_token, cells[1:])):
            raise self.error(f"bad PFC table {label!r} row: {self.lines[index].strip()!r}", index)
        return tuple(int(c) for c in cells[1:])

    def read_tc_line(self, stripped: str, index: int) -> None:
        match = self.must_match(_TC_LINE, stripped, index, "tc")
        tc = self.number(match.group(1), index, "traffic class")
        if tc > 7 or tc in self.tcs:
            raise self.error(f"bad or repeated traffic class {tc}", index)
        if match.group(2) != "unlimited":  # a rate the record keeps as printed is a number
            read_float(match.group(2).split()[0], source=self.source, line=index + 1, what="rate limit")
        bw = None if match.group(4) is None else self.number(match.group(4), index, "ETS bandwidth")
        if bw is not None and bw > 100:
            raise self.error(f"ETS bandwidth {bw}% is above 100%", index)
        tsa = match.group(3) or match.group(5)
        self.tcs[tc] = TcConfig(tsa=tsa, bw_percent=bw, ratelimit=match.group(2), priorities=())
        self.tc_priorities[tc] = []
        self.current_tc = tc

    def read_tc_priority(self, stripped: str, index: int) -> None:
        match = self.must_match(_TC_PRIORITY_LINE, stripped, index, "tc priority")
        prio = self.number(match.group(1), index, "tc priority")
        taken = any(prio in prios for prios in self.tc_priorities.values())
        if prio > 7 or taken or self.current_tc is None:
            raise self.error(f"priority {prio} is out of range or mapped to two traffic classes", index)
        self.tc_priorities[self.current_tc].append(prio)

    def build(self) -> MlnxQos:
        assert self.pfc_enabled is not None  # consume() guarantees the PFC table
        tcs = {
            tc: TcConfig(cfg.tsa, cfg.bw_percent, cfg.ratelimit, tuple(self.tc_priorities[tc]))
            for tc, cfg in self.tcs.items()
        }
        return MlnxQos(
            dcbx_mode=self.dcbx_mode,
            trust=self.trust,
            dscp2prio=self.dscp2prio,
            pfc_enabled=self.pfc_enabled,
            pfc_buffer=self.pfc_buffer,
            buffer_sizes=self.buffer_sizes,
            max_buffer_size=self.max_buffer_size,
            cable_len=self.cable_len,
            tcs=tcs,
            default_priorities=tuple(self.default_priorities),
            lldpad_warning=self.lldpad_warning,
            dscp2prio_shown=self.dscp2prio_shown,
        )
