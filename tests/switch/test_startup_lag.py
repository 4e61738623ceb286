"""What the drivers expose for the gate to see a startup config that lags the running one (issue 28:
a push killed between commit and save passes the gate while a reboot would revert it).

Each platform module has STARTUP_LAG_PROBES (two read-only commands: running, startup) and a pure
startup_lag_lines(running_output, startup_output). Against each mock: converged and saved -> no
lines; running changed and not saved -> the changed object named; saved again -> no lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mockswitches import MockSwitches, mock_switches
from test_eos_templates import eos_desired
from test_nvue_render import nvue_desired
from test_sonic_render import sonic_desired

from fabcheck.switch.connect import connect
from fabcheck.switch.driver import push
from fabcheck.switch.platforms import eos, nvue, sonic
from fabcheck.switch.render import RenderedConfig, render_switch

NAMES = {"lag-nvue": "nvue", "lag-eos": "eos", "lag-sonic": "sonic"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockSwitches]:
    # CL 5.8: `nv config apply` does not save, so an apply without a save leaves startup behind.
    with mock_switches(
        tmp_path_factory.mktemp("lag"), NAMES, 240, releases={"lag-nvue": "5.8.0"}
    ) as switches:
        yield switches


def lag(module: Any, send: Callable[[str], str], config: RenderedConfig) -> list[str]:
    """The gate's report of what a push of `config` owns and a reboot would revert."""
    running_command, startup_command = module.STARTUP_LAG_PROBES
    return module.startup_lag_lines(send(running_command), send(startup_command), config.text)


def test_nvue_startup_lag(lab: MockSwitches) -> None:
    conn = connect(lab.login("lag-nvue"))
    try:
        driver = nvue.NvueDriver(conn)
        ports = ("swp1", "swp2", "swp3", "swp4")
        config = render_switch(nvue_desired(None, "lag-nvue", ports[:3], ports[3:]))
        push(driver, config, check=False)
        assert lag(nvue, driver.command, config) == []
        driver.command("nv set interface swp1 link mtu 1500")
        driver.command("nv config apply -y")  # applied, not saved (as a push killed before its save)
        lines = lag(nvue, driver.command, config)
        assert lines == ["interface swp1 link mtu: 9216 -> 1500"]
        driver.command("nv config save")
        assert lag(nvue, driver.command, config) == []
    finally:
        conn.disconnect()


def test_eos_startup_lag(lab: MockSwitches) -> None:
    conn = connect(lab.login("lag-eos"))
    try:
        driver = eos.EosDriver(conn)
        ports = ("Ethernet1", "Ethernet2", "Ethernet3", "Ethernet4")
        config = render_switch(eos_desired(None, "lag-eos", ports[:3], ports[3:]))
        push(driver, config, check=False)
        assert lag(eos, driver._command, config) == []
        for line in ("configure", "interface Ethernet1", "mtu 1600", "end"):
            driver._command(line)
        lines = lag(eos, driver._command, config)
        assert "+   mtu 1600" in lines and "-   mtu 9214" in lines
        driver._command("copy running-config startup-config")
        assert lag(eos, driver._command, config) == []
    finally:
        conn.disconnect()


def test_eos_an_operators_unsaved_qos_profile_is_not_fabchecks_to_save(lab: MockSwitches) -> None:
    """Issue 33: the gate counted every qos profile while the push owns only those it renders, so an
    operator's unrelated profile left unsaved failed switch.startup_config forever (no push saves it).
    An unsaved change inside the profile fabcheck renders still shows."""
    conn = connect(lab.login("lag-eos"))
    try:
        driver = eos.EosDriver(conn)
        ports = ("Ethernet1", "Ethernet2", "Ethernet3", "Ethernet4")
        config = render_switch(eos_desired(None, "lag-eos", ports[:3], ports[3:]))
        push(driver, config, check=False)
        assert lag(eos, driver._command, config) == []
        for line in ("configure", "qos profile OPERATOR-LAB", "qos trust cos", "end"):
            driver._command(line)  # as an operator types it, and never saves it
        assert "qos profile OPERATOR-LAB" in driver._command("show running-config")
        assert lag(eos, driver._command, config) == []
        for line in ("configure", "qos profile FABCHECK-ROCE", "qos trust cos", "end"):
            driver._command(line)
        lines = lag(eos, driver._command, config)
        assert "+   qos trust cos" in lines and "-   qos trust dscp" in lines
        assert not [line for line in lines if "OPERATOR-LAB" in line]
        driver._command("copy running-config startup-config")
        assert lag(eos, driver._command, config) == []
    finally:
        conn.disconnect()


