"""Arista's own renderer as the judge of fabcheck's EOS render (issue 33).

PyPI `pyavd` (pinned in the `test` extra) renders EOS CLI from AVD's validated structured config with
the eos_cli_config_gen templates Arista maintains against real switches (AVD PR #4579 "tested on 7280R",
PR #6318 "as per EOS 4.35.0F" with a hardware `show session-config diffs`). Each test renders the same
QoS intent both ways, the switch's desired state translated into AVD's structured config key by key
(qos.map.dscp, priority_flow_control.watchdog, qos_profiles[].uc_tx_queues/priority_flow_control,
ethernet_interfaces[].mtu/service_profile), and compares the two renders line by line, block by block,
in order. Only the differences in ALLOWED are accepted, each with its reason; any other fails.

fabcheck keeps its own template (templates/eos) and pyavd stays a test dependency: the driver needs
what pyavd does not give (the Jericho `tx-queue` keyword from `show version`, concern-scoped session
plans over the config tree, the `no` lines of a stale push), and pyavd pulls in ANTA, cvprac and gRPC
stacks a push never uses.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_eos_templates import NON_DEFAULT, eos_desired

from fabcheck.desired.switch import DesiredSwitch
from fabcheck.parsers.eos_config import ConfigNode, parse_config
from fabcheck.switch.platforms.eos import OWNED_PROFILES
from fabcheck.switch.render import render_switch

pyavd = pytest.importorskip("pyavd", reason="pyavd is in the test extra (pip install -e '.[test]')")

PROFILE = OWNED_PROFILES[0]
TRUST = {"dscp": "dscp", "pcp": "cos"}
WATCHDOG_KEYS = {
    "timeout": "timeout",
    "recovery-time": "recovery_time",
    "polling-interval": "polling_interval",
}

# (where, fabcheck's line or None, pyavd's line or None): the only differences allowed, and why.
ALLOWED: dict[tuple[str, str | None, str | None], str] = {}


def structured_config(desired: DesiredSwitch) -> dict[str, Any]:
    """The desired switch in AVD's eos_cli_config_gen structured config, field by field."""
    by_class: dict[int, list[int]] = {}
    for dscp, traffic_class in desired.dscp_to_traffic_class.items():
        by_class.setdefault(traffic_class, []).append(dscp)
    config: dict[str, Any] = {
        "qos": {
            "map": {
                "dscp": [
                    f"{' '.join(map(str, sorted(dscps)))} to traffic-class {tc}"
                    for tc, dscps in sorted(by_class.items())
                ]
            }
        }
    }
    if desired.watchdog.enabled:
        settings = desired.watchdog_settings
        watchdog = {WATCHDOG_KEYS[key]: value for key, value in settings.items() if key in WATCHDOG_KEYS}
        config["priority_flow_control"] = {"watchdog": {**watchdog, "action": settings["action"]}}
    profile: dict[str, Any] = {"name": PROFILE, "trust": TRUST[desired.trust], "uc_tx_queues": []}
    if desired.pfc_priorities:
        profile["priority_flow_control"] = {
            "enabled": True,
            "priorities": [{"priority": p, "no_drop": True} for p in desired.pfc_priorities],
            "watchdog": {"enabled": desired.watchdog.enabled},
        }
    guarantees = desired.watchdog_guarantees
    for queue in desired.queues:
        entry: dict[str, Any] = {"id": queue.traffic_class}
        if queue.scheduler == "strict":
            entry["priority"] = "priority strict"
        else:
            entry["priority"] = "no priority"
            if queue.traffic_class in guarantees:
                entry["bandwidth_guaranteed_percent"] = guarantees[queue.traffic_class]
            else:
                entry["bandwidth_percent"] = queue.weight_percent
        if queue.ecn:
            threshold = {
                "min": queue.ecn_min_bytes,
                "max": queue.ecn_max_bytes,
                "units": "bytes",
                "max_probability": queue.ecn_probability,
            }
            entry["random_detect"] = {"ecn": {"threshold": threshold}}
        profile["uc_tx_queues"].append(entry)
    config["qos_profiles"] = [profile]
    config["ethernet_interfaces"] = [
        {"name": port.port, "mtu": port.mtu, "service_profile": PROFILE} for port in desired.ports
    ]
    return config


def pyavd_render(config: dict[str, Any]) -> str:
    result = pyavd.validate_structured_config(config).validation_result
    assert not result.violations, [str(violation) for violation in result.violations]
    assert not result.ignored_eos_config_keys and not result.deprecations
    return str(pyavd.get_device_config(config))


def blocks(text: str) -> list[ConfigNode]:
    """The top-level lines and blocks fabcheck owns (pyavd adds none of its own beyond these)."""
    return [node for node in parse_config(text) if not node.line.startswith(("hostname", "end"))]


def differences(ours: list[ConfigNode], theirs: list[ConfigNode], where: str = "") -> list[tuple]:
    """(where, our line or None, pyavd's line or None) for each line, in order, that differs."""
    found: list[tuple] = []
    for index in range(max(len(ours), len(theirs))):
        mine = ours[index] if index < len(ours) else None
        other = theirs[index] if index < len(theirs) else None
        if mine is not None and other is not None and mine.line == other.line:
            found += differences(list(mine.children), list(other.children), f"{where}/{mine.line}")
        elif mine != other:
            found.append((where, mine and mine.line, other and other.line))
    return found


@pytest.mark.parametrize("intent", [None, NON_DEFAULT], ids=["default", "non-default"])
def test_fabchecks_eos_render_matches_pyavds_line_by_line(intent: dict[str, Any] | None) -> None:
    desired = eos_desired(intent)
    ours = render_switch(desired).text
    theirs = pyavd_render(structured_config(desired))
    unexplained = [found for found in differences(blocks(ours), blocks(theirs)) if found not in ALLOWED]
    assert unexplained == [], "\n".join(["fabcheck vs pyavd:", ours, "----", theirs])


def test_the_structured_config_carries_every_rendered_line() -> None:
    """The comparison means something only if pyavd got the whole intent: as many owned lines."""
    desired = eos_desired(None)
    theirs = pyavd_render(structured_config(desired))
    assert (
        "bandwidth guaranteed percent 50" in theirs and "priority-flow-control priority 3 no-drop" in theirs
    )
    assert all(f"interface {port.port}" in theirs for port in desired.ports)
