"""The EOS driver's pure half: config trees, what fabcheck owns, and the lines a session types."""

from __future__ import annotations

from typing import Any

import pytest
from test_eos_templates import NON_DEFAULT, rendered

from fabcheck.parsers.eos_config import ConfigNode, dscp_map, format_config, parse_config
from fabcheck.switch.platforms.eos import OWNED_PROFILES, managed_view, negation, session_lines

# A running config as EOS prints it: fabcheck's parts plus things it must leave alone, and the
# leftovers of an older intent (DSCP 24 25 and 10 mapped, PFC on priority 4, queue 5, a polling timer).
RUNNING = """\
! Command: show running-config
! device: leaf01 (cEOSLab, EOS-4.32.1F)
!
no aaa root
!
hostname leaf01
!
spanning-tree mode mstp
!
qos map dscp 10 to traffic-class 1
qos map dscp 24 25 26 to traffic-class 3
qos map dscp 48 to traffic-class 6
!
priority-flow-control pause watchdog default timeout 0.2
priority-flow-control pause watchdog default polling-interval 0.1
priority-flow-control pause watchdog action drop
!
qos profile FABCHECK-ROCE
   qos trust dscp
   priority-flow-control on
   priority-flow-control priority 3 no-drop
   !
   uc-tx-queue 3
      bandwidth percent 50
      random-detect ecn count
   !
   uc-tx-queue 5
      priority strict
!
qos profile OTHER
   qos trust cos
!
interface Ethernet1
   description gpu01 rail 0
   mtu 9214
   priority-flow-control on
   priority-flow-control priority 4 no-drop
   service-profile FABCHECK-ROCE
!
interface Ethernet9
   mtu 1500
!
end
"""


def test_parse_and_format_round_trip_the_rendered_config() -> None:
    text = rendered()
    tree = parse_config(text)
    assert format_config(tree) == "\n".join(line for line in text.splitlines() if line.strip() != "!")
    profile = next(node for node in tree if node.line == "qos profile FABCHECK-ROCE")
    lossless = next(node for node in profile.children if node.line == "uc-tx-queue 3")
    lossy = next(node for node in profile.children if node.line == "uc-tx-queue 0")
    # EOS tx-queues are strict by default: a DWRR share comes after `no priority`; the watched lossless
    # queue's share is its guarantee, one bandwidth line per queue as AVD writes them
    assert [child.line for child in lossy.children] == ["no priority", "bandwidth percent 50"]
    first_two = [child.line for child in lossless.children[:2]]
    assert first_two == ["no priority", "bandwidth guaranteed percent 50"]
    assert not [child for child in lossless.children if child.line.startswith("bandwidth percent")]


def test_managed_view_keeps_what_fabcheck_owns_only() -> None:
    view = managed_view(parse_config(RUNNING))
    tops = [node.line for node in view]
    assert tops == [
        "qos map dscp 10 to traffic-class 1",
        "qos map dscp 24 25 26 to traffic-class 3",
        "qos map dscp 48 to traffic-class 6",
        "priority-flow-control pause watchdog default timeout 0.2",
        "priority-flow-control pause watchdog default polling-interval 0.1",
        "priority-flow-control pause watchdog action drop",
        "qos profile FABCHECK-ROCE",
        "interface Ethernet1",
        "interface Ethernet9",
    ]  # `qos profile OTHER` is the operator's: fabcheck renders no such profile
    ethernet1 = view[7]
    assert [child.line for child in ethernet1.children] == [
        "mtu 9214",
        "priority-flow-control on",
        "priority-flow-control priority 4 no-drop",
        "service-profile FABCHECK-ROCE",
    ]  # the description is the operator's


def test_dscp_map_reads_grouped_lines() -> None:
    assert dscp_map(parse_config(RUNNING)) == {10: 1, 24: 3, 25: 3, 26: 3, 48: 6}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("qos trust dscp", "no qos trust"),
        ("priority-flow-control on", "no priority-flow-control"),
        ("priority-flow-control priority 4 no-drop", "no priority-flow-control priority 4"),
        ("priority-flow-control pause watchdog", "no priority-flow-control pause watchdog"),
        (
            "priority-flow-control pause watchdog default recovery-time 0.4",
            "no priority-flow-control pause watchdog default recovery-time",
        ),
        (
            "priority-flow-control pause watchdog action no-drop",
            "no priority-flow-control pause watchdog action",
        ),
        ("uc-tx-queue 5", "no uc-tx-queue 5"),
        ("tx-queue 2", "no tx-queue 2"),
        ("mtu 9214", "no mtu"),
        ("service-profile ROCE", "no service-profile"),
        ("bandwidth percent 50", "no bandwidth percent"),
        ("bandwidth guaranteed percent 10", "no bandwidth guaranteed"),
        ("priority strict", "no priority"),
        (
            "random-detect ecn minimum-threshold 1 kbytes maximum-threshold 2 kbytes",
            "no random-detect ecn",
        ),
        ("random-detect ecn count", "no random-detect ecn count"),
        ("description gpu01", None),
        ("shutdown", None),
        ("hostname leaf01", None),
    ],
)
def test_negation_of_each_managed_line(line: str, expected: str | None) -> None:
    assert negation(line) == expected


def test_a_converged_switch_gets_exactly_the_rendered_lines() -> None:
    text = rendered()
    lines = session_lines(text, text)
    assert lines == [line.strip() for line in text.splitlines() if line.strip() not in ("", "!")]
    assert [line for line in lines if line.startswith("no ")] == [
        "no priority",
        "no priority",
    ]  # the DWRR queues


def test_stale_lines_are_negated_inside_their_block() -> None:
    lines = session_lines(rendered(), RUNNING)
    # Global leftovers first: DSCPs the intent does not list, a watchdog timer it does not set.
    assert lines[:3] == [
        "no qos map dscp 10 to traffic-class 1",
        "no qos map dscp 24 25 to traffic-class 3",
        "no priority-flow-control pause watchdog default polling-interval",
    ]
    profile = lines.index("qos profile FABCHECK-ROCE")
    assert lines[profile + 1] == "no uc-tx-queue 5"
    queue = lines.index("uc-tx-queue 3", profile)
    # an older push's DWRR weight on the watched lossless queue goes: its share is now its guarantee
    assert lines[queue + 1 : queue + 3] == ["no bandwidth percent", "no random-detect ecn count"]
    ethernet1 = lines.index("interface Ethernet1")
    assert lines[ethernet1 + 1 : ethernet1 + 4] == [
        "no priority-flow-control",
        "no priority-flow-control priority 4",
        "mtu 9214",
    ]
    assert "no description" not in lines and "interface Ethernet9" not in lines
    assert not [line for line in lines if "OTHER" in line]


def test_tree_nodes_compare_by_content() -> None:
    assert parse_config("interface Ethernet1\n   mtu 9214\n") == (
        ConfigNode("interface Ethernet1", (ConfigNode("mtu 9214"),)),
    )


@pytest.mark.parametrize("intent", [None, NON_DEFAULT], ids=["default", "non-default"])
def test_the_profiles_a_render_writes_are_the_owned_ones(intent: dict[str, Any] | None) -> None:
    """The gate and the planner count only OWNED_PROFILES: a render naming another would go unjudged."""
    tree = parse_config(rendered(intent))
    profiles = [node.line for node in tree if node.line.startswith("qos profile ")]
    written = {line.removeprefix("qos profile ") for line in profiles}
    assert written == set(OWNED_PROFILES)
