"""Arista EOS config text (rendered, `show running-config` or `show startup-config`) as a tree (pure).

EOS nests a block's lines by indentation (three spaces a level): `interface Ethernet1/1` holds its
`mtu 9214`, a `qos profile` its `tx-queue 3`, which holds its `random-detect ecn ...`. The gate reads
the DSCP map from this tree (fabcheck.parsers.switch_eos) and the EOS driver plans a push against it
(fabcheck.switch.platforms.eos): one reader of EOS config for both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

INDENT = "   "  # EOS indents each config level by three spaces
# `qos map dscp 24 26 to traffic-class 3`: the DSCPs, then their class.
DSCP_MAP_LINE = re.compile(r"qos map dscp ((?:\d+ )+)to traffic-class (\d+)")
# A unicast egress queue block and its guaranteed bandwidth (`bandwidth guaranteed percent 50`), as
# AVD's qos-profile and interface templates write them; another form (a rate) is kept as worded.
TX_QUEUE_LINE = re.compile(r"(?:uc-tx-queue|tx-queue) ([0-7])")
GUARANTEE_LINE = re.compile(r"bandwidth guaranteed (\S+(?: \S+)?)")


@dataclass(frozen=True, order=True)
class ConfigNode:
    """One config line and the lines indented under it (`interface X` -> `mtu 9214`, ...)."""

    line: str
    children: tuple[ConfigNode, ...] = ()


def parse_config(text: str) -> tuple[ConfigNode, ...]:
    """EOS config text -> its tree; comments (`!`) and the closing `end` dropped."""
    root = _Draft(-1, "")
    open_blocks = [root]  # the chain of blocks the next line may belong to, outermost first
    for raw in text.splitlines():
        line = raw.rstrip()
        body = line.lstrip(" ")
        if not body or body.startswith("!") or (body == "end" and body == line):
            continue
        depth = len(line) - len(body)
        while open_blocks[-1].depth >= depth:
            open_blocks.pop()
        draft = _Draft(depth, body)
        open_blocks[-1].children.append(draft)
        open_blocks.append(draft)
    return root.freeze().children


@dataclass
class _Draft:
    depth: int
    line: str
    children: list[_Draft] = field(default_factory=list)

    def freeze(self) -> ConfigNode:
        return ConfigNode(self.line, tuple(child.freeze() for child in self.children))


def format_config(nodes: Iterable[ConfigNode], depth: int = 0) -> str:
    """The tree back as EOS-indented text, one line per setting."""
    lines: list[str] = []
    for node in nodes:
        lines.append(INDENT * depth + node.line)
        if node.children:
            lines.append(format_config(node.children, depth + 1))
    return "\n".join(lines)


# EOS's default DSCP -> traffic class map (Arista EOS User Manual, QoS chapter, Trident/Tomahawk
# platforms: DSCP maps to CoS DSCP/8 and CoS to traffic class with CoS 0 -> TC 1 and CoS 1 -> TC 0):
# a DSCP without a `qos map dscp` line rides this class, and `no qos map dscp N ...` returns N to it.
DEFAULT_DSCP_TO_TC = {dscp: {0: 1, 1: 0}.get(dscp >> 3, dscp >> 3) for dscp in range(64)}
# `priority-flow-control pause watchdog default timeout 0.2` / `... action drop`: setting, value.
WATCHDOG_LINE = re.compile(
    r"priority-flow-control pause watchdog "
    r"(?:default (timeout|recovery-time|polling-interval)|(action)) (\S+)"
)


def effective_dscp_map(nodes: Iterable[ConfigNode]) -> dict[int, int]:
    """Every DSCP's traffic class: the explicit `qos map dscp` lines over EOS's default map."""
    return DEFAULT_DSCP_TO_TC | dscp_map(nodes)


def watchdog_settings(nodes: Iterable[ConfigNode]) -> dict[str, str]:
    """The switch-wide PFC watchdog lines: timeout, recovery-time, polling-interval (seconds), action."""
    found: dict[str, str] = {}
    for node in nodes:
        match = WATCHDOG_LINE.fullmatch(node.line)
        if match:
            found[match.group(1) or match.group(2)] = match.group(3)
    return found


def dscp_map(nodes: Iterable[ConfigNode]) -> dict[int, int]:
    """DSCP -> traffic class from the top-level `qos map dscp ... to traffic-class N` lines."""
    mapping: dict[int, int] = {}
    for node in nodes:
        found = DSCP_MAP_LINE.fullmatch(node.line)
        if found:
            for dscp in found.group(1).split():
                mapping[int(dscp)] = int(found.group(2))
    return mapping


def queue_guarantees(nodes: Iterable[ConfigNode]) -> dict[str, dict[int, str]]:
    """Per interface: tx-queue -> its guaranteed bandwidth as the line words it (`percent 50`). An
    interface's own tx-queue lines apply over its `service-profile`'s, line by line (a profile's
    guarantee stays in force under an interface's `uc-tx-queue 3` that sets none). Every interface
    is listed."""
    nodes = tuple(nodes)
    profiles = {
        node.line.removeprefix("qos profile "): _guarantees(node.children)
        for node in nodes
        if node.line.startswith("qos profile ")
    }
    found: dict[str, dict[int, str]] = {}
    for node in nodes:
        if not node.line.startswith("interface "):
            continue
        bound = next((c.line for c in node.children if c.line.startswith("service-profile ")), "")
        profile = profiles.get(bound.removeprefix("service-profile "), {})
        found[node.line.removeprefix("interface ")] = {**profile, **_guarantees(node.children)}
    return found


def _guarantees(nodes: Iterable[ConfigNode]) -> dict[int, str]:
    guaranteed: dict[int, str] = {}
    for node in nodes:
        queue = TX_QUEUE_LINE.fullmatch(node.line)
        if queue is None:
            continue
        for child in node.children:
            rate = GUARANTEE_LINE.fullmatch(child.line)
            if rate:
                guaranteed[int(queue.group(1))] = rate.group(1)
    return guaranteed
