"""`ethtool -I --show-fec <netdev>` -> the port's FEC mode and FEC statistics (LinkCounters).

The layout (ethtool netlink/fec.c, and the example of linux commit 392c36e5be1d):

    FEC parameters for eth0:
    Supported/Configured FEC encodings: Auto RS      (ethtool < 5.18: "Configured FEC encodings:")
    Active FEC encoding: RS
    Statistics:
      corrected_blocks: 256
        Lane 0: 255
        Lane 1: 1
      uncorrectable_blocks: 145

Each statistic is the port total, then one `Lane N` line per lane where the driver counts per lane
(mlx5 in RS mode reports totals only): the totals are read, the lanes only checked. Without `-I`, or
where the driver has no FEC statistics (mlx5 with FEC off), there is no `Statistics:` block and the
reading holds only the FEC mode. netlink prints the link mode None as `Off` and no active mode as
`None`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.numbers import read_int
from fabcheck.parsers.wire_records import CounterName, LinkCounters

# ethtool's statistic names -> wire vocabulary (IEEE 802.3 30.5.1.1.17/18; corrected_bits non-standard).
FEC_STATISTICS: Mapping[str, CounterName] = MappingProxyType(
    {
        "corrected_blocks": "fec_corrected",
        "uncorrectable_blocks": "fec_uncorrectable",
        "corrected_bits": "corrected_bits",
    }
)
CONFIGURED_LABELS = ("Supported/Configured FEC encodings:", "Configured FEC encodings:")
ACTIVE_LABEL = "Active FEC encoding:"
_HEADER = re.compile(r"^FEC parameters for (?P<netdev>\S+):$")
_STATISTIC = re.compile(r"^  (?P<name>[a-z_]+): (?P<value>\S+)$")
_LANE = re.compile(r"^    Lane (?P<lane>[0-9]+): (?P<value>\S+)$")


def parse_fec(text: str, source: str = "<text>") -> LinkCounters:
    """The active FEC mode and the port totals of the FEC statistics. ParseError: no `FEC parameters
    for` header or no active encoding (not `--show-fec` output, e.g. an error message), a line out of
    place, a statistic twice, or a count that is not an unsigned integer."""
    lines = split_checked_lines(text, source, "ethtool --show-fec")
    header_at: int | None = None
    active: str | None = None
    in_statistics = False
    current: str | None = None  # the statistic whose lane lines may follow (None: an unknown one)
    values: dict[CounterName, int] = {}
    native: dict[CounterName, str] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if header_at is None:
            if _HEADER.match(line.strip()):
                header_at = number
                continue
            raise ParseError(
                f"expected 'FEC parameters for IF:', got {line.strip()[:80]!r}", source=source, line=number
            )
        stripped = line.strip()
        if in_statistics and line.startswith(" "):
            statistic, lane = _STATISTIC.match(line), _LANE.match(line)
            if statistic:
                current = statistic.group("name")
                name = FEC_STATISTICS.get(current)
                if name is None:
                    current = None  # a statistic of a newer ethtool: its lines are not read
                    continue
                if name in values:
                    raise ParseError(f"statistic {current} appears twice", source=source, line=number)
                values[name] = read_int(statistic.group("value"), source=source, line=number, what=current)
                native[name] = current
            elif lane:
                if current is not None:
                    read_int(lane.group("value"), source=source, line=number, what=f"{current} lane")
            elif current is not None or not line.startswith("    "):
                raise ParseError(
                    f"expected '  statistic: N' or '    Lane N: N', got {stripped[:80]!r}",
                    source=source,
                    line=number,
                )
            continue
        if any(stripped.startswith(label) for label in CONFIGURED_LABELS):
            continue
        if stripped.startswith(ACTIVE_LABEL):
            modes = stripped.removeprefix(ACTIVE_LABEL).split()
            if len(modes) != 1 or active is not None:
                raise ParseError(
                    f"expected one active FEC encoding, got {stripped!r}", source=source, line=number
                )
            active = modes[0]
            continue
        if stripped == "Statistics:" and not in_statistics:
            in_statistics = True
            continue
        raise ParseError(f"unexpected line {stripped[:80]!r}", source=source, line=number)
    if header_at is None:
        raise ParseError("empty output: not `ethtool --show-fec` output", source=source)
    if active is None:
        raise ParseError(f"no '{ACTIVE_LABEL}' line", source=source, line=header_at)
    return LinkCounters(values, native, fec_mode=active)
