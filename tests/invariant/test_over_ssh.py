"""The invariant end to end, once per platform, over real SSH to the lab's mock switch server: the
platform driver converges the switch, an operator types one watchdog drift into its CLI, and then
`--check --diff` (the driver's check mode) shows exactly that setting while the gate's switch stage
(the same `read_switch` validate runs) fails exactly switch.watchdog_settings there."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "switch")]

from mockswitches import MockSwitches, mock_switches  # noqa: E402

from fabcheck.checks.switch import check_switch  # noqa: E402
from fabcheck.gate.switch_stage import read_switch  # noqa: E402
from fabcheck.switch.connect import connect  # noqa: E402
from fabcheck.switch.driver import driver_for, push  # noqa: E402
from fabcheck.switch.render import render_switch  # noqa: E402
from tests.invariant.harness import NAMES, desired, not_passing  # noqa: E402

# Each drift saved as an operator saves it (NVUE 5.9+ saves on apply): an unsaved one would also fail
# switch.startup_config (tests/invariant/test_operator_commands.py).
DRIFTS = {
    "nvue": (["nv set qos pfc-watchdog robustness 1000", "nv config apply -y"], "robustness", "leaf01"),
    "sonic": (
        [
            "sudo config pfcwd start --action alert Ethernet4 200 --restoration-time 200",
            "sudo config save -y",
        ],
        "action",
        "leaf02:Ethernet4",
    ),
    "eos": (
        [
            "configure",
            "priority-flow-control pause watchdog action no-drop",
            "end",
            "copy running-config startup-config",
        ],
        "action",
        "leaf03",
    ),
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockSwitches]:
    names = {name: platform for platform, name in NAMES.items()}
    with mock_switches(tmp_path_factory.mktemp("invariant-ssh"), names, 240) as switches:
        yield switches


def _push(lab: MockSwitches, platform: str, *, check: bool) -> str:
    connection = connect(lab.login(NAMES[platform]))
    try:
        result = push(driver_for(platform)(connection), render_switch(desired(NAMES[platform])), check=check)
    finally:
        connection.disconnect()
    return result.diff if result.changed else ""


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_a_typed_drift_shows_in_the_check_diff_and_fails_exactly_its_check(
    lab: MockSwitches, platform: str
) -> None:
    name = NAMES[platform]
    _push(lab, platform, check=False)
    assert _push(lab, platform, check=True) == ""
    lines, token, subject = DRIFTS[platform]
    connection = connect(lab.login(name))
    try:
        if platform == "eos":
            connection.enable()
        for line in lines:
            connection.send_command_timing(line)
    finally:
        connection.disconnect()
    diff = _push(lab, platform, check=True)
    assert token in diff, diff
    ports = [port.port for port in desired(name).ports]
    evidence, _outputs = read_switch(lab.login(name), platform, ports)
    assert not_passing(check_switch(evidence, desired(name))) == {
        ("switch.watchdog_settings", subject, "fail")
    }
