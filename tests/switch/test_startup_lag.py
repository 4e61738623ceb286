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
from fabcheck.switch.render import render_switch

NAMES = {"lag-nvue": "nvue", "lag-eos": "eos", "lag-sonic": "sonic"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockSwitches]:
    # CL 5.8: `nv config apply` does not save, so an apply without a save leaves startup behind.
    with mock_switches(
        tmp_path_factory.mktemp("lag"), NAMES, 240, releases={"lag-nvue": "5.8.0"}
    ) as switches:
        yield switches


def lag(driver: Any, module: Any, send: Callable[[str], str]) -> list[str]:
    running_command, startup_command = module.STARTUP_LAG_PROBES
    return module.startup_lag_lines(send(running_command), send(startup_command))


def test_nvue_startup_lag(lab: MockSwitches) -> None:
    conn = connect(lab.login("lag-nvue"))
    try:
        driver = nvue.NvueDriver(conn)
        ports = ("swp1", "swp2", "swp3", "swp4")
        push(driver, render_switch(nvue_desired(None, "lag-nvue", ports[:3], ports[3:])), check=False)
        assert lag(driver, nvue, driver.command) == []
        driver.command("nv set interface swp1 link mtu 1500")
        driver.command("nv config apply -y")  # applied, not saved (as a push killed before its save)
        lines = lag(driver, nvue, driver.command)
        assert lines == ["interface swp1 link mtu: 9216 -> 1500"]
        driver.command("nv config save")
        assert lag(driver, nvue, driver.command) == []
    finally:
        conn.disconnect()


def test_eos_startup_lag(lab: MockSwitches) -> None:
    conn = connect(lab.login("lag-eos"))
    try:
        driver = eos.EosDriver(conn)
        ports = ("Ethernet1", "Ethernet2", "Ethernet3", "Ethernet4")
        push(driver, render_switch(eos_desired(None, "lag-eos", ports[:3], ports[3:])), check=False)
        assert lag(driver, eos, driver._command) == []
        for line in ("configure", "interface Ethernet1", "mtu 1600", "end"):
            driver._command(line)
        lines = lag(driver, eos, driver._command)
        assert "+   mtu 1600" in lines and "-   mtu 9214" in lines
        driver._command("copy running-config startup-config")
        assert lag(driver, eos, driver._command) == []
    finally:
        conn.disconnect()


def test_sonic_startup_lag(lab: MockSwitches) -> None:
    conn = connect(lab.login("lag-sonic"))
    try:
        driver = sonic.SonicDriver(conn)
        ports = ("Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12")
        push(driver, render_switch(sonic_desired(None, "lag-sonic", ports[:3], ports[3:])), check=False)
        assert lag(driver, sonic, driver._run) == []
        driver._run("sudo sonic-db-cli CONFIG_DB hset 'PORT|Ethernet0' mtu 1500")
        lines = lag(driver, sonic, driver._run)
        assert (
            len(lines) == 1 and lines[0].startswith("PORT|Ethernet0 mtu: ") and lines[0].endswith("-> 1500")
        )
        driver._run("sudo config save -y")
        assert lag(driver, sonic, driver._run) == []
    finally:
        conn.disconnect()
