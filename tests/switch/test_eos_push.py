"""The EOS driver against the mock EOS switch over real SSH (netmiko arista_eos), loopback only.

Converge from factory state, rerun without change, read the result back through EOS's own show
commands, catch and repair injected faults, refuse a bad line, refuse a wrong password.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from mockswitches import MockSwitches, mock_switches
from test_eos_templates import NON_DEFAULT, eos_desired

from fabcheck.desired.switch import DesiredSwitch
from fabcheck.intent.platforms import PLATFORMS
from fabcheck.parsers.eos_config import format_config, parse_config
from fabcheck.switch.connect import ConnectError, connect
from fabcheck.switch.driver import PushError, driver_for, push
from fabcheck.switch.platforms.eos import EosDriver
from fabcheck.switch.render import RenderedConfig, render_switch
from fabcheck_lab.mockswitch import inject_switch_fault

NAMES = ("eos-converge", "eos-custom", "eos-pfc-fault", "eos-ecn-fault", "eos-reject", "eos-login")


@pytest.fixture(scope="module")
def switches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockSwitches]:
    with mock_switches(tmp_path_factory.mktemp("eos-push"), dict.fromkeys(NAMES, "eos"), 160) as lab:
        yield lab


@contextlib.contextmanager
def eos_driver(switches: MockSwitches, name: str) -> Iterator[EosDriver]:
    connection = connect(switches.login(name))
    try:
        yield EosDriver(connection, switch=name)
    finally:
        connection.disconnect()


def config_for(name: str, intent: dict[str, Any] | None = None) -> tuple[DesiredSwitch, RenderedConfig]:
    desired = eos_desired(intent, name)
    return desired, render_switch(desired)


def diff_lines(diff: str) -> list[str]:
    return [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("---", "+++")]


def fabcheck_sessions(switches: MockSwitches, name: str) -> list[str]:
    return [session for session in switches.state(name)["pending"] if session.startswith("fabcheck-")]


def stores(switches: MockSwitches, name: str) -> dict[str, Any]:
    state = switches.state(name)
    return {key: state[key] for key in ("running", "pending", "startup")}


# -- reading the switch back through EOS's show commands ----------------------------------------------


def read_back(switches: MockSwitches, name: str) -> dict[str, Any]:
    """What the switch holds, from `show ... | json` and text shows, on a connection of its own."""
    connection = connect(switches.login(name))
    try:
        connection.enable()
        qos = json.loads(connection.send_command("show qos interfaces | json"))["intfQosConfig"]
        pfc = json.loads(connection.send_command("show priority-flow-control | json"))
        qos_text = connection.send_command("show qos interfaces")
        maps = connection.send_command("show running-config section qos map dscp")
    finally:
        connection.disconnect()
    mtus = dict(re.findall(r"^(Ethernet\S+):\n(?:.*\n)*?   MTU: (\d+)$", qos_text, re.M))
    dscp = {
        int(d): int(tc)
        for dscps, tc in re.findall(r"^qos map dscp ([\d ]+) to traffic-class (\d+)$", maps, re.M)
        for d in dscps.split()
    }
    ports = {
        port: {
            "trust": qos[port]["trustMode"],
            "pfc": pfc["interfaceStatuses"][port]["priorities"],
            "pfc_watchdog": pfc["interfaceStatuses"][port]["watchdogEnabled"],
            "mtu": int(mtus[port]),
            "queues": qos[port]["txQueues"],
        }
        for port in qos
    }
    return {"dscp": dscp, "watchdog": pfc["watchdog"], "ports": ports}


def expected_read_back(desired: DesiredSwitch, all_ports: tuple[str, ...]) -> dict[str, Any]:
    trust = {"dscp": "dscp", "pcp": "cos"}[desired.trust]
    queues: dict[str, Any] = {}
    for number in range(8):
        queue = desired.queue(number)
        strict = queue is not None and queue.scheduler == "strict"
        ecn = None
        if queue is not None and queue.ecn:
            ecn = {
                "minThreshold": queue.ecn_min_bytes,
                "maxThreshold": queue.ecn_max_bytes,
                "unit": "bytes",
                "maxMarkProbability": queue.ecn_probability,
                "weight": 0,
            }
        queues[str(number)] = {
            "bandwidthPercent": None if queue is None or strict else queue.weight_percent,
            # a queue fabcheck configures no block for stays strict, EOS's default
            "priority": "strict" if queue is None or strict else "roundRobin",
            "ecn": ecn,
        }
    managed = {port.port: port for port in desired.ports}
    ports = {}
    for port in all_ports:
        if port in managed:
            ports[port] = {
                "trust": trust,
                "pfc": list(managed[port].pfc_priorities),
                "pfc_watchdog": managed[port].pfc_watchdog,
                "mtu": managed[port].mtu,
                "queues": queues,
            }
    return {
        "dscp": desired.dscp_to_traffic_class,
        "watchdog": {
            "timeout": desired.watchdog.detection_ms / 1000,
            "recoveryTime": desired.watchdog.restoration_ms / 1000,
            "pollingInterval": 0.0,
            "action": desired.watchdog.action,
        },
        "ports": ports,
    }


# -- tests ------------------------------------------------------------------------------------------


def test_the_eos_record_names_the_eos_driver() -> None:
    assert driver_for("eos") is EosDriver and PLATFORMS["eos"].device_type == "arista_eos"


def test_converge_from_factory_then_rerun_changes_nothing(switches: MockSwitches) -> None:
    name = "eos-converge"
    desired, config = config_for(name)
    factory = stores(switches, name)
    with eos_driver(switches, name) as driver:
        assert driver.running() == ""  # a factory switch holds none of what fabcheck manages
        preview = push(driver, config, check=True)
        assert preview.changed and "+   service-profile FABCHECK-ROCE" in diff_lines(preview.diff)
        assert stores(switches, name) == factory

        first = push(driver, config, check=False)
        assert first.changed and first.before == ""
        assert diff_lines(first.diff) == diff_lines(preview.diff)  # what check mode announced
        assert first.after == driver.running() == format_config(parse_config(config.text))

        second = push(driver, config, check=False)
        assert (second.changed, second.diff) == (False, "")
        assert second.before == second.after == first.after

    state = switches.state(name)
    assert state["startup"] == state["running"]  # saved
    assert fabcheck_sessions(switches, name) == []
    assert read_back(switches, name) == expected_read_back(desired, tuple(state["running"]["interfaces"]))


def test_non_default_intent_over_the_default_one(switches: MockSwitches) -> None:
    name = "eos-custom"
    default_desired, default_config = config_for(name)
    custom_desired, custom_config = config_for(name, NON_DEFAULT)
    with eos_driver(switches, name) as driver:
        assert push(driver, default_config, check=False).changed
        assert read_back(switches, name)["dscp"] == {26: 3, 48: 6}
        result = push(driver, custom_config, check=False)
        assert result.changed
        assert "-qos map dscp 26 to traffic-class 3" in diff_lines(result.diff)
        assert not push(driver, custom_config, check=False).changed
    ports = tuple(switches.state(name)["running"]["interfaces"])
    held = read_back(switches, name)
    assert held == expected_read_back(custom_desired, ports)
    assert held != expected_read_back(default_desired, ports)
    assert held["dscp"] == {24: 4, 46: 5}  # 26 and 48 are back in EOS's default classes
    assert held["ports"]["Ethernet1"]["queues"]["3"]["ecn"] is None
    assert held["ports"]["Ethernet1"]["pfc"] == [4] and held["ports"]["Ethernet1"]["mtu"] == 9100


FAULT_DRIFT = {
    "switch-pfc-prio": [
        "-   priority-flow-control on",
        "-   priority-flow-control priority 3 drop",
        "-   priority-flow-control priority 4 no-drop",
    ],
    "switch-ecn-off": [
        "+      random-detect ecn minimum-threshold 150000 bytes maximum-threshold 1500000 bytes "
        "max-mark-probability 100"
    ],
}


@pytest.mark.parametrize(
    ("fault", "name"), [("switch-pfc-prio", "eos-pfc-fault"), ("switch-ecn-off", "eos-ecn-fault")]
)
def test_check_mode_shows_a_fault_and_a_push_repairs_only_it(
    switches: MockSwitches, fault: str, name: str
) -> None:
    desired, config = config_for(name)
    with eos_driver(switches, name) as driver:
        push(driver, config, check=False)
        converged = switches.state(name)["running"]
        inject_switch_fault(switches.run_dir, name, fault)
        faulted = stores(switches, name)
        assert faulted["running"] != converged

        check = push(driver, config, check=True)
        assert check.changed and diff_lines(check.diff) == FAULT_DRIFT[fault]
        assert stores(switches, name) == faulted  # check mode changed nothing, left no session

        repair = push(driver, config, check=False)
        assert repair.changed and diff_lines(repair.diff) == FAULT_DRIFT[fault]
        assert not push(driver, config, check=False).changed
    assert switches.state(name)["running"] == converged  # the fault is gone, nothing else moved
    held = read_back(switches, name)
    assert held == expected_read_back(desired, tuple(converged["interfaces"]))


def test_a_line_eos_refuses_aborts_the_session(switches: MockSwitches) -> None:
    name = "eos-reject"
    _, config = config_for(name)
    bad = RenderedConfig(name, "eos", config.text + "qos map dscp 64 to traffic-class 3\n")
    before = stores(switches, name)
    with eos_driver(switches, name) as driver, pytest.raises(PushError) as err:
        push(driver, bad, check=False)
    assert err.value.rolled_back
    assert "qos map dscp 64 to traffic-class 3" in str(err.value) and "% Invalid input" in str(err.value)
    assert stores(switches, name) == before and fabcheck_sessions(switches, name) == []


def test_wrong_password_names_switch_and_user_never_the_password(switches: MockSwitches) -> None:
    wrong = "Not-The-Eos-Password-9"
    with pytest.raises(ConnectError) as err:
        connect(switches.login("eos-login", password=wrong))
    message = str(err.value)
    assert "eos-login" in message and "'admin'" in message and "wrong credentials" in message
    assert wrong not in message and "Eos-lab-pw-3" not in message


def test_running_is_the_managed_part_in_eos_terms(switches: MockSwitches) -> None:
    name = "eos-converge"  # converged by the first test or converged here
    _, config = config_for(name)
    with eos_driver(switches, name) as driver:
        push(driver, config, check=False)
        text = driver.running()
    assert text == format_config(parse_config(config.text))
    assert "hostname" not in text and "spanning-tree" not in text
    # EOS 4.35's running-config order: the profile first, the qos maps and PFC defaults after interfaces
    assert text.splitlines()[0] == "qos profile FABCHECK-ROCE"
    assert text.splitlines()[-1] == "priority-flow-control pause watchdog action drop"