def test_sonic_startup_lag(lab: MockSwitches) -> None:
    conn = connect(lab.login("lag-sonic"))
    try:
        driver = sonic.SonicDriver(conn)
        ports = ("Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12")
        config = render_switch(sonic_desired(None, "lag-sonic", ports[:3], ports[3:]))
        push(driver, config, check=False)
        assert lag(sonic, driver._run, config) == []
        driver._run("sudo sonic-db-cli CONFIG_DB hset 'PORT|Ethernet0' mtu 1500")
        lines = lag(sonic, driver._run, config)
        assert (
            len(lines) == 1 and lines[0].startswith("PORT|Ethernet0 mtu: ") and lines[0].endswith("-> 1500")
        )
        driver._run("sudo config save -y")
        assert lag(sonic, driver._run, config) == []
    finally:
        conn.disconnect()


class Killed(Exception):
    """The push process dies here (a kill between commit and save)."""


def _kill_at_save(step: str) -> None:
    if step == "save":
        raise Killed(step)


# A drift on one port, typed and saved by an operator, that the next push repairs.
SAVED_DRIFTS = {
    "lag-eos": ["configure", "interface Ethernet1", "mtu 1600", "end", "copy running-config startup-config"],
    "lag-sonic": ["sudo sonic-db-cli CONFIG_DB hset 'PORT|Ethernet0' mtu 1500", "sudo config save -y"],
    "lag-nvue": ["nv set interface swp1 link mtu 1500", "nv config apply -y", "nv config save"],
}
PORTS = {
    "lag-eos": ("Ethernet1", "Ethernet2", "Ethernet3", "Ethernet4"),
    "lag-sonic": ("Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"),
    "lag-nvue": ("swp1", "swp2", "swp3", "swp4"),
}
DESIRED = {"lag-eos": eos_desired, "lag-sonic": sonic_desired, "lag-nvue": nvue_desired}


@pytest.mark.parametrize("name", sorted(SAVED_DRIFTS))
def test_a_push_killed_between_commit_and_save_fails_the_gate_until_a_push_saves(
    lab: MockSwitches, name: str
) -> None:
    """Issue 28: the push committed its repair of a saved drift and died before saving. Every other
    check passes (running is right), switch.startup_config fails naming what a reboot reverts; the next
    push has nothing to commit and saves, and then it passes too."""
    from fabcheck.checks.switch import STARTUP_CONFIG, check_switch
    from fabcheck.gate.switch_stage import read_switch
    from fabcheck.switch.driver import driver_for

    platform, ports = NAMES[name], PORTS[name]
    desired = DESIRED[name](None, name, ports[:3], ports[3:])
    config = render_switch(desired)

    def session(work: Callable[[Any], object]) -> None:
        conn = connect(lab.login(name))
        try:
            driver = driver_for(platform)(conn)
            if platform == "eos":
                conn.enable()
            work(driver)
        finally:
            conn.disconnect()

    def not_passing() -> set[tuple[str, str]]:
        evidence, _outputs = read_switch(lab.login(name), platform, list(ports))
        found = check_switch(evidence, desired)
        return {(f.check, f.actual) for f in found if f.status.value not in ("pass", "skip")}

    session(lambda driver: push(driver, config, check=False))
    send = {"eos": "_command", "sonic": "_run", "nvue": "command"}[platform]
    session(lambda driver: [getattr(driver, send)(line) for line in SAVED_DRIFTS[name]])
    assert {check for check, _ in not_passing()} == {"switch.mtu"}  # saved: startup holds it too

    with pytest.raises(Killed):
        session(lambda driver: push(driver, config, check=False, on_step=_kill_at_save))
    failing = not_passing()
    assert {check for check, _ in failing} == {STARTUP_CONFIG}, failing
    (actual,) = [actual for _check, actual in failing]
    assert "a reboot reverts them" in actual and "mtu" in actual, actual

    session(lambda driver: push(driver, config, check=False))  # nothing to commit: it saves
    assert not_passing() == set()
