"""The EOS driver against real outputs (tests/data/real/eos) and the mock put in the same state.

`show configuration sessions | json` decides what the push may touch: someone's pending session
stops it (never aborted), a fabcheck session open on a live terminal is another push (refused), a
fabcheck session without a terminal is a dead push's and is aborted. `show version | json` names
the model, which picks `tx-queue` (Jericho/VOQ) or `uc-tx-queue`. DWRR queues get `no priority`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mockswitches import MockSwitches, mock_switches
from test_eos_templates import eos_desired

from fabcheck.parsers.switch_eos import parse_interfaces
from fabcheck.parsers.switch_records import PortSpeed
from fabcheck.switch.connect import connect
from fabcheck.switch.driver import ForeignWork, PushError, SwitchLocked, push
from fabcheck.switch.platforms.eos import EosDriver, for_model, queue_keyword
from fabcheck.switch.render import RenderedConfig, render_switch

REAL = Path(__file__).parent.parent / "data" / "real" / "eos"
PORTS = ("Ethernet1", "Ethernet2", "Ethernet3", "Ethernet4")


def real_json(name: str) -> dict[str, Any]:
    return json.loads((REAL / name).read_text())


class ScriptedEos(EosDriver):
    """The driver with its CLI replaced by recorded answers (no SSH): what it sends is kept."""

    def __init__(self, answers: dict[str, str]) -> None:
        super().__init__(connection=None, switch="leaf01")
        self.answers = answers
        self.typed: list[str] = []

    def _command(self, line: str) -> str:
        self.typed.append(line)
        return self.answers.get(line, "")


def shape(value: Any) -> Any:
    """Keys and value types of a JSON document (lists by their first item)."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


# -- the driver reads what a real switch prints ------------------------------------------------------


def test_the_model_of_a_real_show_version_picks_tx_queue() -> None:
    model = real_json("show-version.json")["modelName"]
    assert model == "DCS-7280SR-48C6-M-R" and queue_keyword(model) == "tx-queue"
    container = real_json("show-version-ceoslab-napalm.json")["modelName"]
    assert container == "cEOSLab" and queue_keyword(container) == "uc-tx-queue"
    driver = ScriptedEos({"show version | json": (REAL / "show-version.json").read_text()})
    assert driver.model_name() == model
    assert queue_keyword("DCS-7060CX-32S") == "uc-tx-queue" and queue_keyword("cEOSLab") == "uc-tx-queue"
    assert queue_keyword("DCS-7800R3-36P-LC") == "tx-queue" and queue_keyword("DCS-7500R2") == "tx-queue"
    text = render_switch(eos_desired(None)).text
    assert "uc-tx-queue" in text and "uc-tx-queue" not in for_model(text, model)
    assert for_model(text, model).count("   tx-queue ") == text.count("   uc-tx-queue ")


def test_real_sessions_someones_pending_session_stops_the_push() -> None:
    sessions = (REAL / "show-configuration-sessions.json").read_text()
    driver = ScriptedEos({"show configuration sessions | json": sessions})
    with pytest.raises(ForeignWork) as err:
        driver._check_other_sessions(None)
    assert "blah1" in str(err.value) and "doublezero-agent-12345678" in str(err.value)
    assert not [line for line in driver.typed if line.startswith(("abort", "configure session"))]


def test_a_live_fabcheck_session_is_another_push_and_a_dead_one_is_aborted() -> None:
    real = real_json("show-configuration-sessions.json")
    live, dead = real["sessions"]["doublezero-agent-12345678"], real["sessions"]["blah1"]
    both = {"sessions": {"fabcheck-0001": live, "fabcheck-0002": dead}}
    driver = ScriptedEos({"show configuration sessions | json": json.dumps(both)})
    with pytest.raises(SwitchLocked) as err:
        driver._check_other_sessions(None)
    assert "fabcheck-0001" in str(err.value) and err.value.rolled_back
    only_dead = {"sessions": {"fabcheck-0002": dead}}
    driver = ScriptedEos({"show configuration sessions | json": json.dumps(only_dead)})
    driver._check_other_sessions(None)
    assert driver.typed[-2:] == ["configure session fabcheck-0002", "abort"]


def test_dwrr_queues_get_no_priority_before_their_share() -> None:
    lines = [line.strip() for line in render_switch(eos_desired(None)).text.splitlines()]
    for index, line in enumerate(lines):
        if line.startswith("bandwidth percent"):
            assert lines[index - 1] == "no priority", index
    assert "priority strict" in lines  # the CNP queue


# -- the mock answers the same commands with the same structure ---------------------------------------


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockSwitches]:
    names = dict.fromkeys(("eos-real", "eos-voq", "eos-foreign", "eos-lock"), "eos")
    with mock_switches(
        tmp_path_factory.mktemp("eos-real"), names, 210, models={"eos-voq": "DCS-7280SR-48C6-M-R"}
    ) as switches:
        yield switches


