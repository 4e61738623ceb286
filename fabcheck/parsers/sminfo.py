"""Parser for ``sminfo`` (infiniband-diags): the SMInfo attribute of one subnet manager.

The one line it prints looks like
``sminfo: sm lid 1 sm guid 0x0002c90300a1b2c3, activity count 12345 priority 15 state 3 SMINFO_MASTER``.
Without an argument sminfo asks the SM the local port knows as its master (the port's SM LID); with a
LID it asks the SM at that LID. A query no SM answers ends with ``sminfo: iberror: failed: query``:
`no_sm_answered` tells that apart from a tool that could not run at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines

# SMInfo states (IBTA 14.2.5.13), as sminfo names them.
SM_STATES = {0: "SMINFO_NOTACT", 1: "SMINFO_DISCOVER", 2: "SMINFO_STANDBY", 3: "SMINFO_MASTER"}
MASTER, STANDBY = 3, 2
NO_ANSWER = "iberror: failed: query"

_LINE = re.compile(
    r"sminfo: sm lid ([0-9]{1,5}) sm guid 0x([0-9a-fA-F]{1,16}), activity count ([0-9]{1,10}) "
    r"priority ([0-9]{1,2}) state ([0-9]) (SMINFO_[A-Z]+)",
    re.ASCII,
)


@dataclass(frozen=True)
class SmInfo:
    lid: int
    guid: int
    activity: int
    priority: int  # 0..15
    state: int  # a key of SM_STATES

    @property
    def state_name(self) -> str:
        return SM_STATES[self.state]

    @property
    def is_master(self) -> bool:
        return self.state == MASTER

    def describe(self) -> str:
        return f"{self.state_name} at priority {self.priority} (lid {self.lid}, guid 0x{self.guid:016x})"


def parse_sminfo(text: str, source: str = "<text>") -> SmInfo:
    """The one SMInfo line; ParseError naming the line when there is none or it is malformed."""
    lines = [line.strip() for line in split_checked_lines(text, source, "sminfo")]
    found = [(number, line) for number, line in enumerate(lines, start=1) if line.startswith("sminfo:")]
    if not found:
        raise ParseError("no `sminfo: sm lid ...` line", source=source)
    number, line = found[-1]
    match = _LINE.fullmatch(line)
    if match is None:
        raise ParseError(f"not an SMInfo line: {line[:120]!r}", source=source, line=number)
    lid, guid, activity, priority, state, name = match.groups()
    if int(state) not in SM_STATES or SM_STATES[int(state)] != name:
        raise ParseError(f"state {state} {name} is not an SMInfo state", source=source, line=number)
    if int(priority) > 15:
        raise ParseError(f"priority {priority} is not 0..15", source=source, line=number)
    return SmInfo(int(lid), int(guid, 16), int(activity), int(priority), int(state))


def no_sm_answered(stderr: str) -> bool:
    """Whether a failed sminfo says the query went out and no SM answered it (not: could not run)."""
    return NO_ANSWER in stderr
