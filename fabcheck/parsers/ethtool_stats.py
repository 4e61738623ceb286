"""`ethtool -S IF` (NIC statistics) -> {interface: {counter: value}}.

The layout is a `NIC statistics:` header, then one indented `name: value` line per counter (ethtool
prints every one after five spaces; some drivers put brackets or spaces into names, so the name is
everything before the last colon). The first line that is not indented ends the block (the next
prompt, a blank line). A capture may hold several interfaces, each block after the command line
that printed it (`$ ethtool -S ens1np0`, a prompt is fine); a lone block may stand without it.
A filtered capture (`ethtool -S IF | grep prio`) has no `NIC statistics:` line: indented counter lines
right after the command line (or opening a capture without one) are that interface's block.
Counters are unsigned integers of at most 20 digits; anything else on a counter line is a ParseError,
never a skipped line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.numbers import read_int

HEADER = "NIC statistics:"
# The command that printed the block, as pasted: `[prompt] ethtool -S|--statistics IF [...]`.
_COUNTER_LINE = re.compile(r"^\s+[^:\s][^:]*:\s*[0-9]+\s*$")
_COMMAND = re.compile(r"(?:^|[\s$#>])ethtool\s+(?:-S|--statistics)\s+(?P<name>[A-Za-z0-9_.:@-]{1,64})\b")
UNNAMED = ""  # the interface of a lone block whose command line was not captured


@dataclass(frozen=True)
class NicStatistics:
    interface: str  # UNNAMED when the capture did not say
    counters: Mapping[str, int]
    line: int  # of the header, for messages


def parse_ethtool_stats(text: str, source: str = "<text>") -> dict[str, NicStatistics]:
    """Every block of the capture by interface. ParseError: no block, a bad counter line, one counter
    twice in a block, two blocks of one interface, or several blocks without their command lines."""
    lines = split_checked_lines(text, source, "ethtool -S")
    blocks: dict[str, NicStatistics] = {}
    named: str | None = None
    current: dict[str, int] | None = None
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if current is not None and not (raw[:1].isspace() and line):
            current = None  # the block ended: a blank line, the next prompt or another command
        command = _COMMAND.search(line)
        if command:
            named, current = command.group("name"), None
            continue
        implicit = (
            current is None and _COUNTER_LINE.match(raw) is not None and (named is not None or not blocks)
        )
        if line == HEADER or implicit:
            interface = named if named is not None else UNNAMED
            if interface in blocks:
                what = f"interface {interface}" if interface else "a block without its `ethtool -S IF` line"
                raise ParseError(f"second statistics block for {what}", source=source, line=number)
            if interface == UNNAMED and blocks:
                raise ParseError(_UNNAMED_MANY, source=source, line=number)
            current = {}
            blocks[interface] = NicStatistics(interface, current, number)
            named = None
            if not implicit:
                continue
        if current is None:
            continue  # prompts, blank lines and other commands' output between blocks
        name, sep, value = line.rpartition(":")
        name = name.strip()
        if not sep or not name:
            raise ParseError(f"expected `counter: value`, got {line[:80]!r}", source=source, line=number)
        if name in current:
            raise ParseError(f"counter {name} appears twice in one block", source=source, line=number)
        current[name] = read_int(value.strip(), source=source, line=number, what=f"counter {name}")
    if not blocks:
        raise ParseError(f"no `{HEADER}` block: not `ethtool -S` output", source=source)
    if UNNAMED in blocks and len(blocks) > 1:
        raise ParseError(_UNNAMED_MANY, source=source, line=blocks[UNNAMED].line)
    for block in blocks.values():
        if not block.counters:
            raise ParseError("statistics block without a counter", source=source, line=block.line)
    return blocks


_UNNAMED_MANY = (
    "several statistics blocks, not all after an `ethtool -S IF` line: capture each interface with its "
    "command line so that blocks can be told apart"
)