def config(name: str) -> RenderedConfig:
    return render_switch(eos_desired(None, name=name, host_ports=PORTS[:3], uplinks=PORTS[3:]))


def test_mock_show_version_and_sessions_have_the_real_keys(lab: MockSwitches) -> None:
    conn = connect(lab.login("eos-voq"))
    driver = EosDriver(conn)
    try:
        version = json.loads(driver._command("show version | json"))
        driver._command("configure session operator-x")
        sessions = json.loads(driver._command("show configuration sessions | json"))
        driver._command("abort")
    finally:
        conn.disconnect()
    real_version = real_json("show-version.json")
    assert version["modelName"] == "DCS-7280SR-48C6-M-R"
    assert {key: shape(version[key]) for key in ("modelName", "version")} == {
        key: shape(real_version[key]) for key in ("modelName", "version")
    }
    real_session = real_json("show-configuration-sessions.json")["sessions"]["doublezero-agent-12345678"]
    mock_session = sessions["sessions"]["operator-x"]
    for key in ("state", "commitUser", "description"):
        assert shape(mock_session[key]) == shape(real_session[key]), key
    (instance,) = mock_session["instances"].values()  # our own terminal, inside it
    assert shape(instance) == shape(next(iter(real_session["instances"].values())))


def test_a_voq_switch_takes_tx_queue_and_refuses_uc_tx_queue(lab: MockSwitches) -> None:
    conn = connect(lab.login("eos-voq"))
    try:
        result = push(EosDriver(conn), config("eos-voq"), check=False)
        assert result.changed and "uc-tx-queue" not in result.diff and "tx-queue 3" in result.diff
        assert not push(EosDriver(conn), config("eos-voq"), check=False).changed
        driver = EosDriver(conn)
        driver._command("configure session operator-probe")
        with pytest.raises(PushError, match="Invalid input"):
            driver._command("qos profile FABCHECK-ROCE")
            driver._command("uc-tx-queue 3")
        driver._command("abort")
    finally:
        conn.disconnect()


def test_an_operators_session_survives_check_mode_and_a_real_run(lab: MockSwitches) -> None:
    name = "eos-foreign"
    operator = connect(lab.login(name))
    try:
        operator.enable()
        operator.send_config_set(
            ["configure session op-change", "interface Ethernet2", "mtu 1500", "end"],
            enter_config_mode=False,
            exit_config_mode=False,
        )
    finally:
        operator.disconnect()
    staged = lab.state(name)["pending"]["op-change"]
    for check in (True, False):
        conn = connect(lab.login(name))
        try:
            with pytest.raises(ForeignWork, match="op-change"):
                push(EosDriver(conn), config(name), check=check)
        finally:
            conn.disconnect()
        assert lab.state(name)["pending"] == {"op-change": staged}


def test_two_concurrent_pushes_never_both_succeed(lab: MockSwitches) -> None:
    name = "eos-lock"
    barrier = threading.Barrier(2)
    outcomes: list[object] = []

    def one() -> None:
        conn = connect(lab.login(name))
        try:
            barrier.wait(timeout=60)
            outcomes.append(push(EosDriver(conn), config(name), check=False))
        except PushError as err:
            outcomes.append(err)
        finally:
            conn.disconnect()

    threads = [threading.Thread(target=one) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert len(outcomes) == 2
    changed = [o for o in outcomes if not isinstance(o, PushError) and o.changed]
    assert len(changed) <= 1, outcomes  # never two pushes changing the switch at once
    for failed in (o for o in outcomes if isinstance(o, PushError)):
        assert isinstance(failed, SwitchLocked) or "another push" in str(failed), failed
    conn = connect(lab.login(name))
    try:
        push(EosDriver(conn), config(name), check=False)
        assert not push(EosDriver(conn), config(name), check=False).changed  # one whole config
    finally:
        conn.disconnect()
    assert lab.state(name)["pending"] == {}


def test_a_real_notconnect_port_is_read_as_not_trained_not_at_its_nominal_rate() -> None:
    # napalm's real `show interfaces | json`: Ethernet1 notconnect/down keeps bandwidth 10 Gb/s; the
    # port-channels it belongs to are notconnect/lowerLayerDown with bandwidth 0
    text = (REAL / "show-interfaces-json-napalm-notconnect.json").read_text()
    speeds = {port: record for port, record in parse_interfaces(text) if isinstance(record, PortSpeed)}
    assert speeds == {
        "Ethernet1": PortSpeed(0),
        "Port-Channel1": PortSpeed(0),
        "Port-Channel1.20": PortSpeed(0),
    }
