"""The EOS templates spell the desired switch record, never a constant: golden files and one-value changes.

Regenerate the golden files (after checking the new output by hand) with FABCHECK_REGOLDEN=1.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from pathlib import Path
from typing import Any

import pytest

from fabcheck.desired import desired_switch
from fabcheck.desired.switch import DesiredSwitch
from fabcheck.intent.fabric import InventoryNode, read_fabric
from fabcheck.intent.model import FabricIntent
from fabcheck.switch.render import RenderError, render_switch

GOLDEN = Path(__file__).parent / "golden"
SECRET = "{{ lookup('ansible.builtin.env', 'EOS_PASSWORD') }}"
HOST_PORTS = ("Ethernet1", "Ethernet2", "Ethernet3")
UPLINKS = ("Ethernet4",)
# The non-default intent every EOS test pushes over the default one: each switch-side value moves.
NON_DEFAULT: dict[str, Any] = {
    "lossless": {"dscp": [24], "priority": 4},
    "cnp": {"dscp": 46, "priority": 5},
    "roce_tos": 98,
    "congestion_control": "pfc_only",
    "ecn": {"min_bytes": 200_000, "max_bytes": 2_000_000, "probability": 50},
    "mtu": {"switch": 9100},
}


def eos_desired(
    intent: dict[str, Any] | None = None,
    name: str = "leaf01",
    host_ports: tuple[str, ...] = HOST_PORTS,
    uplinks: tuple[str, ...] = UPLINKS,
) -> DesiredSwitch:
    """The desired state of one EOS switch with gpu01:mlx5_0 cabled to its first host port."""
    leaf = InventoryNode(
        name,
        ("switches_eos",),
        {
            "switch_address": "192.0.2.1",
            "switch_username": "admin",
            "switch_password": SECRET,
            "switch_ports": list(host_ports),
            "switch_uplinks": list(uplinks),
        },
        {},
    )
    gpu = InventoryNode(
        "gpu01", ("gpu_hosts",), {"fabric_links": {"mlx5_0": f"{name}:{host_ports[0]}"}}, {0: "mlx5_0"}
    )
    fabric = read_fabric([leaf, gpu], lambda _value: "")
    return desired_switch(FabricIntent.model_validate(intent or {}), fabric, name)


def rendered(intent: dict[str, Any] | None = None) -> str:
    return render_switch(eos_desired(intent)).text


def changed_lines(before: str, after: str) -> list[str]:
    """The lines that differ, as '-old' / '+new', in output order."""
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), n=0, lineterm="")
    return [line for line in diff if line[:1] in "+-" and line[:3] not in ("---", "+++")]


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / f"eos-{name}.txt"
    if os.environ.get("FABCHECK_REGOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"{path} missing: run once with FABCHECK_REGOLDEN=1 and review it"
    assert text == path.read_text(), f"{path} differs from the rendered config:\n" + "\n".join(
        changed_lines(path.read_text(), text)
    )


def test_default_intent_golden() -> None:
    text = rendered()
    assert_golden("default", text)
    assert "qos map dscp 26 to traffic-class 3\nqos map dscp 48 to traffic-class 6\n" in text


def test_non_default_intent_golden() -> None:
    text = rendered(NON_DEFAULT)
    assert_golden("non-default", text)
    for line in (
        "qos map dscp 24 to traffic-class 4",
        "qos map dscp 46 to traffic-class 5",
        "   priority-flow-control priority 4 no-drop",
        "   uc-tx-queue 4",
        "   uc-tx-queue 5",
        "      random-detect ecn minimum-threshold 200000 bytes maximum-threshold 2000000 bytes "
        "max-mark-probability 50",
        "   mtu 9100",
    ):
        assert line in text.splitlines()
    assert " 3 " not in text and "26" not in text and "9214" not in text


ECN_LINE = (
    "      random-detect ecn minimum-threshold {} bytes maximum-threshold {} bytes max-mark-probability {}"
)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"lossless": {"dscp": [26, 27]}},
            ["-qos map dscp 26 to traffic-class 3", "+qos map dscp 26 27 to traffic-class 3"],
        ),
        (
            {"lossless": {"priority": 2}},
            [
                "-   priority-flow-control priority 3 no-drop",
                "+   priority-flow-control priority 2 no-drop",
                "-   uc-tx-queue 3",
                "+   uc-tx-queue 2",
                "-qos map dscp 26 to traffic-class 3",
                "+qos map dscp 26 to traffic-class 2",
            ],
        ),
        (
            {"cnp": {"dscp": 40}},
            ["-qos map dscp 48 to traffic-class 6", "+qos map dscp 40 to traffic-class 6"],
        ),
        (
            {"cnp": {"priority": 7}},
            [
                "-   uc-tx-queue 6",
                "+   uc-tx-queue 7",
                "-qos map dscp 48 to traffic-class 6",
                "+qos map dscp 48 to traffic-class 7",
            ],
        ),
        (
            {"ecn": {"min_bytes": 100_000}},
            ["-" + ECN_LINE.format(150000, 1500000, 100), "+" + ECN_LINE.format(100000, 1500000, 100)],
        ),
        (
            {"ecn": {"max_bytes": 3_000_000}},
            ["-" + ECN_LINE.format(150000, 1500000, 100), "+" + ECN_LINE.format(150000, 3000000, 100)],
        ),
        (
            {"ecn": {"probability": 20}},
            ["-" + ECN_LINE.format(150000, 1500000, 100), "+" + ECN_LINE.format(150000, 1500000, 20)],
        ),
        (
            {"congestion_control": "pfc_only", "ecn": {"enabled": False}},
            ["-" + ECN_LINE.format(150000, 1500000, 100)],
        ),
        (
            {"congestion_control": "ecn_only", "lossless": {"pfc": False}},
            [
                "-   priority-flow-control on",
                "-   priority-flow-control priority 3 no-drop",
                "-   priority-flow-control pause watchdog",
                # the lossless queue's share is its guarantee while the watchdog runs, a DWRR weight without
                "-      bandwidth guaranteed percent 50",
                "+      bandwidth percent 50",
                "-priority-flow-control pause watchdog default timeout 0.2",
                "-priority-flow-control pause watchdog default recovery-time 0.2",
                "-priority-flow-control pause watchdog action drop",
                "-!",
            ],
        ),
        ({"mtu": {"switch": 9100}}, ["-   mtu 9214", "+   mtu 9100"] * 4),
        ({"trust": "pcp"}, ["-   qos trust dscp", "+   qos trust cos"]),
    ],
    ids=lambda value: str(value)[:60],
)
def test_each_intent_value_changes_its_own_lines(change: dict[str, Any], expected: list[str]) -> None:
    assert changed_lines(rendered(), rendered(change)) == expected


def test_host_only_values_leave_the_switch_config_alone() -> None:
    host_side = {
        "lossless": {"dscp": [26, 27]},
        "roce_tos": 110,  # DSCP 27
        "mtu": {"netdev": 4200, "rdma": 4096},
        "dcqcn": {"min_time_between_cnps": 8},
        "link": {"speed_gbps": 200},
    }
    base = {"lossless": {"dscp": [26, 27]}}
    assert rendered(host_side) == rendered(base)


def test_cabling_decides_the_interfaces() -> None:
    text = render_switch(eos_desired(host_ports=("Ethernet7/1",), uplinks=("Ethernet49/1",))).text
    interfaces = [line for line in text.splitlines() if line.startswith("interface ")]
    assert interfaces == ["interface Ethernet7/1", "interface Ethernet49/1"]


def test_a_port_with_its_own_classes_carries_its_own_lines() -> None:
    desired = eos_desired()
    first, *rest = desired.ports
    lossy = dataclasses.replace(first, pfc_priorities=(), pfc_watchdog=False)
    text = render_switch(dataclasses.replace(desired, ports=(lossy, *rest))).text
    block = text.split("interface Ethernet1\n", 1)[1].split("\n!\n", 1)[0].splitlines()
    assert block[:2] == ["   mtu 9214", "   qos trust dscp"]
    assert "   service-profile FABCHECK-ROCE" not in block
    assert not [line for line in block if "priority-flow-control" in line]
    assert "   uc-tx-queue 3" in block and "      priority strict" in block
    assert "interface Ethernet2\n   mtu 9214\n   service-profile FABCHECK-ROCE\n" in text


def test_an_action_eos_cannot_spell_is_a_render_error() -> None:
    desired = eos_desired()
    odd = dataclasses.replace(desired, watchdog=dataclasses.replace(desired.watchdog, action="alert"))
    with pytest.raises(RenderError, match="cannot render switch leaf01"):
        render_switch(odd)
